"""The dynamic instruction stream of one representative warp, for model v2 (cycle.py).

ptxsim records per-pc warp-instruction counts (not per-warp traces), so a warp's stream is rebuilt from them: the
per-warp count of each basic block is its count over the grid divided by the grid's warps. Blocks are walked in
program order; a block that branches back to an earlier block closes a loop over the blocks between (one level of
loops, plus self-looping blocks inside it), run round(header count) times with each inner block spread evenly over
the iterations. A loop runs at most LOOP_WARMUP + STEADY_WINDOW iterations; the rest are multiplied out from the
mean time of the window (cycle.py), recorded here as `loops`.

NOTE: approximate where warps differ (warp-specialised producers and consumers run different code but get the same
averaged stream), for nested loops deeper than one level, and for spin loops (mbarrier try_wait retries that the
functional simulation happened to take).
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.model.cycle_sched import schedule
from ptxsim.model.cycle_table import LOOP_WARMUP, STEADY_WINDOW
from ptxsim.model.stream import _blocks


@dataclass(frozen=True)
class Loop:
    """A capped loop of the trace: the window [start, end) of positions whose time stands for one iteration x
    `window` iterations, and `extra` iterations (times `weight`) that were not simulated."""

    start: int
    end: int
    window: int
    extra: float
    weight: float


@dataclass(frozen=True)
class Trace:
    pcs: tuple[int, ...]
    loops: tuple[Loop, ...]
    redirects: frozenset[int] = frozenset()   # positions of taken branches (the warp's fetch restarts after them)


def taken_branches(instrs, pcs) -> frozenset[int]:
    """Positions of `pcs` holding a branch the stream takes: a `bra` whose next position is its target (not the
    instruction after it). NOTE: a reordered region (cycle_sched) that hoists a branch target's instruction right
    after a not-taken guard would count as taken; the replays' regions end at guarded branches, so this is rare."""
    out = []
    for i in range(len(pcs) - 1):
        ins = instrs[pcs[i]]
        if ins.op == "bra" and ins.target >= 0 and pcs[i + 1] == ins.target and ins.target != pcs[i] + 1:
            out.append(i)
    return frozenset(out)


def _one_back_edge(unit: list[int], back_edge: int) -> list[int]:
    """`unit` (iterations ptxas unrolled into one pass) with only its last back-edge branch: the unrolled SASS body
    branches once per pass, not once per PTX iteration."""
    last = max((i for i, pc in enumerate(unit) if pc == back_edge), default=-1)
    return [pc for i, pc in enumerate(unit) if pc != back_edge or i == last]


def per_pc_counts(program, per_line: dict) -> list[float]:
    """Per-pc warp-instruction counts from LaunchStats.per_line (PTX line -> counters): a line's count is shared
    equally by its instructions (they are in one basic block in straight-line PTX; NOTE: approximate for a line
    holding a branch and the instruction after it)."""
    by_line: dict[int, list[int]] = {}
    for ins in program.instrs:
        by_line.setdefault(ins.line, []).append(ins.pc)
    counts = [0.0] * len(program.instrs)
    for line, pcs in by_line.items():
        total = float(per_line.get(line, {}).get("inst_executed", 0.0))
        for pc in pcs:
            counts[pc] = total / len(pcs)
    return counts


def _repeat(n: float) -> int:
    return int(round(n))


def _unrolled_body(instrs, body: list[int], unroll: int) -> list[int]:
    """`unroll` iterations of a self-looping block as ptxas's unrolled loop issues them: the global loads of all of
    them first, then the rest in order (ptxas hoists the loads of an unrolled streaming loop so they are in flight
    together; NOTE: an approximation of its schedule, [EST])."""
    loads = [pc for pc in body if instrs[pc].klass == "ld_global"]
    rest = [pc for pc in body if instrs[pc].klass != "ld_global"]
    return loads * unroll + rest * unroll


def _is_wait_spin(instrs, s: int, e: int) -> bool:
    """A self-looping block holding an mbarrier test/try_wait: its retries are the functional simulation's, the
    schedule does the waiting (one pass per entry)."""
    return any(instrs[pc].op == "mbarrier" and (".try_wait" in instrs[pc].mods or ".test_wait" in instrs[pc].mods)
               for pc in range(s, e))


