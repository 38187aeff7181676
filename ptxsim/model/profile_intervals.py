"""95% prediction intervals from a device profile's MEASURED paired variants, instead of the published ones.

`ptxmoe calibrate` times the paired validation rows' kernels (paired.GPU_PAIRS) on the GPU and writes each ratio
into the profile ("pairs"). Here the model runs the same two variants on ptxsim, as that GPU (the profile's device at
its measured under-load clock, with its fitted constants), and each pair becomes a row of the interval table's kind
(interval_table.pair_error: modelled / measured speedup, faster over slower, source "measured"), fitted by
interval_table.version_fits exactly as the published rows are: bias b and spread s, split by "same limiter" and
"different limiters", t quantile, sqrt(1 + 1/n). So with a profile, the interval on a modelled ratio says how well
the model reproduced ratios on THAT GPU, with the conditions (clock, driver, part) of the run.

    from ptxsim.model.profile import load_profile
    from ptxsim.model.profile_intervals import run_fits
    fits, basis = run_fits(load_profile(path), "v1", static_facts=harness.static.analyse_ptx)
    lo, hi = interval_table.speedup_interval(modelled_speedup, same_limiter, fits)

`run_fits(None, version)` (no profile, or one with fewer than 2 pairs) is the committed table's fits of the version,
at no cost. Running the variants on ptxsim takes about 20-30 s on two cores for all 19 pairs, so profile_fits is
cached in this process per (profile content, model version, static facts).
"""
from __future__ import annotations

import hashlib
import json

from ptxsim.model.intervals import LogRatioFit
from ptxsim.model.profile_schema import ProfileError

PUBLISHED_BASIS = "published paired rows"
MIN_PAIRS = 2   # a spread needs two rows
_FITS_CACHE: dict[tuple, dict[str, LogRatioFit]] = {}


def profile_digest(profile) -> str:
    """The first 12 hex digits of the SHA-256 of the profile's canonical JSON: which profile a run's intervals
    came from, and what --resume checks."""
    return hashlib.sha256(json.dumps(profile.to_json(), sort_keys=True).encode()).hexdigest()[:12]


def profile_pair_rows(profile, static_facts=None, model: str = "v1") -> list:
    """paired.PairRow for each measured pair of `profile` (a profile.DeviceProfile): the ratio the model gives for
    the two variants on profile.spec() with the profile's constants, beside the ratio measured on the GPU."""
    from ptxsim.model.paired import measured_pair_rows

    return measured_pair_rows(profile.spec(), profile.measured_ratios(), dict(profile.constants) or None,
                              static_facts, model)


def profile_pair_errors(profile, static_facts=None, model: str = "v1") -> list:
    """interval_table.PairError of each measured pair of `profile` (speedup orientation, source "measured")."""
    from ptxsim.model.interval_table import pair_error

    return [pair_error(row, "measured") for row in profile_pair_rows(profile, static_facts, model)]


def profile_fits(profile, static_facts=None, model: str = "v1") -> dict[str, LogRatioFit]:
    """The fits ({"all", "same_limiter", "different_limiters"} -> LogRatioFit) of the profile's measured pairs
    alone: interval_table.version_fits(model, measured=profile_pair_errors(...)). Cached per profile and model.

    Raises:
        ProfileError: the profile has fewer than 2 measured pairs (a spread needs 2), naming the device.
    """
    from ptxsim.model.interval_table import version_fits

    if len(profile.pairs) < MIN_PAIRS:
        raise ProfileError(f"device profile for {profile.device} has {len(profile.pairs)} measured pair(s); "
                           "intervals from measured pairs need at least 2 (run `ptxmoe calibrate` without --no-pairs)")
    key = (json.dumps(profile.to_json(), sort_keys=True), model, id(static_facts))
    if key not in _FITS_CACHE:
        _FITS_CACHE[key] = version_fits(model, measured=profile_pair_errors(profile, static_facts, model))
    return _FITS_CACHE[key]


def run_fits(profile, model: str, static_facts=None, name: str | None = None) -> tuple[dict[str, LogRatioFit], str]:
    """(fits, basis) of a run's modelled verdicts: the measured pairs' fits of `profile` (a DeviceProfile, or None)
    when it has at least 2 measured pairs, else the committed fits of model version `model`. `basis` says which, for
    run.json and every place an interval is shown: "published paired rows", or "4 measured pairs of profile <name>
    (sha256 <digest>)" (`name`: the profile's file name; default its device)."""
    from ptxsim.model.interval_table import version_fits

    if profile is None or len(profile.pairs) < MIN_PAIRS:
        return version_fits(model), PUBLISHED_BASIS
    return (profile_fits(profile, static_facts, model),
            f"{len(profile.pairs)} measured pairs of profile {name or profile.device} "
            f"(sha256 {profile_digest(profile)})")
