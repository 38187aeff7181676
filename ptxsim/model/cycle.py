"""Model v2: cycle-approximate timing of one SM (issue #29, item 1).

The CTAs resident on one SM (occupancy.py's blocks per SM, or fewer when the grid is small) each run the
representative warp stream of cycle_trace.py. Their warps sit on four sub-partition schedulers (warp i of the SM on
SMSP i mod 4); each scheduler issues at most one warp-instruction per clock, the oldest warp that can go first.
A warp can issue its next instruction when
  - its previous instruction issued at least one clock before (in-order issue), or BRANCH_REDIRECT_CLK + 1 clocks
    before when that was a taken branch (no branch prediction: the warp's fetch restarts at the target),
  - every source register is ready (scoreboard: producer issue + cycle_table.LATENCY_CLK of the producer's class;
    a global load's destination is ready when its memory request returns),
  - the instruction's pipe in its SMSP is free (a warp-instruction holds its pipe costs.class_cycles clocks: FMA 1,
    ALU 2, LSU 4, XU 8, tensor by FLOPs),
  - it is not waiting at a barrier (bar.sync: every warp of its CTA arrived), a wgmma.wait_group N (at most N of the
    warp's committed wgmma groups still running), a cp.async wait or an mbarrier wait (the CTA's async copies done).
Memory requests (global loads, stores, atomics, cp.async copies) pass through per-SM servers whose rates are the
SM's share of the device's bandwidth: DRAM (peak x dram_achievable_fraction x bandwidth_share / active SMs), L2
(l2_bytes_per_clk_per_sm x SMs given x l2_achievable_fraction / active SMs, at most the SM's L1 fill rate) and the
shared-memory wavefront path; a request waits for its server (queueing when oversubscribed) and then for the
unloaded latency of the level its bytes come from (the L1-hit / L2 / DRAM mix the cache model counted, costs.py's
latencies). Bytes per request, the level mix and wavefronts per shared access are the launch's averages.
wgmma: each warp's share of a warpgroup's wgmma holds its SMSP's tensor pipe FLOPs / (peak x fraction) clocks and
completes max(pipe time, wgmma_latency_clk) after it starts; the warp issues on until wgmma.wait_group.
Little's law, latency hiding by more warps, ILP and overlap of async work come out of the schedule.

Kernel time: the critical SM runs ceil(G / A) CTAs, B at a time (occupancy); a CTA that finishes hands its slot to
the next, so one CTA's drain overlaps the next one's start. Up to CTA_ROUNDS x B CTAs are simulated; the rest cost the
steady time per CTA after the first round. Loops run LOOP_WARMUP + STEADY_WINDOW iterations; the remaining
iterations cost the window's mean time per warp, once per round of resident CTAs, and ask each memory server for the
window's service per warp and iteration: the run lasts at least each server's whole service (a FIFO server cannot
serve faster than its rate, however fast the window issued). Inside loops whose SASS is known (sass.loop_issue) a
warp waits ptxas's stall counts after each instruction instead of one clock (cycle_table.SASS_BRANCH_REFETCH_CLK).
The limiter is the busiest unit (issue slots, a pipe, a memory server) when it is busy for more than
BUSY_LIMITER_FRACTION of the time, else "latency".
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ptxsim.model.cycle_ops import (  # noqa: F401 (_Op, _Memory, _ops, _memory: the tests' handles)
    ALU,
    ASYNC_COPY,
    ASYNC_WAIT,
    BAR,
    BULK_STORE,
    BULK_WAIT_READ,
    COMMIT,
    LOAD,
    MBAR_ARRIVE,
    MBAR_WAIT,
    MMA,
    NOP,
    SHARED,
    STORE,
    WAIT_ANY,
    WAIT_ARRIVE,
    WAIT_TX,
    WAIT_WG,
    WGMMA,
    _Memory,
    _memory,
    _Op,
    _ops,
)
from ptxsim.model.cycle_table import (
    BRANCH_REDIRECT_CLK,
    BUSY_LIMITER_FRACTION,
    FIXED_LATENCY_CLASSES,
    SASS_BRANCH_REFETCH_CLK,
)
from ptxsim.model.cycle_trace import Role, Trace, warp_roles
from ptxsim.model.occupancy import check_sm_count
from ptxsim.model.sass import loop_issue, loop_unrolls
from ptxsim.model.timing import COMPONENTS, Estimate, _check_args, _counters, _grid_blocks

MODEL_VERSION = "v2"


def _bulk_store(op: _Op) -> bool:
    """A bulk copy to global memory (completes in a bulk group, not on an mbarrier)."""
    return op.kind == ASYNC_COPY and op.arg == BULK_STORE
# Instruction kinds that ask a per-SM memory server for service.
_SERVED = frozenset({LOAD, STORE, SHARED, WGMMA, ASYNC_COPY})
# CTAs simulated per resident slot before the steady state is multiplied out (the first round fills the SM).
CTA_ROUNDS = 3
INF = float("inf")

class _Server:
    """A FIFO server of one per-SM resource: `rate` units per clock."""

    __slots__ = ("rate", "free", "busy")

    def __init__(self, rate: float):
        self.rate, self.free, self.busy = rate, 0.0, 0.0

    def serve(self, t: float, amount: float) -> float:
        """Time the request's last unit has passed, for a request arriving at t."""
        if amount <= 0 or self.rate <= 0:
            return t
        service = amount / self.rate
        start = max(t, self.free)
        self.free = start + service
        self.busy += service
        return self.free