def build_trace(instrs, counts, warps_in_grid: float, unroll: float = 1.0, reorder: bool = True,
                loop_unroll: dict | None = None) -> Trace:
    """One warp's dynamic stream (module docstring). `counts` are per-pc warp-instruction counts over the grid.
    `unroll`: how many SASS global loads ptxas made of each PTX one (sass.sass_factors' "load_unroll"); from 1.5
    on, a self-looping block's iterations run in chunks of round(unroll) (or all of them, when fewer) with their
    global loads hoisted. NOTE: the factor is static and module-wide: it counts the remainder loop's copies too, and
    stands for every loop of the module.
    Loops nest: a loop's body blocks run, per iteration, their count over the header's count (spread evenly), and a
    loop inside runs its header's count over the outer header's count per outer iteration; every loop is capped at
    LOOP_WARMUP + STEADY_WINDOW iterations, the rest multiplied out (a Loop whose weight is how many times the
    enclosing capped loops' simulated iterations stand for).
    `reorder`: each block outside loops, each self-loop body and each loop iteration with no capped loop inside is
    issued in the order ptxas schedules it (cycle_sched.py: global loads and their addresses first).
    `loop_unroll` ({loop header pc: iterations ptxas put in one pass}, sass.loop_unrolls, read from the SASS loop
    that matches) replaces the module-wide `unroll` for that loop: its iterations are issued in chunks of that many,
    each chunk scheduled as one body (a self-looping block's, or a multi-block loop's iterations with no capped loop
    inside)."""
    blocks = _blocks(instrs)
    per_warp = [counts[s] / warps_in_grid if s < len(counts) else 0.0 for s, _ in blocks]
    start_of = {s: i for i, (s, _) in enumerate(blocks)}
    back = {}   # loop header block -> last block of the loop
    for j, (_s, e) in enumerate(blocks):
        last = instrs[e - 1]
        if last.control and 0 <= last.target < len(instrs) and last.target in start_of and start_of[last.target] < j:
            back[start_of[last.target]] = max(back.get(start_of[last.target], j), j)
    cap = LOOP_WARMUP + STEADY_WINDOW
    pcs: list[int] = []
    loops: list[Loop] = []

    chunk = int(round(unroll)) if unroll >= 1.5 else 1
    info: dict = {}            # _dest_src per pc, for cycle_sched.schedule

    def ordered(unit: list[int]) -> list[int]:
        return schedule(instrs, unit, info) if reorder else unit

    def chunk_of(pc: int) -> int:
        if loop_unroll:
            return int(round(loop_unroll[pc])) if pc in loop_unroll else 1
        return chunk

    def emit_block(b: int, reps: int, weight: float) -> None:
        s, e = blocks[b]
        body = list(range(s, e))
        self_loop = instrs[e - 1].control and instrs[e - 1].target == s
        if self_loop and _is_wait_spin(instrs, s, e):
            pcs.extend(body * min(reps, 1))
        elif self_loop and chunk_of(s) > 1 and reps >= 2:
            size = min(chunk_of(s), reps)    # a short loop: all its iterations' loads in flight together
            chunks, left = divmod(reps, size)
            unit = ordered(body * size) if reorder else _unrolled_body(instrs, body, size)
            replay(_one_back_edge(unit, e - 1), chunks, weight)
            replay(ordered(body), left, weight)
        elif self_loop:
            replay(ordered(body), reps, weight)
        else:
            pcs.extend(ordered(body) * reps)

    def replay(unit: list[int], count: int, weight: float) -> None:
        """`unit` `count` times; past the warm-up and steady window only those are issued, and the rest is a Loop
        charged at the window's average."""
        if count <= cap:
            pcs.extend(unit * count)
            return
        w_start = len(pcs) + LOOP_WARMUP * len(unit)
        pcs.extend(unit * cap)
        loops.append(Loop(w_start, len(pcs), STEADY_WINDOW, float(count - cap), weight))

    def spread(total: float, per: float, it: int) -> int:
        """Iteration it's share of `total` executions spread evenly over `per` iterations."""
        share = total / per if per else 0.0
        return int(round((it + 1) * share)) - int(round(it * share))

    def emit_loop(h: int, iters: int, weight: float) -> None:
        last = back[h]
        if _is_wait_spin(instrs, *blocks[h]):
            iters = min(iters, 1)   # a try_wait retry loop (its header holds the wait): one pass, the schedule waits
        sim_iters = min(iters, cap)
        inner_weight = weight * (iters / sim_iters if sim_iters else 0.0)
        header = per_warp[h]
        w_start = len(pcs)
        size = chunk_of(blocks[h][0])
        it_start, it_loops, base = 0, 0, 0
        for it in range(sim_iters):
            if it == LOOP_WARMUP:
                w_start = len(pcs)
                base = it
            if (it - base) % size == 0:         # a chunk of `size` iterations starts (ptxas's unrolled body)
                it_start, it_loops = len(pcs), len(loops)
            emit_block(h, 1, inner_weight)
            b = h + 1
            while b <= last:
                if b in back and back[b] <= last:      # a nested loop: its iterations in this one
                    n = spread(per_warp[b], header, it)
                    if n:
                        emit_loop(b, n, inner_weight)
                    b = back[b] + 1
                    continue
                s, e = blocks[b]
                if instrs[e - 1].control and instrs[e - 1].target == s:
                    reps = _repeat(per_warp[b] / header) if header else 0
                else:
                    reps = spread(per_warp[b], header, it)
                emit_block(b, reps, inner_weight)
                b += 1
            chunk_ends = (it - base) % size == size - 1 or it == sim_iters - 1 or it + 1 == LOOP_WARMUP
            if chunk_ends and len(loops) == it_loops:   # no capped loop inside: issued as ptxas orders it
                chunk = ordered(pcs[it_start:])
                pcs[it_start:] = _one_back_edge(chunk, blocks[last][1] - 1) if size > 1 else chunk
        if iters > sim_iters:
            loops.append(Loop(w_start, len(pcs), STEADY_WINDOW, float(iters - sim_iters), weight))

    b = 0
    while b < len(blocks):
        if b in back:
            iters = _repeat(per_warp[b])
            if iters:
                emit_loop(b, iters, 1.0)
            b = back[b] + 1
        else:
            emit_block(b, _repeat(per_warp[b]), 1.0)
            b += 1
    # a capped loop's last simulated back edge stands for the taken ones of the iterations multiplied out
    capped = {lp.end - 1 for lp in loops if lp.extra > 0 and lp.end > 0 and instrs[pcs[lp.end - 1]].op == "bra"
              and 0 <= instrs[pcs[lp.end - 1]].target <= pcs[lp.end - 1]}
    return Trace(tuple(pcs), tuple(loops), taken_branches(instrs, pcs) | capped)


