"""Timing statistics on synthetic samples: bootstrap intervals, the RSE stopping rule, verdicts."""
import numpy as np
import pytest

from harness.errors import InputError
from harness.timing import stats


def _times(rng, median, n, noise=0.02):
    return median * rng.lognormal(0.0, noise, n)


def test_known_ratio_is_faster_with_interval_around_it(rng):
    numba = _times(rng, 12.0, 300)
    ptx = _times(rng, 10.0, 300)
    v = stats.compare(numba, ptx, rng=rng)
    assert v.verdict == "FASTER"
    assert 1.0 < v.ci_lo and v.ci_hi - v.ci_lo < 0.05  # 2 % noise on 300 samples: a tight interval
    assert abs(v.speedup - 1.2) < 0.01


def test_slower_is_the_mirror(rng):
    v = stats.compare(_times(rng, 10.0, 200), _times(rng, 12.0, 200), rng=rng)
    assert v.verdict == "SLOWER" and v.ci_hi < 1 and abs(v.speedup - 1 / 1.2) < 0.01


def test_interval_covers_the_true_ratio_about_95_percent_of_the_time(rng):
    # NOTE: one interval misses the truth 5 % of the time by design, so coverage is checked over many trials
    # (P(fewer than 32 of 40 covered) is about 1e-3 for a correct 95 % interval; a broken one covers far less).
    covered = 0
    for _ in range(40):
        v = stats.compare(_times(rng, 12.0, 120), _times(rng, 10.0, 120), resamples=500, rng=rng)
        covered += v.ci_lo < 1.2 < v.ci_hi
    assert covered >= 32


def test_identical_samples_are_same(rng):
    x = _times(rng, 5.0, 101)
    v = stats.compare(x, rng.permutation(x), rng=rng)
    assert v.speedup == 1.0 and v.verdict == "SAME" and v.ci_lo <= 1.0 <= v.ci_hi


def test_identical_distributions_are_mostly_same(rng):
    # a 95 % interval covers the true ratio 1 in about 95 % of trials; far fewer would mean a broken interval
    same = sum(stats.compare(_times(rng, 7.0, 60), _times(rng, 7.0, 60), resamples=500, rng=rng).verdict == "SAME"
               for _ in range(40))
    assert same >= 32


def test_bootstrap_ci_of_median_covers_and_shrinks(rng):
    x = rng.normal(100.0, 5.0, 400)
    lo, hi = stats.bootstrap_ci(x, rng=rng)
    assert lo < np.median(x) < hi and lo - 1.5 < 100.0 < hi + 1.5
    lo2, hi2 = stats.bootstrap_ci(x[:25], rng=rng)
    assert hi2 - lo2 > hi - lo  # fewer samples: a wider interval


def test_rse_and_stopping_rule(rng):
    quiet = 1.0 + rng.normal(0, 0.001, 20)
    noisy = 1.0 + rng.normal(0, 0.2, 20)
    assert stats.relative_standard_error(quiet) < 0.005 < stats.relative_standard_error(noisy)
    expect = np.std(quiet, ddof=1) / np.sqrt(20) / np.mean(quiet)
    assert stats.relative_standard_error(quiet) == pytest.approx(expect)
    assert stats.should_stop(quiet, 0.1) == (True, "rse<0.005")
    assert stats.should_stop(noisy, 0.1) == (False, "")
    assert stats.should_stop(noisy, 5.0, budget_s=2.0)[0]
    assert stats.should_stop(quiet[:5], 0.1) == (False, "")  # below min_samples, even if quiet
    assert stats.relative_standard_error([3.0]) == float("inf")


def test_summary_fields_and_units(rng):
    x = rng.uniform(1, 2, 51)
    s = stats.summarize(x, rng=rng)
    assert s.median == np.median(x) and s.iqr == pytest.approx(np.quantile(x, .75) - np.quantile(x, .25))
    assert s.ci_lo <= s.median <= s.ci_hi and s.min == x.min() and s.n == 51
    d = s.as_dict("us")
    assert d["median_us"] == s.median and d["n"] == 51 and "rse" in d and "iqr_us" in d


def test_verdict_boundaries():
    assert stats.verdict_of(1.01, 1.2) == "FASTER"
    assert stats.verdict_of(0.99, 1.2) == "SAME"
    assert stats.verdict_of(0.5, 0.99) == "SLOWER"


def test_bad_samples_name_the_problem():
    with pytest.raises(InputError, match="empty"):
        stats.summarize([])
    with pytest.raises(InputError, match="1 non-finite"):
        stats.compare([1.0, np.nan], [1.0, 2.0])


def test_modelled_verdict_band():
    """The band is the model's measured error: an interval [r / (1 + e), r (1 + e)] around the modelled speedup."""
    assert stats.compare_modelled(12.0, 10.0, band=0.1).verdict == "FASTER"
    assert stats.compare_modelled(12.0, 10.0, band=0.25).verdict == "SAME"
    v = stats.compare_modelled(10.0, 10.1, band=0.05)
    assert v.verdict == "SAME" and v.basis == "modelled" and v.ci_lo < v.speedup < v.ci_hi
    assert v.ci_hi == pytest.approx(v.speedup * 1.05) and v.ci_lo == pytest.approx(v.speedup / 1.05)
    assert stats.compare_modelled(10.0, 12.0, band=0.1).verdict == "SLOWER"
    # default: the recorded validation error, never the old fixed 2 % and never zero width
    from ptxsim.model.validation import recorded_error

    assert stats.MODELLED_SAME_BAND == recorded_error()[0] > 0.02
    d = stats.compare_modelled(10.0, 10.0)
    assert d.ci_hi / d.ci_lo == pytest.approx((1 + stats.MODELLED_SAME_BAND) ** 2)
    # a pair of rows: the larger of their recorded errors
    assert stats.modelled_band({"model_error": {"relative": 0.1}}, {"model_error": {"relative": 0.3}}) == 0.3
    assert stats.modelled_band({}, {"model_error": None}) == stats.MODELLED_SAME_BAND
    with pytest.raises(InputError, match="band"):
        stats.compare_modelled(1.0, 1.0, band=-1)
    with pytest.raises(InputError, match="positive"):
        stats.compare_modelled(0.0, 1.0)
