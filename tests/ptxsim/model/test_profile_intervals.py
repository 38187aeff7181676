"""Intervals from a device profile's MEASURED pairs (ptxsim/model/profile_intervals.py): the model's ratio for the
two variants on the profile's device, beside the measured ratio, oriented and fitted as the published rows are
(interval_table: speedup of the faster variant). The measured ratios here are fake readings built from the model's
own ratios and known errors (measuring needs a GPU)."""
import math

import numpy as np
import pytest

from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.interval_table import speedup_interval, version_fits
from ptxsim.model.intervals import fit_by_limiter
from ptxsim.model.paired import measured_pair_rows
from ptxsim.model.profile import DeviceProfile, MeasuredPair, ProfileError
from ptxsim.model.profile_intervals import (
    PUBLISHED_BASIS,
    profile_digest,
    profile_fits,
    profile_pair_errors,
    profile_pair_rows,
    run_fits,
)

FAST = ("ilp_fma_1_vs_4", "ilp_iadd_1_vs_8", "stream_add_vs_copy", "stream_triad_vs_copy")  # quick on ptxsim
ERRORS = (1.10, 0.95, 1.20, 1.05)  # modelled / measured, chosen


def _profile(errors=ERRORS, names=FAST, clock_hz=None):
    spec = DeviceProfile("H200 SXM", {}, under_load_clock_hz=clock_hz).spec()
    modelled = {r.name: r.modelled for r in measured_pair_rows(spec, dict.fromkeys(names, 1.0))}
    pairs = {n: MeasuredPair(n, modelled[n] / e, (modelled[n] / e * 0.99, modelled[n] / e * 1.01), 10)
             for n, e in zip(names, errors, strict=True)}
    return DeviceProfile("H200 SXM", {}, under_load_clock_hz=clock_hz, pairs=pairs)


def _oriented(rows):
    """modelled / measured SPEEDUP of the faster variant (by the measured ratio) over the slower one: the raw
    error when the measured ratio is >= 1, its inverse when the denominator is the faster or larger side."""
    return [r.error_ratio if r.published >= 1 else 1 / r.error_ratio for r in rows]


def test_bias_and_spread_are_those_of_the_errors_against_the_measured_ratios():
    profile = _profile()
    rows = profile_pair_rows(profile)
    assert [r.name for r in rows] == list(FAST)
    assert [r.error_ratio for r in rows] == pytest.approx(ERRORS)
    assert all(r.device == "H200 SXM" and "measured on H200 SXM" in r.source for r in rows)
    errors = profile_pair_errors(profile)
    assert [e.error_ratio for e in errors] == pytest.approx(_oriented(rows))
    assert all(e.source == "measured" for e in errors)
    fits = profile_fits(profile)
    logs = np.log(_oriented(rows))
    assert fits["all"].n == 4 and fits["all"].bias == pytest.approx(logs.mean())
    assert fits["all"].spread == pytest.approx(logs.std(ddof=1))
    # both ILP pairs are issue-bound on both sides and both STREAM pairs DRAM-bound: all "same limiter"; the
    # different-limiters split has no rows and falls back to all
    assert fits["same_limiter"].n == 4 and fits["different_limiters"].basis == "all"
    lo, hi = speedup_interval(1.5, True, fits)
    assert math.sqrt(lo * hi) == pytest.approx(1.5 / math.exp(logs.mean()))  # the model's bias taken out
    assert profile_fits(profile) is fits  # cached per profile and model


def test_the_fit_is_the_one_the_interval_table_makes_of_the_same_rows():
    profile = _profile()
    direct = fit_by_limiter(profile_pair_errors(profile))
    assert profile_fits(profile) == direct
    assert profile_fits(profile) == version_fits("v1", measured=profile_pair_errors(profile))


def test_the_model_runs_the_variants_as_the_profiles_device_at_its_clock_with_its_constants(monkeypatch):
    from ptxsim.model import microbench

    profile = _profile(clock_hz=1.2e9)
    profile = DeviceProfile("H200 SXM", {"dram_achievable_fraction": 0.8}, under_load_clock_hz=1.2e9,
                            pairs=profile.pairs)
    seen, real = [], microbench.run_on_sim

    def spy(bench, device, constants=None, static_facts=None, model="v1"):
        seen.append((bench.name, device, constants, model))
        return real(bench, device, constants, static_facts, model=model)
    monkeypatch.setattr(microbench, "run_on_sim", spy)
    profile_pair_rows(profile, model="v1")
    assert {name for name, *_ in seen} == {"ilp_fma_1", "ilp_fma_4", "ilp_iadd_1", "ilp_iadd_8", "stream_add",
                                           "stream_triad", "stream_copy"}  # each variant once
    assert all(d.name == "H200 SXM" and d.under_load_clock_hz == 1.2e9 for _, d, _, _ in seen)
    assert all(c == {"dram_achievable_fraction": 0.8} for *_, c, _ in seen)


def test_fewer_than_two_measured_pairs_is_an_error_naming_the_device():
    with pytest.raises(ProfileError, match="H200 SXM has 1 measured pair"):
        profile_fits(_profile(errors=(1.0,), names=("ilp_fma_1_vs_4",)))


def test_an_unknown_or_bad_measured_pair_is_refused():
    spec = DeviceProfile("H200 SXM", {}).spec()
    with pytest.raises(ModelArgumentError, match="'warp_drive' is not a paired variant"):
        measured_pair_rows(spec, {"warp_drive": 1.0})
    with pytest.raises(ModelArgumentError, match="has ratio 0.0"):
        measured_pair_rows(spec, {"ilp_fma_1_vs_4": 0.0})


def test_run_fits_prefer_the_profiles_measured_pairs_and_say_so():
    profile = _profile()
    fits, basis = run_fits(profile, "v1", name="h200.json")
    assert fits is profile_fits(profile)
    assert basis == f"4 measured pairs of profile h200.json (sha256 {profile_digest(profile)})"
    assert run_fits(None, "v1") == (version_fits("v1"), PUBLISHED_BASIS)
    assert run_fits(None, "v2")[0] == version_fits("v2") != version_fits("v1")
    one = _profile(errors=(1.0,), names=("ilp_fma_1_vs_4",))
    assert run_fits(one, "v1") == (version_fits("v1"), PUBLISHED_BASIS)  # one pair has no spread: the published rows


def test_the_digest_follows_the_profiles_content():
    a, b = _profile(), _profile(errors=(1.10, 0.95, 1.20, 1.06))
    assert profile_digest(a) == profile_digest(_profile()) != profile_digest(b)
    assert len(profile_digest(a)) == 12
