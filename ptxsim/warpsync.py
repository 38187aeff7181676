"""bar.warp.sync and elect.sync as convergence points for their member masks.

Lowest-pc-first scheduling can split a warp around a loop: lanes that detour through code placed further down the
program reach the loop head after the others have gone round again. On the hardware `bar.warp.sync membermask`
makes every executing thread wait until all non-exited threads of membermask have executed a bar.warp.sync with that
mask, so the lanes go on together; an `.aligned` instruction after it (wgmma, shfl.sync with a full mask) sees the
whole warp. Here an arriving lane whose members are not all present is held (pc + BLOCKED, wait_id WARP_SYNC_WAIT)
until the last member arrives or exits; then all of them go on past their own bar.warp.sync.
"""
from __future__ import annotations

import numpy as np

from ptxsim.lanes import BLOCKED, EXITED

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
        ins = st.prog.instrs[int(st.pc[lane] - BLOCKED - 1)]
        cta, _ = st.where(lane)
        m = int(self.members[lane])
        base = lane & ~31
        missing = [i for i in range(32) if m >> i & 1 and self.members[base + i] == 0 and st.pc[base + i] < EXITED]
        return (f"  CTA {cta}: {count} thread(s) of warp {(lane % st.padded) // 32} held at PTX line {ins.line} "
                f"(`{ins.text}`), member mask {m:#010x}; lane(s) {missing[:8]} never reach a bar.warp.sync")


# -- elect.sync: a convergence point of its member mask ---------------------------------------------------------------
ELECT_WAIT = -7  # Scheduler.wait_id of a thread held before elect.sync until every member of its mask is there


