"""run.json (and imported Nsight rows) -> tidy records and a headline summary; no plotting here.

Every function takes a loaded `Run` (or its run.json document) and returns plain lists of dicts / dicts with units
in the key names, so figures.py and html.py only lay them out and tests can check the numbers directly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.dashboard.errors import DashboardError
from harness.implementations import HEADLINE_PAIR, IMPL_ORDER, PAIRS, Pair, canonical_impl, row_slot

IMPLS = IMPL_ORDER  # series order: numba, cpp, ptx
LEGACY_PAIR = "ptx-vs-numba"  # a schema-1 verdict (no `pair` field) compared PTX with Numba
LAYER = "layer"
HEADLINE_RESAMPLES = 2000
HEADLINE_SEED = 0  # the page is deterministic: the same run.json gives the same interval


@dataclass(frozen=True)
class Run:
    """One run folder: its run.json document and the Nsight rows imported into it."""

    run_dir: Path
    doc: dict
    nsight: tuple[dict, ...] = ()  # label_rows() records of every run_dir/nsight/*.rows.json
    nsight_files: tuple[str, ...] = ()
    nsight_errors: tuple[str, ...] = field(default=())

    @property
    def run_id(self) -> str:
        return str(self.doc.get("run_id") or self.run_dir.name)

    @property
    def backend(self) -> str:
        return str(self.doc.get("settings", {}).get("backend") or self.doc.get("environment", {}).get("backend")
                   or "?")

    @property
    def basis(self) -> str:
        """"modelled" (sim backend: the ptxsim timing model) or "measured" (gpu: CUDA events)."""
        return "modelled" if self.backend == "sim" else "measured"


def load_run(run_dir) -> Run:
    """Read `run_dir/run.json` and every `run_dir/nsight/*.rows.json`.

    Raises:
        DashboardError: the folder has no readable run.json of the schema this ptxmoe reads.
    """
    from harness.results import ResultsError, RunFile

    run_dir = Path(run_dir)
    try:
        doc = RunFile.load(run_dir).doc
    except ResultsError as exc:
        raise DashboardError(f"cannot build a dashboard of {run_dir}: {exc}") from None
    records, files, errors = [], [], []
    nsight_dir = run_dir / "nsight"
    if nsight_dir.is_dir():
        from harness.nsight.errors import NsightFormatError
        from harness.nsight.importer import load_rows_json
        from harness.nsight.table import label_rows

        for path in sorted(nsight_dir.glob("*.rows.json")):
            try:
                table = load_rows_json(path)
            except (NsightFormatError, OSError) as exc:
                errors.append(f"{path.name}: {exc}")
                continue
            files.append(path.name)
            for record in label_rows(table.rows):
                record["file"] = path.name
                records.append(record)
    return Run(run_dir, doc, tuple(records), tuple(files), tuple(errors))


# ------------------------------------------------------------------------------------------------------- helpers
def label_of(kernel: str, variant) -> str:
    return f"{kernel}[{variant}]" if variant else str(kernel)


def _dict(value) -> dict:
    """`value` when it is a dict, else {} (a field missing, null or of another type reads as empty)."""
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def rung_of(row: dict) -> dict | None:
    """The row's rung record ({number, name, of, top}) when it is a rung of a laddered kernel (issue #16), else None."""
    rung = _dict(row.get("rung"))
    return rung if isinstance(rung.get("number"), int) else None


def is_lower_rung(row: dict) -> bool:
    """True for the extra row of a ladder's lower rung: the plain per-implementation views leave it out (the
    implementation's plain row is its top rung) and the ladder section shows it."""
    rung = rung_of(row)
    return rung is not None and rung.get("top") is False


def plain_rows(doc: dict) -> list[Any]:
    """The rows of `doc` less the lower rungs of ladders: one row per implementation and cell."""
    return [r for r in doc.get("rows", []) if isinstance(r, dict) and not is_lower_rung(r)]


def geomean(values) -> float:
    x = np.asarray(list(values), dtype=np.float64)
    return float(np.exp(np.mean(np.log(x))))


