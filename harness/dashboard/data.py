"""run.json (and imported Nsight rows) -> tidy records and a headline summary; no plotting here.

Every function takes a loaded `Run` (or its run.json document) and returns plain lists of dicts / dicts with units
in the key names, so figures.py and html.py only lay them out and tests can check the numbers directly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from harness.dashboard.errors import DashboardError
from harness.implementations import HEADLINE_PAIR, IMPL_ORDER, PAIRS, Pair, canonical_impl, row_slot
from harness.json_records import RecordError
from harness.run_records import (
    MeasuredTiming,
    ModelledTiming,
    Resources,
    Row,
    Rung,
    Sweep,
    Throughput,
    Verdict,
    kernel_label,
)
from harness.run_schema import SCHEMA_VERSION

IMPLS = IMPL_ORDER  # series order: numba, cpp, cutlass, triton, ptx
LEGACY_PAIR = "ptx-vs-numba"  # a schema-1 verdict (no `pair` field) compared PTX with Numba
LAYER = "layer"
HEADLINE_RESAMPLES = 2000
HEADLINE_SEED = 0  # the page is deterministic: the same run.json gives the same interval


@dataclass(frozen=True)
class Run:
    """One run folder: its run.json document and the Nsight rows imported into it."""

    run_dir: Path
    doc: dict  # the run.json document as read (environment and settings for display)
    nsight: tuple[dict, ...] = ()  # label_rows() records of every run_dir/nsight/*.rows.json
    nsight_files: tuple[str, ...] = ()
    nsight_errors: tuple[str, ...] = field(default=())
    records: Sweep | None = field(default=None, compare=False)  # the typed records when the reader built them

    @cached_property
    def sweep(self) -> Sweep:
        """The run's typed records (harness.run_records), built once."""
        return self.records if self.records is not None else as_sweep(self.doc)

    @property
    def run_id(self) -> str:
        return self.sweep.run_id or self.run_dir.name

    @property
    def backend(self) -> str:
        return self.sweep.backend

    @property
    def basis(self) -> str:
        """"modelled" (sim backend: the ptxsim timing model) or "measured" (gpu: CUDA events)."""
        return self.sweep.basis


def load_run(run_dir) -> Run:
    """Read `run_dir/run.json` and every `run_dir/nsight/*.rows.json`.

    Raises:
        DashboardError: the folder has no readable run.json of the schema this ptxmoe reads.
    """
    from harness.results import ResultsError, RunFile

    run_dir = Path(run_dir)
    try:
        run_file = RunFile.load(run_dir)
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
    return Run(run_dir, run_file.doc, tuple(records), tuple(files), tuple(errors), run_file.sweep)


# ------------------------------------------------------------------------------------------------------- helpers
def label_of(kernel: str, variant) -> str:
    return kernel_label(str(kernel), variant)


def as_sweep(doc) -> Sweep:
    """The typed records of a run: a Sweep as it is, a run document read (harness.run_records) and upgraded."""
    if isinstance(doc, Sweep):
        return doc
    if isinstance(doc, Run):
        return doc.sweep
    if isinstance(doc, dict) and "schema_version" not in doc:  # rows and verdicts alone: a document's parts
        rows = doc.get("rows") or []
        backend = next((r.get("backend") for r in rows if isinstance(r, dict) and r.get("backend")), "sim")
        doc = {"schema_version": SCHEMA_VERSION, "run_id": "", "status": "", "environment": {},
               "settings": {"backend": backend}, "rows": rows, "verdicts": doc.get("verdicts") or []}
    try:
        return Sweep.from_document(doc)
    except RecordError as exc:
        raise DashboardError(f"not a run document: {exc}") from None


def _table(value) -> dict:
    """A part of `environment` (a table as recorded: versions, host, GPU, device specs) as a dict, {} when absent."""
    return value if isinstance(value, dict) else {}


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def rung_of(row: Row) -> Rung | None:
    """The row's rung record when it is a rung of a laddered kernel (issue #16), else None."""
    return row.rung


