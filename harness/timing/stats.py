"""Statistics of timing samples, pure NumPy: summaries, bootstrap intervals, the noise stopping rule, verdicts.

Conventions: samples are positive times (any one unit; the caller names it). A verdict compares one
implementation with a baseline (harness.implementations.PAIRS: PTX vs CUDA C++, PTX vs Numba, CUDA C++ vs Numba);
its speedup is median(baseline) / median(impl), so > 1 means `impl` is faster.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from harness.errors import InputError

DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95
RSE_TARGET = 0.005  # relative standard error of the mean under which sampling may stop (0.5 %)

# The calls a verdict makes (verdict_of), and NOT_MODELLED: two modelled paths the model cannot tell apart at all
# (harness.verdicts.not_modelled). Tallies and colours list them in this order.
VERDICTS = ("FASTER", "SAME", "SLOWER", "UNDECIDED", "NOT_MODELLED")
EFFECT = 0.10   # the effect ptxmoe exists to measure: a SAME interval must exclude a 10% gain either way
SAME_LIMITS = (1.0 / (1.0 + EFFECT), 1.0 + EFFECT)


def _as_samples(samples, what: str = "samples") -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise InputError(f"{what}: empty; expected at least one timing sample")
    if not np.all(np.isfinite(x)):
        raise InputError(f"{what}: {int(np.sum(~np.isfinite(x)))} non-finite values; expected finite times")
    return x


def relative_standard_error(samples) -> float:
    """Standard error of the mean over the mean (inf with fewer than 2 samples or a zero mean)."""
    x = _as_samples(samples)
    if x.size < 2 or x.mean() == 0:
        return float("inf")
    return float(x.std(ddof=1) / np.sqrt(x.size) / abs(x.mean()))


def should_stop(samples, elapsed_s: float, *, min_samples: int = 10, max_samples: int = 10_000,
                budget_s: float = 2.0, rse_target: float = RSE_TARGET) -> tuple[bool, str]:
    """The stopping rule: (stop?, why). Stops once RSE < target (after min_samples), or at the budget or sample cap."""
    n = len(samples)
    if n >= max_samples:
        return True, f"sample cap {max_samples}"
    if n >= min_samples and relative_standard_error(samples) < rse_target:
        return True, f"rse<{rse_target:g}"
    if elapsed_s >= budget_s and n >= min(min_samples, 3):
        return True, f"time budget {budget_s:g}s"
    return False, ""


def _bootstrap_medians(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    return np.median(x[idx], axis=1)


def bootstrap_ci(samples, *, stat=np.median, resamples: int = DEFAULT_RESAMPLES, confidence: float = CONFIDENCE,
                 rng: np.random.Generator | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of `stat` (default the median) of one sample set."""
    x = _as_samples(samples)
    rng = rng if rng is not None else np.random.default_rng()
    if stat is np.median:
        boot = _bootstrap_medians(x, resamples, rng)
    else:
        idx = rng.integers(0, x.size, size=(resamples, x.size))
        boot = np.apply_along_axis(stat, 1, x[idx])
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return float(lo), float(hi)


def ratio_ci(numerator, denominator, *, resamples: int = DEFAULT_RESAMPLES, confidence: float = CONFIDENCE,
             rng: np.random.Generator | None = None) -> tuple[float, float, float]:
    """(point, lo, hi): median(numerator)/median(denominator) and its percentile-bootstrap interval.

    The two sample sets are resampled independently (they are separate runs).
    """
    a, b = _as_samples(numerator, "numerator samples"), _as_samples(denominator, "denominator samples")
    rng = rng if rng is not None else np.random.default_rng()
    point = float(np.median(a) / np.median(b))
    boot = _bootstrap_medians(a, resamples, rng) / _bootstrap_medians(b, resamples, rng)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return point, float(lo), float(hi)


def verdict_of(lo: float, hi: float) -> str:
    """The call on a speedup's 95% interval [lo, hi] (measured or modelled alike; docs/run-json.md "verdicts"):

    FASTER     lo > 1: the interval excludes 1.0 on the fast side;
    SLOWER     hi < 1: it excludes 1.0 on the slow side;
    SAME       1/(1 + EFFECT) <= lo and hi <= 1 + EFFECT: it holds 1.0 and excludes a 10% gain either way;
    UNDECIDED  otherwise: it holds 1.0 and a 10% gain (or loss) too, so it cannot tell the effect ptxmoe measures
               from none.
    """
    if lo > 1.0:
        return "FASTER"
    if hi < 1.0:
        return "SLOWER"
    if lo >= SAME_LIMITS[0] and hi <= SAME_LIMITS[1]:
        return "SAME"
    return "UNDECIDED"


