"""The committed table of the 95% prediction intervals on modelled speedups, one entry per timing model version.

benchmarks/model_validation.py runs the predicted paired rows (paired.py) on every model version and writes
interval_table.json beside this file: per version, each row's error in SPEEDUP orientation, the limiters of its two
variants, and the fits of intervals.py (all rows, same limiter, different limiters), with the version's error
figures. Verdicts read the fits from here (`version_fits`), never from a run; tests/ptxsim/model/test_interval_table.py
checks that the committed fits are what the committed rows give and that the rows are validation.json's.

Orientation. A published pair is a ratio of two quantities in one unit: a throughput (GB/s: the numerator's speedup
over the denominator) or a time (clk per instruction: the denominator's speedup over the numerator). Which variant
is the numerator is the source's choice, so ln(modelled / published) has no sign of its own. Each row is therefore
turned into the speedup of its FASTER variant (by the published figure) over its slower one, and its error is

    x = ln(modelled speedup / published speedup)   (faster over slower)

so the bias b = mean x says whether the model exaggerates effects (b > 0) or understates them (b < 0), and s their
spread. A new modelled speedup r is corrected away from or toward 1 accordingly (`speedup_interval`): the centre is
sign(ln r) max(|ln r| - b, 0) (r = 1 stays 1; a correction toward 1 stops there), and the half-width is
h = t_{n-1,0.975} s sqrt(1 + 1/n) of intervals.py.
NOTE: the correction is oriented by the MODELLED direction, which is the published one except on rows the model
gets the sign wrong (none among the predicted pairs today: it gives 1.0 where it sees no difference).

Measured pairs (the hook for `ptxmoe calibrate`'s measured paired ratios): `version_fits(version, measured=rows)`
takes rows with `error_ratio` (modelled / measured speedup, faster over slower) and `same_limiter` (`measured_pair`
builds one from a modelled and a measured time ratio, `pair_error` from a paired.PairRow) and fits them instead of
(mode "replace") or with (mode "augment") the committed predicted rows.

Model versions' fits are `version_fits(version, measured=None)`; a run's fits (the committed ones, or a device
profile's measured pairs) are ptxsim.model.profile_intervals.run_fits, which calls it.

Absolute times. Each version's entry also carries "absolute": the predicted ABSOLUTE validation rows (validation.py)
turned into time errors, x = ln(modelled time / published time) (a throughput row's ratio inverted), and one fit of
them (intervals.fit_log_ratio: bias, spread, t quantile, sqrt(1 + 1/n)). `time_interval(t, version)` is the 95%
prediction interval of the true time of a kernel the model gives t for: [t exp(-b - h), t exp(-b + h)]; the sim
backend gives every modelled row's `interval_us` from it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.intervals import CONFIDENCE, LogRatioFit, decidable_spread, fit_by_limiter, fit_log_ratio

TABLE = Path(__file__).with_name("interval_table.json")
EFFECT = 0.10                     # the effect ptxmoe exists to measure: a 10% gain either way
TIME_UNITS = frozenset({"clk", "cycles", "s", "ms", "us", "ns"})   # a larger figure is a slower variant
# a larger figure is a faster kernel (absolute rows: the time error is the inverse of the quantity ratio)
THROUGHPUT_UNITS = frozenset({"GB/s", "TB/s", "TFLOP/s", "TOPS", "Gatom/s"})
MODES = ("replace", "augment")


@dataclass(frozen=True)
class PairError:
    """One paired row's error in speedup orientation: `error_ratio` = modelled / published speedup of the faster
    variant (by the published figure) over the slower one; `same_limiter` whether the model put both on one bound."""

    name: str
    error_ratio: float
    limiters: tuple[str, str]
    same_limiter: bool
    source: str = "predicted"     # "predicted" (published, out of sample) or "measured" (a device profile)


def oriented_error(modelled: float, published: float, unit: str) -> float:
    """modelled / published speedup of the faster variant over the slower one, from a pair's quantity ratios
    (numerator / denominator, in `unit`)."""
    for what, value in (("modelled", modelled), ("published", published)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ModelArgumentError(f"oriented_error: {what} ratio {value!r} is not a finite number > 0")
    speedup_m, speedup_p = (1 / modelled, 1 / published) if unit in TIME_UNITS else (modelled, published)
    if speedup_p < 1.0:           # the denominator is the faster variant: look at the pair the other way round
        speedup_m, speedup_p = 1 / speedup_m, 1 / speedup_p
    return speedup_m / speedup_p


def pair_error(row, source: str = "predicted") -> PairError:
    """The PairError of one paired.PairRow (a published pair's, or a device profile's measured one, named as
    paired.GPU_PAIRS names it), oriented by its pair's unit."""
    from ptxsim.model.paired import pair_unit

    return PairError(row.name, oriented_error(row.modelled, row.published, pair_unit(row.name)),
                     (str(row.limiters[0]), str(row.limiters[1])), row.same_limiter, source)


