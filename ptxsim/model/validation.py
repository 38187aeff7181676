"""The model against published hardware figures: run every microbenchmark on ptxsim, set each modelled quantity
beside its published measurement, and reduce the ratios to one error figure.

The error figure is the geometric RMS of the ratios with a published figure,
    e = exp(sqrt(mean(ln(modelled / published)^2))) - 1,
so a model off by +-15 % on every row has e = 0.15. `benchmarks/model_validation.py` prints the table and records the
result in ptxsim/model/validation.json; `recorded_error()` / `limiter_error()` read that record (the per-limiter
figures). Modelled row times no longer take their interval from it: theirs is the 95% prediction interval of the
predicted absolute rows (interval_table.time_interval), and verdicts' that of the paired rows.
"""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ptxsim.model.published import FIT, PREDICTED

RECORD = Path(__file__).with_name("validation.json")
BAND = (0.85, 1.15)
# Used only when no validation record exists (a fresh checkout that deleted it): deliberately wide.
FALLBACK_ERROR = 0.5
# The benches that exercise each timing component (the error of a row limited by it comes from these).
LIMITER_BENCHES: dict[str, tuple[str, ...]] = {
    "dram": ("dram_read", "dram_copy", "tma_read"), "l2": ("l2_copy",), "shared": ("shared_bw", "shared_conflict"),
    "issue": ("fp32_fma", "int32_mad"), "sfu": ("sfu_sin",), "fp64": (),
    "tensor": ("mma_bf16", "wgmma_bf16", "wgmma_fp8", "wgmma_latency"),
    "latency": ("chase_l1", "chase_l2", "chase_dram"), "tail": (), "launch": ("launch_gap",),
}


@dataclass(frozen=True)
class Row:
    """One validated quantity."""

    name: str
    quantity: str
    unit: str
    modelled: float
    published: float | None
    ratio: float | None
    device: str
    source: str
    conditions: str
    limiter: str
    gap: str = ""
    role: str = "predicted"   # published.FIT or PREDICTED (published.py's docstring)

    @property
    def in_band(self) -> bool:
        return self.ratio is not None and BAND[0] <= self.ratio <= BAND[1]


def validate(constants: Mapping[str, float] | None = None, names=None, static_facts=None,
             model: str = "v1") -> list[Row]:
    """Run the microbenchmarks (all, or `names`) on ptxsim with the model of the device each figure was measured on.

    static_facts: ptx -> {"resources", "sass_histogram"} (harness.static.analyse_ptx), as microbench.run_on_sim
    takes it; the recorded validation was made with it. model: "v1" (analytic bounds) or "v2" (cycle.py)."""
    from ptxsim.model.microbench import BENCHES, run_on_sim
    from ptxsim.model.published import entries, stated_clock_hz

    rows = []
    for name, bench in BENCHES.items():
        if names and name not in names:
            continue
        results = {}
        for pub in entries(name):
            key = (pub.device, stated_clock_hz(pub.source))      # at the clock the source states, if it does
            if key not in results:
                results[key] = run_on_sim(bench, pub.device, constants, static_facts, model=model, clock_hz=key[1])
            result = results[key]
            ratio = result.quantity / pub.value if pub.value else None
            what = bench.what if pub.device == "H100 SXM" else f"{bench.what}, {pub.device}"
            rows.append(Row(name, what, bench.unit, result.quantity, pub.value, ratio, pub.device, pub.source,
                            pub.conditions, "/".join(sorted(set(result.limiters))), pub.gap, pub.role))
    return rows


def error_figure(rows: list, role: str | None = None) -> float:
    """Geometric RMS error of the rows with a published figure (0 when there are none); with `role`, of the rows of
    that role only (published.PREDICTED: the model's out-of-sample error). Takes Rows (their `ratio`) or
    paired.PairRows (their `error_ratio`)."""
    logs = [math.log(r) for r in (_error_ratio(row) for row in rows if role is None or row.role == role) if r]
    return math.exp(math.sqrt(sum(x * x for x in logs) / len(logs))) - 1 if logs else 0.0


def _error_ratio(row) -> float | None:
    return row.error_ratio if hasattr(row, "error_ratio") else row.ratio