def row_time(row: dict) -> dict:
    """{time_us, lo_us, hi_us, samples_us, basis, launch_us} of one row: the modelled kernel time with its interval
    from the model's validated error (older runs: the point), or the median of the measured samples with its
    bootstrap interval; launch_us is the modelled launch/gap cost kept apart from the kernel time (None measured)."""
    timing = _dict(row.get("timing"))
    if timing.get("basis") == "modelled" or (timing.get("basis") is None and "modelled_us" in timing):
        t = _num(timing.get("modelled_us"))
        interval = _list(timing.get("interval_us"))
        lo, hi = (_num(interval[0]), _num(interval[1])) if len(interval) == 2 else (t, t)
        return {"time_us": t, "lo_us": lo, "hi_us": hi, "samples_us": [], "basis": "modelled",
                "launch_us": _num(timing.get("launch_us"))}
    device = _dict(timing.get("device"))
    samples = [float(s) for s in _list(timing.get("device_time_us")) if _num(s) is not None]
    return {"time_us": _num(device.get("median_us")), "lo_us": _num(device.get("ci_lo_us")),
            "hi_us": _num(device.get("ci_hi_us")), "samples_us": samples, "basis": timing.get("basis", "measured"),
            "launch_us": None}


# ------------------------------------------------------------------------------------------------------ records
def impls_present(doc: dict) -> list[str]:
    """The implementations with rows in `doc`, in IMPLS order (unknown names after them)."""
    seen = list(dict.fromkeys(canonical_impl(r.get("impl")) for r in doc.get("rows", []) if isinstance(r, dict)))
    return [i for i in IMPLS if i in seen] + [i for i in seen if i not in IMPLS and isinstance(i, str)]


def _pair_of(v: dict) -> Pair | None:
    """The verdict's pair: a built-in one by name, else the user's own (runs saved by ptxmoe.compare name their
    implementations: impl/baseline), else the two-path pair of schema-1 runs."""
    name = v.get("pair")
    known = next((p for p in PAIRS if p.name == (name or LEGACY_PAIR)), None)
    if known is not None:
        return known
    impl, baseline = v.get("impl"), v.get("baseline")
    if isinstance(impl, str) and isinstance(baseline, str) and impl and baseline:
        return Pair(canonical_impl(impl), canonical_impl(baseline))
    return None


def pairs_present(doc: dict) -> list[Pair]:
    """The pairs with at least one verdict in `doc`: the built-in ones in PAIRS order (the headline pair first),
    then users' own pairs in the order first met."""
    found: list[Pair] = []
    for v in doc.get("verdicts", []):
        pair = _pair_of(v) if isinstance(v, dict) else None
        if pair is not None and is_ladder_verdict(v):
            continue  # NOTE: rung verdicts are the ladder section's, not pairs of their own with headlines
        if pair is not None and pair not in found:
            found.append(pair)
    return [p for p in PAIRS if p in found] + [p for p in found if p not in PAIRS]


def is_ladder_verdict(v: dict) -> bool:
    """A rung verdict of a ladder: a lower rung on either side ("ptx.r1-vs-cpp", "ptx-vs-ptx.r4"), told by its
    `rung` / `baseline_rung` records (a user's implementation may have a name like "v.r2"); the top rung's verdicts
    against the other paths are the plain pairs' ("ptx-vs-cpp")."""
    return bool(_dict(v.get("baseline_rung"))) or _dict(v.get("rung")).get("top") is False


def headline_pair(doc: dict) -> Pair:
    """The pair the headline is about: PTX vs CUDA C++ when any cell has that verdict, else the first pair that
    has a speedup (a run of two implementations headlines the one pair it has), else the first pair present."""
    verdicts = verdict_records(doc)
    present = pairs_present(doc)
    for pair in present:
        if any(v["pair"] == pair.name and v["speedup"] for v in verdicts):
            return pair
    return present[0] if present else HEADLINE_PAIR