def pair_errors(pair_rows: Sequence) -> list[PairError]:
    """PairErrors of paired.PairRows (the predicted ones), each oriented by its published pair's unit."""
    from ptxsim.model.published import PREDICTED

    return [pair_error(row) for row in pair_rows if row.role == PREDICTED]


def time_error(ratio: float, unit: str) -> float:
    """modelled time / published time of an absolute row whose modelled / published QUANTITY is `ratio` in `unit`
    (a time unit: the same; a throughput: its inverse)."""
    if not (isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio > 0):
        raise ModelArgumentError(f"time_error: ratio {ratio!r} is not a finite number > 0")
    if unit in TIME_UNITS:
        return float(ratio)
    if unit in THROUGHPUT_UNITS:
        return 1.0 / ratio
    raise ModelArgumentError(f"time_error: unit {unit!r} is neither a time ({', '.join(sorted(TIME_UNITS))}) nor "
                             f"a throughput ({', '.join(sorted(THROUGHPUT_UNITS))})")


def absolute_entry(rows: Sequence) -> dict:
    """{"rows": [{name, source, unit, limiter, time_error}], "fit": LogRatioFit as a dict} of the predicted absolute
    validation rows (validation.Row, or anything with name, source, unit, limiter, ratio, role) that have a figure."""
    from ptxsim.model.published import PREDICTED

    kept = [{"name": r.name, "source": r.source, "unit": r.unit, "limiter": r.limiter,
             "time_error": time_error(r.ratio, r.unit)} for r in rows if r.role == PREDICTED and r.ratio]
    fit = fit_log_ratio((r["time_error"] for r in kept), basis="absolute")
    return {"rows": kept, "fit": asdict(fit)}


def measured_pair(name: str, modelled_time_ratio: float, measured_time_ratio: float,
                  limiters: tuple[str, str]) -> PairError:
    """A paired row measured on a GPU (e.g. by `ptxmoe calibrate`: numerator time / denominator time of two
    variants, and the model's ratio of the same two on ptxsim), as version_fits(..., measured=[...]) takes it."""
    return PairError(name, oriented_error(modelled_time_ratio, measured_time_ratio, "s"),
                     (str(limiters[0]), str(limiters[1])), limiters[0] == limiters[1], "measured")


def version_entry(pair_rows: Sequence, errors: Mapping[str, float], absolute_rows: Sequence) -> dict:
    """The table entry of one model version: its oriented paired rows, their fits, its predicted absolute rows and
    their fit (absolute_entry), and the version's error figures."""
    rows = pair_errors(pair_rows)
    fits = fit_by_limiter(rows)
    return {"rows": [asdict(row) for row in rows], "fits": {key: asdict(fit) for key, fit in fits.items()},
            "absolute": absolute_entry(absolute_rows),
            "n": len(rows), "decidable_spread": decidable_spread(len(rows), EFFECT),
            "error_pairs_predicted": float(errors["error_pairs_predicted"]),
            "error_predicted": float(errors["error_predicted"])}