def table(rows: list[Row]) -> str:
    """`quantity | modelled | published | ratio` lines and a summary line."""
    lines = [f"{'quantity':<58} | {'modelled':>12} | {'published':>12} | {'ratio':>6} | note"]
    for row in rows:
        pub = f"{row.published:.4g}" if row.published else "none"
        ratio = f"{row.ratio:.3f}" if row.ratio else "n/a"
        flag = "" if row.ratio is None or row.in_band else f"  OUT OF BAND: {row.gap or 'no explanation recorded'}"
        note = row.source if row.published else row.conditions
        lines.append(f"{row.quantity + ' (' + row.unit + ')':<66} | {row.modelled:>12.4g} | {pub:>12} | "
                     f"{ratio:>6} | {note}{flag}")
    lines.append(summary(rows))
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    compared = [row for row in rows if row.ratio]
    inside = sum(row.in_band for row in compared)
    fit = [row for row in compared if row.role == FIT]
    predicted = [row for row in compared if row.role == PREDICTED]
    return (f"summary: {len(compared)} of {len(rows)} quantities have a published figure; {inside} of them within "
            f"{BAND[0]}-{BAND[1]}; model error (geometric RMS) {error_figure(rows):.1%} over all of them; "
            f"{len(predicted)} predicted: {error_figure(rows, PREDICTED):.1%}; {len(fit)} fit (a constant was set "
            f"from them): {error_figure(rows, FIT):.1%}")


def pair_table(pairs: list) -> str:
    """`pair | modelled ratio | published ratio | modelled / published | limiters` lines and a summary line."""
    lines = [f"{'paired row (numerator / denominator)':<44} | {'modelled':>8} | {'published':>9} | {'m / p':>6} | "
             f"{'role':<9} | limiters (same?) | source"]
    for row in pairs:
        same = "same" if row.same_limiter else "different"
        lines.append(f"{row.name:<44} | {row.modelled:>8.3f} | {row.published:>9.3f} | {row.error_ratio:>6.3f} | "
                     f"{row.role:<9} | {' / '.join(row.limiters)} ({same}) | {row.source.split(']')[0]}]")
    lines.append(pair_summary(pairs))
    return "\n".join(lines)


def pair_summary(pairs: list) -> str:
    predicted = [row for row in pairs if row.role == PREDICTED]
    same = [row for row in predicted if row.same_limiter]
    return (f"paired summary: {len(predicted)} predicted paired rows, ratio error (geometric RMS) "
            f"{error_figure(predicted):.1%} (goal <= 10%); {len(same)} with the same limiter on both sides: "
            f"{error_figure(same):.1%}; {len(predicted) - len(same)} with different limiters: "
            f"{error_figure([r for r in predicted if not r.same_limiter]):.1%}")


def model_errors(rows: list[Row], pairs: list) -> dict[str, float]:
    """The headline figures of one model version: absolute rows (all, predicted, fit) and predicted paired rows."""
    predicted = [row for row in pairs if row.role == PREDICTED]
    return {"error": error_figure(rows), "error_predicted": error_figure(rows, PREDICTED),
            "error_fit": error_figure(rows, FIT), "error_pairs_predicted": error_figure(predicted)}


def side_by_side(results: dict[str, tuple[list[Row], list]]) -> str:
    """Model versions side by side: each absolute row's and paired row's modelled / published, then the errors.
    `results` maps a model version ("v1", "v2") to its (rows, pairs)."""
    versions = list(results)
    head = " | ".join(f"{v:>7}" for v in versions)
    lines = [f"{'row (modelled / published)':<52} | {'role':<9} | {head}"]
    first_rows, first_pairs = results[versions[0]]
    for i, row in enumerate(first_rows):
        if row.ratio is None:
            continue
        cells = " | ".join(f"{results[v][0][i].ratio:>7.3f}" for v in versions)
        tag = row.source.split("]")[0] + "]" if "]" in row.source else row.source
        lines.append(f"{row.name + ' ' + tag + (' ' + row.device if row.device != 'H100 SXM' else ''):<52} | "
                     f"{row.role:<9} | {cells}")
    for i, pair in enumerate(first_pairs):
        cells = " | ".join(f"{results[v][1][i].error_ratio:>7.3f}" for v in versions)
        lines.append(f"{'pair ' + pair.name:<52} | {pair.role:<9} | {cells}")
    errors = {v: model_errors(*results[v]) for v in versions}
    for key, what in (("error_predicted", "predicted absolute rows (goal <= 20%)"),
                      ("error_pairs_predicted", "predicted paired rows (goal <= 10%)"),
                      ("error_fit", "fit absolute rows"), ("error", "all absolute rows")):
        cells = " | ".join(f"{errors[v][key]:>7.1%}" for v in versions)
        lines.append(f"{'error: ' + what:<52} | {'':<9} | {cells}")
    return "\n".join(lines)