def gather_members(st, ins, la: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The lanes of la that run elect.sync `ins` now (members: each lane's membermask, uint64).

    PTX ISA (elect.sync): ".sync ... causes the executing thread to wait until all threads in the membermask execute
    the elect instruction before resuming execution", and the same leader is elected for the same membermask every
    time. The lowest-pc-first schedule can bring part of a warp to it while a member is elsewhere: CUTLASS's
    producer warp leaves its elected lane blocked in an mbarrier wait inside the load loop while lanes 1-31 go round
    the tile loop to the next `elect_one_sync()`; electing among the lanes present would make lane 1 a second
    producer, one that issues TMA loads without the leader's arrive.expect_tx (docs/cutlass.md, "elect.sync").
    Here the early lanes wait before the instruction (pc + BLOCKED, ELECT_WAIT) and, once every non-exited member
    is there, all of them are sent back to run it together. Lanes already complete (the usual case) run at once."""
    if len(la) % 32 == 0 and np.all(la[::32] % 32 == 0) and np.all(la[31::32] - la[::32] == 31):
        return la  # whole warps: every member is here (and so none of them is held)
    sched = st.sched
    forced = sched.wg_forced
    if forced is not None and forced[la].any():  # released by release_stragglers: run as they are
        forced[la] = False
        return la
    if sched.held_members is None:
        sched.held_members = np.zeros(st.nlanes, np.uint64)
    pc = st.pc
    w = la >> 5
    warps = np.unique(w)
    j = np.searchsorted(warps, w)
    span = (warps[:, None] * 32 + np.arange(32)).reshape(-1)
    held = (sched.wait_id[span] == ELECT_WAIT) & (pc[span] == ins.pc + BLOCKED)
    here = np.zeros(st.nlanes, np.bool_)
    here[la] = True
    here[span] |= held | (pc[span] >= EXITED)
    bits = _present_bits(here, warps)
    done = (members & ~bits[j]) == 0
    wait = la[~done]
    run = la[done]
    back = span[held]
    if back.size and run.size:
        back = back[(sched.held_members[back] & ~bits[np.searchsorted(warps, back >> 5)]) == 0]
    if back.size and run.size:  # the rest has come: everyone runs the instruction together next round
        pc[back] = ins.pc
        sched.wait_id[back] = -1
        sched.held_members[back] = 0
        pc[run] = ins.pc
        run = run[:0]
    if wait.size:
        pc[wait] = ins.pc + BLOCKED
        sched.wait_id[wait] = ELECT_WAIT
        sched.held_members[wait] = members[~done]
    return run


def release_elect_on_exit(st, la: np.ndarray) -> None:
    """Exited threads no longer hold back an elect.sync: the held lanes of their warps try it again."""
    sched = st.sched
    if sched.held_members is None:
        return
    span = (np.unique(la >> 5)[:, None] * 32 + np.arange(32)).reshape(-1)
    back = span[(sched.wait_id[span] == ELECT_WAIT) & (st.pc[span] >= BLOCKED) & (st.pc[span] < EXITED)]
    if back.size:
        st.pc[back] -= BLOCKED
        sched.wait_id[back] = -1
        sched.held_members[back] = 0


def elect_deadlock_line(st, lane: int, count: int) -> str:
    ins = st.prog.instrs[int(st.pc[lane] - BLOCKED)]
    cta, _ = st.where(lane)
    m = int(st.sched.held_members[lane])
    base = lane & ~31
    missing = [i for i in range(32) if m >> i & 1 and st.sched.wait_id[base + i] != ELECT_WAIT
               and st.pc[base + i] < EXITED]
    return (f"  CTA {cta}: {count} thread(s) of warp {(lane % st.padded) // 32} held at PTX line {ins.line} "
            f"(`{ins.text}`), member mask {m:#010x}; lane(s) {missing[:8]} never reach it")


# -- warpgroup instructions (wgmma.mma_async, setmaxnreg) ------------------------------------------------------------
WARPGROUP_WAIT = -6  # Scheduler.wait_id of a thread waiting at a warpgroup instruction for the rest of its warpgroup
WG = 128


def gather_warpgroups(st, ins, la: np.ndarray) -> np.ndarray:
    """The lanes of la that run the warpgroup instruction `ins` now.

    The four warps of a warpgroup are independent: the lowest-pc-first schedule may bring them to a wgmma at
    different times (one warp detours, or waits at a bar.warp.sync for a straggling lane). The hardware waits for all
    four; here a warpgroup's early arrivals wait before the instruction (pc + BLOCKED, WARPGROUP_WAIT) and, once the
    rest arrive, every thread of it is sent back to the instruction to run it together. Lanes already grouped in
    whole warpgroups (the usual case) run at once. A warp arriving with only some of its running threads is the
    handler's business (an .aligned instruction in divergent code)."""
    if len(la) % WG == 0 and np.all(st.tlin[la[::WG]] % WG == 0) and np.all(la[WG - 1::WG] - la[::WG] == WG - 1):
        return la
    forced = st.sched.wg_forced
    if forced is not None and forced[la].any():  # released by release_stragglers: run as they are
        forced[la] = False
        return la
    pc = st.pc
    first = la - st.tlin[la] % WG  # lane of each warpgroup's thread 0
    starts = np.unique(first)
    span = starts[:, None] + np.arange(WG)  # [groups, 128] lanes (a short last warpgroup reaches past its CTA)
    inside = (span < st.nlanes) & (st.slot[np.minimum(span, st.nlanes - 1)] == st.slot[starts][:, None])
    span_c = np.minimum(span, st.nlanes - 1)
    here = np.zeros(st.nlanes, np.bool_)
    here[la] = True
    held = (st.sched.wait_id[span_c] == WARPGROUP_WAIT) & (pc[span_c] == ins.pc + BLOCKED) & inside
    gone = (pc[span_c] >= EXITED) | ~inside
    complete = np.all(here[span_c] | held | gone, axis=1)
    run = np.zeros(st.nlanes, np.bool_)
    for g in np.flatnonzero(complete):
        lanes_g = span_c[g][inside[g]]
        back = lanes_g[held[g][inside[g]]]
        if back.size:  # the rest has come: everyone runs the instruction together next round
            pc[back] = ins.pc
            st.sched.wait_id[back] = -1
            arrived = lanes_g[here[lanes_g]]
            pc[arrived] = ins.pc
        else:
            run[lanes_g] = True
    wait = la[~complete[np.searchsorted(starts, first)]]
    if wait.size:
        pc[wait] = ins.pc + BLOCKED
        st.sched.wait_id[wait] = WARPGROUP_WAIT
    return la[run[la]]


def release_stragglers(st) -> bool:
    """No thread can progress: the warps waiting at a warpgroup instruction for mates that cannot come (exited,
    blocked, or gone past it) run it without them, so the instruction's own check reports the partial warpgroup (a
    synccheck finding for setmaxnreg, an error for wgmma) instead of a deadlock. True if any were released."""
    sched = st.sched
    held = np.flatnonzero(sched.wait_id == WARPGROUP_WAIT)
    if not held.size:
        return False
    if sched.wg_forced is None:
        sched.wg_forced = np.zeros(st.nlanes, np.bool_)
    st.pc[held] -= BLOCKED
    sched.wait_id[held] = -1
    sched.wg_forced[held] = True
    return True