def gemm_work_records(doc: dict) -> list[dict]:
    """One record per GEMM cell (grouped_gemm variant or layer, preset, skew): routed vs padded rows and FLOPs.

    Every path of a cell computes the same padded rows (one routing), so the first row with `gemm_work` speaks for
    the cell. Rows from runs before gemm_work was recorded are left out.
    """
    out, seen = [], set()
    for row in doc.get("rows", []):
        work = _dict(row.get("gemm_work"))
        cell = (label_of(row.get("kernel"), row.get("variant")), row.get("preset"), row.get("skew"))
        if not work or cell in seen:
            continue
        seen.add(cell)
        useful, padded = _num(work.get("useful_flops")), _num(work.get("padded_flops"))
        out.append({"label": cell[0], "preset": cell[1], "skew": cell[2], "BM": work.get("BM"),
                    "routed_rows": work.get("routed_rows"), "padded_rows": work.get("padded_rows"),
                    "useful (GFLOP)": None if useful is None else useful / 1e9,
                    "padded (GFLOP)": None if padded is None else padded / 1e9,
                    "useful (%)": 100.0 * useful / padded if useful is not None and padded else None})
    return out


def row_limiter(row: dict) -> str | None:
    """The timing model's limiting resources over a row's launches ("dram, issue"), None when not modelled."""
    limiters = [_dict(_dict(launch).get("estimate")).get("limiter") for launch in
                _list(_dict(row.get("timing")).get("launches"))]
    return ", ".join(sorted({str(x) for x in limiters if x})) or None


def row_records(doc: dict) -> list[dict]:
    """One record per row: label, impl, preset, skew, status, time (µs), throughput, limiter, reason."""
    out = []
    for row in doc.get("rows", []):
        rung = rung_of(row) or {}
        t = row_time(row) if row.get("status") in ("ok", "failed") else {"time_us": None, "lo_us": None,
                                                                           "hi_us": None, "samples_us": [],
                                                                           "basis": None, "launch_us": None}
        tp = _dict(row.get("throughput"))
        min_bytes, flops = _num(row.get("min_bytes")), _num(row.get("flops"))
        out.append({
            "key": row.get("key"), "label": label_of(row.get("kernel"), row.get("variant")),
            "kernel": row.get("kernel"), "impl": canonical_impl(row.get("impl")), "preset": row.get("preset"),
            "skew": row.get("skew"), "status": row.get("status"), "slot": row_slot(row),
            "rung": rung.get("number"), "rung_name": rung.get("name"), "lower_rung": is_lower_rung(row),
            "reason": row.get("reason") or _dict(row.get("correctness")).get("message") if row.get("status") != "ok"
            else None,
            **t, "min_bytes": min_bytes, "flops": flops,
            "intensity_flop_per_byte": flops / min_bytes if flops and min_bytes else None,
            "achieved_gbps": _num(tp.get("achieved_gbps")), "achieved_tflops": _num(tp.get("achieved_tflops")),
            "pct_peak_bandwidth": _num(tp.get("pct_peak_bandwidth")), "pct_peak_flops": _num(tp.get("pct_peak_flops")),
            "peak_flops_kind": tp.get("peak_flops_kind"),
            "limiter": row_limiter(row),
            "sampled_fraction": _num(_dict(row.get("sampling")).get("simulated_fraction"))
            if _dict(row.get("sampling")).get("sampled") else None,
            "coverage": _num(_dict(row.get("sampling")).get("coverage")),
        })
    return out


def verdict_records(doc: dict) -> list[dict]:
    """One record per (kernel[variant], preset, skew) and pair: the speedup of `impl` over `baseline` (> 1: `impl`
    faster), its interval and the verdict. Verdicts of unknown pairs are left out."""
    out = []
    for v in doc.get("verdicts", []):
        pair = _pair_of(v) if isinstance(v, dict) else None
        if pair is None:
            continue
        out.append({"key": v.get("key"), "label": label_of(v.get("kernel"), v.get("variant")),
                    "pair": pair.name, "impl": pair.impl, "baseline": pair.baseline, "title": pair.title,
                    "headline": pair == HEADLINE_PAIR,
                    "kernel": v.get("kernel"), "preset": v.get("preset"), "skew": v.get("skew"),
                    "speedup": _num(v.get("speedup")), "ci_lo": _num(v.get("ci_lo")), "ci_hi": _num(v.get("ci_hi")),
                    "verdict": v.get("verdict"), "basis": v.get("basis"), "reason": v.get("reason")})
    return out


