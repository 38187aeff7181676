"""95% prediction intervals from a device profile's MEASURED paired variants, instead of the published ones.

`ptxmoe calibrate` times the paired validation rows' kernels (paired.GPU_PAIRS) on the GPU and writes each ratio
into the profile ("pairs"). Here the model runs the same two variants on ptxsim, as that GPU (the profile's device at
its measured under-load clock, with its fitted constants), and each pair's error ratio, modelled / measured, goes into
intervals.fit_by_limiter exactly as the published rows' do: bias b and spread s of ln(modelled / measured), split by
"same limiter" and "different limiters", t quantile, sqrt(1 + 1/n). So with a profile, the interval on a modelled
ratio says how well the model reproduced ratios on THAT GPU, with the conditions (clock, driver, part) of the run.

    from ptxsim.model.profile import load_profile
    from ptxsim.model.profile_intervals import profile_fits
    from ptxsim.model.intervals import ratio_interval
    fits = profile_fits(load_profile(path), static_facts=harness.static.analyse_ptx, model="v1")
    lo, hi = ratio_interval(modelled_ratio, same_limiter, fits)

or, for a run that may or may not have a profile, `fits, basis = fits_for(profile_or_None, published_fits, ...)`.

Running the variants on ptxsim takes about 20-30 s on two cores for all 19 pairs (cached per profile and model).
"""
from __future__ import annotations

import json

from ptxsim.model.intervals import CONFIDENCE, LogRatioFit, fit_by_limiter
from ptxsim.model.profile_schema import ProfileError

_FITS_CACHE: dict[tuple, dict[str, LogRatioFit]] = {}


def profile_pair_rows(profile, static_facts=None, model: str = "v1") -> list:
    """paired.PairRow for each measured pair of `profile` (a profile.DeviceProfile): the ratio the model gives for
    the two variants on profile.spec() with the profile's constants, beside the ratio measured on the GPU."""
    from ptxsim.model.paired import measured_pair_rows

    return measured_pair_rows(profile.spec(), profile.measured_ratios(), dict(profile.constants) or None,
                              static_facts, model)


def profile_fits(profile, static_facts=None, model: str = "v1",
                 confidence: float = CONFIDENCE) -> dict[str, LogRatioFit]:
    """intervals.fit_by_limiter on the profile's measured pairs: {"all", "same_limiter", "different_limiters"} ->
    LogRatioFit (bias, spread, t, half-width; `basis` says which rows a split was fitted on).

    Raises:
        ProfileError: the profile has fewer than 2 measured pairs (a spread needs 2), naming the device.
    """
    if len(profile.pairs) < 2:
        raise ProfileError(f"device profile for {profile.device} has {len(profile.pairs)} measured pair(s); "
                           "intervals from measured pairs need at least 2 (run `ptxmoe calibrate` without --no-pairs)")
    key = (json.dumps(profile.to_json(), sort_keys=True), model, id(static_facts), confidence)
    if key not in _FITS_CACHE:
        _FITS_CACHE[key] = fit_by_limiter(profile_pair_rows(profile, static_facts, model), confidence)
    return _FITS_CACHE[key]


def fits_for(profile, published: dict[str, LogRatioFit], static_facts=None,
             model: str = "v1") -> tuple[dict[str, LogRatioFit], str]:
    """(fits, basis) for a run: the measured pairs' fits of `profile` (a DeviceProfile, or None) when it has at
    least 2 measured pairs, else `published` (intervals.fit_by_limiter of the published paired rows, as the caller
    has them). `basis` says which, for run.json and the dashboard: "measured pairs on <device> (device profile)" or
    "published pairs"."""
    if profile is not None and len(profile.pairs) >= 2:
        return (profile_fits(profile, static_facts, model),
                f"{len(profile.pairs)} measured pairs on {profile.device} (device profile)")
    return published, "published pairs"
