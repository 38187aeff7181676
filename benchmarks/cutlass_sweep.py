"""Choose the cutlass path's configuration per shape, as CUTLASS's profiler would, by this project's timing model.

    python benchmarks/cutlass_sweep.py [--presets tiny,small] [--only NAME,...] [--write]
    python benchmarks/cutlass_sweep.py --presets deepgemm-table --kernels grouped_gemm_fp8 --grouped-only \
                                       --sample auto@0 --model-device h800 [--write]

For each GEMM kernel (grouped_gemm, grouped_gemm_fp8), preset and variant, every compiled candidate of the kernel
(cutlass_impl.grouped_gemm.candidates_of: CUTLASS's grouped kernels, one launch, and its per-expert kernels, one launch
per expert run; cutlass_impl.build.CONFIGS: tile shape, cooperative / ping-pong schedule, cluster) runs on the sim
backend on the same inputs, must pass kernels.md's check, and is priced by the timing model on its default device
(harness.timing.sim.model_row): kernel time plus the launch gaps of its launches (one for a grouped candidate, one
per expert run for a per-expert one). The fastest is the shape's choice. --only re-prices just the named candidates
and keeps the others' figures from the committed choices.json (each candidate's figures say when they were priced).
--write fixes the choices, with every candidate's modelled time, in cutlass_impl/kernels/choices.json, which the
cutlass rows then use (their launch names say the configuration). A new PTX rung is measured against these fixed
choices, never re-swept against it.

DeepGEMM's table shapes (`--presets deepgemm-table`, GEMM-shape presets: one variant, "up") are too big to simulate
whole on the shared machine, so there the sweep samples as the benchmark's rows do (`--sample auto@0`: a grouped
candidate's long groups as head, body and setup-fit tile rows, harness.family_sampling.group_windows), prices on the
table's device model (`--model-device h800`) and, with `--grouped-only`, leaves out the per-expert candidates (one
launch per expert run: the sim backend simulates one whole launch per run shape, 2,048 128 x 128 tiles of a K = 7168
loop at contiguous 4 x 8192, about 15 minutes a candidate a shape on two cores; not priced, said so in the record).
A shape key (P_max x N x Kd / BM) can stand for several table shapes (contiguous 4 x 8192 and 8 x 4096 rows are both
32768 rows; the three masked layouts 1024): the key's choice is the candidate with the least modelled time summed
over its shapes, and each shape's figures are recorded.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KERNELS = ("grouped_gemm", "grouped_gemm_fp8")
SEED = 28


def price(kernel: str, preset_name: str, variant: str, config: str, sample: str | None = None,
          device: str | None = None) -> dict:
    """{check, modelled_us, launch_us, launches, sim_wall_s, sim_cpu_s} of one candidate at one shape (sim_cpu_s:
    this process's CPU time, the host shim's g++ runs apart: on the shared machine the wall is inflated by the
    others' load); `sample` a --sample policy (None: every CTA), `device` the model device (None: the timing model's
    default)."""
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from cutlass_impl import grouped_gemm as cg
    from harness.backends.sim import SimBackend
    from harness.sampling import parse_sample
    from harness.timing.sim import MODEL_DEVICE, model_row
    from harness.verify import run_kernel, was_sampled

    preset = get_preset(preset_name)
    policy = None if sample is None else parse_sample(sample).for_preset(preset)
    backend = SimBackend(sample=policy)
    device = device or MODEL_DEVICE
    t0, c0 = time.perf_counter(), time.process_time()
    inputs, outputs, records = run_kernel(lambda b, a, p: cg.run(kernel, b, a, p, config=config), backend, kernel,
                                          preset, "balanced", SEED, variant=variant)
    check = get_kernel(kernel).check(outputs, inputs, preset, sampled=was_sampled(records))
    row = model_row(records, backend.launched_sources(), device)
    fraction = min((float(getattr(r.stats, "sample_fraction", 1.0)) for r in records), default=1.0)
    return {"check": bool(check.ok), "message": check.message, "modelled_us": row["modelled_us"],
            "launch_us": row["launch_us"], "launches": len(records), "device": device,
            "sampled": sample if fraction < 1.0 else None, "sample_fraction": round(fraction, 4),
            "sim_wall_s": round(time.perf_counter() - t0, 1), "sim_cpu_s": round(time.process_time() - c0, 1),
            "error": row["error"]}


def _committed() -> dict:
    from cutlass_impl.grouped_gemm import CHOICES

    return json.loads(CHOICES.read_text()).get("priced", {}) if CHOICES.exists() else {}


def _total_us(r: dict) -> float:
    return r["modelled_us"] + (r["launch_us"] or 0.0)


def sweep(presets: list[str], only: set[str] | None = None, kernels: tuple[str, ...] = KERNELS,
          sample: str | None = None, device: str | None = None, grouped_only: bool = False,
          committed: dict | None = None) -> dict:
    """{"choices", "priced"} of the candidates at `presets` (module docstring); `committed` (default: the
    committed choices.json's) gives the figures --only keeps."""
    from contract.kernels import get_kernel
    from contract.presets import GEMM_SHAPE_KERNELS, expand_presets, get_preset
    from cutlass_impl import build
    from cutlass_impl import grouped_gemm as cg

    choices: dict[str, dict[str, str]] = {}
    priced: dict[str, dict[str, dict]] = {}
    committed = (_committed() if committed is None else committed) if only else {}
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    for kernel in kernels:
        for preset_name in expand_presets(presets):
            preset = get_preset(preset_name)
            gemm_shape = preset.is_gemm_shape and kernel in GEMM_SHAPE_KERNELS
            for variant in ("up",) if gemm_shape else ("up", "down"):
                # lazy: only the shapes are read here (materialised, dsv3's weights are 7.5 GB of FP8, 14 GB peak)
                inputs = get_kernel(kernel).make_inputs(preset, "balanced", SEED, variant=variant, lazy=True)
                p_max, kd = inputs["a"].shape
                n = inputs["w"].shape[1]
                key = cg.shape_key(int(p_max), int(n), int(kd), int(preset.BM))
                results = {}
                kept = committed.get(kernel, {}).get(key, {}).get("shapes", {}).get(preset_name, {}) \
                    .get("candidates") or committed.get(kernel, {}).get(key, {}).get("candidates", {})
                for config in cg.candidates_of(kernel):
                    if grouped_only and not cg.is_grouped(config):
                        results[config] = {"check": None, "modelled_us": None, "priced": stamp,
                                           "message": "not priced (--grouped-only): a per-expert candidate "
                                                      "simulates one whole launch per run shape here"}
                        continue
                    if only and config not in only:
                        if config not in kept:
                            raise SystemExit(f"cutlass_sweep: {config} at {kernel} {key} was never priced; "
                                             f"add it to --only")
                        results[config] = kept[config]
                        continue
                    results[config] = {**price(kernel, preset_name, variant, config, sample, device),
                                       "priced": stamp}
                    r = results[config]
                    where = "grouped" if cg.is_grouped(config) else "per-expert"
                    print(f"{kernel:<17} {preset_name:<6} {variant:<5} {key:<20} {where:<10} "
                          f"{build.CONFIGS[config].label:<40} "
                          f"check {'ok' if r['check'] else 'FAILED'}  kernel {r['modelled_us']} us  "
                          f"+ launches {r['launch_us']} us ({r['launches']})  [{r['sim_wall_s']} s wall, "
                          f"{r['sim_cpu_s']} s CPU]", flush=True)
                ok = {c: r for c, r in results.items() if r["check"] and r["modelled_us"] is not None}
                if not ok:
                    raise SystemExit(f"cutlass_sweep: no candidate passed at {kernel} {preset_name} {variant}")
                entry = priced.setdefault(kernel, {}).setdefault(key, {"shapes": {}})
                entry["shapes"][preset_name] = {"variant": variant, "candidates": results}
                # a key standing for several shapes: the least modelled time summed over them (module docstring)
                passed = [c for c in cg.candidates_of(kernel)
                          if all(c in {k for k, r in shape["candidates"].items()
                                       if r["check"] and r["modelled_us"] is not None}
                                 for shape in entry["shapes"].values())]
                if not passed:
                    raise SystemExit(f"cutlass_sweep: no candidate passed at every shape of {kernel} {key}")
                best = min(passed, key=lambda c: sum(_total_us(shape["candidates"][c])
                                                     for shape in entry["shapes"].values()))
                first = next(iter(entry["shapes"].values()))
                entry.update({"preset": next(iter(entry["shapes"])), "variant": first["variant"], "chosen": best,
                              "candidates": first["candidates"]})
                choices.setdefault(kernel, {})[key] = best
    for by_key in priced.values():
        for entry in by_key.values():
            if len(entry["shapes"]) == 1:  # one shape: the record as before
                del entry["shapes"]
    return {"choices": choices, "priced": priced}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="tiny,small", help="presets or groups (deepgemm-table)")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--only", default="", help="candidate names to re-price (others kept from choices.json)")
    parser.add_argument("--sample", default=None, help="a --sample policy (default: every CTA; the table: auto@0)")
    parser.add_argument("--model-device", default=None, help="the timing model's device (default: its own)")
    parser.add_argument("--grouped-only", action="store_true", help="leave out the per-expert candidates")
    parser.add_argument("--write", action="store_true",
                        help="merge the choices into cutlass_impl/kernels/choices.json (other shapes kept)")
    args = parser.parse_args(argv)
    from harness.commands.compare_cmd import model_device_option

    device = None if args.model_device is None else model_device_option(args.model_device)
    kernels = tuple(k for k in args.kernels.split(",") if k)
    bad = [k for k in kernels if k not in KERNELS]
    if bad:
        raise SystemExit(f"cutlass_sweep: --kernels {bad}; expected some of {list(KERNELS)}")
    result = sweep([p for p in args.presets.split(",") if p], {n for n in args.only.split(",") if n} or None,
                   kernels, args.sample, device, args.grouped_only)
    note = ("written by benchmarks/cutlass_sweep.py: per shape (P_maxxNxKd/BM) the candidate with the least modelled "
            "kernel + launch time; fixed, not re-swept against new rungs")
    if args.write:
        from cutlass_impl.grouped_gemm import CHOICES

        old = json.loads(CHOICES.read_text()) if CHOICES.exists() else {}
        for part in ("choices", "priced"):
            merged = old.get(part, {})
            for kernel, by_key in result[part].items():
                merged.setdefault(kernel, {}).update(by_key)
            result[part] = merged
        CHOICES.write_text(json.dumps({"note": note, **result}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {CHOICES}")
    else:
        print(json.dumps({"note": note, **result}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