def _samples_by_cell(doc: dict) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    cells: dict = {}
    for row in plain_rows(doc):
        if row.get("status") != "ok":
            continue
        samples = row_time(row)["samples_us"]
        if samples:
            cell = (label_of(row.get("kernel"), row.get("variant")), row.get("preset"), row.get("skew"))
            cells.setdefault(cell, {})[canonical_impl(row.get("impl"))] = samples
    return cells


def headline(doc: dict, pair: Pair | None = None, resamples: int = HEADLINE_RESAMPLES,
             seed: int = HEADLINE_SEED) -> dict:
    """Geometric-mean speedup of one pair (default: headline_pair(doc)) over the kernel cells with a verdict (the
    layer apart).

    The interval: for measured runs whose rows keep their samples, a bootstrap of the geometric mean (each cell's
    two sample sets resampled, ratio of medians, geometric mean over cells; 2.5/97.5 percentiles); for modelled
    runs there is none (lo = hi = the point: one deterministic time per path); otherwise the geometric means of
    the per-cell interval ends.

    Returns:
        {pair, impl, baseline, title, geomean, lo, hi, interval, n, cells, verdict, counts {FASTER, SAME, SLOWER},
        slower [labels], layer (the layer's verdict records), basis, no_verdict [records with a reason]}.
    """
    from harness.timing.stats import MODELLED_SAME_BAND, verdict_of

    pair = pair if pair is not None else headline_pair(doc)
    verdicts = [v for v in verdict_records(doc) if v["pair"] == pair.name]
    done = [v for v in verdicts if v["speedup"] and v["speedup"] > 0 and v["verdict"]]
    kernels = [v for v in done if v["kernel"] != LAYER] or [v for v in done]
    basis = next((v["basis"] for v in done if v["basis"]), None)
    counts = {k: sum(1 for v in done if v["verdict"] == k) for k in ("FASTER", "SAME", "SLOWER")}
    out: dict[str, Any] = {"pair": pair.name, "impl": pair.impl, "baseline": pair.baseline, "title": pair.title,
           "geomean": None, "lo": None, "hi": None, "interval": "none", "n": len(kernels), "cells": kernels,
           "verdict": None, "counts": counts, "slower": [f"{v['label']} {v['preset']}/{v['skew']}" for v in done
                                                         if v["verdict"] == "SLOWER"],
           "layer": [v for v in done if v["kernel"] == LAYER], "basis": basis,
           "no_verdict": [v for v in verdicts if not v["verdict"]]}
    if not kernels:
        return out
    point = geomean(v["speedup"] for v in kernels)
    out["geomean"] = point
    if basis == "modelled":
        from ptxsim.model.validation import recorded_error

        band = MODELLED_SAME_BAND
        lo, hi = point / (1 + band), point * (1 + band)
        out.update(lo=lo, hi=hi, verdict=verdict_of(lo, hi), model_error=band,
                   interval=f"modelled: +-{band:.0%}, the timing model's error against published Hopper figures "
                            f"({recorded_error()[1]})")
        return out
    cells = _samples_by_cell(doc)
    keys = [(v["label"], v["preset"], v["skew"]) for v in kernels]
    if all(pair.impl in cells.get(k, {}) and pair.baseline in cells.get(k, {}) for k in keys):
        rng = np.random.default_rng(seed)
        logs = np.zeros(resamples)
        for k in keys:
            a, b = (np.asarray(cells[k][impl]) for impl in (pair.baseline, pair.impl))
            ma = np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
            mb = np.median(b[rng.integers(0, b.size, (resamples, b.size))], axis=1)
            logs += np.log(ma / mb)
        boot = np.exp(logs / len(keys))
        lo, hi = np.quantile(boot, [0.025, 0.975])
        out.update(lo=float(lo), hi=float(hi), interval=f"95% bootstrap of the geometric mean ({resamples} resamples)")
    elif all(v["ci_lo"] and v["ci_hi"] for v in kernels):
        out.update(lo=geomean(v["ci_lo"] for v in kernels), hi=geomean(v["ci_hi"] for v in kernels),
                   interval="geometric means of the per-cell 95% interval ends")
    if out["lo"] is not None:
        out["verdict"] = verdict_of(out["lo"], out["hi"])
    return out


