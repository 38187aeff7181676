"""95% prediction intervals on modelled ratios, from the predicted paired validation rows (paired.py).

The model's error on a ratio is taken to be log-normal: for a pair of kernels whose true time ratio is R and whose
modelled ratio is r,

    x = ln(r / R) ~ N(b, s^2)

with bias b and spread s estimated from the n predicted paired rows (b = mean x_i, s = sample standard deviation,
ddof 1). The 95% prediction interval for the true ratio of a NEW pair the model gives r for is then

    R in [ r exp(-b - h),  r exp(-b + h) ],   h = t_{n-1, 0.975} x s x sqrt(1 + 1/n)

(the t quantile because s is estimated from n rows; sqrt(1 + 1/n) because b is too). The rows are split by whether
the model put both variants on the same bound ("same_limiter": much of the error cancels) or on different ones
("different_limiters"), and each split is fitted apart; a split with fewer than 2 rows falls back to all rows.

A modelled 10% effect is decidable (its interval excludes 1.0, after the bias is taken out) when h < ln(1.1), i.e.
when the spread is below

    s* = ln(1.1) / (t_{n-1, 0.975} sqrt(1 + 1/n))

`decidable_spread(n)` gives s* (about 4.3% for n = 15, as exp(s*) - 1). These are functions only: how verdicts use
them is the row pipeline's business (harness/timing), not this module's.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ptxsim.model.errors import ModelArgumentError

CONFIDENCE = 0.95
SPLITS = ("all", "same_limiter", "different_limiters")


# --- Student's t, without SciPy --------------------------------------------------------------------------------------
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for Student's t with `dof` degrees of freedom."""
    tail = 0.5 * _betainc(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, dof: float) -> float:
    """The t with P(T <= t) = p (bisection on t_cdf; |error| < 1e-10)."""
    if not 0.0 < p < 1.0 or not dof > 0:
        raise ModelArgumentError(f"t_quantile: need 0 < p < 1 and dof > 0, got p={p!r}, dof={dof!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, dof) < p:
        hi *= 2.0
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, dof) < p else (lo, mid)
    return 0.5 * (lo + hi)


# --- the fit -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogRatioFit:
    """ln(modelled / published) ~ N(bias, spread^2) over n rows, and the 95% prediction half-width it gives."""

    n: int
    bias: float          # mean of ln(modelled / published)
    spread: float        # sample standard deviation (ddof 1)
    confidence: float
    t_quantile: float    # t_{n-1, (1 + confidence) / 2}
    half_width: float    # t x spread x sqrt(1 + 1/n), in log units
    basis: str = "all"   # the split it was fitted on (SPLITS), or the split it fell back to

    def interval(self, modelled_ratio: float) -> tuple[float, float]:
        """The prediction interval for the true ratio of a pair the model gives `modelled_ratio` for."""
        if not modelled_ratio > 0 or not math.isfinite(modelled_ratio):
            raise ModelArgumentError(f"interval: modelled ratio must be a finite number > 0, got {modelled_ratio!r}")
        centre = math.log(modelled_ratio) - self.bias
        return math.exp(centre - self.half_width), math.exp(centre + self.half_width)


def fit_log_ratio(error_ratios: Iterable[float], confidence: float = CONFIDENCE, basis: str = "all") -> LogRatioFit:
    """Fit bias and spread to the rows' error ratios (modelled / published). Needs at least 2 rows."""
    logs = []
    for value in error_ratios:
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ModelArgumentError(f"fit_log_ratio: error ratio {value!r} is not a finite number > 0")
        logs.append(math.log(value))
    n = len(logs)
    if n < 2:
        raise ModelArgumentError(f"fit_log_ratio: {n} row(s) for {basis!r}; a spread needs at least 2")
    if not 0.0 < confidence < 1.0:
        raise ModelArgumentError(f"fit_log_ratio: confidence must be in (0, 1), got {confidence!r}")
    bias = sum(logs) / n
    spread = math.sqrt(sum((x - bias) ** 2 for x in logs) / (n - 1))
    t = t_quantile(0.5 + confidence / 2.0, n - 1)
    return LogRatioFit(n, bias, spread, confidence, t, t * spread * math.sqrt(1.0 + 1.0 / n), basis)


def fit_by_limiter(rows: Sequence, confidence: float = CONFIDENCE) -> dict[str, LogRatioFit]:
    """Fits on all rows and on each limiter split (rows: paired.PairRow, or anything with `error_ratio` and
    `same_limiter`). A split with fewer than 2 rows gets the fit of all rows (its `basis` says "all")."""
    groups = {"all": list(rows), "same_limiter": [r for r in rows if r.same_limiter],
              "different_limiters": [r for r in rows if not r.same_limiter]}
    overall = fit_log_ratio((r.error_ratio for r in groups["all"]), confidence, "all")
    return {key: fit_log_ratio((r.error_ratio for r in group), confidence, key) if len(group) >= 2 else overall
            for key, group in groups.items()}


def ratio_interval(modelled_ratio: float, same_limiter: bool, fits: dict[str, LogRatioFit]) -> tuple[float, float]:
    """The 95% prediction interval of a modelled ratio whose two sides the model puts on the same bound (or not)."""
    return fits["same_limiter" if same_limiter else "different_limiters"].interval(modelled_ratio)


def decidable_spread(n: int, effect: float = 0.10, confidence: float = CONFIDENCE) -> float:
    """The largest ratio error (as exp(s) - 1, s the log spread) at which a modelled ratio of 1 + effect has a
    prediction interval that excludes 1.0, with n validation rows (about 0.043 for n = 15, effect 0.10)."""
    if not isinstance(n, int) or n < 2:
        raise ModelArgumentError(f"decidable_spread: need n >= 2 rows, got {n!r}")
    if not effect > 0:
        raise ModelArgumentError(f"decidable_spread: effect must be > 0, got {effect!r}")
    s = math.log1p(effect) / (t_quantile(0.5 + confidence / 2.0, n - 1) * math.sqrt(1.0 + 1.0 / n))
    return math.expm1(s)
