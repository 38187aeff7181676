"""racecheck's ordering of shared-memory reads before asynchronous overwrites: vector clocks over the warps of a
cluster, carried by mbarrier phases, bar.sync, barrier.cluster and warpgroup-collective wgmma waits.

An asynchronous copy (cp.async.bulk{.tensor}, multicast included, or cp.async) issued into shared memory that a warp
read last (ld.shared, or a wgmma descriptor operand, counted as the warpgroup's first warp's read) must be ordered
after that read: the reading warp released it (mbarrier.arrive after the read, or a bar.sync / barrier.cluster) and
the issuing warp acquired it (observed the completed phase: a try_wait / test_wait returning true, or a blocked wait
resuming). Otherwise the copy may overwrite data the reader still needs: a stage refilled before its consumers
released it, a producer that skipped the retry of its empty-barrier wait, or a multicast into a peer whose
consumers never arrived on the issuer's barrier.
# NOTE: clocks are per warp, not per thread (a warp's lanes share what one of them acquired): liberal, never a
# false report from the granularity; a warpgroup's wgmma.wait_group joins its four warps (CUTLASS releases a stage
# from one thread of the warpgroup, any warp of it).
"""
from __future__ import annotations

import numpy as np


class AsyncOrder:
    """Vector clocks of one batch of CTAs: row = warp of the batch, column = warp of its cluster."""

    def __init__(self, st, nwords: int):
        self.wpc = st.padded // 32  # warps per CTA
        size = 1 if st.cluster is None else st.cluster.size
        self.cols = size * self.wpc
        nw = st.nlanes // 32
        warp = np.arange(nw)
        slot = warp // self.wpc
        first = slot if st.cluster is None else st.cluster.first_slot[slot]
        self.first_warp = first * self.wpc  # batch warp of column 0 of each warp's cluster
        self.col = warp - self.first_warp  # each warp's own column
        self.vc = np.zeros((nw, self.cols), np.int64)
        self.vc[warp, self.col] = 1  # a warp's reads before its first release are at epoch 1
        self.rd_warp = np.full(nwords, -1, np.int64)  # last reader of each shared word (batch warp)
        self.rd_epoch = np.zeros(nwords, np.int64)
        self.rd_line = np.zeros(nwords, np.int64)
        self.bars: dict[int, dict] = {}  # barrier byte -> {"acc": clock of this phase's releases, phase: clock}
        # The PTX memory model's clocks, for plain shared writes read by another warp (racecheck's own() / saw()):
        # carried only by what orders memory in every execution (an mbarrier arrive's release acquired by a wait
        # that observed that phase, bar.sync among the warps it released, barrier.cluster), never by the wgmma
        # wait's warpgroup rendezvous, which vc above takes (liberally) for async overwrites.
        self.mvc = self.vc.copy()
        self.mbars: dict[int, dict] = {}

    # -- reads and asynchronous writes ------------------------------------------------------------------------------
    def read(self, words: np.ndarray, warps: np.ndarray, line: int) -> None:
        self.rd_warp[words] = warps
        self.rd_epoch[words] = self.vc[warps, self.col[warps]]
        self.rd_line[words] = line

    def retired_read(self, words: np.ndarray, warp: int, line: int) -> None:
        """A wgmma's operand reads last until the wgmma.wait_group that retires it (which joined its warpgroup just
        before): they count at the joined clock, so a release before the wait does not cover them and one after it,
        from any warp of the warpgroup, does."""
        self.rd_warp[words] = warp
        self.rd_epoch[words] = self.vc[warp, self.col[warp]] - 1
        self.rd_line[words] = line

    def unordered(self, words: np.ndarray, issuer_warp: int) -> np.ndarray:
        """Positions in words whose last read is not ordered before an async write issued by issuer_warp."""
        r = self.rd_warp[words]
        has = (r >= 0) & (r != issuer_warp)
        if not has.any():
            return np.zeros(0, np.int64)
        idx = np.flatnonzero(has)
        rw = r[idx]
        same_cluster = self.first_warp[rw] == self.first_warp[issuer_warp]
        seen = self.vc[issuer_warp, self.col[rw]]
        return idx[same_cluster & (seen < self.rd_epoch[words[idx]])]

    def own(self, warps: np.ndarray) -> np.ndarray:
        """Each warp's own memory-model clock entry (what a release after now carries)."""
        return self.mvc[warps, self.col[warps]]

    def saw(self, warps: np.ndarray, others: np.ndarray, clocks: np.ndarray) -> np.ndarray:
        """Per element: has warp `warps` acquired warp `others`' clock `clocks` (through a release of `others` after
        it and an acquire of that release, directly or through a chain of such)? Only within one cluster (shared
        memory is the cluster's). Memory-model clocks: a wgmma wait's warpgroup rendezvous orders nothing here."""
        same = self.first_warp[others] == self.first_warp[warps]
        return same & (self.mvc[warps, self.col[others]] >= clocks)

    # -- synchronisation --------------------------------------------------------------------------------------------
    def release(self, bar_phys: int, warps: np.ndarray) -> None:
        """mbarrier.arrive by these warps: the barrier's current phase carries their clocks."""
        # NOTE: the clock joins the phase at the arrive (what the warp did before it), not at the phase's
        # completion; the phase then carries exactly the arrivals that completed it (acc restarts at completion)
        for bars, vc in ((self.bars, self.vc), (self.mbars, self.mvc)):
            b = bars.setdefault(bar_phys, {"acc": np.zeros(self.cols, np.int64)})
            b["acc"] = np.maximum(b["acc"], vc[warps].max(axis=0))
            vc[warps, self.col[warps]] += 1

    def phase_complete(self, bar_phys: int, phase: int) -> None:
        for bars in (self.bars, self.mbars):
            b = bars.get(bar_phys)
            if b is None:
                continue
            b[phase] = b["acc"]
            b["acc"] = np.zeros(self.cols, np.int64)
            for old in [k for k in b if k != "acc" and k < phase - 4]:
                del b[old]  # a wait names the current phase or the one before

    def acquire(self, bar_phys: int, phase: int, warps: np.ndarray) -> None:
        for bars, vc in ((self.bars, self.vc), (self.mbars, self.mvc)):
            b = bars.get(bar_phys)
            if b is None or phase not in b:
                continue
            vc[warps] = np.maximum(vc[warps], b[phase][None, :])

    def join(self, groups: np.ndarray, acquire: np.ndarray | None = None, memory_order: bool = True) -> None:
        """Warps in each row of `groups` [g, k] synchronise (bar.sync, barrier.cluster, a warpgroup's wgmma wait):
        each releases its clock; the warps `acquire` says (default all; bar.arrive's do not wait) acquire them all.
        memory_order False (the wgmma wait): the async-overwrite clocks only."""
        self._join(self.vc, groups, acquire)
        if memory_order:
            self._join(self.mvc, groups, acquire)

    def join_memory(self, groups: np.ndarray) -> None:
        """The memory-model clocks alone: the warps of each row of `groups` all released and acquired (a bar.sync's
        waiting warps, the only ones racecheck knows took part in that named barrier)."""
        self._join(self.mvc, groups, None)

    def _join(self, vc: np.ndarray, groups: np.ndarray, acquire: np.ndarray | None) -> None:
        joined = vc[groups].max(axis=1)  # [g, cols]
        if acquire is None:
            vc[groups] = joined[:, None, :]
        else:
            takes = acquire[groups]
            merged = np.maximum(vc[groups], joined[:, None, :])
            vc[groups] = np.where(takes[..., None], merged, vc[groups])
        vc[groups, self.col[groups]] += 1