def pair_headlines(doc: dict) -> list[dict]:
    """headline() of every pair with a verdict in `doc`, in PAIRS order (PTX vs CUDA C++ first)."""
    return [headline(doc, pair) for pair in pairs_present(doc)]


def stage_records(doc: dict) -> list[dict]:
    """The end-to-end layer's per-stage times: {impl, preset, skew, stage, time_us, share} per stage."""
    out = []
    for row in doc.get("rows", []):
        if row.get("kernel") != LAYER or row.get("status") != "ok":
            continue
        stages = {k: us for k, v in _dict(row.get("stages_us")).items() if (us := _num(v)) is not None}
        total = sum(stages.values())
        for stage, us in stages.items():
            out.append({"impl": canonical_impl(row.get("impl")), "preset": row.get("preset"), "skew": row.get("skew"),
                        "stage": stage, "time_us": us, "share": us / total if total else None})
    return out


# simulator counters: (label, function of the summed counters) -- "side by side" shows every path per cell
_LD_REQ, _LD_SEC = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"


def _ratio(a, b):
    return a / b if a is not None and b else None


SIM_COUNTERS = {
    "sectors per load request": lambda m: _ratio(m.get(_LD_SEC), m.get(_LD_REQ)),
    "shared bank conflicts": lambda m: m.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
    "active lanes per warp instruction (of 32)": lambda m: _ratio(m.get("smsp__thread_inst_executed.sum"),
                                                                  m.get("smsp__inst_executed.sum")),
    "warp instructions": lambda m: m.get("smsp__inst_executed.sum"),
    "DRAM bytes read": lambda m: m.get("dram__bytes_read.sum"),
    "DRAM bytes written": lambda m: m.get("dram__bytes_write.sum"),
    "global store sectors": lambda m: m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
}
CLASS_PREFIX = "ptxsim__inst_executed_"


def sim_counter_records(doc: dict) -> list[dict]:
    """{label, preset, skew, counter, <impl>: value for every impl in IMPLS, ratios {pair name: impl value /
    baseline value}} per cell and counter (sim rows only), limiter included."""
    cells: dict = {}
    for row in plain_rows(doc):
        counters = _dict(_dict(row.get("sim_counters")).get("total"))
        if row.get("status") != "ok" or not counters:
            continue
        cell = (label_of(row.get("kernel"), row.get("variant")), row.get("preset"), row.get("skew"))
        values = {name: fn({k: _num(v) for k, v in counters.items()}) for name, fn in SIM_COUNTERS.items()}
        values["limiting resource"] = next(r["limiter"] for r in row_records({"rows": [row]}))
        values["model components (µs)"] = model_components(row)
        cells.setdefault(cell, {})[canonical_impl(row.get("impl"))] = values
    out = []
    for (label, preset, skew), per_impl in cells.items():
        for counter in (*SIM_COUNTERS, "limiting resource", "model components (µs)"):
            values = {impl: per_impl.get(impl, {}).get(counter) for impl in IMPLS}
            out.append({"label": label, "preset": preset, "skew": skew, "counter": counter, **values,
                        "ratios": pair_ratios(values)})
    return out


def pair_ratios(values: dict) -> dict[str, float | None]:
    """{pair name: values[impl] / values[baseline]} for every pair (None unless both are non-zero numbers)."""
    out: dict[str, float | None] = {}
    for pair in PAIRS:
        a, b = values.get(pair.baseline), values.get(pair.impl)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and a:
            out[pair.name] = b / a
        else:
            out[pair.name] = None
    return out


