"""The scheduling loop: lowest-pc-first reconvergence over one lane vector holding several CTAs, barriers with ids
and thread counts, exits, deadlock detection and the instruction budget."""
from __future__ import annotations

import sys
import time

import numpy as np

from ptxsim.errors import DeadlockError, InstructionBudgetExceeded, TimeLimitExceeded
from ptxsim.lanes import BLOCKED, EXITED
from ptxsim.regpool import REGPOOL_WAIT
from ptxsim.state import FULL
from ptxsim.warpsync import ELECT_WAIT, WARP_SYNC_WAIT, elect_deadlock_line, release_elect_on_exit, release_stragglers

SPIN_CHECK = 2048  # backward-branch iterations between spin-loop snapshots
CLOCK_CHECK = 1024  # scheduling rounds between wall-clock checks


class Scheduler:
    """Runs one ExecState (a batch of CTAs) to completion."""

    def __init__(self, st, counts, budget: int, trace: bool, deadline: float | None = None, time_limit: float = 0):
        self.st = st
        self.deadline, self.time_limit = deadline, time_limit  # perf_counter() time the launch must end by
        self.last_back = -1  # pc of the last backward branch taken (names the loop in budget/time errors)
        n = st.nlanes
        st.pc = np.zeros(n, np.int64)
        st.pc[~st.valid] = EXITED
        st.sched = self
        self.counts = counts  # {"warp": int64[npc], "thread": int64[npc], "pred_on": int64[npc]}
        # optional counts["by_warp"]: int64[warps per CTA, npc], warp-instructions per (warp of its CTA, pc) summed
        # over the batch's CTAs: model v2 tells warp roles (producer / consumer warps) apart by them
        self.by_warp = counts.get("by_warp")
        self.budget = budget
        self.trace = trace
        nc = st.nctas
        self.arrived = np.zeros((nc, 16), np.int64)  # threads arrived per (CTA, barrier)
        self.arrived_warps = np.zeros((nc, 16), np.int64)
        self.warp_flag = np.zeros((n // 32, 16), np.bool_)
        self.expect = np.full((nc, 16), -1, np.int64)  # requested thread count (-1: all live threads)
        self.live = np.bincount(st.slot[st.valid], minlength=nc).astype(np.int64)
        self.wait_id = np.full(n, -1, np.int64)
        self.red_val = np.zeros(n, np.bool_)
        self.warp_slot = (np.arange(n // 32) * 32) // st.padded
        self.executed = 0
        self.has_red = any(i.aux.red for i in st.prog.instrs)
        self.wg_forced = None  # lanes released by warpsync.release_stragglers, to run their warpgroup op as they are
        self.held_members = None  # membermask of each thread held before elect.sync (warpsync.gather_members)
        self.warned = set()
        self.released = np.zeros(0, np.int64)
        self.spin_pc, self.spin_cnt, self.spin_iter, self.spin_snap = -1, 0, 0, None

    # -- the loop ------------------------------------------------------------------------------------------------
    def run(self) -> int:
        """Run the batch; returns the warp-instructions executed. Per-pc counts are added to `counts`."""
        # NOTE: per-pc counts in Python lists while running (a list item += is ~4x cheaper than a NumPy one), added
        # to the launch's arrays when the batch ends
        npc = len(self.counts["warp"])
        wc, tc, pc_on = [0] * npc, [0] * npc, [0] * npc
        # per-warp counts as difference arrays over pc ranges: steps of every lane (the common case) in a list,
        # divergent steps per warp of the CTA in an array; summed up when the batch ends
        self.full_diff = [0] * (npc + 1)
        self.warp_diff = None if self.by_warp is None else np.zeros((self.by_warp.shape[0], npc + 1), np.int64)
        try:
            return self._loop(wc, tc, pc_on)
        finally:
            for key, acc in (("warp", wc), ("thread", tc), ("pred_on", pc_on)):
                self.counts[key] += np.array(acc, np.int64)
            if self.by_warp is not None:
                self._add_by_warp(npc)

    def _add_by_warp(self, npc: int) -> None:
        full = np.cumsum(np.array(self.full_diff[:npc], np.int64))
        per = np.cumsum(self.warp_diff[:, :npc], axis=1)
        self.by_warp[:, :npc] += per + full[None, :] * self.st.nctas

    def _loop(self, wc, tc, pc_on) -> int:
        st = self.st
        pc = st.pc
        instrs = st.prog.instrs
        regs = st.regs
        n_all = st.nlanes
        nwarps_all = n_all // 32
        trace = self.trace
        executed = 0
        budget = self.budget
        deadline = self.deadline
        rounds = 0
        rules = st.rules  # asynccheck's register rules (pending wgmma accumulators, wgmma.fence), None without it
        full_diff, warp_diff = self.full_diff, self.warp_diff
        warps_per_cta = st.padded // 32
        while True:
            rounds += 1
            if deadline is not None and rounds % CLOCK_CHECK == 0 and time.perf_counter() > deadline:
                self._over_time()
            m = int(pc.min())
            if m >= BLOCKED:
                if m >= EXITED:
                    break
                if st.strict and st.mbars is not None and st.mbars.flush_all():
                    continue  # strict timing: in-flight bulk copies complete only when nothing else can progress
                if release_stragglers(st):  # warps waiting for warpgroup mates that cannot come run without them
                    continue
                if st.wait_timeouts and st.mbars is not None and st.mbars.time_out_waits():
                    continue  # blocked try_waits return false: a bounded wait loop counts on to its trap
                if st.mbars is not None and st.mbars.time_out_a_cycle():
                    continue  # a try_wait whose time-out lets the other side go on (CUTLASS's prefetching waits)
                self._deadlock()
            mask = pc == m
            cnt = int(np.count_nonzero(mask))
            if cnt == n_all:
                lanes = FULL
                others = EXITED
                nw = nwarps_all
            else:
                lanes = np.flatnonzero(mask)
                others = int(np.where(mask, EXITED, pc).min())
                w = lanes >> 5
                nw = 1 + int(np.count_nonzero(w[1:] != w[:-1]))
            p = m
            while True:
                ins = instrs[p]
                wc[p] += nw
                tc[p] += cnt
                active = lanes
                nact = cnt
                if ins.guard is not None:
                    gi, neg = ins.guard
                    g = regs[gi][lanes]
                    nact = int(np.count_nonzero(g))
                    if neg:
                        nact = cnt - nact
                    if nact != cnt:
                        if neg:
                            g = ~g
                        active = np.flatnonzero(g) if lanes is FULL else lanes[g]
                pc_on[p] += nact
                st.clock += 1
                if trace:
                    self._trace(ins, active, nact)
                if rules is not None and nact and ins.op != "wgmma":
                    rules.on_instruction(st, ins, active)
                if ins.control:
                    pc[lanes] = p + 1
                    if nact:
                        ins.handler(st, ins, active)
                    if nact and 0 <= ins.target <= p and ins.op == "bra":
                        self.last_back = p
                        if nact == cnt:
                            self._spin_check(p, lanes, cnt)
                    break
                if nact:
                    ins.handler(st, ins, active)
                p += 1
                if p >= others:
                    break
            if not ins.control:
                pc[lanes] = p
            end = p + 1 if ins.control else p
            if lanes is FULL:
                full_diff[m] += 1
                full_diff[end] -= 1
            elif warp_diff is not None:
                first = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
                per_slot = np.bincount(w[first] % warps_per_cta, minlength=warps_per_cta)
                warp_diff[:, m] += per_slot
                warp_diff[:, end] -= per_slot
            executed += nw * (p - m + (1 if ins.control else 0))
            if executed > budget:
                self._over_budget(ins)
        self.executed = executed
        return executed

    def _spin_check(self, p, lanes, cnt):
        """A group that keeps taking the same backward branch with identical registers and no memory write in
        between loops forever (only it runs under lowest-pc scheduling): report it instead of burning the budget."""
        if p != self.spin_pc or cnt != self.spin_cnt:
            self.spin_pc, self.spin_cnt, self.spin_iter, self.spin_snap = p, cnt, 0, None
            return
        self.spin_iter += 1
        if self.spin_iter % SPIN_CHECK:
            return
        st = self.st
        la = st.lane_array(lanes)
        snap = (st.mem_writes, la.copy(), [r[lanes].copy() for r in st.regs])
        old = self.spin_snap
        self.spin_snap = snap
        if old is None or old[0] != snap[0] or not np.array_equal(old[1], snap[1]):
            return
        if all(np.array_equal(a, b) for a, b in zip(old[2], snap[2], strict=True)):
            ins = st.prog.instrs[p]
            cta, tid = st.where(int(la[0]))
            raise DeadlockError(
                f"kernel {st.prog.name} spins forever at PTX line {ins.line} (`{ins.text}`): {cnt} thread(s) from CTA "
                f"{cta} thread {tid} repeat the loop with identical registers and no memory write. It waits for "
                "something only another warp or CTA could change; ptxsim runs the lowest pc first and CTA batches "
                "one after another, so a flag set by a warp further ahead or by a later CTA is never seen")

    def _trace(self, ins, active, nact):
        la = self.st.lane_array(active) if nact else np.zeros(0, np.int64)
        shown = ",".join(map(str, la[:8].tolist())) + ("..." if nact > 8 else "")
        print(f"[ptxsim] {self.st.prog.name} pc={ins.pc} line={ins.line} active={nact} lanes=[{shown}] {ins.text}",
              file=sys.stderr)

    def _loop_where(self, ins) -> str:
        if self.last_back < 0:
            return f"last at PTX line {ins.line}: `{ins.text}`"
        b = self.st.prog.instrs[self.last_back]
        top = self.st.prog.instrs[b.target]
        return (f"looping at PTX lines {top.line}-{b.line} (the backward branch `{b.text}` at line {b.line}); "
                f"last at PTX line {ins.line}")

    def _over_budget(self, ins):
        raise InstructionBudgetExceeded(
            f"kernel {self.st.prog.name} ran more than {self.budget} warp-instructions ({self._loop_where(ins)}); "
            "a runaway loop? Raise the limit with launch(..., budget=N) or PTXSIM_BUDGET")

    def _over_time(self):
        m = int(self.st.pc.min())
        ins = self.st.prog.instrs[min(m, len(self.st.prog.instrs) - 1)] if m < BLOCKED else self.st.prog.instrs[0]
        raise TimeLimitExceeded(
            f"kernel {self.st.prog.name} ran longer than its {self.time_limit:g} s wall-clock limit "
            f"({self._loop_where(ins)}); a runaway loop? Raise the limit with launch(..., time_limit=S) or "
            "PTXSIM_TIME_LIMIT (0 = none)")

    # -- exits and barriers --------------------------------------------------------------------------------------
    def exit(self, lanes, ins=None):
        st = self.st
        la = st.lane_array(lanes)
        st.pc[la] = EXITED
        self.live -= np.bincount(st.slot[la], minlength=st.nctas)
        for h in st.hooks:
            h.on_exit(st, la)
        self._release()
        if st.warp_syncs is not None:  # exited members no longer hold back a bar.warp.sync
            st.warp_syncs.on_exit(st, la)
        if self.held_members is not None:  # ... nor an elect.sync
            release_elect_on_exit(st, la)
        if st.cluster is not None:  # exited threads no longer hold back barrier.cluster
            st.cluster.complete(st)
            st.cluster.mark_exited(st, ins, la)

    def barrier(self, ins, lanes, bid, cnt, mode, pred):
        st = self.st
        la = st.lane_array(lanes)
        slots = st.slot[la]
        for h in st.hooks:
            h.on_barrier(st, ins, la, bid)
        if not isinstance(lanes, slice) and ins.pc not in self.warned and (ins.op == "bar" or ".aligned" in ins.mods):
            self._check_aligned(ins, la)
        if mode != "arrive":
            st.pc[la] = ins.pc + 1 + BLOCKED
            self.wait_id[la] = bid
        if pred is not None:
            self.red_val[la] = pred
        nc = st.nctas
        w = la >> 5
        if bid.size and bid[0] == bid[-1] and np.all(bid == bid[0]):  # the usual case: one barrier id
            b = int(bid[0])
            self.arrived[:, b] += np.bincount(slots, minlength=nc)
            firsts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
            wf = w[firsts]
            new = ~self.warp_flag[wf, b]
            self.warp_flag[wf, b] = True
            self.arrived_warps[:, b] += np.bincount(slots[firsts][new], minlength=nc)
        else:
            np.add.at(self.arrived, (slots, bid), 1)
            fresh = ~self.warp_flag[w, bid]
            if fresh.any():
                self.warp_flag[w[fresh], bid[fresh]] = True
                uw, first = np.unique(w[fresh] * 16 + bid[fresh], return_index=True)
                np.add.at(self.arrived_warps, (slots[fresh][first], bid[fresh][first]), 1)
        if cnt is not None:
            self.expect[slots, bid] = cnt
        self._release()

    def _check_aligned(self, ins, la):
        """Warn (once per instruction) when an .aligned barrier is reached by part of a warp's running threads."""
        w = la >> 5
        ws = np.unique(w)
        pcs = self.st.pc[(ws[:, None] * 32 + np.arange(32)).reshape(-1)].reshape(len(ws), 32)
        alive = np.count_nonzero(pcs < EXITED, axis=1)
        present = np.bincount(np.searchsorted(ws, w), minlength=len(ws))
        if np.any(present < alive):
            import warnings

            from ptxsim.errors import PtxSimWarning

            self.warned.add(ins.pc)
            warnings.warn(PtxSimWarning(f"kernel {self.st.prog.name}: `{ins.text}` at PTX line {ins.line} is reached "
                                        "in divergent code (an .aligned barrier must be executed by all running "
                                        "threads of the warp); behaviour on hardware is undefined. "
                                        "sanitize='synccheck' reports where."), stacklevel=2)

    def _release(self):
        need_all = self.live[:, None]
        ready = np.where(self.expect >= 0, self.arrived_warps * 32 >= self.expect, self.arrived >= need_all)
        ready &= self.arrived > 0
        if not ready.any():
            return
        st = self.st
        pc = st.pc
        waiting = np.flatnonzero((pc >= BLOCKED) & (pc < EXITED))
        waiting = waiting[self.wait_id[waiting] >= 0]  # not the threads blocked on an mbarrier
        rel = waiting[ready[st.slot[waiting], self.wait_id[waiting]]] if waiting.size else waiting
        if rel.size:
            if self.has_red:
                self._bar_red(rel)
            pc[rel] -= BLOCKED
            self.wait_id[rel] = -1
        self.arrived[ready] = 0
        self.arrived_warps[ready] = 0
        self.expect[ready] = -1
        self.warp_flag &= ~ready[self.warp_slot]
        self.released = rel  # the threads that waited (bar.sync), for hooks; bar.arrive threads are not among them
        for h in st.hooks:
            h.on_release(st, ready)

    def _bar_red(self, rel):
        st = self.st
        bar_pc = st.pc[rel] - BLOCKED - 1
        for p in np.unique(bar_pc):
            ins = st.prog.instrs[int(p)]
            if not ins.aux.red:
                continue
            sub = rel[bar_pc == p]
            key = st.slot[sub] * 16 + self.wait_id[sub]
            uk, inv = np.unique(key, return_inverse=True)
            ones = np.bincount(inv, weights=self.red_val[sub]).astype(np.int64)
            tot = np.bincount(inv).astype(np.int64)
            from ptxsim.ptxtypes import TYPES

            op = ins.aux.redop
            if op == ".popc":
                st.write(ins.aux.dst, sub, ones[inv].astype(np.uint32), TYPES["u32"])
            else:
                r = (ones == tot) if op == ".and" else (ones > 0)
                st.write(ins.aux.dst, sub, r[inv], TYPES["pred"])

    def _deadlock(self):
        st = self.st
        pc = st.pc
        waiting = np.flatnonzero((pc >= BLOCKED) & (pc < EXITED))
        key = st.slot[waiting] * (1 << 40) + self.wait_id[waiting] * (1 << 32) + (pc[waiting] - BLOCKED)
        uk, first, counts = np.unique(key, return_index=True, return_counts=True)
        lines = []
        for _, f, c in list(zip(uk, first, counts, strict=True))[:12]:
            lane = int(waiting[f])
            slot, bid = int(st.slot[lane]), int(self.wait_id[lane])
            if bid < 0:  # blocked in mbarrier.try_wait / test_wait, barrier.cluster.wait, bar.warp.sync, setmaxnreg
                lines.append(st.mbars.deadlock_line(lane, int(c)) if bid == -2 else
                             st.warp_syncs.deadlock_line(st, lane, int(c)) if bid == WARP_SYNC_WAIT else
                             elect_deadlock_line(st, lane, int(c)) if bid == ELECT_WAIT else
                             st.regpools.deadlock_line(st, lane, int(c)) if bid == REGPOOL_WAIT else
                             st.cluster.deadlock_line(st, lane, int(c)))
                continue
            p = int(pc[lane] - BLOCKED - 1)
            ins = st.prog.instrs[p]
            cta, _ = st.where(lane)
            exp = int(self.expect[slot, bid])
            want = f"{exp} threads (counted per warp)" if exp >= 0 else f"all {int(self.live[slot])} live threads"
            lines.append(f"  CTA {cta}: {c} thread(s) waiting at barrier {bid}, pc {p} (PTX line {ins.line}: "
                         f"`{ins.text}`); arrived {int(self.arrived[slot, bid])}, needs {want}")
        more = f"\n  ... and {len(uk) - 12} more group(s)" if len(uk) > 12 else ""
        raise DeadlockError(f"deadlock in kernel {st.prog.name}: no thread can make progress\n" + "\n".join(lines)
                            + more)
