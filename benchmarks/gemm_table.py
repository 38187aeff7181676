"""DeepGEMM's published grouped-GEMM table beside this project's modelled FP8 GEMMs on the H800 SXM model (issue 28).

    python benchmarks/gemm_table.py [--shapes deepgemm-table] [--impls cpp,ptx] [--sample auto] [--out DIR]
    python benchmarks/gemm_table.py --from profiles/<run>/run.json

Runs `ptxmoe compare --backend sim --kernels grouped_gemm_fp8 --model-device h800` at the shapes (default: the ten of
`--preset deepgemm-table`) for the implementations asked (`ptx` brings every rung of its ladder), or reads a run.json
such a compare wrote (--from), and prints per shape: DeepGEMM's published TFLOPS, GB/s and speedup over DeepSeek's
CUTLASS 3.6 kernels, the CUTLASS TFLOPS that speedup implies (published / speedup, a derived figure, not a
measurement), and each implementation's modelled TFLOPS and GB/s with its check status (a cutlass row also its
configuration, and whether benchmarks/cutlass_sweep.py chose it for the shape or it is CUTLASS's default). The FLOPs
are 2 x G x M x N x K (DeepGEMM's count); the GB/s is the kernel's minimum bytes (FP8 A and W, their scales, bf16 C)
over the modelled time, as contract.kernels declares it, close to but not exactly DeepGEMM's byte count.

The published figures are predictions to compare with, not inputs: no constant of the timing model is set from them.

The cutlass column: its rows say the configuration (benchmarks/cutlass_sweep.py's choice where the shape was swept,
else CUTLASS's default). At the table's shapes a sampled compare skips them (TooSlowToSimulate: one plain-grid launch
per group, which the simulator runs whole); `--sample off` runs them whole (hours), a GPU run measures them.

Cost on the simulator: every row simulates K/128 tensor-core steps per CTA, and a shape's groups are long runs of
one expert (up to 128 grid rows), which `--sample auto` samples whole (harness/sampling.py), so the table's rows take
minutes each on two cores: the cheapest shape, masked-4x256x7168x2048 (896 CTAs, run whole), took 232 s on the PTX
top rung and 421 s on triton (this session, machine shared). The whole table (10 shapes x cpp, triton and five
rungs) is hours: run it with `--workers`, on a bigger machine, or a subset of --shapes and --impls, and print any
finished run with --from.

Source of the published figures: deepseek-ai/DeepGEMM, README.md, section "Performance", at commit 55ab91f
("Update performance", 2025-03-25): "on H800 SXM5 with NVCC 12.8. All speedup metrics are calculated in comparison to
our internally and carefully optimized implementation based on CUTLASS 3.6." (The README's first version, a6d97a1 of
2025-02-25, published lower contiguous figures: 1297 / 1099 / 1288 / 1093 TFLOPS.) The README since 2025-07 no
longer carries the table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SOURCE = "deepseek-ai/DeepGEMM README.md 'Performance' @55ab91f (2025-03-25), H800 SXM5, NVCC 12.8, vs CUTLASS 3.6"
KERNEL = "grouped_gemm_fp8"

# shape preset name -> (TFLOPS, GB/s, speedup over DeepSeek's CUTLASS 3.6 implementation), as published [SOURCE]
PUBLISHED: dict[str, tuple[float, float, float]] = {
    "contiguous-4x8192x4096x7168": (1346, 434, 1.3),
    "contiguous-4x8192x7168x2048": (1214, 752, 1.3),
    "contiguous-8x4096x4096x7168": (1346, 516, 1.3),
    "contiguous-8x4096x7168x2048": (1214, 826, 1.2),
    "masked-1x1024x4096x7168": (1233, 924, 1.2),
    "masked-1x1024x7168x2048": (925, 968, 1.2),
    "masked-2x512x4096x7168": (1040, 1288, 1.2),
    "masked-2x512x7168x2048": (916, 1405, 1.2),
    "masked-4x256x4096x7168": (932, 2064, 1.1),
    "masked-4x256x7168x2048": (815, 2047, 1.2),
}


def run_compare(shapes: list[str], impls: str, sample: str, out: Path, seed: int) -> Path:
    """Run the compare as a child process (its progress on stderr); returns its run.json."""
    cmd = [sys.executable, "-m", "harness.cli", "compare", "--backend", "sim", "--kernels", KERNEL,
           "--preset", ",".join(shapes), "--impls", impls, "--model-device", "h800", "--sample", sample,
           "--no-static", "--no-dashboard", "--out", str(out), "--seed", str(seed)]
    before = set(out.glob("*/run.json"))
    subprocess.run(cmd, cwd=REPO, check=False)
    found = sorted(set(out.glob("*/run.json")) - before)
    if not found:
        raise SystemExit(f"gemm_table: the compare wrote no run.json under {out} ({' '.join(cmd)})")
    return found[-1]


def table_rows(doc: dict) -> list[dict]:
    """One dict per (shape, implementation row) of the run's grouped_gemm_fp8 rows."""
    rows = []
    for row in doc.get("rows", []):
        if row.get("kernel") != KERNEL:
            continue
        put = row.get("throughput") or {}
        timing = row.get("timing") or {}
        rung = row.get("rung") or {}
        label = row["impl"] if not rung else f"{row['impl'].split('.')[0]}.r{rung.get('number')}"
        label += " (top)" if rung.get("top") else ""
        config = cutlass_config(row) if row["impl"] == "cutlass" else None
        rows.append({"shape": row["preset"], "impl": label, "status": row.get("status"),
                     "check": (row.get("correctness") or {}).get("ok"),
                     "tflops": put.get("achieved_tflops"), "gbps": put.get("achieved_gbps"),
                     "device": timing.get("device"), "sampled": (row.get("sampling") or {}).get("sampled"),
                     "config": config})
    return rows