def model_components(row: dict, top: int = 3) -> str | None:
    """The timing model's largest bounds summed over a row's launches: "issue 1.44, launch 3, latency 0.4"."""
    sums: dict[str, float] = {}
    for launch in _list(_dict(row.get("timing")).get("launches")):
        for key, value in _dict(_dict(launch).get("estimate")).items():
            name = key.removesuffix(" (us)")
            if key.endswith(" (us)") and name not in ("time", "kernel", "tail") and _num(value):
                sums[name] = sums.get(name, 0.0) + float(value)
    best = sorted(sums.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v:.3g}" for k, v in best) or None


def instruction_mix(doc: dict) -> list[dict]:
    """{label, impl, preset, skew, cls, count} per instruction class the simulator counted (sim rows only)."""
    out = []
    for row in plain_rows(doc):
        counters = _dict(_dict(row.get("sim_counters")).get("total"))
        for key, value in counters.items():
            if key.startswith(CLASS_PREFIX) and _num(value):
                out.append({"label": label_of(row.get("kernel"), row.get("variant")),
                            "impl": canonical_impl(row.get("impl")), "preset": row.get("preset"),
                            "skew": row.get("skew"), "cls": key[len(CLASS_PREFIX):].removesuffix(".sum"),
                            "count": float(value)})
    return out


def static_records(doc: dict) -> list[dict]:
    """Static facts per launched PTX entry, once per (label, impl, launch name, digest)."""
    seen, out = set(), []
    for row in doc.get("rows", []):
        kernels = _dict(_dict(row.get("static")).get("kernels"))
        label = label_of(row.get("kernel"), row.get("variant"))
        for launch, facts in kernels.items():
            facts = facts if isinstance(facts, dict) else {}
            ident = (label, row_slot(row), launch, facts.get("digest"))
            if ident in seen:
                continue
            seen.add(ident)
            res = _dict(facts.get("resources"))
            sass = {k: v for k, v in _dict(facts.get("sass_histogram")).items() if _num(v) is not None}
            out.append({"label": label, "impl": ident[1], "launch": launch, "entry": facts.get("entry"),
                        "digest": facts.get("digest"),
                        "registers": res.get("registers"), "spills_bytes": res.get("spills"),
                        "shared_bytes": res.get("shared_bytes"), "ptx_lines": facts.get("ptx_lines"),
                        "ptx_instructions": sum(v for v in _dict(facts.get("ptx_histogram")).values()
                                                if _num(v) is not None),
                        "sass_instructions": sum(sass.values()), "sass_histogram": dict(sass),
                        "errors": [str(e) for e in _list(facts.get("errors"))]})
    return out


# ---------------------------------------------------------------------------------------------------- timelines
def timeline_records(run: Run) -> tuple[str, list[dict]]:
    """(source, bars): kernel launches from imported nsys rows when present, else the harness's own NVTX ranges.

    Each bar: {name, lane, start_ms, end_ms, impl, preset, skew, detail}; times are relative to the first bar.
    """
    launches: dict = {}
    for r in run.nsight:
        if r["source"] == "nsys-sqlite" and r["kernel"] and r["metric"] in ("start", "end") and _num(r["value"]):
            launches.setdefault((r["file"], r["kernel"], r["launch"]), {"row": r})[r["metric"]] = float(r["value"])
    bars = []
    if launches:
        for (_, kernel, launch), item in launches.items():
            if "start" not in item or "end" not in item:
                continue
            r = item["row"]
            lane = r["nvtx_range"] or "(no NVTX range)"
            bars.append({"name": kernel, "lane": lane, "start_ms": item["start"] / 1e6, "end_ms": item["end"] / 1e6,
                         "impl": canonical_impl(r.get("impl")), "preset": r.get("preset"), "skew": r.get("skew"),
                         "detail": f"launch {launch}; NVTX {' > '.join(n for _, n in r['nvtx_stack']) or '-'}"})
        source = "nsys (kernels joined to NVTX ranges)"
    else:
        from harness.nsight.table import split_ptxmoe_range

        for r in run.doc.get("nvtx_ranges", []):
            s, e = r.get("start_perf_ns"), r.get("end_perf_ns")
            if not isinstance(s, (int, float)) or not isinstance(e, (int, float)):
                continue
            parts = split_ptxmoe_range(r.get("name", "")) or (None, None, None, None)
            bars.append({"name": r.get("name", ""), "lane": r.get("name", ""), "start_ms": s / 1e6, "end_ms": e / 1e6,
                         "impl": canonical_impl(parts[1]), "preset": parts[2], "skew": parts[3],
                         "detail": f"phase {r.get('phase', '-')}, depth {r.get('depth', '-')}"})
        source = "harness NVTX ranges (host timestamps)"
    if bars:
        t0 = min(b["start_ms"] for b in bars)
        for b in bars:
            b["start_ms"] -= t0
            b["end_ms"] -= t0
    return source, sorted(bars, key=lambda b: b["start_ms"])


