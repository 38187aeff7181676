"""DeepGEMM's published grouped-GEMM table beside this project's modelled FP8 GEMMs on the H800 SXM model (issues 28,
29 and 30).

    python benchmarks/gemm_table.py [--shapes deepgemm-table] [--impls cpp,triton,cutlass,ptx] [--timing-model v1]
                                    [--prefill] [--sample auto@0] [--out DIR]
    python benchmarks/gemm_table.py --from profiles/<run>/run.json [more run.json ...]

Runs `ptxmoe compare --backend sim --kernels grouped_gemm_fp8 --model-device h800 --timing-model v1|v2` at the shapes
(default: the ten of `--preset deepgemm-table`) for the implementations asked (`ptx` brings every rung of its ladder,
whatever the registry holds), or reads run.json files such compares wrote (--from), and prints per shape:
DeepGEMM's published TFLOPS, GB/s and speedup over DeepSeek's CUTLASS 3.6 kernels, the CUTLASS TFLOPS that speedup
implies (published / speedup, a derived figure, not a measurement), and each implementation's modelled TFLOPS with
its 95% prediction interval (the row's `timing.interval_us`: harness.timing, ptxsim/model/interval_table.json), its
GB/s, check status, how it was sampled and the simulator's wall time for the row. Then the goal lines, each MET,
MISSED or NOT EVALUATED with its numbers:
- issue 30: the top rung (the ladder's highest registered rung, from the run's rung records: new rungs appear when
  merged) within 15% of DeepGEMM's published TFLOPS on every contiguous row;
- issue 30: the top rung against the best `cutlass` row of the shape on the same side of 1.0 as the published
  1.1-1.3x (every table shape), with the pair's 95% interval where the run has the verdict;
- issue 30: at dsv3-prefill the top rung at least 3x rung 5 (both GEMM variants; `--prefill` runs it, a separate
  sampled compare at the routed preset, or pass its run.json to --from);
- issue 29: the published speedup over CUTLASS reproduced in sign by the top rung against `cutlass` at the published
  shapes (the same ratios as the second goal, judged by sign alone).
The FLOPs are 2 x G x M x N x K (DeepGEMM's count); the GB/s is the kernel's minimum bytes (FP8 A and W, their
scales, bf16 C) over the modelled time, as contract.kernels declares it, close to but not exactly DeepGEMM's bytes.

The published figures are predictions to compare with, not inputs: no constant of the timing model is set from them.

How each row is sampled (`--sample auto@0`, the default here: harness/sampling.py's auto, with no size under which
a launch runs whole; each row's note says "sampled x%", the share of its CTAs or items simulated). A GEMM shape's
groups are runs of one expert's routing blocks (contiguous 4 x 8192: 4 runs of 128 blocks of 64 rows), every block
of a run doing the same work on the same weights. Where every run is at least sampling.LONG_RUN_GROUPS (4) groups
long (grid rows; for the persistent rungs 6-7 groups of two blocks, one 128-row token tile), each of two runs is
simulated as its first group (cold: it reads the expert's weights from DRAM) and the group after it (the next L2
wave: it finds them in L2), the heads weighted for every run's head and the bodies for every other block
(sampling._head_and_body): the contiguous rows (0.2-1.6% of their CTAs or items), masked 1x1024 and 2x512
(3-25%). Shorter runs (rungs 5-7 at masked 2x512 and 4x256) are sampled
as two whole runs (half the launch).
Checked against whole runs (contiguous-2x1024x4096x1024, min_ctas 0 vs --sample off, this session): rung 7 and
triton modelled 0.9998x and 0.9972x the whole run's time, DRAM bytes equal to 6 digits. The row's check covers the
blocks that ran. Rung 7's scale transpose (a plain grid) runs whole. The cutlass column (CUTLASS's grouped kernel,
one persistent launch, in the configuration benchmarks/cutlass_sweep.py chose for the shape): its groups of at least
LONG_RUN_GROUPS tile rows (contiguous; masked 1 x 1024 and 2 x 512) are sampled the same way, each simulated group's
first tile row (cold) and the next (warm), plus two tile rows for the per-CTA setup fit
(harness.family_sampling.group_windows; docs/cutlass.md measures it against whole launches); masked 4 x 256 runs one
group per shape. `--sample off` runs every row whole (hours); a GPU run measures them. Goals without cutlass rows are
NOT EVALUATED, said so.

`--direct cutlass,ptx.r10` runs just those rows in this process (no compare: the ladder's other rungs and the
verdicts are left out; each row simulated once and priced by both timing models), for a session without the time for
the whole table.

Cost on the simulator (two cores, shared): a row costs about the items or CTAs it simulates times K / 128
tensor-core steps, about 0.4 s per 128 x 128 item at K = 7168 for the top rung (unloaded); the sampled rows simulate
64-448 CTAs or items. docs/gemm-table.md has a run's output with each row's wall time ("sim s").

Source of the published figures: deepseek-ai/DeepGEMM, README.md, section "Performance", at commit 55ab91f
("Update performance", 2025-03-25): "on H800 SXM5 with NVCC 12.8. All speedup metrics are calculated in comparison to
our internally and carefully optimized implementation based on CUTLASS 3.6." (The README's first version, a6d97a1 of
2025-02-25, published lower contiguous figures: 1297 / 1099 / 1288 / 1093 TFLOPS.) The README since 2025-07 no
longer carries the table.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SOURCE = "deepseek-ai/DeepGEMM README.md 'Performance' @55ab91f (2025-03-25), H800 SXM5, NVCC 12.8, vs CUTLASS 3.6"
KERNEL = "grouped_gemm_fp8"
PREFILL = "dsv3-prefill"
WITHIN = 0.15  # issue 30: the top rung within 15% of DeepGEMM's published TFLOPS
PREFILL_GAIN = 3.0  # issue 30: at dsv3-prefill the top rung at least 3x rung 5
PREFILL_BASE_RUNG = 5

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


def compare_command(presets: list[str], impls: str, sample: str, out: Path, seed: int, timing_model: str) -> list:
    """The `compare` command line the benchmark runs (a child process, its progress on stderr)."""
    return [sys.executable, "-m", "harness.cli", "compare", "--backend", "sim", "--kernels", KERNEL,
            "--preset", ",".join(presets), "--impls", impls, "--model-device", "h800", "--sample", sample,
            "--timing-model", timing_model, "--no-static", "--no-dashboard", "--out", str(out), "--seed", str(seed)]


def run_compare(cmd: list, out: Path) -> Path:
    """Run a compare command; returns the run.json it wrote."""
    before = set(out.glob("*/run.json"))
    subprocess.run(cmd, cwd=REPO, check=False)
    found = sorted(set(out.glob("*/run.json")) - before)
    if not found:
        raise SystemExit(f"gemm_table: the compare wrote no run.json under {out} ({' '.join(map(str, cmd))})")
    return found[-1]


# ------------------------------------------------------------------------------------------------------------ rows
def table_rows(doc: dict) -> list[dict]:
    """One dict per grouped_gemm_fp8 row of a run.json: shape, variant, label, rung number and top, status, check,
    TFLOPS with its 95% interval (lo, hi), GB/s, modelled time and interval (us), device, sampling, wall seconds."""
    rows = []
    for row in doc.get("rows", []):
        if row.get("kernel") != KERNEL:
            continue
        put = row.get("throughput") or {}
        timing = row.get("timing") or {}
        rung = row.get("rung") or {}
        label = row["impl"] if not rung else f"{row['impl'].split('.')[0]}.r{rung.get('number')}"
        label += " (top)" if rung.get("top") else ""
        interval = timing.get("interval_us") or [None, None]
        flops = put.get("flops") or row.get("flops")
        tf_lo = flops / interval[1] / 1e6 if flops and interval[1] else None  # the slow end of time: low TFLOPS
        tf_hi = flops / interval[0] / 1e6 if flops and interval[0] else None
        sampling = row.get("sampling") or {}
        rows.append({"shape": row["preset"], "variant": row.get("variant"), "impl": label,
                     "base": row["impl"].split(".")[0], "rung": rung.get("number"), "top": bool(rung.get("top")),
                     "status": row.get("status"), "check": (row.get("correctness") or {}).get("ok"),
                     "reason": _reason(row), "tflops": put.get("achieved_tflops"), "tflops_ci": (tf_lo, tf_hi),
                     "gbps": put.get("achieved_gbps"), "time_us": timing.get("modelled_us"),
                     "time_ci_us": tuple(interval), "device": timing.get("device"),
                     "model": timing.get("model_version") or doc.get("settings", {}).get("timing_model"),
                     "sampled": sampling.get("sampled"), "fraction": sampling.get("simulated_fraction"),
                     "wall_s": row.get("elapsed_s"),
                     "config": cutlass_config(row) if row["impl"] == "cutlass" else None})
    return rows


def _reason(row: dict) -> str | None:
    """Why a row has no figure (its status's reason or error), first line, short."""
    for key in ("reason", "error", "skipped"):
        value = row.get(key) or (row.get("timing") or {}).get(key)
        if value:
            return str(value).splitlines()[0][:110]
    return None


def cutlass_config(row: dict) -> str | None:
    """The configuration a cutlass row ran, from its launch names ("... cutlass cooperative 128x128x128 (swept)"):
    the best of CUTLASS's candidates where the shape was swept (benchmarks/cutlass_sweep.py), else its default."""
    names = [launch.get("name", "") for launch in ((row.get("timing") or {}).get("launches") or [])]
    configs = sorted({name.split(" cutlass ", 1)[1] for name in names if " cutlass " in name})
    return "; ".join(configs) or None


def _num(value, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _fig(value) -> str:
    """A TFLOPS figure: whole above 100, three significant digits below."""
    if not isinstance(value, (int, float)):
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _tflops_text(r: dict) -> str:
    lo, hi = r["tflops_ci"]
    if r["tflops"] is None:
        return "-"
    return f"{_fig(r['tflops'])} [{_fig(lo)}, {_fig(hi)}]"


def render(rows: list[dict]) -> str:
    """The table as text: a block per shape, DeepGEMM's published line then one line per implementation."""
    models = sorted({str(r["model"]) for r in rows if r.get("model")})
    lines = [f"published: {SOURCE}",
             "CUTLASS (implied) = DeepGEMM TFLOPS / published speedup; modelled rows: this project's timing model "
             f"{'/'.join(models) or '?'} on the H800 SXM model, TFLOPS [95% prediction interval] (predictions, not "
             "fitted to the published figures)", ""]
    head = f"{'shape':<28} {'path':<22} {'TFLOPS [95%]':>20} {'GB/s':>6} {'sim s':>6}  note"
    lines += [head, "-" * len(head)]
    shapes = list(dict.fromkeys(r["shape"] for r in rows if r["shape"] != PREFILL))
    for shape in shapes:
        pub = PUBLISHED.get(shape)
        if pub:
            tf, gb, speedup = pub
            lines.append(f"{shape:<28} {'DeepGEMM (published)':<22} {tf:>20.0f} {gb:>6.0f} {'':>6}  "
                         f"{speedup:.1f}x over CUTLASS")
            lines.append(f"{'':<28} {'CUTLASS 3.6 (implied)':<22} {tf / speedup:>20.0f} {'-':>6} {'':>6}  "
                         "published / speedup")
        # NOTE: the other paths in the run's order, then the ladder lowest rung first, the top last
        at = [r for r in rows if r["shape"] == shape]
        for r in sorted(at, key=lambda r: (r["rung"] is not None, r["rung"] or 0)):
            lines.append(f"{'' if pub else shape:<28} {r['impl']:<22} {_tflops_text(r):>20} "
                         f"{_num(r['gbps'], '6.0f'):>6} {_num(r['wall_s'], '6.0f'):>6}  {_note(r)}")
        lines.append("")
    return "\n".join(lines)


def _note(r: dict) -> str:
    note = r["status"] if r["check"] is not False else "CHECK FAILED"
    if r["tflops"] is not None:
        note += ", modelled"
    if r["sampled"]:
        note += f", sampled {100 * (r['fraction'] or 0):.2g}%"
    elif r["tflops"] is not None:
        note += ", whole"
    if r["device"] and r["device"] != "H800 SXM":
        note += f", modelled on {r['device']}"
    if r.get("config"):
        note += f", {r['config']}"
    if r["tflops"] is None and r.get("reason"):
        note += f": {r['reason']}"
    return note


# ----------------------------------------------------------------------------------------------------------- goals
def _ok(r: dict) -> bool:
    return r["status"] == "ok" and r["check"] is not False and r["tflops"] is not None


def _pair_interval(verdicts: list[dict], shape: str, impl: str, baseline: str):
    """(speedup, lo, hi) of the run's verdict impl-vs-baseline at `shape`, or None."""
    for v in verdicts:
        if v.get("preset") == shape and v.get("kernel") == KERNEL and v.get("pair") == f"{impl}-vs-{baseline}":
            return v.get("speedup"), v.get("ci_lo"), v.get("ci_hi")
    return None


def goals(rows: list[dict], verdicts: list[dict], table: tuple[str, ...] = tuple(PUBLISHED)) -> list[dict]:
    """The goal lines: {goal, issue, status (MET / MISSED / NOT EVALUATED), detail}."""
    ok = [r for r in rows if _ok(r)]
    top = {r["shape"]: r for r in ok if r["top"] and r["shape"] in table}
    out = [_within_goal(top, [s for s in table if s.startswith("contiguous-")])]
    ratios = _cutlass_ratios(top, ok, verdicts, table)
    why = _cutlass_absent(rows, table)
    out += [_side_goal(ratios, table, why, "30", "top rung vs best cutlass on the same side of 1.0 as the published "
                                                  "1.1-1.3x, every table shape"),
            _side_goal(ratios, table, why, "29", "DeepGEMM's 1.1-1.3x over CUTLASS reproduced in sign by the top "
                                                 "PTX rung vs cutlass at the published shapes")]
    out.append(_prefill_goal(rows))
    return out


def _within_goal(top: dict, shapes: list[str]) -> dict:
    parts, missed, absent = [], False, []
    for shape in shapes:
        r = top.get(shape)
        if r is None:
            absent.append(shape)
            continue
        ratio = r["tflops"] / PUBLISHED[shape][0]
        missed |= abs(ratio - 1) > WITHIN
        lo, hi = r["tflops_ci"]
        parts.append(f"{shape}: {r['impl']} {_tflops_text(r)} / {PUBLISHED[shape][0]:.0f} = {ratio:.2f}")
    status = "MISSED" if missed else "NOT EVALUATED" if absent or not shapes else "MET"
    detail = "; ".join(parts + ([f"no top-rung figure at {', '.join(absent)}"] if absent else []))
    return {"issue": "30", "goal": f"top rung within {WITHIN:.0%} of DeepGEMM's published TFLOPS on every contiguous "
                                   "row", "status": status, "detail": detail}


def _cutlass_ratios(top: dict, ok: list[dict], verdicts: list[dict], table) -> dict:
    """shape -> (ratio best-cutlass time / top time, lo, hi, text) where both are present."""
    out = {}
    for shape in table:
        cut = [r for r in ok if r["shape"] == shape and r["base"] == "cutlass"]
        if shape not in top or not cut:
            continue
        best = max(cut, key=lambda r: r["tflops"])
        ratio = top[shape]["tflops"] / best["tflops"]
        pair = _pair_interval(verdicts, shape, "ptx", "cutlass")
        lo, hi = (pair[1], pair[2]) if pair else (None, None)
        config = f", cutlass {best['config']}" if best.get("config") else ""
        out[shape] = (ratio, lo, hi, f"{shape}: {ratio:.2f}x [{_num(lo, '.2f')}, {_num(hi, '.2f')}] "
                                     f"(published {PUBLISHED.get(shape, (0, 0, 0))[2]:.1f}x{config})")
    return out


def _cutlass_absent(rows: list[dict], table) -> dict:
    """shape -> why it has no top-rung / cutlass pair: the cutlass row's status and reason, or not run."""
    out = {}
    for shape in table:
        at = [r for r in rows if r["shape"] == shape]
        cut = [r for r in at if r["base"] == "cutlass"]
        if not any(r["top"] and _ok(r) for r in at):
            out[shape] = "no top-rung figure"
        elif not cut:
            out[shape] = "no cutlass row in the run"
        elif not any(_ok(r) for r in cut):
            out[shape] = f"cutlass {cut[0]['status']}" + (f" ({cut[0]['reason'][:100]})" if cut[0]["reason"] else "")
    return out


def _side_goal(ratios: dict, table, why: dict, issue: str, goal: str) -> dict:
    absent = [s for s in table if s not in ratios]
    missed = any(r[0] <= 1.0 for r in ratios.values())
    status = "MISSED" if missed else "NOT EVALUATED" if absent else "MET"
    parts = [r[3] for r in ratios.values()]
    reasons: dict[str, list[str]] = {}
    for shape in absent:
        reasons.setdefault(why.get(shape, "not in the run"), []).append(shape)
    parts += [f"not evaluated at {len(shapes)} shape(s) ({', '.join(shapes)}): {reason}"
              for reason, shapes in reasons.items()]
    return {"issue": issue, "goal": goal, "status": status, "detail": "; ".join(parts)}


def _prefill_goal(rows: list[dict]) -> dict:
    goal = f"at {PREFILL} the top rung at least {PREFILL_GAIN:.0f}x rung {PREFILL_BASE_RUNG}"
    pre = [r for r in rows if r["shape"] == PREFILL and _ok(r) and r["base"] == "ptx"]
    parts, missed, absent = [], False, []
    for variant in sorted({r["variant"] for r in rows if r["shape"] == PREFILL} or {"up", "down"}):
        top = next((r for r in pre if r["variant"] == variant and r["top"]), None)
        base = next((r for r in pre if r["variant"] == variant and r["rung"] == PREFILL_BASE_RUNG), None)
        if top is None or base is None:
            absent.append(variant)
            continue
        gain = base["time_us"] / top["time_us"]
        missed |= gain < PREFILL_GAIN
        parts.append(f"{variant}: {top['impl']} {top['time_us']:.0f} us vs ptx.r{PREFILL_BASE_RUNG} "
                     f"{base['time_us']:.0f} us = {gain:.2f}x")
    status = "MISSED" if missed else "NOT EVALUATED" if absent else "MET"
    detail = "; ".join(parts)
    if absent:
        detail += (("; " if detail else "") + f"no {PREFILL} top-rung and rung-{PREFILL_BASE_RUNG} rows for "
                   f"{', '.join(absent)} (run with --prefill, or pass that run's run.json to --from)")
    return {"issue": "30", "goal": goal, "status": status, "detail": detail}


def render_goals(lines: list[dict]) -> str:
    return "\n".join(["goals:"] + [f"  [{g['status']}] issue {g['issue']}: {g['goal']}\n      {g['detail']}"
                                   for g in lines])


# ---------------------------------------------------------------------------------------------------------- direct
def direct_rows(shapes: list[str], slots: list[str], sample: str, seed: int, models: tuple[str, ...],
                out: Path | None = None) -> dict[str, list[dict]]:
    """{model: rows in table_rows' form} of `slots` ("cutlass", "ptx.r10": one rung, not the whole ladder) at
    `shapes`, each simulated ONCE in this process on the sim backend under `sample` (SimBackend(sample=...), as a
    compare row) and priced by every timing model in `models` on the H800 SXM model (the same records: only the
    pricing differs). No verdicts (no pair intervals), no compare run.json: a cheaper way to the figures the goals
    need when the whole ladder is too slow for the session (docs/gemm-table.md says which rows came this way).
    Rows are appended to `out`/direct.jsonl as they finish."""
    import json
    import time

    from contract.kernels import get_kernel
    from contract.presets import expand_presets, get_preset
    from harness.backends.sim import SimBackend
    from harness.cell import find_run
    from harness.implementations import implementation_ladders, split_slot
    from harness.sampling import parse_sample
    from harness.timing.sim import model_row
    from harness.verify import run_kernel, was_sampled

    spec = get_kernel(KERNEL)
    found: dict[str, list[dict]] = {m: [] for m in models}
    for shape in expand_presets(shapes):
        preset = get_preset(shape)
        for slot in slots:
            run, why = find_run(slot, KERNEL)
            impl = split_slot(slot)[0]
            ladder = implementation_ladders(impl).get(KERNEL)
            record = ladder.rung(slot) if ladder is not None else None  # {number, top, ...} of a laddered path
            rung, top = (record["number"], record["top"]) if record else (None, False)
            if run is None:
                raise SystemExit(f"gemm_table --direct: {slot}: {why}")
            backend = SimBackend(sample=parse_sample(sample).for_preset(preset))
            t0 = time.perf_counter()
            inputs, outputs, records = run_kernel(run, backend, KERNEL, preset, "balanced", seed, variant="up")
            check = spec.check(outputs, inputs, preset, sampled=was_sampled(records))
            wall = time.perf_counter() - t0
            flops, min_bytes = int(spec.flops(inputs, preset)), int(spec.min_bytes(inputs, preset))
            fraction = min((float(getattr(r.stats, "sample_fraction", 1.0)) for r in records), default=1.0)
            names = [r.name for r in records]
            for model in models:
                timing = model_row(records, backend.launched_sources(), "H800 SXM", model=model)
                t_us = timing["modelled_us"]
                lo, hi = timing.get("interval_us") or (None, None)
                row = {"shape": shape, "variant": "up", "impl": slot + (" (top)" if top else ""),
                       "base": impl, "rung": rung, "top": top, "status": "ok" if t_us else "error",
                       "check": bool(check.ok), "reason": timing.get("error"),
                       "tflops": flops / t_us / 1e6 if t_us else None,
                       "tflops_ci": (flops / hi / 1e6 if hi else None, flops / lo / 1e6 if lo else None),
                       "gbps": min_bytes / t_us / 1e3 if t_us else None, "time_us": t_us,
                       "time_ci_us": (lo, hi), "device": "H800 SXM", "model": model,
                       "sampled": fraction < 1.0, "fraction": fraction, "wall_s": wall,
                       "config": "; ".join(sorted({n.split(" cutlass ", 1)[1] for n in names if " cutlass " in n}))
                       or None, "check_message": check.message}
                found[model].append(row)
                if out is not None:
                    with open(out / "direct.jsonl", "a") as f:
                        f.write(json.dumps({**row, "seed": seed, "sample": sample, "date": time.strftime(
                            "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
            print(f"{shape} {slot}: check {'ok' if check.ok else 'FAILED'}, "
                  + ", ".join(f"{m} {r['tflops']:.0f} TFLOPS" for m in models for r in found[m][-1:] if r["tflops"])
                  + f", sampled {100 * fraction:.2g}%, {wall:.0f} s", file=sys.stderr, flush=True)
    return found


# ------------------------------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="run_json", nargs="+", metavar="RUN_JSON",
                        help="print the table and goals of these run.json files (e.g. the table's and a prefill run)")
    parser.add_argument("--shapes", default="deepgemm-table",
                        help="comma-separated shape presets (GxMxNxK, masked-GxMxNxK) or deepgemm-table")
    parser.add_argument("--impls", default="cpp,triton,cutlass,ptx",
                        help="implementations (ptx runs every registered rung)")
    parser.add_argument("--timing-model", choices=("v1", "v2"), default="v1", help="the compare's timing model")
    parser.add_argument("--prefill", action="store_true",
                        help=f"also run the ptx ladder at {PREFILL} (a separate sampled compare) for the rung goal")
    parser.add_argument("--sample", default="auto@0",
                        help="the compare's --sample (default auto@0: auto at every size; auto, off, N[@C])")
    parser.add_argument("--out", help="profiles folder for the compare's run (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--direct", metavar="SLOTS",
                        help="instead of a compare: simulate just these rows (e.g. cutlass,ptx.r10) in this process "
                             "and price them under v1 and v2 (direct_rows; no verdict intervals)")
    args = parser.parse_args(argv)
    if args.direct:
        out = Path(args.out) if args.out else None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        from contract.errors import PtxmoeError

        try:  # a bad slot, shape or sample names itself in one line, as the compare's errors do
            by_model = direct_rows([s for s in args.shapes.split(",") if s], [s for s in args.direct.split(",") if s],
                                   args.sample, args.seed, ("v1", "v2"), out)
        except PtxmoeError as exc:
            print(f"gemm_table --direct: {exc}", file=sys.stderr)
            return 2
        for model, rows in by_model.items():
            print(f"direct rows, timing model {model}, sample {args.sample}, seed {args.seed}")
            print(render(rows))
            print(render_goals(goals(rows, [])))
        return 0
    if args.run_json:
        paths = [Path(p) for p in args.run_json]
    else:
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gemm-table-"))
        out.mkdir(parents=True, exist_ok=True)
        shapes = [s for s in args.shapes.split(",") if s]
        paths = [run_compare(compare_command(shapes, args.impls, args.sample, out, args.seed, args.timing_model),
                             out)]
        if args.prefill:
            paths.append(run_compare(compare_command([PREFILL], "ptx", args.sample, out, args.seed,
                                                     args.timing_model), out))
    from harness.results import ResultsError, RunFile

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"gemm_table: {', '.join(missing)} not found; expected a run.json or the run folder holding it",
              file=sys.stderr)
        return 1
    try:  # RunFile.load checks the document (and upgrades an older schema), so a wrong path says what it is
        docs = [RunFile.load(p if p.is_dir() else p.parent).doc for p in paths]
    except ResultsError as exc:
        print(f"gemm_table: {exc}", file=sys.stderr)
        return 1
    rows = [r for doc in docs for r in table_rows(doc)]
    verdicts = [v for doc in docs for v in doc.get("verdicts") or []]
    if not rows:
        print(f"gemm_table: {', '.join(map(str, paths))} hold no {KERNEL} rows", file=sys.stderr)
        return 1
    for p in paths:
        print(f"run: {p}")
    print(render(rows))
    print(render_goals(goals(rows, verdicts)))
    return 0 if all(r["status"] in ("ok", "skipped") and r["check"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
