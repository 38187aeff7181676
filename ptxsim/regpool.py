"""setmaxnreg: each CTA's register pool and the per-warp register counts it moves registers between.

The PTX ISA: a pool of available registers is kept per CTA; `setmaxnreg.dec n` releases the executing warp's
registers above n to it, `setmaxnreg.inc n` takes registers from it and blocks until the pool can supply them; the
same instruction must be executed by all warps of a warpgroup; .inc must not lower and .dec must not raise the
warp's current count; the kernel must have a defined per-thread register count (`.maxnreg`, or the bound
`.maxntid` and `.minnctapersm` set together: ptxsim.decode._entry_registers; ptxas ignores setmaxnreg when it
cannot determine the count at entry).

Model: every warp starts with the kernel's `.maxnreg` (rounded up to the 8-register allocation unit) per thread, so
the pool holds that many times the CTA's threads and starts empty; a warpgroup's request is granted whole (its
warps together) or not at all, and a blocked request is granted when a .dec refills the pool. A request that can
never be granted shows as a deadlock naming the instruction, the pool and what it lacks.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import RegisterPoolError
from ptxsim.lanes import BLOCKED

REGPOOL_WAIT = -5  # Scheduler.wait_id of a thread blocked in setmaxnreg.inc (bar.sync ids are 0..15)
ALLOC_UNIT = 8  # registers per thread: the allocation granularity (256 per warp)
WG = 128  # threads of a warpgroup


def _round_up(n: int) -> int:
    return (n + ALLOC_UNIT - 1) // ALLOC_UNIT * ALLOC_UNIT


class RegisterPools:
    """Per-CTA register pools of one batch, per-warp register counts and the blocked .inc requests."""

    def __init__(self, st, ins, lane: int):
        prog = st.prog
        if not prog.maxnreg:
            raise RegisterPoolError(self._where(st, ins, lane) + ": the kernel has no .maxnreg (nor .maxntid with "
                                    ".minnctapersm), so its register pool is undefined (ptxas ignores setmaxnreg "
                                    "when it cannot determine the register count at entry); declare .maxnreg N on "
                                    "the kernel")
        self.start = _round_up(prog.maxnreg)
        nwarps = st.nlanes // 32
        self.count = np.full(nwarps, self.start, np.int64)  # registers per thread each warp holds
        self.free = np.zeros(st.nctas, np.int64)  # registers in each CTA's pool
        self.want = np.zeros(nwarps, np.int64)  # per-thread count a blocked warp asked for (0: none)
        self.ins_of = {}  # warp -> the setmaxnreg.inc it is blocked in

    @staticmethod
    def of(st, ins, lane: int) -> RegisterPools:
        if st.regpools is None:
            st.regpools = RegisterPools(st, ins, lane)
        return st.regpools

    @staticmethod
    def _where(st, ins, lane: int) -> str:
        cta, tid = st.where(int(lane))
        return f"setmaxnreg at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} thread {tid}"

    def pool_size(self, st) -> int:
        return self.start * st.padded

    def execute(self, st, ins, la: np.ndarray, n: int, inc: bool) -> None:
        """Warps of la (whole warpgroups, or what synccheck reported) set their count to n; .inc may block."""
        warps = np.unique(la >> 5)
        cur = self.count[warps]
        wrong = cur > n if inc else cur < n
        if wrong.any():
            w = int(warps[np.flatnonzero(wrong)[0]])
            raise RegisterPoolError(self._where(st, ins, w * 32) + f": the warp holds {int(self.count[w])} registers "
                                    f"per thread; {'.inc' if inc else '.dec'} {n} would "
                                    f"{'lower' if inc else 'raise'} it ({'.inc' if inc else '.dec'} must not)")
        slots = st.slot[warps * 32]
        if not inc:
            self.count[warps] = n
            np.add.at(self.free, slots, (cur - n) * 32)
            self._grant(st, np.unique(slots))
            return
        self.want[warps] = n
        for w in warps:
            self.ins_of[int(w)] = ins
        blocked = np.repeat(warps, 32) * 32 + np.tile(np.arange(32), len(warps))
        blocked = blocked[np.isin(blocked, la)]
        st.pc[blocked] += BLOCKED
        st.sched.wait_id[blocked] = REGPOOL_WAIT
        self._grant(st, np.unique(slots))

    def _grant(self, st, slots: np.ndarray) -> None:
        """Grant the blocked requests of these CTAs, warpgroup by warpgroup in order, while the pool suffices."""
        wpc = st.padded // 32  # warps per CTA
        for s in slots.tolist():
            first = s * wpc
            for g in range(first, first + wpc, WG // 32):
                ws = np.arange(g, min(g + WG // 32, first + wpc))
                asking = ws[self.want[ws] > 0]
                if not asking.size:
                    continue
                need = int(((self.want[asking] - self.count[asking]) * 32).sum())
                if need > self.free[s]:
                    continue
                self.free[s] -= need
                self.count[asking] = self.want[asking]
                self.want[asking] = 0
                lanes = (asking[:, None] * 32 + np.arange(32)).reshape(-1)
                rel = lanes[st.sched.wait_id[lanes] == REGPOOL_WAIT]
                st.pc[rel] -= BLOCKED
                st.sched.wait_id[rel] = -1

    def deadlock_line(self, st, lane: int, count: int) -> str:
        w = lane >> 5
        ins = self.ins_of.get(int(w))
        s = int(st.slot[lane])
        cta, _ = st.where(lane)
        g = (lane % st.padded) // WG
        first = w - (lane % st.padded) // 32 + g * (WG // 32)
        ws = np.arange(first, min(first + WG // 32, w - (lane % st.padded) // 32 + st.padded // 32))
        ws = ws[self.want[ws] > 0]
        need = int(((self.want[ws] - self.count[ws]) * 32).sum())
        where = f"PTX line {ins.line} (`{ins.text}`)" if ins is not None else "setmaxnreg.inc"
        return (f"  CTA {cta}: {count} thread(s) of warpgroup {g} blocked at {where}: its {len(ws)} warp(s) ask "
                f"{need} more registers ({int(self.count[w])} -> {int(self.want[w])} per thread) but the CTA's pool "
                f"has {int(self.free[s])} free (pool {self.pool_size(st)} = .maxnreg {self.start} x {st.padded} "
                "threads; only setmaxnreg.dec refills it)")