def is_lower_rung(row: Row) -> bool:
    """True for the extra row of a ladder's lower rung: the plain per-implementation views leave it out (the
    implementation's plain row is its top rung) and the ladder section shows it."""
    return row.is_lower_rung


def plain_rows(doc) -> tuple[Row, ...]:
    """The rows of a run less the lower rungs of ladders: one row per implementation and cell."""
    return as_sweep(doc).plain_rows


def geomean(values) -> float:
    x = np.asarray(list(values), dtype=np.float64)
    return float(np.exp(np.mean(np.log(x))))


def row_time(row: Row) -> dict:
    """{time_us, lo_us, hi_us, samples_us, basis, launch_us} of one row: the modelled kernel time with its 95%
    prediction interval (the predicted absolute validation rows; older runs: the model's error band, or the point),
    or the median of the measured samples with its bootstrap interval; launch_us is the modelled launch/gap cost
    kept apart from the kernel time (None measured)."""
    timing = row.timing
    if isinstance(timing, ModelledTiming):
        lo, hi = timing.interval
        return {"time_us": _num(timing.time_us), "lo_us": _num(lo), "hi_us": _num(hi), "samples_us": [],
                "basis": "modelled", "launch_us": _num(timing.launch_us)}
    if isinstance(timing, MeasuredTiming):
        lo, hi = timing.interval
        return {"time_us": _num(timing.time_us), "lo_us": _num(lo), "hi_us": _num(hi),
                "samples_us": [float(s) for s in timing.device_time_us], "basis": "measured", "launch_us": None}
    return dict(NO_TIME)


NO_TIME: dict[str, Any] = {"time_us": None, "lo_us": None, "hi_us": None, "samples_us": [], "basis": None,
                           "launch_us": None}


# ------------------------------------------------------------------------------------------------------ records
def impls_present(doc) -> list[str]:
    """The implementations with rows in `doc`, in IMPLS order (unknown names after them)."""
    seen = list(dict.fromkeys(canonical_impl(r.impl) for r in as_sweep(doc).rows))
    return [i for i in IMPLS if i in seen] + [i for i in seen if i not in IMPLS and isinstance(i, str)]


def _own_pairs(sweep: Sweep) -> bool:
    """Whether a run's pairs are a user's (ptxmoe.compare): named, ordered and headlined as the user chose."""
    return sweep.settings.source == "ptxmoe.compare"


def _pair_of(v: Verdict, own: bool = False) -> Pair | None:
    """The verdict's pair: in a user's run (`own`) the user's two implementations as named; else a built-in one by
    name, else a pair of impl/baseline, else the two-path pair of schema-1 runs."""
    if own and v.impl and v.baseline:
        return Pair(v.impl, v.baseline, own=True)
    known = next((p for p in PAIRS if p.name == (v.pair or LEGACY_PAIR)), None)
    if known is not None:
        return known
    if v.impl and v.baseline:
        return Pair(canonical_impl(v.impl), canonical_impl(v.baseline))
    return None


def pairs_present(doc) -> list[Pair]:
    """The pairs with at least one verdict in `doc`: the built-in ones in PAIRS order (the headline pair first),
    then users' own pairs in the order first met."""
    found: list[Pair] = []
    sweep = as_sweep(doc)
    own = _own_pairs(sweep)
    for v in sweep.verdicts:
        pair = _pair_of(v, own)
        if pair is not None and v.is_rung_verdict:
            continue  # NOTE: rung verdicts are the ladder section's, not pairs of their own with headlines
        if pair is not None and pair not in found:
            found.append(pair)
    if own:
        return found
    return [p for p in PAIRS if p in found] + [p for p in found if p not in PAIRS]


