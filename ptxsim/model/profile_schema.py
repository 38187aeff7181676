"""The device profile document (`ptxmoe calibrate`'s JSON), checked field by field: every error names the file, the
field (a dotted path such as `pairs.ilp_fma_1_vs_4.ci95`), the value found and what was expected.

Schema "ptxmoe-device-profile/2" (version 1 profiles, which have no "clock" and no "pairs", are still read):

    schema        "ptxmoe-device-profile/2"
    device        a modelled device name (devices.get_device)
    constants     {MODEL_CONSTANTS key: number > 0}           fitted from "measured" (profile.FITS)
    measured      {microbenchmark: number > 0}                 what the constants were fitted from
    fitted_from   {constant: microbenchmark}
    clock         null, or {"under_load_hz": 1e8..5e9, "method": str, "samples": int >= 1, ...}
                  the SM clock measured under a sustained tensor load: the one clock of every bound of the model
    pairs         {paired.GPU_PAIRS name: {"ratio": number > 0, "ci95": [lo, hi] with 0 < lo <= ratio <= hi,
                                           "samples": int >= 1, "numerator": variant, "denominator": variant, ...}}
                  measured paired variants (ratio of the two variants' quantities, as the paired rows)
    ratios        {...} (optional) harness/calibrate_pairs.py's GPU-only pairs, carried, not used by the model
"""
from __future__ import annotations

import math

from ptxsim.model.errors import ModelError

SCHEMA = "ptxmoe-device-profile/2"
READABLE_SCHEMAS = ("ptxmoe-device-profile/1", SCHEMA)
# A measured under-load clock outside this range is a unit mistake (MHz or GHz written as hertz), not a GPU.
CLOCK_RANGE_HZ = (1e8, 5e9)


class ProfileError(ModelError, ValueError):
    """A device profile or measurement file that cannot be used (unreadable, wrong schema, bad value)."""


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _count(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _bad(where: str, field: str, value, expected: str) -> ProfileError:
    return ProfileError(f"{where}: field {field!r} = {value!r}; expected {expected}")


def check_clock(clock, where: str) -> float | None:
    """The under-load clock in Hz of a profile's "clock" field (None: not measured)."""
    if clock is None:
        return None
    if not isinstance(clock, dict):
        raise _bad(where, "clock", clock, "an object {under_load_hz, method, samples} or null")
    hz = clock.get("under_load_hz")
    low, high = CLOCK_RANGE_HZ
    if not _positive(hz) or not low <= hz <= high:
        raise _bad(where, "clock.under_load_hz", hz, f"hertz between {low:.0e} and {high:.0e} (1.6 GHz is 1.6e9)")
    if not isinstance(clock.get("method"), str) or not clock["method"]:
        raise _bad(where, "clock.method", clock.get("method"), "a non-empty string saying how it was measured")
    if not _count(clock.get("samples")):
        raise _bad(where, "clock.samples", clock.get("samples"), "an integer >= 1 (launches the clock is a median of)")
    return float(hz)


def check_pair(name: str, entry, where: str) -> tuple[float, tuple[float, float], int]:
    """(ratio, (lo, hi), samples) of one measured pair of a profile's "pairs"."""
    from ptxsim.model.paired import GPU_PAIRS

    field = f"pairs.{name}"
    if name not in GPU_PAIRS:
        raise ProfileError(f"{where}: field {field!r}: unknown paired variant {name!r}; expected one of "
                           f"{', '.join(GPU_PAIRS)}")
    if not isinstance(entry, dict):
        raise _bad(where, field, entry, "an object {ratio, ci95, samples, numerator, denominator}")
    ratio, ci, samples = entry.get("ratio"), entry.get("ci95"), entry.get("samples")
    if not _positive(ratio):
        raise _bad(where, f"{field}.ratio", ratio, "a finite number > 0 (numerator quantity / denominator quantity)")
    if not (isinstance(ci, list) and len(ci) == 2 and all(_positive(x) for x in ci) and ci[0] <= ratio <= ci[1]):
        raise _bad(where, f"{field}.ci95", ci, f"[lo, hi] with 0 < lo <= ratio ({ratio!r}) <= hi")
    if not _count(samples):
        raise _bad(where, f"{field}.samples", samples, "an integer >= 1 (timed launches of each side)")
    for side, variant in zip(("numerator", "denominator"), GPU_PAIRS[name], strict=True):
        if entry.get(side, variant) != variant:
            raise _bad(where, f"{field}.{side}", entry.get(side), f"{variant!r} (the variant this pair runs)")
    return float(ratio), (float(ci[0]), float(ci[1])), int(samples)


def check_document(doc, where: str) -> dict:
    """The checked fields of a profile document: {device, constants, measured, fitted_from, clock_hz, clock, pairs,
    ratios}; ProfileError naming the first bad field otherwise."""
    from ptxsim.model.costs import MODEL_CONSTANTS
    from ptxsim.model.devices import get_device
    from ptxsim.model.errors import UnknownDeviceError

    if not isinstance(doc, dict) or doc.get("schema") not in READABLE_SCHEMAS:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ProfileError(f"{where}: schema {got!r}; expected {SCHEMA!r} (or {READABLE_SCHEMAS[0]!r})")
    try:
        device = get_device(doc.get("device", "")).name
    except UnknownDeviceError as exc:
        raise ProfileError(f"{where}: field 'device': {exc}") from None
    constants = doc.get("constants")
    if not isinstance(constants, dict):
        raise _bad(where, "constants", constants, "an object of model constant -> number")
    for key, value in constants.items():
        if key not in MODEL_CONSTANTS:
            raise ProfileError(f"{where}: field 'constants.{key}': unknown constant {key!r}; known: "
                               f"{', '.join(MODEL_CONSTANTS)}")
        if not _positive(value):
            raise _bad(where, f"constants.{key}", value, "a finite number > 0")
    # NOTE: absent or null is empty; anything else that is not an object (a list, even an empty one) is refused
    measured, fitted, ratios, pairs = ({} if doc.get(k) is None else doc[k]
                                       for k in ("measured", "fitted_from", "ratios", "pairs"))
    for field, value in (("measured", measured), ("fitted_from", fitted), ("ratios", ratios)):
        if not isinstance(value, dict):
            raise _bad(where, field, value, "an object")
    if not isinstance(pairs, dict):
        raise _bad(where, "pairs", pairs, "an object of paired variant -> {ratio, ci95, samples}")
    checked = {name: check_pair(name, entry, where) for name, entry in pairs.items()}
    clock = doc.get("clock")
    return {"device": device, "constants": {k: float(v) for k, v in constants.items()}, "measured": measured,
            "fitted_from": fitted, "clock_hz": check_clock(clock, where), "clock": dict(clock or {}),
            "pairs": checked, "ratios": ratios}