TIMESTAMP_METRICS = ("start", "end")  # nsys launch timestamps: drawn on the timeline, not averaged in tables


def nsight_metric_records(run: Run) -> list[dict]:
    """Nsight metrics, mean over launches: {label, preset, skew, nvtx_range, kernel, metric, unit, n, <impl> for
    every impl in IMPLS, ratios, value}; rows inside ptxmoe ranges go side by side per impl, others (`value`) by NVTX
    range and kernel."""
    from harness.nsight.table import short_kernel_name

    groups: dict = {}
    for r in run.nsight:
        value = _num(r["value"])
        if value is None or r["metric"] in TIMESTAMP_METRICS:
            continue
        impl: str | None = canonical_impl(r.get("impl"))
        impl = impl if impl in IMPLS else None
        key = (r.get("ptxmoe_kernel") or "", r.get("preset") or "", r.get("skew") or "",
               r["nvtx_range"] if not impl else "", short_kernel_name(r["kernel"]) if not impl else "",
               r["metric"], r["unit"], r["source"])
        groups.setdefault(key, {}).setdefault(impl or "value", []).append(value)
    out = []
    for (label, preset, skew, rng, kernel, metric, unit, source), per in groups.items():
        mean = {k: float(np.mean(v)) for k, v in per.items()}
        values = {impl: mean.get(impl) for impl in IMPLS}
        out.append({"label": label, "preset": preset or None, "skew": skew or None, "nvtx_range": rng,
                    "kernel": kernel, "metric": metric, "unit": unit, "source": source,
                    "n": sum(len(v) for v in per.values()), **values, "ratios": pair_ratios(values),
                    "value": mean.get("value")})
    return out


# -------------------------------------------------------------------------------------------------- environment
def device_ceilings(run: Run) -> dict | None:
    """{name, bandwidth_Bps, fp32_flops, bf16_dense_flops, fp8_dense_flops} of the GPU (gpu runs) or the model
    device (sim)."""
    env = _dict(run.doc.get("environment"))
    specs = _dict(env.get("gpu")).get("specs") if run.backend == "gpu" else None
    specs = _dict(specs or _dict(env.get("model_device")).get("specs"))
    name = (_dict(env.get("gpu")).get("name") if run.backend == "gpu" else None) or \
        _dict(env.get("model_device")).get("name")
    if not specs and name:
        from harness.results import device_spec_dict

        specs = device_spec_dict(name)
    if not specs:
        return None
    return {"name": specs.get("name", name), "bandwidth_Bps": _num(specs.get("memory_bandwidth")),
            "fp32_flops": _num(specs.get("fp32_flops")), "bf16_dense_flops": _num(specs.get("bf16_dense_flops")),
            "fp8_dense_flops": _num(specs.get("fp8_dense_flops"))}