def is_ladder_verdict(v: Verdict) -> bool:
    """A rung verdict of a ladder: a lower rung on either side ("ptx.r1-vs-cpp", "ptx-vs-ptx.r4"), told by its
    `rung` / `baseline_rung` records (a user's implementation may have a name like "v.r2"); the top rung's verdicts
    against the other paths are the plain pairs' ("ptx-vs-cpp")."""
    return v.is_rung_verdict


def headline_pair(doc) -> Pair:
    """The pair the headline is about: PTX vs the best C++ present (the pair most cells flag as their headline:
    harness.verdicts), else the first pair that has a speedup (a run of two implementations headlines the one pair
    it has), else the first pair present."""
    verdicts = verdict_records(doc)
    present = pairs_present(doc)
    chosen = as_sweep(doc).settings.baseline  # compare(baseline=...): the headline is against it
    if chosen is not None:
        present = [p for p in present if p.baseline == chosen] + [p for p in present if p.baseline != chosen]
    else:
        flagged = {p.name: sum(1 for v in verdicts if v["headline"] and v["pair"] == p.name) for p in present}
        present = sorted(present, key=lambda p: -flagged[p.name])  # stable: PAIRS order among equals
    for pair in present:
        if any(v["pair"] == pair.name and v["speedup"] for v in verdicts):
            return pair
    return present[0] if present else HEADLINE_PAIR


def gemm_work_records(doc) -> list[dict]:
    """One record per GEMM cell (grouped_gemm variant or layer, preset, skew): routed vs padded rows and FLOPs.

    Every path of a cell computes the same padded rows (one routing), so the first row with `gemm_work` speaks for
    the cell. Rows from runs before gemm_work was recorded are left out.
    """
    out, seen = [], set()
    for row in as_sweep(doc).rows:
        work = row.gemm_work
        cell = (row.label, row.preset, row.skew)
        if work is None or cell in seen:
            continue
        seen.add(cell)
        useful, padded = work.useful_flops, work.padded_flops
        out.append({"label": cell[0], "preset": cell[1], "skew": cell[2], "BM": work.BM,
                    "routed_rows": work.routed_rows, "padded_rows": work.padded_rows,
                    "useful (GFLOP)": None if useful is None else useful / 1e9,
                    "padded (GFLOP)": None if padded is None else padded / 1e9,
                    "useful (%)": 100.0 * useful / padded if useful is not None and padded else None})
    return out


def row_limiter(row: Row) -> str | None:
    """The timing model's limiting resources over a row's launches ("dram, issue"), None when not modelled."""
    if not isinstance(row.timing, ModelledTiming):
        return None
    return ", ".join(sorted({x for launch in row.timing.launches if (x := launch.limiter)})) or None


def row_record(row: Row) -> dict:
    """The dashboard's record of one row: label, impl, preset, skew, status, time (µs), throughput, limiter, reason."""
    t = row_time(row) if row.ran else dict(NO_TIME)
    tp = row.throughput or Throughput()
    rung = row.rung
    min_bytes, flops = _num(row.min_bytes), _num(row.flops)
    sampling = row.sampling
    return {
        "key": row.key, "label": row.label, "kernel": row.kernel, "impl": canonical_impl(row.impl),
        "preset": row.preset, "skew": row.skew, "status": row.status, "slot": row_slot(row),
        "rung": None if rung is None else rung.number, "rung_name": None if rung is None else rung.name,
        "lower_rung": row.is_lower_rung, "reason": row.why,
        **t, "min_bytes": min_bytes, "flops": flops,
        "intensity_flop_per_byte": flops / min_bytes if flops and min_bytes else None,
        "achieved_gbps": _num(tp.achieved_gbps), "achieved_tflops": _num(tp.achieved_tflops),
        "pct_peak_bandwidth": _num(tp.pct_peak_bandwidth), "pct_peak_flops": _num(tp.pct_peak_flops),
        "peak_flops_kind": tp.peak_flops_kind,
        "limiter": row_limiter(row),
        "sampled_fraction": _num(sampling.simulated_fraction) if sampling is not None and sampling.sampled else None,
        "coverage": None if sampling is None else _num(sampling.coverage),
    }


