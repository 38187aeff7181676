"""bar.warp.sync as a convergence point for its member mask.

Lowest-pc-first scheduling can split a warp around a loop: lanes that detour through code placed further down the
program reach the loop head after the others have gone round again. On the hardware `bar.warp.sync membermask`
makes every executing thread wait until all non-exited threads of membermask have executed a bar.warp.sync with that
mask, so the lanes go on together; an `.aligned` instruction after it (wgmma, shfl.sync with a full mask) sees the
whole warp. Here an arriving lane whose members are not all present is held (pc + BLOCKED, wait_id WARP_SYNC_WAIT)
until the last member arrives or exits; then all of them go on past their own bar.warp.sync.
"""
from __future__ import annotations

import numpy as np

WARP_SYNC_WAIT = -4  # Scheduler.wait_id of a thread held at bar.warp.sync (bar.sync ids are 0..15)
_BIT = np.left_shift(np.uint64(1), np.arange(32, dtype=np.uint64))


def _present_bits(here: np.ndarray, warps: np.ndarray) -> np.ndarray:
    """uint64 lane bits per warp in `warps` of a per-lane boolean array."""
    return (here.reshape(-1, 32)[warps] * _BIT).sum(axis=1, dtype=np.uint64)


class WarpSyncs:
    """Threads held at bar.warp.sync in one batch, and their member masks."""

    def __init__(self, st):
        self.members = np.zeros(st.nlanes, np.uint64)  # member mask of each held thread
        self.held = 0  # threads held now

    @staticmethod
    def of(st) -> WarpSyncs:
        if st.warp_syncs is None:
            st.warp_syncs = WarpSyncs(st)
        return st.warp_syncs

    def arrive(self, st, ins, la: np.ndarray, members: np.ndarray) -> None:
        """Lanes la execute bar.warp.sync with their member masks (uint64, one per lane; pc already past it)."""
        from ptxsim.executor import BLOCKED, EXITED

        w = la >> 5
        warps = np.unique(w)
        here = np.zeros(st.nlanes, np.bool_)
        here[la] = True
        j = np.searchsorted(warps, w)
        if not self.held and not np.any(members & ~_present_bits(here, warps)[j]):
            return  # the usual case: every member executes this instruction together
        held = self.members != 0
        here |= held | (st.pc >= EXITED)
        bits = _present_bits(here, warps)
        done = (members & ~bits[j]) == 0
        wait = la[~done]
        if wait.size:
            st.pc[wait] += BLOCKED
            st.sched.wait_id[wait] = WARP_SYNC_WAIT
            self.members[wait] = members[~done]
            self.held += int(wait.size)
        if done.any():
            self.release(st, warps[np.isin(warps, w[done])], la[done])

    def release(self, st, warps: np.ndarray, arriving: np.ndarray | None = None) -> None:
        """Release the held threads of `warps` whose members have all arrived (held, `arriving` now, or exited)."""
        from ptxsim.executor import BLOCKED, EXITED

        if not self.held or not warps.size:
            return
        lanes = (warps[:, None] * 32 + np.arange(32)).reshape(-1)
        mine = lanes[self.members[lanes] != 0]
        if not mine.size:
            return
        pc = st.pc
        here = np.zeros(st.nlanes, np.bool_)
        here[lanes] = (self.members[lanes] != 0) | (pc[lanes] >= EXITED)
        if arriving is not None:
            here[arriving] = True
        bits = _present_bits(here, warps)
        ok = (self.members[mine] & ~bits[np.searchsorted(warps, mine >> 5)]) == 0
        rel = mine[ok]
        if rel.size:
            pc[rel] -= BLOCKED
            st.sched.wait_id[rel] = -1
            self.members[rel] = 0
            self.held -= int(rel.size)

    def on_exit(self, st, la: np.ndarray) -> None:
        """Exited threads no longer hold back the bar.warp.sync of their warp."""
        if self.held:
            self.release(st, np.unique(la >> 5))

    def deadlock_line(self, st, lane: int, count: int) -> str:
        from ptxsim.executor import BLOCKED, EXITED

        ins = st.prog.instrs[int(st.pc[lane] - BLOCKED - 1)]
        cta, _ = st.where(lane)
        m = int(self.members[lane])
        base = lane & ~31
        missing = [i for i in range(32) if m >> i & 1 and self.members[base + i] == 0 and st.pc[base + i] < EXITED]
        return (f"  CTA {cta}: {count} thread(s) of warp {(lane % st.padded) // 32} held at PTX line {ins.line} "
                f"(`{ins.text}`), member mask {m:#010x}; lane(s) {missing[:8]} never reach a bar.warp.sync")
