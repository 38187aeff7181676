"""Choose the cutlass path's configuration per shape, as CUTLASS's profiler would, by this project's timing model.

    python benchmarks/cutlass_sweep.py [--presets tiny,small] [--only NAME,...] [--write]

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


def price(kernel: str, preset_name: str, variant: str, config: str) -> dict:
    """{check, modelled_us, launch_us, launches, sim_wall_s} of one candidate at one shape."""
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from cutlass_impl import grouped_gemm as cg
    from harness.backends.sim import SimBackend
    from harness.timing.sim import MODEL_DEVICE, model_row
    from harness.verify import run_kernel

    preset = get_preset(preset_name)
    backend = SimBackend()
    t0 = time.perf_counter()
    inputs, outputs, records = run_kernel(lambda b, a, p: cg.run(kernel, b, a, p, config=config), backend, kernel,
                                          preset, "balanced", SEED, variant=variant)
    check = get_kernel(kernel).check(outputs, inputs, preset)
    row = model_row(records, backend.launched_sources(), MODEL_DEVICE)
    return {"check": bool(check.ok), "message": check.message, "modelled_us": row["modelled_us"],
            "launch_us": row["launch_us"], "launches": len(records), "device": MODEL_DEVICE,
            "sim_wall_s": round(time.perf_counter() - t0, 1), "error": row["error"]}


def _committed() -> dict:
    from cutlass_impl.grouped_gemm import CHOICES

    return json.loads(CHOICES.read_text()).get("priced", {}) if CHOICES.exists() else {}


def sweep(presets: list[str], only: set[str] | None = None) -> dict:
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from cutlass_impl import build
    from cutlass_impl import grouped_gemm as cg

    choices: dict[str, dict[str, str]] = {}
    priced: dict[str, dict[str, dict]] = {}
    committed = _committed() if only else {}
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    for kernel in KERNELS:
        for preset_name in presets:
            for variant in ("up", "down"):
                preset = get_preset(preset_name)
                inputs = get_kernel(kernel).make_inputs(preset, "balanced", SEED, variant=variant)
                p_max, kd = inputs["a"].shape
                n = inputs["w"].shape[1]
                key = cg.shape_key(int(p_max), int(n), int(kd), int(preset.BM))
                results = {}
                kept = committed.get(kernel, {}).get(key, {}).get("candidates", {})
                for config in cg.candidates_of(kernel):
                    if only and config not in only:
                        if config not in kept:
                            raise SystemExit(f"cutlass_sweep: {config} at {kernel} {key} was never priced; "
                                             f"add it to --only")
                        results[config] = kept[config]
                        continue
                    results[config] = {**price(kernel, preset_name, variant, config), "priced": stamp}
                    r = results[config]
                    where = "grouped" if cg.is_grouped(config) else "per-expert"
                    print(f"{kernel:<17} {preset_name:<6} {variant:<5} {key:<20} {where:<10} "
                          f"{build.CONFIGS[config].label:<40} "
                          f"check {'ok' if r['check'] else 'FAILED'}  kernel {r['modelled_us']} us  "
                          f"+ launches {r['launch_us']} us ({r['launches']})  [{r['sim_wall_s']} s]", flush=True)
                ok = {c: r for c, r in results.items() if r["check"] and r["modelled_us"] is not None}
                if not ok:
                    raise SystemExit(f"cutlass_sweep: no candidate passed at {kernel} {preset_name} {variant}")
                best = min(ok, key=lambda c: ok[c]["modelled_us"] + (ok[c]["launch_us"] or 0.0))
                choices.setdefault(kernel, {})[key] = best
                priced.setdefault(kernel, {})[key] = {"preset": preset_name, "variant": variant, "chosen": best,
                                                       "candidates": results}
    return {"choices": choices, "priced": priced}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="tiny,small")
    parser.add_argument("--only", default="", help="candidate names to re-price (others kept from choices.json)")
    parser.add_argument("--write", action="store_true", help="write cutlass_impl/kernels/choices.json")
    args = parser.parse_args(argv)
    result = sweep([p for p in args.presets.split(",") if p], {n for n in args.only.split(",") if n} or None)
    text = json.dumps({"note": "written by benchmarks/cutlass_sweep.py: per shape (P_maxxNxKd/BM) the candidate "
                               "with the least modelled kernel + launch time; fixed, not re-swept against new rungs",
                       **result}, indent=1, sort_keys=True) + "\n"
    if args.write:
        from cutlass_impl.grouped_gemm import CHOICES

        CHOICES.write_text(text)
        print(f"wrote {CHOICES}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
