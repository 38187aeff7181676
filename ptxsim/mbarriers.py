"""mbarrier objects of one batch of CTAs: phases, pending arrival counts, transaction (tx) counts, the threads
blocked in try_wait / test_wait, and the bulk copies whose completion a phase signals.

An mbarrier is a 64-bit object in shared memory; ptxsim keeps its state here, keyed by the object's byte index in
the batch's shared-memory array (CTA base + offset), and leaves the 8 shared bytes untouched.
The opaque state `mbarrier.arrive` returns is (phase number << 32) | pending count after the arrival.

Strict timing (st.strict, ptxsim/README.md): a bulk copy stays in flight (its destination holds poison, its bytes do
not count against the tx-count) until a thread waiting on its barrier finds the phase incomplete a second time, or no
thread could otherwise progress; its bytes land in shared memory only when a thread observes the completed phase
(a wait that returns true, or a blocked wait that resumes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import MbarrierError
from ptxsim.lanes import BLOCKED, EXITED
from ptxsim.ptxtypes import TYPES

MAX_COUNT = (1 << 20) - 1  # arrival counts are 1 .. 2^20 - 1 (PTX ISA, mbarrier.init)
TX_LIMIT = (1 << 20) - 1  # tx-count range is [-(2^20 - 1), 2^20 - 1]
MBAR_WAIT = -2  # Scheduler.wait_id of a thread blocked on an mbarrier (bar.sync ids are 0..15)


@dataclass
class Mbarrier:
    """State of one mbarrier object (mutable: it is the simulated hardware state)."""

    phys: int  # byte index in the batch's shared-memory array (the table key)
    offset: int  # shared-space address of the object (for messages)
    cta: int  # batch slot
    expected: int
    pending: int
    tx: int = 0
    phase: int = 0  # number of completed phases; the current (incomplete) phase has parity phase & 1
    line: int = 0  # PTX line of the init
    copies: list = field(default_factory=list)  # async-copy records completed by this phase (for sanitizers)
    inflight: list = field(default_factory=list)  # strict: (record, bytes, lane, ins) of copies not yet complete
    completed: list = field(default_factory=list)  # strict: records completed in the current phase
    landing: list = field(default_factory=list)  # strict: (phase, records) completed, not yet observed
    init_lane: int = -1  # the lane that initialised it (asynccheck's visibility rules, ptxsim/asyncrules.py)
    visible_cta: bool = False  # asynccheck: the init is visible to the other threads of its CTA
    visible_cluster: bool = False  # ... and to the cluster's other CTAs
    released: bool = False  # the init thread fenced (fence.mbarrier_init) or arrived (release) on barrier.cluster
    async_visible: bool = False  # the init thread fenced it for the async proxy (fence.proxy.async / mbarrier_init)
    complete_clock: list = field(default_factory=list)  # st.clock at which each phase completed
    tx_seen: bool = False  # a transaction count was ever expected or completed (a barrier async copies complete)

    def describe(self) -> str:
        return (f"mbarrier at shared address {self.offset:#x} (initialised at PTX line {self.line}): current phase "
                f"{self.phase} (parity {self.phase & 1}) waits for {self.pending} of {self.expected} arrival(s) and "
                f"tx-count {self.tx}")


class MbarrierTable:
    """Every initialised mbarrier of a batch and the threads waiting on them."""

    def __init__(self, st):
        self.st = st
        self.strict = st.strict
        self.bars: dict[int, Mbarrier] = {}
        # strict: the wait (pc, phase) at which each lane last got false (the next try at it may block)
        self.false_pc = np.full(st.nlanes, -1, np.int64)
        self.false_want = np.full(st.nlanes, -1, np.int64)
        self.wait_phys = np.full(st.nlanes, -1, np.int64)
        self.wait_phase = np.full(st.nlanes, -1, np.int64)  # released when the barrier's phase exceeds this
        self.seen: dict[int, np.ndarray] = {}  # barrier -> per lane, the newest phase the thread saw complete
        # wait pc -> thread counts [free, tx, arrive, false] (stats.WarpCounts.mbarrier_waits; timing model v2 only)
        self.wait_kinds: dict[int, list] = {}
        self.completions = 0  # phases completed so far in the batch (time_out_a_cycle's progress test)
        self.cycle_timed_out_at = -1  # `completions` when time_out_a_cycle last timed waits out

    @staticmethod
    def of(st) -> MbarrierTable:
        if st.mbars is None:
            st.mbars = MbarrierTable(st)
        return st.mbars

    # -- lookups -------------------------------------------------------------------------------------------------
    def get(self, ins, phys: int, lane: int) -> Mbarrier:
        bar = self.bars.get(phys)
        if bar is None:
            st = self.st
            cta, tid = st.where(lane)
            off = phys % st.smem_stride
            raise MbarrierError(f"{ins.op} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} "
                                f"thread {tid}: shared address {off:#x} is not an initialised mbarrier (expected "
                                "mbarrier.init on it first, and no mbarrier.inval since)")
        return bar

    def groups(self, phys: np.ndarray):
        """(barrier byte index, positions in phys) per distinct barrier, in order of first appearance."""
        uniq, first, inv = np.unique(phys, return_index=True, return_inverse=True)
        for j in np.argsort(first):
            yield int(uniq[j]), np.flatnonzero(inv == j)

    # -- operations ----------------------------------------------------------------------------------------------
    def init(self, ins, phys: np.ndarray, la: np.ndarray, counts: np.ndarray) -> None:
        st = self.st
        for p, pos in self.groups(phys):
            c = int(counts[pos[-1]])
            if not 1 <= c <= MAX_COUNT:
                cta, tid = st.where(int(la[pos[-1]]))
                raise MbarrierError(f"mbarrier.init at PTX line {ins.line} in kernel {st.prog.name}, CTA {cta} thread "
                                    f"{tid}: count {c}; expected 1 .. {MAX_COUNT}")
            old = self.bars.get(p)
            if old is not None:
                self._drain(old)
            self.bars[p] = Mbarrier(p, p % st.smem_stride, p // st.smem_stride, c, c, line=ins.line,
                                    init_lane=int(la[pos[-1]]))
            self.seen.pop(p, None)

    def inval(self, phys: np.ndarray) -> None:
        for p, _ in self.groups(phys):
            self.bars.pop(p, None)

    def arrive(self, ins, phys, la, counts, tx_add, drop: bool, no_complete: bool) -> np.ndarray:
        """Arrivals (after adding tx_add to each barrier's tx-count); returns the opaque state per lane."""
        state = np.zeros(len(phys), np.uint64)
        for p, pos in self.groups(phys):
            bar = self.get(ins, p, int(la[pos[0]]))
            self._rules(ins, bar, la[pos])
            self._add_tx(ins, bar, int(tx_add[pos].sum()), int(la[pos[0]]))
            n = int(counts[pos].sum())
            if n > bar.pending:
                raise MbarrierError(self._where(ins, la[pos[0]]) + f": {n} arrival(s) on the {bar.describe()}; "
                                    f"expected at most its pending count {bar.pending} (a phase error: arriving "
                                    "more often per phase than the count given to mbarrier.init)")
            bar.pending -= n
            for h in self.st.hooks:
                h.on_mbar_arrive(self.st, bar, la[pos])
            if drop:
                bar.expected -= n
            state[pos] = (np.uint64(bar.phase) << np.uint64(32)) | np.uint64(bar.pending)
            if no_complete and bar.pending == 0 and bar.tx == 0:
                raise MbarrierError(self._where(ins, la[pos[0]]) + f": .noComplete arrival completes the phase of "
                                    f"the {bar.describe()}")
            self._check_tx(ins, bar, int(la[pos[0]]))
            self._maybe_complete(bar)
        return state

    def add_tx(self, ins, phys, la, tx) -> None:
        """expect_tx (tx > 0) or complete_tx (tx < 0) without an arrival."""
        for p, pos in self.groups(phys):
            bar = self.get(ins, p, int(la[pos[0]]))
            self._rules(ins, bar, la[pos])
            self._add_tx(ins, bar, int(tx[pos].sum()), int(la[pos[0]]))
            self._check_tx(ins, bar, int(la[pos[0]]))
            self._maybe_complete(bar)

    def start_copy(self, ins, p: int, lane: int, nbytes: int, rec) -> None:
        """Strict: a bulk copy of nbytes for barrier p is issued; it completes when flush() says so."""
        bar = self.get(ins, p, lane)
        self._rules(ins, bar, np.array([lane]), copy=True)
        bar.inflight.append((rec, nbytes, lane, ins))

    def flush(self, bar: Mbarrier) -> bool:
        """Strict: complete bar's in-flight copies, oldest first, until its current phase completes (copies issued
        for a later phase stay in flight). Returns whether any completed."""
        if not bar.inflight:
            return False
        start = bar.phase
        while bar.inflight and bar.phase == start:
            rec, nbytes, lane, ins = bar.inflight.pop(0)
            bar.completed.append(rec)
            self._add_tx(ins, bar, -nbytes, lane)
            self._check_tx(ins, bar, lane)
            self._maybe_complete(bar)
        return True

    def flush_all(self) -> bool:
        """Strict: no thread can progress; complete in-flight copies (as the hardware eventually does)."""
        return any([self.flush(bar) for bar in list(self.bars.values())])

    def observe(self, bar: Mbarrier, want: int) -> None:
        """Strict: a thread observed the completion of phase `want`: the copies of phases up to it land."""
        if not bar.landing or bar.landing[0][0] > want:
            return
        keep = []
        for phase, recs in bar.landing:
            if phase > want:
                keep.append((phase, recs))
                continue
            for rec in recs:
                self._land(rec)
        bar.landing = keep

    def _land(self, rec) -> None:
        st = self.st
        st.mem_writes += 1
        d = rec["data"]
        st.smem[rec["phys"][:, None] + np.arange(d.shape[1])] = d
        sel = np.arange(len(rec["phys"]))
        for h in st.hooks:
            h.on_async_complete(st, rec, sel)

    def _drain(self, bar: Mbarrier) -> None:
        """Land every copy of a barrier that is re-initialised (its bytes arrive regardless)."""
        if bar.copies:
            self.complete_copies(bar)
        for rec in [r for r, *_ in bar.inflight] + bar.completed + [r for _, rs in bar.landing for r in rs]:
            self._land(rec)
        bar.inflight, bar.completed, bar.landing = [], [], []

    def complete_copy(self, ins, p: int, lane: int, nbytes: int, rec) -> None:
        """A bulk copy of nbytes landed: complete_tx on barrier p, and remember rec until the phase completes."""
        bar = self.get(ins, p, lane)
        self._rules(ins, bar, np.array([lane]), copy=True)
        if rec is not None:
            bar.copies.append(rec)
        self._add_tx(ins, bar, -nbytes, lane)
        self._check_tx(ins, bar, lane)
        self._maybe_complete(bar)

    # -- waits ---------------------------------------------------------------------------------------------------
    def wanted(self, ins, phys, la, token, parity: bool) -> np.ndarray:
        """The phase number each lane's wait names (without observing anything)."""
        want = np.zeros(len(phys), np.int64)
        for p, pos in self.groups(phys):
            bar = self.get(ins, p, int(la[pos[0]]))
            if parity:
                want[pos] = np.where((token[pos] & 1) == (bar.phase & 1), bar.phase, bar.phase - 1)
            else:
                want[pos] = (token[pos] >> np.uint64(32)).astype(np.int64)
        return want

    def done(self, ins, phys, la, token, parity: bool) -> np.ndarray:
        """Whether the phase named by token (a parity or an opaque state) has completed, per lane, and the phase
        number each lane waits for."""
        out = np.zeros(len(phys), np.bool_)
        want = np.zeros(len(phys), np.int64)
        for p, pos in self.groups(phys):
            bar = self.get(ins, p, int(la[pos[0]]))
            self._rules(ins, bar, la[pos])
            if parity:
                # the phase of parity `token` is complete unless it is the current one
                want[pos] = np.where((token[pos] & 1) == (bar.phase & 1), bar.phase, bar.phase - 1)
            else:
                want[pos] = (token[pos] >> np.uint64(32)).astype(np.int64)
            out[pos] = bar.phase > want[pos]
            self._observe(ins, bar, la[pos], want[pos], out[pos])
            if out[pos].any():
                self._observed(bar, la[pos][out[pos]], int(want[pos][out[pos]].max()))
        return out, want

    def _observe(self, ins, bar: Mbarrier, la, want, done) -> None:
        """Remember the phases each thread saw complete; asynccheck reports a wait that is satisfied by a phase the
        same thread already waited for (a phase bit not flipped between rounds: the wait passes at once while the
        phase it meant is still running)."""
        seen = self.seen.get(bar.phys)
        if seen is None:
            seen = self.seen[bar.phys] = np.full(self.st.nlanes, -2, np.int64)
        stale = done & (want >= 0) & (want <= seen[la])
        if stale.any():
            i = int(np.flatnonzero(stale)[0])
            for h in self.st.hooks:
                h.on_async_hazard(self.st, ins, int(la[i]), bar.offset, "shared",
                                  f"wait on mbarrier at shared address {bar.offset:#x} is satisfied by phase "
                                  f"{int(want[i])}, which this thread already waited for (current phase "
                                  f"{bar.phase}): a phase / parity bit not flipped between rounds?")
        seen[la[done]] = np.maximum(seen[la[done]], want[done])

    def block(self, la: np.ndarray, phys: np.ndarray, want: np.ndarray) -> None:
        st = self.st
        st.pc[la] += BLOCKED
        st.sched.wait_id[la] = MBAR_WAIT
        self.wait_phys[la] = phys
        self.wait_phase[la] = want

    def _release(self, bar: Mbarrier, p: int) -> None:
        st = self.st
        sched = getattr(st, "sched", None)
        if sched is None:
            return
        rel = np.flatnonzero((self.wait_phys == p) & (sched.wait_id == MBAR_WAIT) & (self.wait_phase < bar.phase))
        if rel.size:
            seen = self.seen.get(p)
            if seen is not None:
                seen[rel] = np.maximum(seen[rel], self.wait_phase[rel])
            self._observed(bar, rel, int(self.wait_phase[rel].max()))
            st.pc[rel] -= BLOCKED
            sched.wait_id[rel] = -1
            self.wait_phys[rel] = -1

    # -- internals -----------------------------------------------------------------------------------------------
    def _rules(self, ins, bar: Mbarrier, la: np.ndarray, copy: bool = False) -> None:
        """asynccheck: the init must be visible to these lanes (and to the async proxy, for a bulk copy's
        complete_tx); a peer CTA's use is a remote access."""
        rules = self.st.rules
        if rules is not None:
            rules.mbar_use(self.st, ins, bar, la)
            if copy:
                rules.mbar_async_use(self.st, ins, bar, int(la[0]))
            if self.st.cluster is not None:
                rules.remote_access(self.st, ins, la, np.full(len(la), bar.cta), bar.phys)

    def _observed(self, bar: Mbarrier, la: np.ndarray, want: int) -> None:
        """Threads la observed phase `want` of bar complete: strict copies land; asynccheck's exit rule notes it."""
        if bar.landing:
            self.observe(bar, want)
        for h in self.st.hooks:
            h.on_mbar_observe(self.st, bar, la, want)
        rules = self.st.rules
        if rules is not None and rules.pending:
            rules.observed(self.st, bar.cta, bar, want)

    def _where(self, ins, lane) -> str:
        st = self.st
        cta, tid = st.where(int(lane))
        return f"{ins.op} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} thread {tid}"

    def note_wait(self, pc: int, phys: np.ndarray, want: np.ndarray, result: np.ndarray) -> None:
        """Count the tries at pc by kind (stats.WarpCounts): a phase before the first (want < 0) passes free; a try
        that returned false (strict) waited on nothing."""
        kinds = self.wait_kinds.setdefault(pc, [0, 0, 0, 0])
        kinds[3] += int(np.count_nonzero(~result))
        phys, want = phys[result], want[result]
        for p, pos in self.groups(phys):
            bar = self.bars.get(p)
            free = int(np.count_nonzero(want[pos] < 0))
            kinds[0] += free
            kinds[1 if bar is not None and bar.tx_seen else 2] += len(pos) - free

    def _add_tx(self, ins, bar: Mbarrier, delta: int, lane: int) -> None:
        bar.tx += delta
        if delta:
            bar.tx_seen = True
        if abs(bar.tx) > TX_LIMIT:
            raise MbarrierError(self._where(ins, lane) + f": tx-count {bar.tx} of the {bar.describe()} is outside "
                                f"[-{TX_LIMIT}, {TX_LIMIT}]")

    def _check_tx(self, ins, bar: Mbarrier, lane: int) -> None:
        if bar.pending == 0 and bar.tx < 0:
            for h in self.st.hooks:
                h.on_async_hazard(self.st, ins, lane, bar.offset, "shared",
                                  f"tx-count underflow: every arrival of the phase is in but {-bar.tx} more byte(s) "
                                  f"completed than expected (mbarrier at shared address {bar.offset:#x}, phase "
                                  f"{bar.phase})")

    def _maybe_complete(self, bar: Mbarrier) -> None:
        if bar.pending or bar.tx:
            return
        bar.phase += 1
        self.completions += 1
        bar.pending = bar.expected
        bar.complete_clock.append(self.st.clock)
        for h in self.st.hooks:
            h.on_mbar_phase(self.st, bar)
        if bar.completed:
            bar.landing.append((bar.phase - 1, bar.completed))
            bar.completed = []
        if bar.copies:
            self.complete_copies(bar)
        self._release(bar, bar.phys)

    def complete_copies(self, bar: Mbarrier) -> None:
        st = self.st
        for rec in bar.copies:
            sel = np.arange(len(rec["phys"]))
            for h in st.hooks:
                h.on_async_complete(st, rec, sel)
        bar.copies = []

    def time_out_waits(self) -> bool:
        """Every thread blocked in try_wait / test_wait resumes with false, as a hardware wait whose time limit
        passed (launch's wait_timeouts); False if none was blocked on an mbarrier."""
        st = self.st
        sched = st.sched
        lanes = np.flatnonzero((sched.wait_id == MBAR_WAIT) & (st.pc >= BLOCKED) & (st.pc < EXITED))
        if not lanes.size:
            return False
        resume = st.pc[lanes] - BLOCKED
        for p in np.unique(resume):
            la = lanes[resume == p]
            ins = st.prog.instrs[int(p) - 1]
            st.write(ins.ops[0], la, np.zeros(len(la), np.bool_), TYPES["pred"])
            st.pc[la] = p
            sched.wait_id[la] = -1
            self.wait_phys[la] = -1
        return True

    def time_out_a_cycle(self) -> bool:
        """When every live thread is blocked and threads wait on two or more mbarriers, the blocked try_waits return
        false, as a hardware try_wait does when its time limit passes: a wait outside a retry loop (CUTLASS's
        consumer_try_wait, which fetches the next stage's token before the last one is released) goes on and may
        release what the other side waits for. Once per progress: when no phase has completed since the last time-out,
        nothing timed out changed anything, and the launch is the deadlock it reports. One thread alone on one
        barrier is a deadlock at once (its time-out could free nobody)."""
        st = self.st
        lanes = np.flatnonzero((st.sched.wait_id == MBAR_WAIT) & (st.pc >= BLOCKED) & (st.pc < EXITED))
        if not lanes.size or self.completions == self.cycle_timed_out_at:
            return False
        if np.unique(self.wait_phys[lanes]).size < 2:
            return False
        self.cycle_timed_out_at = self.completions
        return self.time_out_waits()

    def deadlock_line(self, lane: int, count: int) -> str:
        st = self.st
        p = int(self.wait_phys[lane])
        bar = self.bars.get(p)
        ins = st.prog.instrs[int(st.pc[lane] - BLOCKED - 1)]
        cta, _ = st.where(lane)
        what = bar.describe() if bar is not None else f"mbarrier at byte {p} (invalidated)"
        return (f"  CTA {cta}: {count} thread(s) waiting at PTX line {ins.line} (`{ins.text}`) for phase "
                f"{int(self.wait_phase[lane])} of the {what}; that phase can never complete")

