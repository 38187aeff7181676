"""The 95% prediction intervals of intervals.py: Student's t without SciPy, the log-normal fit of the paired rows'
errors, its coverage on synthetic data, the same/different-limiter split and the decidable spread."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.intervals import (
    decidable_spread,
    fit_by_limiter,
    fit_log_ratio,
    ratio_interval,
    t_cdf,
    t_quantile,
)


@pytest.mark.parametrize("p, dof, expected", [   # printed t tables
    (0.975, 1, 12.706), (0.975, 4, 2.776), (0.975, 14, 2.145), (0.975, 21, 2.080), (0.95, 5, 2.015),
    (0.995, 10, 3.169), (0.975, 10_000, 1.960)])
def test_t_quantile_matches_the_tables(p, dof, expected):
    assert t_quantile(p, dof) == pytest.approx(expected, abs=1e-3)
    assert t_quantile(1 - p, dof) == pytest.approx(-expected, abs=1e-3)
    assert t_cdf(t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-9)


def test_fit_is_the_mean_and_sample_spread_of_the_logs():
    errors = [1.1, 1 / 1.1, 1.2, 1.0]
    logs = np.log(errors)
    fit = fit_log_ratio(errors)
    assert fit.n == 4 and fit.bias == pytest.approx(logs.mean()) and fit.spread == pytest.approx(logs.std(ddof=1))
    assert fit.half_width == pytest.approx(t_quantile(0.975, 3) * fit.spread * math.sqrt(1 + 1 / 4))
    lo, hi = fit.interval(2.0)                  # centred on the bias-corrected ratio, symmetric in logs
    assert math.sqrt(lo * hi) == pytest.approx(2.0 / math.exp(fit.bias))
    assert math.log(hi / lo) == pytest.approx(2 * fit.half_width)


def test_a_model_that_overestimates_every_ratio_by_20_percent_is_corrected():
    fit = fit_log_ratio([1.2 * f for f in (1.01, 0.99, 1.0, 1.02, 0.98)])
    lo, hi = fit.interval(1.2)                  # modelled 1.2 -> the truth is near 1.0
    assert lo < 1.0 < hi and hi / lo < 1.12              # 2 x 2.776 x 0.0158 x sqrt(1.2) in logs


def test_prediction_interval_covers_95_percent_of_new_pairs():
    """Synthetic validation sets of 15 rows with bias 0.05 and spread 0.2: a new row's error falls inside the
    interval fitted on the 15 about 95% of the time (a z quantile or no sqrt(1 + 1/n) would cover ~91%)."""
    rng = np.random.default_rng(29)
    trials, hits = 4000, 0
    for _ in range(trials):
        fit = fit_log_ratio(np.exp(rng.normal(0.05, 0.2, 15)).tolist())
        true_ratio = 1.3
        modelled = true_ratio * math.exp(rng.normal(0.05, 0.2))
        lo, hi = fit.interval(modelled)
        hits += lo <= true_ratio <= hi
    assert 0.94 <= hits / trials <= 0.96


def _pair(error, same):
    return SimpleNamespace(error_ratio=error, same_limiter=same)


def test_limiter_splits_are_fitted_apart_and_a_thin_split_falls_back_to_all():
    rows = [_pair(e, True) for e in (1.01, 0.99, 1.02, 0.98)] + [_pair(e, False) for e in (1.5, 0.6, 1.3)]
    fits = fit_by_limiter(rows)
    assert fits["same_limiter"].n == 4 and fits["different_limiters"].n == 3 and fits["all"].n == 7
    assert fits["same_limiter"].spread < 0.05 < fits["different_limiters"].spread
    narrow, wide = ratio_interval(1.5, True, fits), ratio_interval(1.5, False, fits)
    assert wide[0] < narrow[0] < 1.5 < narrow[1] < wide[1]
    thin = fit_by_limiter(rows[:4] + rows[4:5])           # one row with different limiters: use all rows
    assert thin["different_limiters"].basis == "all" and thin["different_limiters"].n == 5


def test_decidable_spread_is_where_a_10_percent_effect_just_excludes_one():
    s = decidable_spread(15)
    assert s == pytest.approx(0.044, abs=0.001)           # the "about 4-5% for 15 rows"
    n = 15
    logs = np.log1p(s) * np.array([1.0, -1.0] * 7 + [0.0])  # unbiased rows with exactly that spread...
    logs *= 1.0 / logs.std(ddof=1)
    logs *= np.log1p(s)
    fit = fit_log_ratio(np.exp(logs).tolist())
    assert fit.n == n and fit.spread == pytest.approx(np.log1p(s))
    assert fit.interval(1.10)[0] == pytest.approx(1.0, abs=1e-9)   # ...put a modelled 1.10 just on 1.0
    assert decidable_spread(40) > s > decidable_spread(5)


@pytest.mark.parametrize("call", [
    lambda: fit_log_ratio([1.1]), lambda: fit_log_ratio([1.1, 0.0]), lambda: fit_log_ratio([1.1, float("nan")]),
    lambda: fit_log_ratio([1.1, 1.2], confidence=1.0), lambda: fit_log_ratio([1.1, 1.2]).interval(-1.0),
    lambda: decidable_spread(1), lambda: t_quantile(1.5, 3)])
def test_bad_input_names_the_bad_value(call):
    with pytest.raises(ModelArgumentError):
        call()