def row_records(doc) -> list[dict]:
    """One record per row (row_record), in run order."""
    return [row_record(row) for row in as_sweep(doc).rows]


def verdict_records(doc) -> list[dict]:
    """One record per (kernel[variant], preset, skew) and pair: the speedup of `impl` over `baseline` (> 1: `impl`
    faster), its interval and the verdict. Verdicts of unknown pairs are left out."""
    out = []
    sweep = as_sweep(doc)
    own = _own_pairs(sweep)
    for v in sweep.verdicts:
        pair = _pair_of(v, own)
        if pair is None:
            continue
        out.append({"key": v.key, "label": v.label, "pair": pair.name, "impl": pair.impl,
                    "baseline": pair.baseline, "title": pair.title, "headline": v.headline and not own,
                    "kernel": v.kernel, "preset": v.preset, "skew": v.skew,
                    "speedup": _num(v.speedup), "ci_lo": _num(v.ci_lo), "ci_hi": _num(v.ci_hi),
                    "verdict": v.verdict, "basis": v.basis, "reason": v.reason, "confidence": v.confidence,
                    "interval": v.interval, "model_version": v.model_version,
                    "limiters": None if v.limiters is None else " / ".join(v.limiters)})
    return out


def _samples_by_cell(doc) -> dict[tuple, dict[str, list[float]]]:
    cells: dict = {}
    for row in plain_rows(doc):
        if row.status != "ok":
            continue
        samples = row_time(row)["samples_us"]
        if samples:
            cells.setdefault((row.label, row.preset, row.skew), {})[canonical_impl(row.impl)] = samples
    return cells


def headline(doc, pair: Pair | None = None, resamples: int = HEADLINE_RESAMPLES,
             seed: int = HEADLINE_SEED) -> dict:
    """Geometric-mean speedup of one pair (default: headline_pair(doc)) over the kernel cells with a verdict (the
    layer apart).

    The interval: for measured runs whose rows keep their samples, a bootstrap of the geometric mean (each cell's
    two sample sets resampled, ratio of medians, geometric mean over cells; 2.5/97.5 percentiles); for modelled
    runs there is none (lo = hi = the point: one deterministic time per path); otherwise the geometric means of
    the per-cell interval ends.

    Returns:
        {pair, impl, baseline, title, geomean, lo, hi, interval, n, cells, verdict, counts {each of
        harness.timing.stats.VERDICTS}, slower [labels], layer (the layer's verdict records), basis, no_verdict
        [records with a reason]}.
    """
    from harness.timing.stats import VERDICTS, verdict_of

    doc = as_sweep(doc)
    pair = pair if pair is not None else headline_pair(doc)
    verdicts = [v for v in verdict_records(doc) if v["pair"] == pair.name]
    done = [v for v in verdicts if v["speedup"] and v["speedup"] > 0 and v["verdict"]]
    kernels = [v for v in done if v["kernel"] != LAYER] or [v for v in done]
    basis = next((v["basis"] for v in done if v["basis"]), None)
    counts = {k: sum(1 for v in done if v["verdict"] == k) for k in VERDICTS}
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
        if not all(v.get("interval") == "prediction" for v in kernels):
            out["interval"] = ("none: this run's modelled verdicts predate the 95% prediction interval (issue 29); "
                               "run it again for one")
            return out
        if all(v["ci_lo"] and v["ci_hi"] for v in kernels):
            # NOTE: the model's errors on the cells are taken as fully correlated (one model, the same two paths):
            # the geometric means of the cells' interval ends, no narrower for having more cells
            lo, hi = geomean(v["ci_lo"] for v in kernels), geomean(v["ci_hi"] for v in kernels)
            versions = sorted({v["model_version"] for v in kernels if v.get("model_version")})
            out.update(lo=lo, hi=hi, verdict=verdict_of(lo, hi),
                       interval="modelled: geometric means of the cells' 95% prediction intervals (timing model "
                                f"{', '.join(versions) or 'v1'}: its errors on published paired ratios, "
                                "ptxsim/model/interval_table.json)")
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


