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


def build_trace(instrs, counts, warps_in_grid: float, unroll: float = 1.0) -> Trace:
    """One warp's dynamic stream (module docstring). `counts` are per-pc warp-instruction counts over the grid.
    `unroll`: how many SASS global loads ptxas made of each PTX one (sass.sass_factors' "load_unroll"); from 1.5
    on, a self-looping block's iterations run in chunks of round(unroll) (or all of them, when fewer) with their
    global loads hoisted. NOTE: the factor is static and module-wide: it counts the remainder loop's copies too, and
    stands for every loop of the module."""
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

    def emit_block(b: int, reps: int, weight: float) -> None:
        s, e = blocks[b]
        body = list(range(s, e))
        self_loop = instrs[e - 1].control and instrs[e - 1].target == s
        if self_loop and chunk > 1 and reps >= 2:
            size = min(chunk, reps)          # a short loop: all its iterations' loads in flight together
            chunks, left = divmod(reps, size)
            replay(_unrolled_body(instrs, body, size), chunks, weight)
            replay(body, left, weight)
        elif self_loop:
            replay(body, reps, weight)
        else:
            pcs.extend(body * reps)

    def replay(unit: list[int], count: int, weight: float) -> None:
        """`unit` `count` times; past the warm-up and steady window only those are issued, and the rest is a Loop
        charged at the window's average."""
        if count <= cap:
            pcs.extend(unit * count)
            return
        w_start = len(pcs) + LOOP_WARMUP * len(unit)
        pcs.extend(unit * cap)
        loops.append(Loop(w_start, len(pcs), STEADY_WINDOW, float(count - cap), weight))

    b = 0
    while b < len(blocks):
        if b in back:
            last = back[b]
            iters = _repeat(per_warp[b])
            sim_iters = min(iters, cap)
            weight = iters / sim_iters if sim_iters else 0.0
            w_start = len(pcs)
            for it in range(sim_iters):
                if it == LOOP_WARMUP:
                    w_start = len(pcs)
                for inner in range(b, last + 1):
                    if inner == b:
                        reps = 1
                    else:   # spread the inner block's count evenly over the loop's iterations
                        share = per_warp[inner] / iters if iters else 0.0
                        s, e = blocks[inner]
                        if instrs[e - 1].control and instrs[e - 1].target == s:
                            reps = _repeat(share)
                        else:
                            reps = int(round((it + 1) * share)) - int(round(it * share))
                    emit_block(inner, reps, weight)
            if iters > sim_iters:
                loops.append(Loop(w_start, len(pcs), STEADY_WINDOW, float(iters - sim_iters), 1.0))
            b = last + 1
        else:
            emit_block(b, _repeat(per_warp[b]), 1.0)
            b += 1
    return Trace(tuple(pcs), tuple(loops))
