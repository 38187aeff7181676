"""LaunchStats and the ncu-named metrics dictionary built from per-pc counts and the memory counters."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CLASSES = ("int", "fp32", "fp64", "fp16", "sfu", "tensor", "convert", "ld_global", "st_global", "ld_shared",
           "st_shared", "ld_local", "st_local", "ld_param", "ld_const", "atom", "cp_async", "barrier", "warp",
           "control", "other")


@dataclass(frozen=True)
class WarpCounts:
    """What model v2 needs to replay each warp's own stream: `counts` int64[warps per CTA, pcs], warp-instructions
    per (warp of its CTA, pc) summed over the simulated CTAs (not extrapolated); `mbarrier_waits` per mbarrier
    test/try_wait pc, thread counts (free, tx, arrive): passes of a phase before the barrier's first (the parity
    idiom of a ring's empty slots), waits on a barrier completed by async-copy bytes (a full slot), waits on one
    completed by arrivals only (an empty slot)."""

    counts: np.ndarray
    mbarrier_waits: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchStats:
    """What one launch did. `metrics` uses Nsight Compute names; `per_line` maps PTX line -> counters."""

    kernel: str
    grid: tuple
    block: tuple
    thread_instructions: int
    warp_instructions: int
    wall_seconds: float
    metrics: dict = field(default_factory=dict)
    per_line: dict = field(default_factory=dict)
    sanitizer_reports: list = field(default_factory=list)
    sample_fraction: float = 1.0
    simulated_ctas: int = 0
    # The simulated subset's own counters (not extrapolated; equal to `metrics` when every CTA ran), and the waves:
    # {"wave_ctas", "total_waves", "simulated_waves"} (sampling simulates whole waves; ptxsim.launch.plan_waves),
    # plus "phases" for a launch run in phases (each the whole grid on its own parameters; ptxsim.launch.launch).
    simulated_metrics: dict = field(default_factory=dict)
    waves: dict = field(default_factory=dict)
    by_warp: WarpCounts | None = None

    @property
    def thread_instructions_per_second(self) -> float:
        return self.thread_instructions / self.wall_seconds if self.wall_seconds > 0 else float("inf")


def build(prog, counts, mem, launch, wall, scale=1.0, reports=(), sample_fraction=1.0, simulated=0, waves=None,
          weighted=None, by_warp=None):
    """Assemble LaunchStats from per-pc counts (warp, thread, pred_on) and the memory-counter dict `mem`: `metrics`
    extrapolated by `scale`, or, with `weighted` (a stratified sample's (weighted per-pc counts, weighted memory
    counters)), those as they are; `simulated_metrics` as counted."""
    sim = _metrics(prog, counts, mem, launch, 1.0)
    if weighted is not None:
        counts, mem = weighted
    m = _metrics(prog, counts, mem, launch, scale) if weighted is not None or scale != 1.0 else sim
    wave_info = {} if waves is None else {"wave_ctas": int(waves.wave_ctas), "total_waves": int(waves.total_waves),
                                          "simulated_waves": len(waves.waves)}
    if waves is not None and hasattr(waves, "represents"):  # a phased launch (ptxsim.launch.PhasePlan)
        wave_info["phases"] = len(waves.waves)
    wc, tc = counts["warp"][: len(prog.instrs)], counts["thread"][: len(prog.instrs)]
    per_line = {}
    for ins in prog.instrs:
        p = ins.pc
        if wc[p] == 0 and not mem.per_pc.get(p):
            continue
        d = per_line.get(ins.line)
        if d is None:
            d = per_line[ins.line] = {"inst_executed": 0.0, "thread_inst_executed": 0.0, "text": ins.text,
                                      "class": ins.klass}
        else:  # several instructions on one PTX line
            d["text"] += " ; " + ins.text
        d["inst_executed"] += float(wc[p]) * scale
        d["thread_inst_executed"] += float(tc[p]) * scale
        for k, v in mem.per_pc.get(p, {}).items():
            d[k] = d.get(k, 0.0) + float(v) * scale
    return LaunchStats(kernel=prog.name, grid=tuple(launch.grid), block=tuple(launch.block),
                       thread_instructions=round(m["smsp__thread_inst_executed.sum"]),
                       warp_instructions=round(m["smsp__inst_executed.sum"]), wall_seconds=wall,
                       metrics=m, per_line=per_line, sanitizer_reports=list(reports),
                       sample_fraction=sample_fraction, simulated_ctas=simulated, simulated_metrics=sim,
                       waves=wave_info, by_warp=by_warp)


def _metrics(prog, counts, mem, launch, scale):
    """The ncu-named metrics dict, counts multiplied by `scale` (ratios are not)."""
    wc, tc = counts["warp"][: len(prog.instrs)], counts["thread"][: len(prog.instrs)]
    klass = np.array([CLASSES.index(i.klass) if i.klass in CLASSES else CLASSES.index("other")
                      for i in prog.instrs], np.int64)
    # NOTE: per-class counts are in units of the class's base instruction: a wmma.mma m16n16k16 is two m16n8k16
    # tensor instructions (two HMMA.16816 in SASS, 8192 FLOP), which the timing model's tensor bound relies on.
    units = np.array([i.aux.class_units or 1 for i in prog.instrs], np.float64)
    wk = np.bincount(klass, weights=wc * units, minlength=len(CLASSES))
    tk = np.bincount(klass, weights=tc * units, minlength=len(CLASSES))
    W, T = float(wc.sum()) * scale, float(tc.sum()) * scale
    gx, gy, gz = launch.grid
    bx, by, bz = launch.block
    m = {
        "smsp__inst_executed.sum": W, "smsp__thread_inst_executed.sum": T,
        "smsp__thread_inst_executed_per_inst_executed.ratio": (T / W) if W else 0.0,
        "smsp__thread_inst_executed_pred_on.sum": float(counts["pred_on"].sum()) * scale,
        "launch__grid_size": gx * gy * gz, "launch__block_size": bx * by * bz,
        "launch__thread_count": gx * gy * gz * bx * by * bz,
        "launch__shared_mem_per_block_dynamic": launch.shared_bytes,
        "launch__shared_mem_per_block_static": prog.shared_static,
    }
    for i, c in enumerate(CLASSES):
        m[f"ptxsim__inst_executed_{c}.sum"] = float(wk[i]) * scale
        m[f"ptxsim__thread_inst_executed_{c}.sum"] = float(tk[i]) * scale
    for k, v in mem.totals().items():
        m[k] = float(v) * scale
    from ptxsim.model.stream import stream_metrics
    from ptxsim.model.tensor_counts import tensor_metrics

    m.update(stream_metrics(prog.instrs, wc))  # ratios (ILP, MLP) for the timing model: not scaled
    m.update({k: v * scale for k, v in tensor_metrics(prog.instrs, wc).items()})  # tensor work: counts, scaled
    return m
