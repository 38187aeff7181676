"""Model v2: cycle-approximate timing of one SM (issue #29, item 1).

The CTAs resident on one SM (occupancy.py's blocks per SM, or fewer when the grid is small) each run the
representative warp stream of cycle_trace.py. Their warps sit on four sub-partition schedulers (warp i of the SM on
SMSP i mod 4); each scheduler issues at most one warp-instruction per clock, the oldest warp that can go first.
A warp can issue its next instruction when
  - its previous instruction issued at least one clock before (in-order issue),
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
iterations cost the window's mean time per warp, once per round of resident CTAs.
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
from ptxsim.model.cycle_table import BUSY_LIMITER_FRACTION
from ptxsim.model.cycle_trace import Trace, build_trace
from ptxsim.model.occupancy import check_sm_count
from ptxsim.model.timing import COMPONENTS, Estimate, _check_args, _counters, _grid_blocks

MODEL_VERSION = "v2"
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


def simulate_sm(trace: Trace, ops: list[_Op], mem: _Memory, ctas: int, warps_per_cta: int,
                smsps: int = 4, total_ctas: int | None = None) -> SMRun:
    """Run `total_ctas` CTAs (default `ctas`) of `warps_per_cta` warps, each warp executing `trace`, on one SM that
    holds `ctas` of them at once: a CTA that finishes frees its slot for the next (module docstring). At most
    CTA_ROUNDS x ctas CTAs are simulated; the rest cost the steady time per CTA of the CTAs after the first round."""
    pcs = trace.pcs
    total = ctas if total_ctas is None else max(int(total_ctas), 1)
    ctas = min(ctas, total)
    to_run = min(total, CTA_ROUNDS * ctas)
    started = ctas
    cta_finish: list[float] = []
    slot_done = [0] * ctas
    slot_end = [0.0] * ctas
    n_warps = ctas * warps_per_cta
    n_instr = len(pcs)
    if n_warps == 0 or n_instr == 0:
        return SMRun(0.0, {}, 0)
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
    bar_arrived = [0] * ctas
    bar_time = [0.0] * ctas
    blocked = [False] * n_warps
    marks = {}
    for i, loop in enumerate(trace.loops):
        marks.setdefault(loop.start, []).append((i, 0))
        marks.setdefault(loop.end, []).append((i, 1))
    stamps = [[[0.0, 0.0] for _ in trace.loops] for _ in range(n_warps)]
    finish = [0.0] * n_warps
    smsp_of = [w % smsps for w in range(n_warps)]
    warps_on = [[w for w in range(n_warps) if smsp_of[w] == s] for s in range(smsps)]
    last_rr = [-1] * smsps
    done = 0

    def ready_time(w: int) -> float:
        """Earliest clock warp w's next instruction can issue (INF while blocked)."""
        if blocked[w]:
            return INF
        op = ops[pcs[pos[w]]]
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
        elif kind == ASYNC_WAIT:
            t = max(t, warp_async[w], cta_async[w // warps_per_cta])
        return t

    spans: list[list[float]] = [[] for _ in trace.loops]

    def record_marks(w: int, t: float) -> None:
        for i, edge in marks.get(pos[w], ()):
            stamps[w][i][edge] = t
            if edge:
                spans[i].append(t - stamps[w][i][0])

    def best_of(s: int) -> tuple[float, int]:
        """(clock, warp) of SMSP s's next issue: the earliest ready warp, ties by loose round-robin from the one
        after the last issued ([AS] lrr)."""
        mine = warps_on[s]
        n_mine = len(mine)
        best_t, best_w, best_rank = INF, -1, 0
        for i, w in enumerate(mine):
            if pos[w] >= n_instr:
                continue
            t = max(ready_time(w), slot_free[s])
            rank = (i - last_rr[s] - 1) % n_mine
            if t < best_t or (t == best_t and rank < best_rank):
                best_t, best_w, best_rank = t, w, rank
        return best_t, best_w

    # Each SMSP's next issue is cached: only its own issues change it, except a barrier release, a CTA taking a
    # freed slot or a bulk copy (its CTA's waits), after which every SMSP is looked at again.
    nxt = [best_of(s) for s in range(smsps)]
    while done < n_warps:
        s = min(range(smsps), key=lambda i: nxt[i][0])
        t, w = nxt[s]
        if w < 0:
            raise RuntimeError("cycle model: every warp is blocked (a barrier no warp can reach)")
        refresh_all = False
        last_rr[s] = warps_on[s].index(w)
        record_marks(w, t)
        op = ops[pcs[pos[w]]]
        slot_free[s] = t + 1.0
        slots_used[s] += 1
        prev_issue[w] = t
        if op.pipe and op.busy:
            pipe_free[s][op.pipe] = t + op.busy
            pipe_busy[op.pipe] = pipe_busy.get(op.pipe, 0.0) + op.busy
        kind = op.kind
        r = regs[w]
        if kind == ALU or kind == MMA:
            for reg in op.dst:
                r[reg] = t + op.latency
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
            start = t
            open_group[w] = max(open_group[w], start + op.arg)
        elif kind == COMMIT:
            groups[w].append(max(open_group[w], t))
            open_group[w] = 0.0
        elif kind == WAIT_WG:
            keep = int(op.arg)
            g = groups[w]
            groups[w] = g[len(g) - keep:] if keep else []
        elif kind == ASYNC_COPY:
            arrive = max(servers["l2"].serve(t, mem.copy_l2_bytes), servers["dram"].serve(t, mem.copy_dram_bytes))
            done_at = arrive + mem.load_latency
            if op.arg:
                c = w // warps_per_cta
                cta_async[c] = max(cta_async[c], done_at)
                refresh_all = True
            else:
                warp_async[w] = max(warp_async[w], done_at)
        elif kind == BAR:
            c = w // warps_per_cta
            bar_arrived[c] += 1
            bar_time[c] = max(bar_time[c], t)
            if bar_arrived[c] == warps_per_cta:
                release = bar_time[c] + 1.0
                for v in range(c * warps_per_cta, (c + 1) * warps_per_cta):
                    if blocked[v]:
                        blocked[v] = False
                        prev_issue[v] = max(prev_issue[v], release - 1.0)
                prev_issue[w] = max(prev_issue[w], release - 1.0)
                bar_arrived[c] = 0
                bar_time[c] = 0.0
                refresh_all = True
            else:
                blocked[w] = True
        pos[w] += 1
        if pos[w] >= n_instr:
            record_marks(w, t + 1.0)
            finish[w] = max([t + 1.0] + [v for v in r.values()] + list(groups[w]) + [warp_async[w]])
            c = w // warps_per_cta
            slot_done[c] += 1
            slot_end[c] = max(slot_end[c], finish[w], cta_async[c])
            if slot_done[c] == warps_per_cta:
                cta_finish.append(slot_end[c])
                if started < to_run:     # the next CTA takes the slot
                    started += 1
                    slot_done[c] = 0
                    cta_async[c] = 0.0
                    for v in range(c * warps_per_cta, (c + 1) * warps_per_cta):
                        pos[v], prev_issue[v], regs[v], groups[v] = 0, slot_end[c] - 1.0, {}, []
                        open_group[v], warp_async[v], blocked[v] = 0.0, 0.0, False
                    done -= warps_per_cta
                    refresh_all = True
            done += 1
        if refresh_all:
            nxt = [best_of(i) for i in range(smsps)]
        else:
            nxt[s] = best_of(s)
    end = max(max(cta_finish), max(server.free for server in servers.values()))   # stores drain before the end
    if total > to_run:   # the steady time per CTA after the first round, for the CTAs not simulated
        cta_finish.sort()
        end += (total - to_run) * (cta_finish[-1] - cta_finish[ctas - 1]) / (to_run - ctas)
    # multiply out the loops' steady state: the mean window time of a warp, once per round of resident CTAs
    extra = 0.0
    for i, loop in enumerate(trace.loops):
        if spans[i]:
            extra += loop.weight * loop.extra * (sum(spans[i]) / len(spans[i])) / loop.window
    rounds = total / ctas
    total_clocks = end + extra * rounds
    scale = total_clocks / end if end > 0 else 1.0
    busy = {"issue": max(slots_used) * scale}
    for pipe, clk in pipe_busy.items():
        busy[pipe] = clk / max(1, min(smsps, n_warps)) * scale
    for name, server in servers.items():
        busy[name] = server.busy * scale
    return SMRun(total_clocks, MappingProxyType(busy), started * warps_per_cta * n_instr)


_UNIT_COMPONENT = {"issue": "issue", "fma": "issue", "alu": "issue", "lsu": "issue", "cbu": "issue", "xu": "sfu",
                   "fp64": "fp64", "tensor": "tensor", "dram": "dram", "l2": "l2", "shared": "shared"}


def estimate_v2(program, pc_counts, metrics: Mapping, spec, occ, sm_count: int | None = None,
                clock_hz: float | None = None, bandwidth_share: float = 1.0,
                constants: Mapping[str, float] | None = None,
                sass_mix: Mapping[str, float] | None = None) -> Estimate:
    """Model v2's estimate of one launch (module docstring). `program` is the decoded kernel (ptxsim Program:
    .instrs), `pc_counts` its per-pc warp-instruction counts over the grid (cycle_trace.per_pc_counts), `metrics`
    the launch's counters (the cache model's level mix, bytes per request); `sass_mix` the module's SASS factors
    (sass.py): only its "load_unroll" is used, to issue self-looping blocks' loads as ptxas unrolled
    them (cycle_trace.py)."""
    spec, k = _check_args(spec, occ, clock_hz, bandwidth_share, constants)
    sms = check_sm_count(sm_count, spec.sm_count)
    m = _counters(metrics)
    grid = _grid_blocks(m, occ)
    clock = float(clock_hz) if clock_hz is not None else spec.under_load_clock_hz
    active = min(sms, grid)
    warps_per_cta = occ.warps_per_block
    mix = sass_mix or {}
    unroll = float(mix.get("load_unroll", 1.0))
    trace = build_trace(program.instrs, pc_counts, grid * warps_per_cta, unroll)
    ops = _ops(program.instrs, spec, k)
    copies = sum(float(pc_counts[pc]) for pc, op in enumerate(ops) if op.kind == ASYNC_COPY and pc < len(pc_counts))
    mem = _memory(m, spec, k, active, sms, clock, float(bandwidth_share), copies)
    per_sm = math.ceil(grid / active)
    resident = max(1, min(occ.blocks_per_sm, per_sm))
    rounds = per_sm / resident
    runs = [(1, simulate_sm(trace, ops, mem, resident, warps_per_cta, spec.sub_partitions_per_sm, per_sm))]
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
               "trace_instructions": float(len(trace.pcs)), "loops": float(len(trace.loops)),
               "load_latency_clk": mem.load_latency, "dram_bytes_per_clk_per_sm": mem.dram_rate,
               "l2_bytes_per_clk_per_sm": mem.l2_rate, "active_sms": float(active)}
    return Estimate(seconds=kernel + components["launch"], limiter=limiter,
                    components=MappingProxyType(components), achieved=MappingProxyType(achieved), device=spec.name,
                    sm_count=sms, clock_hz=clock, bandwidth_share=float(bandwidth_share), grid_blocks=grid,
                    waves=waves, details=MappingProxyType(details))
