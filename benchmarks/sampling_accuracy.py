"""Sampled simulation of the grouped GEMM against the kernel's minimum bytes and against a full run (issue #13).

    python benchmarks/sampling_accuracy.py [--preset dsv3-decode] [--experts 16] [--impl ptx] [--variant up]
                                           [--waves 2] [--full] [--kernel grouped_gemm_fp8 [--rung 4]]

Sampling as `ptxmoe compare --sample N` does it (harness.sampling: N live waves of whole grid rows, each the routing
blocks of about one expert, plus the dead tail's wave; default --sample auto's; here applied to any grid size; a
persistent PTX FP8 rung (4, 5) simulates the items
of the same routing blocks, harness.sampling.SamplePolicy.work_windows), inputs lazy where the runner draws them
lazy. For each (impl, variant): whether the check passes on what ran, extrapolated DRAM bytes (read + write) over
contract.kernels' min_bytes, the modelled kernel time and limiter, the fraction of CTAs (or items) simulated and the
simulator's wall time; with --full, the same from a full (unsampled) run and the relative difference in modelled
time. --experts shrinks E (the weights are E x N x Kd: dsv3's 256 experts are 15 GB) keeping every other dsv3
dimension. The figures are printed as measured, whether or not they meet issue #13's targets (DRAM within 1.5x of
min bytes; sampled vs full within 10%).
"""
from __future__ import annotations

import argparse
import dataclasses
import time


def run_once(preset, impl: str, variant: str, waves: int | None, kernel: str = "grouped_gemm",
             rung: int | None = None) -> dict:
    """One launch of `kernel` (grouped_gemm or grouped_gemm_fp8; `rung` picks a PTX FP8 rung) sampled with `waves`
    (None: whole), its check on what ran, extrapolated DRAM over min_bytes and the modelled time."""
    import importlib
    from dataclasses import replace

    from contract.footprint import wants_lazy
    from contract.kernels import POISON_BYTE, get_kernel
    from harness.backends.sim import SimBackend
    from harness.implementations import IMPLS
    from harness.sampling import parse_sample
    from harness.timing.sim import model_row
    from harness.verify import to_device, was_sampled

    spec = get_kernel(kernel)
    inputs = spec.make_inputs(preset, "balanced", 0, variant=variant, lazy=wants_lazy(kernel, preset, variant))
    policy = None if waves is None else replace(parse_sample(waves), min_ctas=0).for_preset(preset)
    sim = SimBackend(sample=policy)
    args = {name: to_device(sim, arr) for name, arr in inputs.items()}
    out_specs = spec.output_specs(preset, inputs)
    for o in out_specs:
        args[o.name] = sim.empty(o.shape, o.dtype, fill_byte=POISON_BYTE)
    params = {"variant": variant} if rung is None else {"variant": variant, "rung": rung}
    t0 = time.perf_counter()
    records = importlib.import_module(IMPLS[impl]).IMPLEMENTATION.kernels[kernel](sim, args, preset, **params)
    wall = time.perf_counter() - t0
    outputs = {o.name: sim.to_host(args[o.name]) for o in out_specs}
    check = spec.check(outputs, inputs, preset, sampled=was_sampled(records))
    m = records[0].stats.metrics
    row = model_row(records, sim.launched_sources())
    launch = row["launches"][0]
    return {"dram_over_min": (m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]) / spec.min_bytes(inputs, preset),
            "modelled_us": row["modelled_us"], "limiter": (launch["estimate"] or {}).get("limiter"),
            "fraction": row["simulated_fraction"], "waves": launch["waves"], "wall_s": wall, "error": row["error"],
            "check": "pass" if check.ok else f"FAIL ({check.message})"}


def main(argv=None) -> int:
    from contract.presets import get_preset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--experts", type=int, default=None, help="override E (a multiple of the preset's G)")
    ap.add_argument("--impl", action="append", choices=("ptx", "cpp", "numba"))
    ap.add_argument("--kernel", default="grouped_gemm", choices=("grouped_gemm", "grouped_gemm_fp8"))
    ap.add_argument("--rung", type=int, default=None, help="grouped_gemm_fp8 on ptx: the ladder's rung (default top)")
    ap.add_argument("--variant", action="append", choices=("up", "down"))
    ap.add_argument("--waves", type=int, default=None,
                    help="live waves per launch (default: --sample auto's, harness.sampling's AUTO_WAVES and, where "
                         "the live rows are unknown, AUTO_UNMARKED_WAVES)")
    ap.add_argument("--full", action="store_true", help="also run every CTA and compare")
    a = ap.parse_args(argv)
    waves = a.waves or "auto"
    preset = get_preset(a.preset)
    if a.experts:
        preset = dataclasses.replace(preset, name=f"{preset.name}-E{a.experts}", E=a.experts)
    for impl in a.impl or ["ptx", "cpp", "numba"]:
        for variant in a.variant or ["up", "down"]:
            s = run_once(preset, impl, variant, waves, a.kernel, a.rung)
            label = f"{a.kernel}{'' if a.rung is None else f' rung {a.rung}'}"
            line = (f"{preset.name} {label} {impl:5s} {variant:4s} sampled: check {s['check']}, "
                    f"DRAM/min {s['dram_over_min']:.2f}, "
                    f"{s['modelled_us']:.2f} us ({s['limiter']}), {s['fraction']:.1%} of CTAs {s['waves']}, "
                    f"{s['wall_s']:.1f} s")
            if a.full:
                f = run_once(preset, impl, variant, None, a.kernel, a.rung)
                line += (f" | full: DRAM/min {f['dram_over_min']:.2f}, {f['modelled_us']:.2f} us ({f['limiter']}), "
                         f"{f['wall_s']:.1f} s | time sampled/full {s['modelled_us'] / f['modelled_us']:.3f}")
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