def environment_records(doc: dict) -> list[tuple[str, str]]:
    """(dotted key, value) pairs of the environment and settings, device specs left out (they are charted)."""
    out: list[tuple[str, str]] = []

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                if k != "specs":
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list):
            out.append((prefix, ", ".join(str(v) for v in value)))
        elif isinstance(value, float):
            out.append((prefix, f"{value:.6g}"))
        else:
            out.append((prefix, "" if value is None else str(value)))

    env = _dict(doc.get("environment"))
    specs = _dict(_dict(env.get("gpu")).get("specs") or _dict(env.get("model_device")).get("specs"))
    walk("", {"run_id": doc.get("run_id"), "status": doc.get("status"), "created_utc": doc.get("created_utc"),
              "finished_utc": doc.get("finished_utc"), "command": " ".join(map(str, doc.get("command") or [])),
              "settings": doc.get("settings", {}), "environment": doc.get("environment", {}),
              "device_specs": {k: specs.get(k) for k in DEVICE_SPEC_KEYS if k in specs}})
    return out


DEVICE_SPEC_KEYS = ("name", "sm_count", "boost_clock_hz", "memory_type", "memory_bandwidth", "l2_bytes",
                    "fp32_flops", "bf16_dense_flops", "fp8_dense_flops", "shared_memory_per_sm", "registers_per_sm")


def filters(doc: dict) -> dict[str, list[str]]:
    """The presets and skews present in the rows, in the run's own order."""
    presets: list[str] = []
    skews: list[str] = []
    for row in doc.get("rows", []):
        for value, bag in ((row.get("preset"), presets), (row.get("skew"), skews)):
            if value is not None and value not in bag:
                bag.append(value)
    return {"preset": presets, "skew": skews}


# -------------------------------------------------------------------------------------------------------- --vs
def compare_runs(a: Run, b: Run) -> list[dict]:
    """Rows present in both runs: {key, label, impl, preset, skew, a_us, b_us, b_over_a, a_speedup, b_speedup};
    the speedups are of run A's headline pair (headline_pair) in each run."""
    rows_b = {r["key"]: r for r in row_records(b.doc)}
    pair = headline_pair(a.doc).name
    verdicts_a = {(v["label"], v["preset"], v["skew"]): v for v in verdict_records(a.doc) if v["pair"] == pair}
    verdicts_b = {(v["label"], v["preset"], v["skew"]): v for v in verdict_records(b.doc) if v["pair"] == pair}
    out = []
    for r in row_records(a.doc):
        other = rows_b.get(r["key"])
        if other is None:
            continue
        cell = (r["label"], r["preset"], r["skew"])
        out.append({"key": r["key"], "label": r["label"], "impl": r["impl"], "preset": r["preset"],
                    "skew": r["skew"], "a_us": r["time_us"], "b_us": other["time_us"],
                    "b_over_a": _ratio(other["time_us"], r["time_us"]),
                    "a_speedup": (verdicts_a.get(cell) or {}).get("speedup"),
                    "b_speedup": (verdicts_b.get(cell) or {}).get("speedup")})
    return out


# what a row's key is made of, as (name in messages, row field)
ROW_AXES = (("presets", "preset"), ("kernels", "label"), ("skews", "skew"), ("implementations", "impl"))


def run_differences(a: Run, b: Run) -> list[str]:
    """What tells the rows of two runs apart, e.g. ["presets tiny vs dsv3-decode", "kernels gate vs align"]: each
    axis of the row key whose values in the two runs do not overlap at all, else every axis that differs."""
    rows_a, rows_b = row_records(a.doc), row_records(b.doc)
    disjoint: list[str] = []
    differing: list[str] = []
    for name, key in ROW_AXES:
        va = list(dict.fromkeys(str(r[key]) for r in rows_a))
        vb = list(dict.fromkeys(str(r[key]) for r in rows_b))
        if set(va) == set(vb):
            continue
        text = f"{name} {','.join(va) or '(none)'} vs {','.join(vb) or '(none)'}"
        (disjoint if not set(va) & set(vb) else differing).append(text)
    return disjoint or differing

