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

VERDICTS = ("FASTER", "SAME", "SLOWER")


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
    """FASTER when the speedup interval lies above 1, SLOWER when below, else SAME."""
    if lo > 1.0:
        return "FASTER"
    if hi < 1.0:
        return "SLOWER"
    return "SAME"


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
    """Speedup of an implementation over its baseline (median ratio, > 1: the implementation faster), its interval
    and the call."""

    speedup: float
    ci_lo: float
    ci_hi: float
    verdict: str
    basis: str  # "measured" (GPU event times) or "modelled" (ptxsim timing model)

    def as_dict(self) -> dict:
        return asdict(self)


def compare(baseline_samples, impl_samples, *, basis: str = "measured", resamples: int = DEFAULT_RESAMPLES,
            rng: np.random.Generator | None = None) -> Verdict:
    """Verdict of one pair for one (kernel, preset, skew) from the baseline's and the implementation's samples."""
    point, lo, hi = ratio_ci(baseline_samples, impl_samples, resamples=resamples, rng=rng)
    return Verdict(point, lo, hi, verdict_of(lo, hi), basis)


def _recorded_band() -> float:
    """The model's overall error figure from its validation against published hardware figures."""
    from ptxsim.model.validation import recorded_error

    return recorded_error()[0]


# A modelled speedup within this relative band of 1 is SAME: the model's measured error (geometric RMS of the
# validation ratios, ptxsim/model/validation.json), not a fixed +-2 %. Rows carry their own (per-limiter) error;
# modelled_band() picks the band for a pair of rows.
MODELLED_SAME_BAND = _recorded_band()


def modelled_band(*timings: dict) -> float:
    """The SAME band for modelled rows: the larger of their recorded relative errors (timing["model_error"]), else
    the overall error figure. NOTE: taking one row's error, not the sum of both, assumes the two paths' errors are
    correlated (same model, same kernel's work); docs/model-validation.md says so."""
    errors = [t["model_error"]["relative"] for t in timings
              if isinstance(t, dict) and isinstance(t.get("model_error"), dict)
              and isinstance(t["model_error"].get("relative"), (int, float))]
    return max(errors) if errors else MODELLED_SAME_BAND


def compare_modelled(baseline_s: float, impl_s: float, band: float | None = None) -> Verdict:
    """Verdict from one modelled time per path (speedup = baseline / implementation): the interval is
    [r / (1 + band), r x (1 + band)] with the model's error as band (default MODELLED_SAME_BAND); SAME when it
    contains 1."""
    if not (baseline_s > 0 and impl_s > 0):
        raise InputError(f"modelled times must be positive; got baseline {baseline_s!r}, implementation {impl_s!r}")
    band = MODELLED_SAME_BAND if band is None else band
    if not (isinstance(band, (int, float)) and band >= 0):
        raise InputError(f"modelled band must be a relative error >= 0, got {band!r}")
    ratio = float(baseline_s / impl_s)
    lo, hi = ratio / (1 + band), ratio * (1 + band)
    return Verdict(ratio, lo, hi, verdict_of(lo, hi), "modelled")