def write_record(rows: list[Row], path: Path = RECORD, pairs: list | None = None, model: str = "v1",
                 others: dict[str, tuple[list[Row], list]] | None = None) -> None:
    """Record the rows and their error figures, and the paired rows, atomically: a temporary file renamed over the
    record (the 95% interval fits of the paired rows go to interval_table.json, interval_table.write_table).

    `model` is the version the rows were modelled with; `others` other versions' (rows, pairs), recorded under
    "other_models" (their errors and per-row ratios) for comparison.
    "error" stays the figure over every absolute row (the one the sim backend's intervals use today, through
    recorded_error/limiter_error); "error_predicted" is the out-of-sample figure over the predicted rows alone."""
    doc = {"error": error_figure(rows), "error_predicted": error_figure(rows, PREDICTED),
           "error_fit": error_figure(rows, FIT), "band": list(BAND), "rows": [asdict(row) for row in rows],
           "summary": summary(rows)}
    if pairs is not None:   # NOTE: the interval fits are interval_table.json's (interval_table.py), per version
        predicted = [row for row in pairs if row.role == PREDICTED]
        doc.update(pairs=[{**asdict(row), "same_limiter": row.same_limiter} for row in pairs],
                   error_pairs_predicted=error_figure(predicted), pair_summary=pair_summary(pairs))
    doc["model_version"] = model
    if others:   # the other model versions' figures, for comparison (not what the intervals use)
        doc["other_models"] = {
            version: {**model_errors(o_rows, o_pairs), "rows": {f"{r.name} {r.source}": r.ratio for r in o_rows},
                      "pairs": {p.name: p.error_ratio for p in o_pairs}}
            for version, (o_rows, o_pairs) in others.items()}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def recorded_error(path: Path = RECORD) -> tuple[float, str]:
    """(error figure, where it came from) from the validation record; FALLBACK_ERROR when there is none."""
    try:
        doc = json.loads(path.read_text())
        error = float(doc["error"])
    except (OSError, ValueError, KeyError, TypeError):
        return FALLBACK_ERROR, f"no readable validation record at {path}; fallback {FALLBACK_ERROR:.0%}"
    if not math.isfinite(error) or error < 0:
        return FALLBACK_ERROR, f"validation record {path} has error {error!r}; fallback {FALLBACK_ERROR:.0%}"
    return error, f"{path.name}: {doc.get('summary', '')}"


@functools.lru_cache(maxsize=8)
def _record(path: str) -> dict | None:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def limiter_error(limiter: str, path: Path = RECORD) -> tuple[float, str]:
    """(relative error, basis) for a modelled time limited by `limiter`: the geometric RMS error of the benches that
    exercise that component (LIMITER_BENCHES) where any has a published figure, else the overall error figure."""
    overall, basis = recorded_error(path)
    doc = _record(str(path))
    if doc is None:
        return overall, basis
    names = set(LIMITER_BENCHES.get(limiter, ()))
    logs = [math.log(r["ratio"]) for r in doc.get("rows", []) if r.get("name") in names and r.get("ratio")]
    if not logs:
        return overall, f"overall model error (no published figure for the {limiter!r} benches); {basis}"
    error = math.exp(math.sqrt(sum(x * x for x in logs) / len(logs))) - 1
    return error, (f"{limiter!r} benches ({', '.join(sorted(names))}) vs published figures, "
                   f"{len(logs)} compared; {path.name}")
