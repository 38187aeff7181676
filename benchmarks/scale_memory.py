"""DeepSeek-V3's shapes on a laptop: run one kernel at a real preset on ptxsim with a sampled subset of CTAs and lazy
inputs, check the simulated subset, and print peak RSS next to the estimate (contract.footprint.estimate_memory).

    python benchmarks/scale_memory.py [--kernel grouped_gemm] [--preset dsv3-decode] [--impl ptx] [--ctas 4]

Prints one JSON object: check result and coverage, peak RSS (resource.getrusage, MiB), the estimate, the simulated
memory stats (lazy pages filled / pending) and wall time. Exit status 0 when the check passed, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(kernel: str, preset: str, impl: str, ctas: int, variant: str, seed: int, skew: str) -> dict:
    from contract.footprint import estimate_memory
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend
    from harness.implementations import implementation_table
    from harness.verify import run_kernel

    table, problem = implementation_table(impl)
    if problem or kernel not in table:
        raise SystemExit(f"implementation {impl} has no {kernel}: {problem or 'not registered'}")
    params = {"variant": variant} if get_kernel(kernel).variants else {}
    estimate = estimate_memory(kernel, preset, variant, lazy=True, sample_ctas=ctas)
    eager = estimate_memory(kernel, preset, variant, lazy=False, sample_ctas=ctas)
    backend = SimBackend(sample_ctas=ctas, wave_ctas=ctas)  # one wave of `ctas` CTAs: what the estimate assumes
    t0 = time.perf_counter()
    inputs, outputs, records = run_kernel(table[kernel], backend, kernel, preset, skew, seed, lazy=True, **params)
    sim_s = time.perf_counter() - t0
    memory = backend.memory_stats()
    t1 = time.perf_counter()
    check = get_kernel(kernel).check(outputs, inputs, get_preset(preset), sampled=True)
    return {"kernel": kernel, "variant": variant, "preset": preset, "impl": impl, "sample_ctas": ctas,
            "launches": [{"name": r.name, "grid": list(r.grid), "simulated_ctas": r.stats.simulated_ctas,
                          "sample_fraction": r.stats.sample_fraction} for r in records],
            "check": {"ok": check.ok, "message": check.message, "errors": check.errors},
            "peak_rss_mib": round(peak_rss_mib(), 1),
            "estimate_mib": {"host": round(estimate.host_bytes / 2**20, 1), "sim": round(estimate.sim_bytes / 2**20, 1),
                             "total": round(estimate.total_bytes / 2**20, 1),
                             "inputs_full_size": round(estimate.input_bytes / 2**20, 1),
                             "total_without_lazy_inputs": round(eager.total_bytes / 2**20, 1)},
            "sim_memory": memory, "sim_s": round(sim_s, 2), "check_s": round(time.perf_counter() - t1, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="grouped_gemm")
    ap.add_argument("--preset", default="dsv3-decode")
    ap.add_argument("--impl", default="ptx")
    ap.add_argument("--variant", default="up")
    ap.add_argument("--ctas", type=int, default=4, help="CTAs simulated per launch (ptxsim sample_ctas)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skew", default="balanced")
    args = ap.parse_args(argv)
    result = run(args.kernel, args.preset, args.impl, args.ctas, args.variant, args.seed, args.skew)
    print(json.dumps(result, indent=2))
    return 0 if result["check"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