def pair_headlines(doc) -> list[dict]:
    """headline() of every pair with a verdict in `doc`, in PAIRS order (PTX vs CUDA C++ first)."""
    sweep = as_sweep(doc)
    return [headline(sweep, pair) for pair in pairs_present(sweep)]


def stage_records(doc) -> list[dict]:
    """The end-to-end layer's per-stage times: {impl, preset, skew, stage, time_us, share} per stage."""
    out = []
    for row in as_sweep(doc).rows:
        if row.kernel != LAYER or row.status != "ok":
            continue
        stages = {k: us for k, v in row.stages_us.items() if (us := _num(v)) is not None}
        total = sum(stages.values())
        for stage, us in stages.items():
            out.append({"impl": canonical_impl(row.impl), "preset": row.preset, "skew": row.skew,
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


def _counters(row: Row) -> dict[str, float | None]:
    """A row's summed simulator counters that are numbers (sim rows; {} elsewhere)."""
    total = row.sim_counters.total if row.sim_counters is not None else {}
    return {k: _num(v) for k, v in total.items() if _num(v) is not None}


def sim_counter_records(doc) -> list[dict]:
    """{label, preset, skew, counter, <impl>: value for every impl of table_impls (IMPLS, or a user's run's own),
    ratios {pair name: impl value / baseline value}} per cell and counter (sim rows only), limiter included."""
    cells: dict = {}
    impls, pairs = table_impls(doc), table_pairs(doc)
    for row in plain_rows(doc):
        counters = _counters(row)
        if row.status != "ok" or not counters:
            continue
        values = {name: fn(counters) for name, fn in SIM_COUNTERS.items()}
        values["limiting resource"] = row_limiter(row)
        values["model components (µs)"] = model_components(row)
        cells.setdefault((row.label, row.preset, row.skew), {})[canonical_impl(row.impl)] = values
    out = []
    for (label, preset, skew), per_impl in cells.items():
        for counter in (*SIM_COUNTERS, "limiting resource", "model components (µs)"):
            values = {impl: per_impl.get(impl, {}).get(counter) for impl in impls}
            out.append({"label": label, "preset": preset, "skew": skew, "counter": counter, **values,
                        "ratios": pair_ratios(values, pairs)})
    return out


def table_impls(doc) -> list[str]:
    """The implementations of side-by-side tables: a user's run's own (ptxmoe.compare, in its order), else IMPLS."""
    sweep = as_sweep(doc)
    if _own_pairs(sweep):
        return list(dict.fromkeys([*sweep.settings.impls, *(r.impl for r in sweep.rows)]))
    return list(IMPLS)


def table_pairs(doc) -> list[Pair]:
    """The pairs of side-by-side tables' ratio columns: a user's run's own pairs, else PAIRS."""
    sweep = as_sweep(doc)
    return pairs_present(sweep) if _own_pairs(sweep) else list(PAIRS)


def sim_ncu_records(doc) -> list[dict]:
    """ptxsim's counters under the ncu metrics the profile captures (harness.nsight.tools.DASHBOARD_NCU_METRICS), in
    nsight_metric_records' shape (source "ptxsim (modelled)"): a sim run's Nsight table, so a sim and a GPU run of the
    same kernels read alike."""
    from harness.nsight.tools import DASHBOARD_NCU_METRICS

    impls, pairs = table_impls(doc), table_pairs(doc)
    cells: dict = {}
    for row in plain_rows(doc):
        counters = _counters(row)
        if row.status == "ok" and counters:
            cells.setdefault((row.label, row.preset, row.skew), {})[canonical_impl(row.impl)] = counters
    out = []
    for (label, preset, skew), per_impl in cells.items():
        for metric in DASHBOARD_NCU_METRICS:
            values = {impl: per_impl.get(impl, {}).get(metric) for impl in impls}
            if all(v is None for v in values.values()):
                continue
            out.append({"label": label, "preset": preset, "skew": skew, "nvtx_range": "", "kernel": "",
                        "metric": metric, "unit": "", "source": "ptxsim (modelled)", "n": len(per_impl), **values,
                        "ratios": pair_ratios(values, pairs), "value": None})
    return out


def pair_ratios(values: dict, pairs=PAIRS) -> dict[str, float | None]:
    """{pair name: values[impl] / values[baseline]} for every pair (None unless both are non-zero numbers)."""
    out: dict[str, float | None] = {}
    for pair in pairs:
        a, b = values.get(pair.baseline), values.get(pair.impl)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and a:
            out[pair.name] = b / a
        else:
            out[pair.name] = None
    return out


def model_components(row: Row, top: int = 3) -> str | None:
    """The timing model's largest bounds summed over a row's launches: "issue 1.44, launch 3, latency 0.4"."""
    sums: dict[str, float] = {}
    launches = row.timing.launches if isinstance(row.timing, ModelledTiming) else ()
    for launch in launches:
        for name, value in launch.components_us().items():
            if name not in ("time", "kernel", "tail") and _num(value):
                sums[name] = sums.get(name, 0.0) + value
    best = sorted(sums.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v:.3g}" for k, v in best) or None


def instruction_mix(doc) -> list[dict]:
    """{label, impl, preset, skew, cls, count} per instruction class the simulator counted (sim rows only)."""
    out = []
    for row in plain_rows(doc):
        for key, value in _counters(row).items():
            if key.startswith(CLASS_PREFIX) and value:
                out.append({"label": row.label, "impl": canonical_impl(row.impl), "preset": row.preset,
                            "skew": row.skew, "cls": key[len(CLASS_PREFIX):].removesuffix(".sum"),
                            "count": float(value)})
    return out


def static_records(doc) -> list[dict]:
    """Static facts per launched PTX entry, once per (label, impl, launch name, digest)."""
    seen, out = set(), []
    for row in as_sweep(doc).rows:
        kernels = row.static.kernels if row.static is not None else {}
        for launch, facts in kernels.items():
            ident = (row.label, row_slot(row), launch, facts.digest)
            if ident in seen:
                continue
            seen.add(ident)
            res = facts.resources or Resources()
            out.append({"label": row.label, "impl": ident[1], "launch": launch, "entry": facts.entry,
                        "digest": facts.digest, "registers": res.registers, "spills_bytes": res.spills,
                        "shared_bytes": res.shared_bytes, "ptx_lines": facts.ptx_lines,
                        "ptx_instructions": sum(facts.ptx_histogram.values()),
                        "sass_instructions": sum(facts.sass_histogram.values()),
                        "sass_histogram": dict(facts.sass_histogram), "errors": list(facts.errors)})
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

        for nvtx in run.sweep.nvtx_ranges:
            s, e = nvtx.start_perf_ns, nvtx.end_perf_ns
            if s is None or e is None:
                continue
            parts = split_ptxmoe_range(nvtx.name) or (None, None, None, None)
            bars.append({"name": nvtx.name, "lane": nvtx.name, "start_ms": s / 1e6, "end_ms": e / 1e6,
                         "impl": canonical_impl(parts[1]), "preset": parts[2], "skew": parts[3],
                         "detail": f"phase {nvtx.phase or '-'}, depth {nvtx.depth}"})
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
    impls, pairs = table_impls(run.sweep), table_pairs(run.sweep)
    for r in run.nsight:
        value = _num(r["value"])
        if value is None or r["metric"] in TIMESTAMP_METRICS:
            continue
        impl: str | None = canonical_impl(r.get("impl"))
        impl = impl if impl in impls else None
        key = (r.get("ptxmoe_kernel") or "", r.get("preset") or "", r.get("skew") or "",
               r["nvtx_range"] if not impl else "", short_kernel_name(r["kernel"]) if not impl else "",
               r["metric"], r["unit"], r["source"])
        groups.setdefault(key, {}).setdefault(impl or "value", []).append(value)
    out = []
    for (label, preset, skew, rng, kernel, metric, unit, source), per in groups.items():
        mean = {k: float(np.mean(v)) for k, v in per.items()}
        values = {impl: mean.get(impl) for impl in impls}
        out.append({"label": label, "preset": preset or None, "skew": skew or None, "nvtx_range": rng,
                    "kernel": kernel, "metric": metric, "unit": unit, "source": source,
                    "n": sum(len(v) for v in per.values()), **values, "ratios": pair_ratios(values, pairs),
                    "value": mean.get("value")})
    return out


# -------------------------------------------------------------------------------------------------- environment
def device_ceilings(run: Run) -> dict | None:
    """{name, bandwidth_Bps, fp32_flops, bf16_dense_flops, fp8_dense_flops} of the GPU (gpu runs) or the model
    device (sim)."""
    env = _table(run.doc.get("environment"))
    measured = run.basis == "measured"
    specs = _table(env.get("gpu")).get("specs") if measured else None
    specs = _table(specs or _table(env.get("model_device")).get("specs"))
    name = (_table(env.get("gpu")).get("name") if measured else None) or \
        _table(env.get("model_device")).get("name")
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

    env = _table(doc.get("environment"))
    specs = _table(_table(env.get("gpu")).get("specs") or _table(env.get("model_device")).get("specs"))
    walk("", {"run_id": doc.get("run_id"), "status": doc.get("status"), "created_utc": doc.get("created_utc"),
              "finished_utc": doc.get("finished_utc"), "command": " ".join(map(str, doc.get("command") or [])),
              "settings": doc.get("settings", {}), "environment": doc.get("environment", {}),
              "device_specs": {k: specs.get(k) for k in DEVICE_SPEC_KEYS if k in specs}})
    return out


DEVICE_SPEC_KEYS = ("name", "sm_count", "boost_clock_hz", "memory_type", "memory_bandwidth", "l2_bytes",
                    "fp32_flops", "bf16_dense_flops", "fp8_dense_flops", "shared_memory_per_sm", "registers_per_sm")


def filters(doc) -> dict[str, list[str]]:
    """The presets and skews present in the rows, in the run's own order."""
    presets: list[str] = []
    skews: list[str] = []
    for row in as_sweep(doc).rows:
        for value, bag in ((row.preset, presets), (row.skew, skews)):
            if value is not None and value not in bag:
                bag.append(value)
    return {"preset": presets, "skew": skews}


# -------------------------------------------------------------------------------------------------------- --vs
def compare_runs(a: Run, b: Run) -> list[dict]:
    """Rows present in both runs: {key, label, impl, preset, skew, a_us, b_us, b_over_a, a_speedup, b_speedup};
    the speedups are of run A's headline pair (headline_pair) in each run."""
    rows_b = {r["key"]: r for r in row_records(b.sweep)}
    pair = headline_pair(a.sweep).name
    verdicts_a = {(v["label"], v["preset"], v["skew"]): v for v in verdict_records(a.sweep) if v["pair"] == pair}
    verdicts_b = {(v["label"], v["preset"], v["skew"]): v for v in verdict_records(b.sweep) if v["pair"] == pair}
    out = []
    for r in row_records(a.sweep):
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
    rows_a, rows_b = row_records(a.sweep), row_records(b.sweep)
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