def write_table(entries: Mapping[str, dict], path: Path = TABLE) -> None:
    """Write {version: version_entry} atomically (a temporary file renamed over the table)."""
    doc = {"confidence": CONFIDENCE, "effect": EFFECT, "models": dict(entries)}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def load_table(path: Path = TABLE) -> dict:
    """The committed table; ModelArgumentError naming the file when it is missing or unreadable."""
    try:
        doc = json.loads(Path(path).read_text())
        doc["models"]["v1"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelArgumentError(f"interval table {path}: unreadable ({exc}); expected the file "
                                 "benchmarks/model_validation.py writes, with a 'models' entry for v1") from None
    return doc


def committed_rows(version: str, path: Path = TABLE) -> list[PairError]:
    """The committed PairErrors of one model version."""
    entry = _entry(version, path)
    return [PairError(r["name"], float(r["error_ratio"]), (r["limiters"][0], r["limiters"][1]),
                      bool(r["same_limiter"]), r.get("source", "predicted")) for r in entry["rows"]]


def _entry(version: str, path: Path) -> dict:
    models = load_table(path)["models"]
    if version not in models:
        raise ModelArgumentError(f"interval table {path}: no entry for timing model {version!r}; it has "
                                 f"{', '.join(sorted(models))} (re-run benchmarks/model_validation.py)")
    return models[version]


def version_fits(version: str, measured: Sequence | None = None, mode: str = "replace",
                 path: Path = TABLE) -> dict[str, LogRatioFit]:
    """The fits ({"all", "same_limiter", "different_limiters"}) of a model version's intervals.

    Without `measured`, the committed fits (read from the table, not refitted). With `measured` (rows with
    `error_ratio` = modelled / measured speedup, faster over slower, and `same_limiter`: e.g. a device profile's
    paired ratios measured by `ptxmoe calibrate`), the fits of those rows alone ("replace") or of those rows and
    the committed predicted ones ("augment")."""
    if mode not in MODES:
        raise ModelArgumentError(f"version_fits: mode {mode!r}; expected one of {', '.join(MODES)}")
    if measured:
        rows = list(measured) + (committed_rows(version, path) if mode == "augment" else [])
        return fit_by_limiter(rows)
    return {key: LogRatioFit(**fit) for key, fit in _entry(version, path)["fits"].items()}


def error_figures(version: str = "v1", path: Path = TABLE) -> dict[str, float]:
    """{"error_pairs_predicted", "error_predicted", "decidable_spread", "n"} of a model version: the one error
    figure the README, docs/api.md and the dashboard quote."""
    entry = _entry(version, path)
    return {key: entry[key] for key in ("error_pairs_predicted", "error_predicted", "decidable_spread", "n")}


def time_fit(version: str = "v1", path: Path = TABLE) -> LogRatioFit:
    """The committed fit of a model version's predicted absolute rows (time errors; module docstring)."""
    entry = _entry(version, path)
    if "absolute" not in entry:
        raise ModelArgumentError(f"interval table {path}: model {version!r} has no 'absolute' entry "
                                 "(re-run benchmarks/model_validation.py)")
    return LogRatioFit(**entry["absolute"]["fit"])


def time_interval(modelled: float, version: str = "v1", path: Path = TABLE) -> tuple[float, float]:
    """The 95% prediction interval of the true time of a kernel the model gives `modelled` for (any time unit):
    [t exp(-b - h), t exp(-b + h)] with the version's absolute-row fit."""
    return time_fit(version, path).interval(modelled)


def speedup_interval(speedup: float, same_limiter: bool, fits: Mapping[str, LogRatioFit]) -> tuple[float, float]:
    """The 95% prediction interval of the true speedup of a pair the model gives `speedup` for (module docstring:
    the bias is taken out away from or toward 1, then +-h in logs)."""
    if not (isinstance(speedup, (int, float)) and math.isfinite(speedup) and speedup > 0):
        raise ModelArgumentError(f"speedup_interval: modelled speedup must be a finite number > 0, got {speedup!r}")
    fit = fits["same_limiter" if same_limiter else "different_limiters"]
    log_r = math.log(speedup)
    sign = (log_r > 0) - (log_r < 0)
    centre = sign * max(abs(log_r) - fit.bias, 0.0)   # NOTE: a correction toward 1 stops at 1, never crosses it
    return math.exp(centre - fit.half_width), math.exp(centre + fit.half_width)


def decided_beyond(fit: LogRatioFit) -> float:
    """The modelled speedup (>= 1) beyond which a fit's interval excludes 1.0: exp(h + b), the centre moved by the
    bias (speedup_interval) by at least the half-width; 1.0 when every modelled difference is decided."""
    return max(1.0, math.exp(fit.half_width + fit.bias))


def error_figure_text(version: str = "v1", path: Path = TABLE) -> str:
    """The model's one error figure, in the words the README, docs/api.md and the dashboard all use."""
    e = error_figures(version, path)
    return (f"{e['error_pairs_predicted']:.1%} on predicted paired ratios and {e['error_predicted']:.1%} on "
            f"predicted absolute figures (geometric RMS, timing model {version})")


def decides_text(version: str = "v1", path: Path = TABLE) -> str:
    """What the model can decide today, from its committed fits: the ratio error at which a 10% effect becomes
    decidable with the rows there are, and the modelled speedups its verdicts can call."""
    e, fits = error_figures(version, path), version_fits(version, path=path)
    same, different = fits["same_limiter"], fits["different_limiters"]
    never_same = all(fit.half_width > math.log1p(EFFECT) for fit in (same, different))
    return (f"with {e['n']} predicted paired rows, a {EFFECT:.0%} effect becomes decidable at 95% once the "
            f"paired-ratio error (its spread, the bias taken out) is below {e['decidable_spread']:.1%}; today "
            f"(model {version}) a modelled verdict is FASTER or SLOWER only beyond {decided_beyond(same):.2f}x "
            f"when both paths have the same limiter and beyond {decided_beyond(different):.2f}x when they do not, "
            + ("it is never SAME (no interval is narrower than +-10%), and everything else is UNDECIDED"
               if never_same else "and SAME only when its interval lies within +-10%"))