def cutlass_config(row: dict) -> str | None:
    """The configuration a cutlass row ran, from its launch names ("... cutlass cooperative 128x128x128 (swept)"):
    the best of CUTLASS's candidates where the shape was swept (benchmarks/cutlass_sweep.py), else its default."""
    names = [launch.get("name", "") for launch in ((row.get("timing") or {}).get("launches") or [])]
    configs = sorted({name.split(" cutlass ", 1)[1] for name in names if " cutlass " in name})
    return "; ".join(configs) or None


def _num(value, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def render(rows: list[dict]) -> str:
    """The table as text: a block per shape, DeepGEMM's published line then one line per implementation."""
    lines = [f"published: {SOURCE}", "CUTLASS (implied) = DeepGEMM TFLOPS / published speedup; modelled rows: this "
             "project's timing model on the H800 SXM model (predictions, not fitted to the published figures)", ""]
    head = f"{'shape':<30} {'path':<20} {'TFLOPS':>8} {'GB/s':>8}  note"
    lines += [head, "-" * len(head)]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    for shape in shapes:
        pub = PUBLISHED.get(shape)
        if pub:
            tf, gb, speedup = pub
            lines.append(f"{shape:<30} {'DeepGEMM (published)':<20} {tf:>8.0f} {gb:>8.0f}  {speedup:.1f}x over CUTLASS")
            lines.append(f"{'':<30} {'CUTLASS 3.6 (implied)':<20} {tf / speedup:>8.0f} {'-':>8}  published / speedup")
        for r in (r for r in rows if r["shape"] == shape):
            note = r["status"] if r["check"] is not False else "CHECK FAILED"
            if r["sampled"]:
                note += ", sampled"
            if r["device"] and r["device"] != "H800 SXM":
                note += f", modelled on {r['device']}"
            if r.get("config"):
                note += f", {r['config']}"
            lines.append(f"{'' if pub else shape:<30} {r['impl']:<20} {_num(r['tflops'], '8.1f'):>8} "
                         f"{_num(r['gbps'], '8.0f'):>8}  {note}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="run_json", metavar="RUN_JSON", help="print the table of this run.json")
    parser.add_argument("--shapes", default="deepgemm-table",
                        help="comma-separated shape presets (GxMxNxK, masked-GxMxNxK) or deepgemm-table")
    parser.add_argument("--impls", default="cpp,ptx",
                        help="implementations (default cpp,ptx: ptx runs every rung; cutlass and triton on request: "
                             "at the table's shapes cutlass rows are skipped on the simulator, whose sampling cannot "
                             "cut its per-expert plain grids: --sample off runs them whole, for hours)")
    parser.add_argument("--sample", default="auto", help="the compare's --sample (auto, off or N)")
    parser.add_argument("--out", help="profiles folder for the compare's run (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args(argv)
    if args.run_json:
        path = Path(args.run_json)
    else:
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gemm-table-"))
        out.mkdir(parents=True, exist_ok=True)
        path = run_compare([s for s in args.shapes.split(",") if s], args.impls, args.sample, out, args.seed)
    rows = table_rows(json.loads(path.read_text()))
    if not rows:
        print(f"gemm_table: {path} holds no {KERNEL} rows", file=sys.stderr)
        return 1
    print(f"run: {path}")
    print(render(rows))
    return 0 if all(r["status"] == "ok" and r["check"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