@dataclass(frozen=True)
class Role:
    """Warps of a CTA that run the same blocks (`slots`: their indices in the CTA) and the stream each runs."""

    slots: tuple[int, ...]
    trace: Trace
    free_waits: int = 0   # its arrival-completed mbarrier waits that pass free (a ring's empty slots at the start)


def _free_waits(per_warp, mbarrier_waits) -> int:
    """A warp's waits that passed free: each wait pc's free fraction (stats.WarpCounts) times its count there."""
    total = 0.0
    for pc, kinds in (mbarrier_waits or {}).items():
        seen = sum(kinds)
        if seen and pc < len(per_warp):
            total += per_warp[pc] * kinds[0] / seen
    return int(round(total))


def warp_roles(instrs, counts, grid_ctas: int, warps_per_cta: int, by_warp=None, simulated_ctas: int = 0,
               unroll: float = 1.0, mbarrier_waits=None, loop_unroll: dict | None = None) -> tuple[Role, ...]:
    """The CTA's warp roles (issue #29 item 1): warps are told apart by which basic blocks they run (at least half a
    time on average: a TMA producer warp, idle warps of its warpgroup, wgmma consumer warps), each role's stream
    built from its warps' mean counts. `by_warp` (int[warps per CTA, pcs], stats.WarpCounts.counts) sums the
    simulated CTAs; its shape is scaled to the grid's per-pc `counts` (a weighted sample's). Without it (or with a
    shape that does not fit) every warp runs the averaged stream of the grid."""
    import numpy as np

    blocks = _blocks(instrs)
    if by_warp is None or simulated_ctas <= 0 or getattr(by_warp, "shape", (0,))[0] != warps_per_cta \
            or by_warp.shape[1] < len(instrs):
        mean = [c / max(grid_ctas * warps_per_cta, 1) for c in counts]
        return (Role(tuple(range(warps_per_cta)), build_trace(instrs, counts, grid_ctas * warps_per_cta, unroll,
                                                              loop_unroll=loop_unroll),
                     _free_waits(mean, mbarrier_waits)),)
    avg = np.asarray(by_warp[:, : len(instrs)], np.float64) / simulated_ctas
    target = np.zeros(len(instrs))
    n = min(len(counts), len(instrs))
    target[:n] = np.asarray(counts[:n], np.float64) / max(grid_ctas, 1)
    total = avg.sum(axis=0)
    scale = np.divide(target, total, out=np.zeros_like(target), where=total > 0)
    per = avg * scale[None, :]
    starts = [s for s, _ in blocks]
    groups: dict[tuple, list[int]] = {}
    for slot in range(warps_per_cta):
        groups.setdefault(tuple(bool(per[slot, s] >= 0.5) for s in starts), []).append(slot)
    roles = []
    for slots in groups.values():
        mean = per[slots].mean(axis=0)
        # free passes are the ring's first round, once per CTA: counted per simulated CTA, not scaled to the grid's
        # work per CTA (a sampled persistent CTA runs fewer items than a whole one)
        free = _free_waits(avg[slots].mean(axis=0), mbarrier_waits)
        roles.append(Role(tuple(slots), build_trace(instrs, mean, 1.0, unroll, loop_unroll=loop_unroll), free))
    return tuple(roles)