@dataclass(frozen=True)
class Summary:
    """Summary statistics of one sample set (in the unit of the samples)."""

    n: int
    median: float
    mean: float
    std: float
    min: float
    max: float
    q1: float
    q3: float
    iqr: float
    rse: float
    ci_lo: float
    ci_hi: float

    def as_dict(self, unit: str) -> dict:
        """Keys with the unit in their names ("median_us", ...), `n` and `rse` unitless."""
        out = {}
        for key, value in asdict(self).items():
            out[key if key in ("n", "rse") else f"{key}_{unit}"] = value
        return out


def summarize(samples, *, resamples: int = DEFAULT_RESAMPLES, rng: np.random.Generator | None = None) -> Summary:
    """Median, mean, spread, IQR, RSE and a bootstrap 95 % interval of the median."""
    x = _as_samples(samples)
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    lo, hi = bootstrap_ci(x, resamples=resamples, rng=rng) if x.size > 1 else (float(med), float(med))
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return Summary(int(x.size), float(med), float(x.mean()), std, float(x.min()), float(x.max()), float(q1),
                   float(q3), float(q3 - q1), relative_standard_error(x), lo, hi)


@dataclass(frozen=True)
class Verdict:
    """Speedup of an implementation over its baseline (median ratio, > 1: the implementation faster), its 95%
    interval and the call; `interval` says what kind of interval it is, and modelled verdicts add the model version,
    each side's limiter and the limiter split whose fit gave the interval."""

    speedup: float
    ci_lo: float
    ci_hi: float
    verdict: str
    basis: str  # "measured" (GPU event times) or "modelled" (ptxsim timing model)
    confidence: float = CONFIDENCE
    interval: str = "bootstrap"  # "bootstrap" (of the medians' ratio) or "prediction" (the model's paired errors)
    model_version: str | None = None
    limiters: tuple[str, str] | None = None  # (baseline's, implementation's) dominant limiter, modelled only
    limiter_split: str | None = None  # "same_limiter" / "different_limiters" (the fit the interval comes from)
    reason: str | None = None  # why a modelled call is NOT_MODELLED or SAME by identity

    def as_dict(self) -> dict:
        out = asdict(self)
        if out["limiters"] is not None:
            out["limiters"] = list(out["limiters"])
        return out


def compare(baseline_samples, impl_samples, *, basis: str = "measured", resamples: int = DEFAULT_RESAMPLES,
            rng: np.random.Generator | None = None) -> Verdict:
    """Verdict of one pair for one (kernel, preset, skew) from the baseline's and the implementation's samples: the
    percentile bootstrap 95% interval of the ratio of medians, called by verdict_of."""
    point, lo, hi = ratio_ci(baseline_samples, impl_samples, resamples=resamples, rng=rng)
    return Verdict(point, lo, hi, verdict_of(lo, hi), basis)


UNKNOWN_LIMITER = "unknown"  # a modelled row whose launches name no limiter


def compare_modelled(baseline_us: float, impl_us: float, *, limiters: tuple[str, str], model_version: str = "v1",
                     fits=None) -> Verdict:
    """Verdict from one modelled time per path (speedup = baseline / implementation): the 95% prediction interval of
    the model's paired errors (ptxsim.model.interval_table: bias-corrected, fitted on the rows whose two variants
    the model put on the same bound or on different ones, as these two paths' `limiters` are), called by verdict_of.

    fits: the {"same_limiter", "different_limiters", ...} fits to use (profile_intervals.run_fits: e.g. a device
    profile's measured pairs); default the committed ones of `model_version` (interval_table.version_fits)."""
    from ptxsim.model.interval_table import speedup_interval, version_fits

    if not (baseline_us > 0 and impl_us > 0):
        raise InputError(f"modelled times must be positive; got baseline {baseline_us!r}, implementation {impl_us!r}")
    if len(limiters) != 2 or not all(isinstance(x, str) and x for x in limiters):
        raise InputError(f"limiters must be two limiter names (baseline's, implementation's); got {limiters!r}")
    fits = version_fits(model_version) if fits is None else fits
    same = limiters[0] == limiters[1] and UNKNOWN_LIMITER not in limiters  # unknown: the wider, different-limiter fit
    ratio = float(baseline_us / impl_us)
    lo, hi = speedup_interval(ratio, same, fits)
    return Verdict(ratio, lo, hi, verdict_of(lo, hi), "modelled", CONFIDENCE, "prediction", model_version,
                   (limiters[0], limiters[1]), "same_limiter" if same else "different_limiters")