@dataclass(frozen=True)
class SMRun:
    """One simulated round of resident CTAs on one SM."""

    clocks: float
    busy: Mapping[str, float]      # busy clocks per unit (issue = the busiest SMSP's issue slots)
    instructions: int
    forced_waits: int = 0          # mbarrier waits let pass because every warp waited (a replay artefact)


def simulate_sm(trace, ops: list[_Op], mem: _Memory, ctas: int, warps_per_cta: int,
                smsps: int = 4, total_ctas: int | None = None,
                issue: Mapping[int, tuple[float, float]] | None = None,
                ready_after: Mapping[int, float] | None = None) -> SMRun:
    """Run `total_ctas` CTAs (default `ctas`) of `warps_per_cta` warps on one SM that holds `ctas` of them at once: a
    CTA that finishes frees its slot for the next (module docstring). `trace` is one Trace every warp runs, or the
    CTA's warp roles (cycle_trace.Role: the slots of the CTA that run each stream, and how many of their
    arrival-completed mbarrier waits pass free). At most CTA_ROUNDS x ctas CTAs are simulated; the rest cost the
    steady time per CTA of the CTAs after the first round. `issue` ({pc: (gap, unroll)}, sass.loop_issue): in the
    loops whose ptxas schedule is known, the warp waits `gap` clocks after each instruction (its stall counts) and
    SASS_BRANCH_REFETCH_CLK / unroll after a taken branch, in place of 1 and BRANCH_REDIRECT_CLK; `ready_after`
    ({pc: clocks}) overrides the result latency of those of them whose wait the stall counts cover."""
    ready_after = ready_after or {}
    issue = issue or {}
    # clocks a warp cannot issue after issuing pc: (not taken, taken), beyond the next clock
    dead = [(issue[pc][0] - 1.0, issue[pc][0] - 1.0 + SASS_BRANCH_REFETCH_CLK / issue[pc][1]) if pc in issue
            else (0.0, BRANCH_REDIRECT_CLK) for pc in range(len(ops))]
    roles = (Role(tuple(range(warps_per_cta)), trace),) if isinstance(trace, Trace) else tuple(trace)
    role_of = [0] * warps_per_cta
    for r, role in enumerate(roles):
        for slot in role.slots:
            role_of[slot] = r
    total = ctas if total_ctas is None else max(int(total_ctas), 1)
    ctas = min(ctas, total)
    to_run = min(total, CTA_ROUNDS * ctas)
    n_warps = ctas * warps_per_cta
    if n_warps == 0 or not any(role.trace.pcs for role in roles):
        return SMRun(0.0, {}, 0)
    wpc = warps_per_cta
    w_role = [role_of[w % wpc] for w in range(n_warps)]
    w_pcs = [roles[r].trace.pcs for r in w_role]
    w_len = [len(p) for p in w_pcs]
    w_redirects = [roles[r].trace.redirects for r in w_role]
    free_of = [getattr(roles[r], "free_waits", 0) for r in w_role]
    # mbarrier rings: warps that wait on copy-completed barriers and arrive on others release a ring's slots
    tx_waits_of = [sum(1 for pc in role.trace.pcs if ops[pc].kind == MBAR_WAIT and ops[pc].arg == WAIT_TX)
                   for role in roles]
    plain_arrives_of = [sum(1 for pc in role.trace.pcs if ops[pc].kind == MBAR_ARRIVE and not ops[pc].arg)
                        for role in roles]
    per_release = [max(1, round(plain_arrives_of[r] / tx_waits_of[r])) if tx_waits_of[r] and plain_arrives_of[r]
                   else 0 for r in range(len(roles))]
    releasers = [s for s in range(wpc) if per_release[role_of[s]]]
    # warps that fill full slots: bulk copies or arrive.expect_tx (a consumer's release arrives fill nothing)
    fills = [any(ops[pc].arg and ops[pc].kind in (ASYNC_COPY, MBAR_ARRIVE) and not _bulk_store(ops[pc])
                 for pc in set(role.trace.pcs))
             for role in roles]
    producers = [s for s in range(wpc) if fills[role_of[s]]]

    started = ctas
    cta_finish: list[float] = []
    slot_done = [0] * ctas
    slot_end = [0.0] * ctas
    servers = {"dram": _Server(mem.dram_rate), "l2": _Server(mem.l2_rate), "shared": _Server(mem.shared_rate)}
    pipe_free = [dict() for _ in range(smsps)]
    pipe_busy: dict[str, float] = {}
    slot_free = [0.0] * smsps
    slots_used = [0] * smsps
    pos = [0] * n_warps
    prev_issue = [-1.0] * n_warps
    regs: list[dict] = [dict() for _ in range(n_warps)]
    groups: list[list] = [[] for _ in range(n_warps)]     # completion times of committed wgmma groups
    open_group = [0.0] * n_warps
    warp_async = [0.0] * n_warps                           # non-bulk cp.async completion (per warp)
    cta_async = [0.0] * ctas                                # bulk / TMA completion (per CTA)
    # a warp's bulk stores (bulk groups): when their shared source has been read, when their writes are done
    bulk_read, bulk_done = [0.0] * n_warps, [0.0] * n_warps
    full: list[list] = [[] for _ in range(ctas)]           # per CTA: [completion, sealed] of each full slot filled
    open_tok = [-1] * n_warps                               # the full slot this warp's bulk copies complete
    tx_k = [0] * n_warps
    ar_k = [0] * n_warps
    arrives: list[list] = [[] for _ in range(n_warps)]
    forced = [False] * n_warps
    bars: list[dict] = [dict() for _ in range(ctas)]        # per CTA: barrier id -> [warps arrived, latest clock]
    blocked = [False] * n_warps
    finished = [False] * n_warps
    n_forced = 0
    marks = []
    for role in roles:
        m: dict = {}
        for i, loop in enumerate(role.trace.loops):
            m.setdefault(loop.start, []).append((i, 0))
            m.setdefault(loop.end, []).append((i, 1))
        marks.append(m)
    # memory-server service (clocks) asked for by each loop window's instructions, and the warps that entered it:
    # what the multiplied-out iterations ask of each server (the steady state cannot serve faster than its rate)
    in_window: list[dict[int, list[int]]] = [{} for _ in roles]
    for r, role in enumerate(roles):
        for i, loop in enumerate(role.trace.loops):
            for p in range(loop.start, loop.end):
                in_window[r].setdefault(p, []).append(i)
    window_service = [[dict.fromkeys(servers, 0.0) for _ in role.trace.loops] for role in roles]
    window_entries = [[0] * len(role.trace.loops) for role in roles]
    stamps = [[[0.0, 0.0] for _ in roles[w_role[w]].trace.loops] for w in range(n_warps)]
    spans: list[list[list[float]]] = [[[] for _ in role.trace.loops] for role in roles]
    smsp_of = [w % smsps for w in range(n_warps)]
    warps_on = [[w for w in range(n_warps) if smsp_of[w] == s] for s in range(smsps)]
    last_rr = [-1] * smsps
    done = 0

    def live(c: int) -> int:
        return sum(1 for v in range(c * wpc, (c + 1) * wpc) if not finished[v])

    def mbar_ready(w: int, op: _Op, t: float) -> float:
        if forced[w]:
            return t
        c = w // wpc
        if op.arg == WAIT_TX:
            k = tx_k[w]
            toks = full[c]
            if k < len(toks):
                return max(t, toks[k][0]) if toks[k][1] else INF
            alive = [v for v in producers if not finished[c * wpc + v]]
            return INF if alive else t
        if op.arg == WAIT_ARRIVE:
            j = ar_k[w] - free_of[w]
            if j < 0:
                return t
            for slot in releasers:
                v = c * wpc + slot
                idx = (j + 1) * per_release[role_of[slot]] - 1
                if idx < len(arrives[v]):
                    t = max(t, arrives[v][idx])
                elif not finished[v]:
                    return INF
            return t
        return max(t, warp_async[w], cta_async[c])

    def ready_time(w: int) -> float:
        """Earliest clock warp w's next instruction can issue (INF while blocked)."""
        if blocked[w]:
            return INF
        op = ops[w_pcs[w][pos[w]]]
        t = prev_issue[w] + 1.0
        r = regs[w]
        for reg in op.src:
            v = r.get(reg)
            if v is not None and v > t:
                t = v
        if op.pipe:
            v = pipe_free[smsp_of[w]].get(op.pipe, 0.0)
            if v > t:
                t = v
        kind = op.kind
        if kind == WAIT_WG:
            g = groups[w]
            keep = int(op.arg)
            if len(g) > keep:
                t = max(t, max(g[: len(g) - keep]))
        elif kind == ASYNC_WAIT and op.arg:     # a bulk group's wait: this warp's bulk stores only
            t = max(t, bulk_read[w] if op.arg == BULK_WAIT_READ else bulk_done[w])
        elif kind == ASYNC_WAIT:
            t = max(t, warp_async[w], cta_async[w // wpc])
        elif kind == MBAR_WAIT:
            t = mbar_ready(w, op, t)
        return t

    def record_marks(w: int, t: float) -> None:
        r = w_role[w]
        for i, edge in marks[r].get(pos[w], ()):
            stamps[w][i][edge] = t
            if not edge:
                window_entries[r][i] += 1
            if edge:
                spans[r][i].append(t - stamps[w][i][0])

    def best_of(s: int) -> tuple[float, int]:
        """(clock, warp) of SMSP s's next issue: the earliest ready warp, ties by loose round-robin from the one
        after the last issued ([AS] lrr)."""
        mine = warps_on[s]
        n_mine = len(mine)
        best_t, best_w, best_rank = INF, -1, 0
        for i, w in enumerate(mine):
            if pos[w] >= w_len[w]:
                continue
            t = max(ready_time(w), slot_free[s])
            rank = (i - last_rr[s] - 1) % n_mine
            if t < best_t or (t == best_t and rank < best_rank):
                best_t, best_w, best_rank = t, w, rank
        return best_t, best_w

    def seal(w: int) -> None:
        if open_tok[w] >= 0:
            full[w // wpc][open_tok[w]][1] = True
            open_tok[w] = -1

    def release_barriers(c: int) -> None:
        """Release CTA c's barriers whose expected warps (its count, or every live warp) have all arrived."""
        for ident, state in list(bars[c].items()):
            want = state[2] or live(c)
            if state[0] >= want:
                release = state[1] + 1.0
                for v in state[3]:
                    blocked[v] = False
                    prev_issue[v] = max(prev_issue[v], release - 1.0)
                del bars[c][ident]

    def finish_warp(w: int, t: float) -> None:
        nonlocal done, started
        finished[w] = True
        seal(w)
        c = w // wpc
        end_w = max([t] + list(regs[w].values()) + list(groups[w]) + [warp_async[w], bulk_done[w]])
        slot_done[c] += 1
        slot_end[c] = max(slot_end[c], end_w, cta_async[c])
        done += 1
        release_barriers(c)
        if slot_done[c] == wpc:
            cta_finish.append(slot_end[c])
            if started < to_run:     # the next CTA takes the slot
                started += 1
                slot_done[c] = 0
                cta_async[c] = 0.0
                full[c], bars[c] = [], {}
                for v in range(c * wpc, (c + 1) * wpc):
                    pos[v], prev_issue[v], regs[v], groups[v] = 0, slot_end[c] - 1.0, {}, []
                    open_group[v], warp_async[v], blocked[v], finished[v] = 0.0, 0.0, False, False
                    bulk_read[v], bulk_done[v] = 0.0, 0.0
                    open_tok[v], tx_k[v], ar_k[v], arrives[v], forced[v] = -1, 0, 0, [], False
                done -= wpc
                for v in range(c * wpc, (c + 1) * wpc):
                    if w_len[v] == 0:
                        finish_warp(v, slot_end[c])

    for w in range(n_warps):
        if w_len[w] == 0:
            finish_warp(w, 0.0)
    # Each SMSP's next issue is cached: only its own issues change it, except a barrier release, a CTA taking a
    # freed slot, a bulk copy or an mbarrier event (other warps' waits), after which every SMSP is looked at again.
    nxt = [best_of(s) for s in range(smsps)]
    while done < n_warps:
        s = min(range(smsps), key=lambda i: nxt[i][0])
        t, w = nxt[s]
        if w < 0:
            # every warp waits: on a slot or release the replay never makes (loops capped differently by role, a
            # count the averaged stream rounded away); the waiting mbarrier waits pass (details' forced_waits)
            stuck = [v for v in range(n_warps) if not finished[v] and ops[w_pcs[v][pos[v]]].kind == MBAR_WAIT]
            if not stuck:
                raise RuntimeError("cycle model: every warp is blocked (a barrier no warp can reach)")
            for v in stuck:
                forced[v] = True
            n_forced += len(stuck)
            nxt = [best_of(i) for i in range(smsps)]
            continue
        refresh_all = open_tok[w] >= 0
        last_rr[s] = warps_on[s].index(w)
        record_marks(w, t)
        op = ops[w_pcs[w][pos[w]]]
        slot_free[s] = t + 1.0
        slots_used[s] += 1
        # a taken branch: the warp's fetch restarts at the target, nothing to issue for BRANCH_REDIRECT_CLK clocks
        prev_issue[w] = t + dead[w_pcs[w][pos[w]]][pos[w] in w_redirects[w]]
        if op.pipe and op.busy:
            pipe_free[s][op.pipe] = t + op.busy
            pipe_busy[op.pipe] = pipe_busy.get(op.pipe, 0.0) + op.busy
        kind = op.kind
        r = regs[w]
        c = w // wpc
        windows = in_window[w_role[w]].get(pos[w], ()) if kind in _SERVED else ()
        if windows:
            before = {name: server.busy for name, server in servers.items()}
        if kind == ALU or kind == MMA:
            lat = ready_after.get(w_pcs[w][pos[w]], op.latency)
            for reg in op.dst:
                r[reg] = t + lat
        elif kind == LOAD:
            arrive = max(servers["l2"].serve(t, mem.load_l2_bytes), servers["dram"].serve(t, mem.load_dram_bytes))
            for reg in op.dst:
                r[reg] = arrive + mem.load_latency
        elif kind == STORE:
            servers["l2"].serve(t, mem.store_l2_bytes)
            servers["dram"].serve(t, mem.store_dram_bytes)
        elif kind == SHARED:
            arrive = servers["shared"].serve(t, mem.shared_wavefronts)
            for reg in op.dst:
                r[reg] = max(arrive, t + op.latency)
        elif kind == WGMMA:
            servers["shared"].serve(t, mem.wgmma_shared_wavefronts)
            open_group[w] = max(open_group[w], t + op.arg)
        elif kind == COMMIT:
            groups[w].append(max(open_group[w], t))
            open_group[w] = 0.0
        elif kind == WAIT_WG:
            keep = int(op.arg)
            g = groups[w]
            groups[w] = g[len(g) - keep:] if keep else []
        elif kind == ASYNC_COPY and _bulk_store(op):
            # NOTE: its source is read once its bytes have gone to L2 (.read); its writes are done a memory latency
            # after DRAM took them. A wait_group N > 0 is priced as 0 (every store of the warp), an upper bound.
            sent = servers["l2"].serve(t, mem.copy_l2_bytes)
            bulk_read[w] = max(bulk_read[w], sent)
            bulk_done[w] = max(bulk_done[w], max(sent, servers["dram"].serve(t, mem.copy_dram_bytes))
                               + mem.load_latency)
        elif kind == ASYNC_COPY:
            arrive = max(servers["l2"].serve(t, mem.copy_l2_bytes), servers["dram"].serve(t, mem.copy_dram_bytes))
            done_at = arrive + mem.load_latency
            if op.arg:
                cta_async[c] = max(cta_async[c], done_at)
                if open_tok[w] >= 0:
                    tok = full[c][open_tok[w]]
                    tok[0] = max(tok[0], done_at)
                refresh_all = True
            else:
                warp_async[w] = max(warp_async[w], done_at)
        elif kind == MBAR_WAIT:
            forced[w] = False
            if op.arg == WAIT_TX:
                tx_k[w] += 1
            elif op.arg == WAIT_ARRIVE:
                ar_k[w] += 1
        elif kind == MBAR_ARRIVE:
            for reg in op.dst:
                r[reg] = t + op.latency
            if op.arg:       # arrive.expect_tx: a full slot the copies after it complete
                seal(w)
                full[c].append([t, False])
                open_tok[w] = len(full[c]) - 1
            elif per_release[w_role[w]]:
                arrives[w].append(t)
            refresh_all = True
        elif kind == BAR:
            ident, count = op.arg if isinstance(op.arg, tuple) else (0, 0)
            state = bars[c].setdefault(ident, [0, 0.0, count, []])
            state[0] += 1
            state[1] = max(state[1], t)
            state[3].append(w)
            blocked[w] = True
            release_barriers(c)
            refresh_all = True
        if windows:
            for i in windows:
                acc = window_service[w_role[w]][i]
                for name, server in servers.items():
                    acc[name] += server.busy - before[name]
        pos[w] += 1
        if pos[w] >= w_len[w]:
            record_marks(w, t + 1.0)
            finish_warp(w, t + 1.0)
            refresh_all = True
        elif open_tok[w] >= 0 and ops[w_pcs[w][pos[w]]].kind in (MBAR_WAIT, MBAR_ARRIVE, BAR, ASYNC_WAIT, WAIT_WG):
            seal(w)       # the slot's copies are all issued once the warp reaches its next synchronisation
            refresh_all = True
        if refresh_all:
            nxt = [best_of(i) for i in range(smsps)]
        else:
            nxt[s] = best_of(s)
    end = max(max(cta_finish), max(server.free for server in servers.values()))   # stores drain before the end
    if total > to_run:   # the steady time per CTA after the first round, for the CTAs not simulated
        cta_finish.sort()
        end += (total - to_run) * (cta_finish[-1] - cta_finish[ctas - 1]) / (to_run - ctas)
    # multiply out the loops' steady state: the mean window time of a warp, once per round of resident CTAs; roles
    # run side by side, so the longest role's extra time counts
    extra = 0.0
    for r, role in enumerate(roles):
        role_extra = 0.0
        for i, loop in enumerate(role.trace.loops):
            if spans[r][i]:
                role_extra += loop.weight * loop.extra * (sum(spans[r][i]) / len(spans[r][i])) / loop.window
        extra = max(extra, role_extra)
    rounds = total / ctas
    total_clocks = end + extra * rounds
    # each server's service over the whole run: the simulated CTAs' (the rest do the same work) plus, for every warp of
    # every CTA, the multiplied-out iterations' (the window's service per warp and iteration). A FIFO server is busy
    # at most all the time, so the run lasts at least that: a window in which requests queue faster than they are
    # served (stores nobody waits for, a ring that has not yet filled) does not run at the window's issue rate.
    served = {}
    for name, server in servers.items():
        more = 0.0
        for r, role in enumerate(roles):
            for i, loop in enumerate(role.trace.loops):
                if window_entries[r][i]:
                    per_iteration = window_service[r][i][name] / window_entries[r][i] / loop.window
                    more += loop.weight * loop.extra * per_iteration * len(role.slots) * total
        served[name] = server.busy * total / to_run + more
    total_clocks = max(total_clocks, *served.values())
    scale = total_clocks / end if end > 0 else 1.0
    busy = {"issue": max(slots_used) * scale}
    for pipe, clk in pipe_busy.items():
        busy[pipe] = clk / max(1, min(smsps, n_warps)) * scale
    for name in servers:
        busy[name] = served[name]
    instructions = started * sum(len(roles[role_of[s]].trace.pcs) for s in range(wpc))
    return SMRun(total_clocks, MappingProxyType(busy), instructions, n_forced)


_UNIT_COMPONENT = {"issue": "issue", "fma": "issue", "alu": "issue", "lsu": "issue", "cbu": "issue", "xu": "sfu",
                   "fp64": "fp64", "tensor": "tensor", "dram": "dram", "l2": "l2", "shared": "shared"}


def estimate_v2(program, pc_counts, metrics: Mapping, spec, occ, sm_count: int | None = None,
                clock_hz: float | None = None, bandwidth_share: float = 1.0,
                constants: Mapping[str, float] | None = None,
                sass_mix: Mapping[str, float] | None = None, by_warp=None, simulated_ctas: int = 0,
                sass_loops=None, sass_loop_issue=None) -> Estimate:
    """Model v2's estimate of one launch (module docstring). `program` is the decoded kernel (ptxsim Program:
    .instrs), `pc_counts` its per-pc warp-instruction counts over the grid (cycle_trace.per_pc_counts), `metrics`
    the launch's counters (the cache model's level mix, bytes per request); `sass_mix` the module's SASS factors
    (sass.py): only its "load_unroll" is used, to issue self-looping blocks' loads as ptxas unrolled
    them (cycle_trace.py). `by_warp` (stats.WarpCounts of the launch) and `simulated_ctas` (the CTAs it sums) give
    each warp role its own stream and tell mbarrier waits apart (module docstring); without them every warp runs the
    grid's averaged stream. `sass_loops` (the entry's innermost SASS loops, sass.sass_loops) gives each loop ptxas's
    own unroll (sass.loop_unrolls) in place of the module-wide load_unroll. `sass_loop_issue` (the entry's innermost
    SASS loops' stall counts, sass.sass_loop_issue) sets each matched loop's issue gaps (sass.loop_issue)."""
    spec, k = _check_args(spec, occ, clock_hz, bandwidth_share, constants)
    sms = check_sm_count(sm_count, spec.sm_count)
    m = _counters(metrics)
    grid = _grid_blocks(m, occ)
    clock = float(clock_hz) if clock_hz is not None else spec.under_load_clock_hz
    active = min(sms, grid)
    warps_per_cta = occ.warps_per_block
    mix = sass_mix or {}
    unroll = float(mix.get("load_unroll", 1.0))
    waits = getattr(by_warp, "mbarrier_waits", None)
    per_loop = loop_unrolls(program.instrs, sass_loops) if sass_loops else {}
    issue = loop_issue(program.instrs, sass_loop_issue) if sass_loop_issue else {}
    ready_after = {pc: gap for pc, (gap, _unroll) in issue.items() if program.instrs[pc].klass in FIXED_LATENCY_CLASSES}
    roles = warp_roles(program.instrs, pc_counts, grid, warps_per_cta, getattr(by_warp, "counts", None),
                       simulated_ctas, unroll, waits, per_loop or None)
    ops = _ops(program.instrs, spec, k, waits)
    copies = sum(float(pc_counts[pc]) for pc, op in enumerate(ops) if op.kind == ASYNC_COPY and pc < len(pc_counts))
    mem = _memory(m, spec, k, active, sms, clock, float(bandwidth_share), copies)
    per_sm = math.ceil(grid / active)
    resident = max(1, min(occ.blocks_per_sm, per_sm))
    rounds = per_sm / resident
    runs = [(1, simulate_sm(roles, ops, mem, resident, warps_per_cta, spec.sub_partitions_per_sm, per_sm,
                              issue, ready_after))]
    clocks = sum(n * run.clocks for n, run in runs)
    busy: dict[str, float] = {}
    for n, run in runs:
        per_run: dict[str, float] = {}
        for unit, value in run.busy.items():   # a component is as busy as its busiest unit (issue: slots or a pipe)
            comp = _UNIT_COMPONENT.get(unit, "issue")
            per_run[comp] = max(per_run.get(comp, 0.0), value)
        for comp, value in per_run.items():
            busy[comp] = busy.get(comp, 0.0) + n * value
    kernel = clocks / clock
    components = {name: 0.0 for name in COMPONENTS}
    for comp, value in busy.items():
        components[comp] = max(components[comp], value / clock)
    top = max(busy, key=lambda c: busy[c]) if busy else "latency"
    limiter = top if busy and busy[top] >= BUSY_LIMITER_FRACTION * clocks else "latency"
    components["latency"] = kernel if limiter == "latency" else 0.0
    components["launch"] = k["launch_overhead_s"]
    achieved = {comp: (value / clocks if clocks else 0.0) for comp, value in busy.items()}
    waves = occ.waves(grid, sms)
    details = {"model_version": 2.0, "sm_clocks": clocks, "resident_ctas": float(resident), "rounds": rounds,
               "trace_instructions": float(sum(len(role.trace.pcs) * len(role.slots) for role in roles)),
               "loops": float(sum(len(role.trace.loops) for role in roles)), "warp_roles": float(len(roles)),
               "forced_waits": float(sum(run.forced_waits for _, run in runs)),
               "sass_loops_matched": float(len(per_loop)),
               "sass_issue_pcs": float(len(issue)),
               "load_latency_clk": mem.load_latency, "dram_bytes_per_clk_per_sm": mem.dram_rate,
               "l2_bytes_per_clk_per_sm": mem.l2_rate, "active_sms": float(active)}
    return Estimate(seconds=kernel + components["launch"], limiter=limiter,
                    components=MappingProxyType(components), achieved=MappingProxyType(achieved), device=spec.name,
                    sm_count=sms, clock_hz=clock, bandwidth_share=float(bandwidth_share), grid_blocks=grid,
                    waves=waves, details=MappingProxyType(details))
