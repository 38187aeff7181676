"""Device profiles: the model's constants fitted to microbenchmarks measured on one GPU (`ptxmoe calibrate`), the
SM clock measured under load, and measured paired variants, saved as JSON and loaded with `--device-profile FILE`.

A profile is (profile_schema.py checks every field and names the bad one)
    {"schema": "ptxmoe-device-profile/2", "device": "H100 SXM", "measured": {bench: quantity},
     "constants": {MODEL_CONSTANTS key: value}, "fitted_from": {constant: bench},
     "clock": {"under_load_hz": 1.62e9, "method": ..., "samples": n, ...} or null,
     "pairs": {paired.GPU_PAIRS name: {"ratio", "ci95": [lo, hi], "samples", "numerator", "denominator"}}}
Each constant is fitted from one measured quantity in closed form (FITS below), so a profile says which measurement
set which number. Constants without a measurement keep their defaults (they are not written). With a measured clock,
`DeviceProfile.spec()` is the device with that clock as its under-load clock: every bound of the model uses it (and
the fractions are fitted against peaks at it); without one, the documented default (devices.py [FM], 1.6 GHz).
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ptxsim.model.profile_schema import SCHEMA, ProfileError, check_document

__all__ = ["SCHEMA", "DeviceProfile", "MeasuredPair", "ProfileError", "fit", "load_profile", "save_profile"]


@dataclass(frozen=True)
class MeasuredPair:
    """A paired variant timed on the GPU: the ratio of the two variants' quantities (the median of each side's timed
    launches) and its 95% percentile-bootstrap interval."""

    name: str
    ratio: float
    ci95: tuple[float, float]
    samples: int

    def to_json(self) -> dict:
        from ptxsim.model.paired import GPU_PAIRS

        numerator, denominator = GPU_PAIRS[self.name]
        return {"ratio": self.ratio, "ci95": list(self.ci95), "samples": self.samples, "numerator": numerator,
                "denominator": denominator}


@dataclass(frozen=True)
class DeviceProfile:
    device: str
    constants: Mapping[str, float]
    measured: Mapping[str, float] = field(default_factory=dict)
    fitted_from: Mapping[str, str] = field(default_factory=dict)
    under_load_clock_hz: float | None = None       # measured; None: the device's documented default
    clock: Mapping = field(default_factory=dict)   # how the clock was measured ({under_load_hz, method, samples...})
    pairs: Mapping[str, MeasuredPair] = field(default_factory=dict)
    ratios: Mapping = field(default_factory=dict)  # harness/calibrate_pairs.py's GPU-only pairs (carried along)

    def spec(self):
        """The DeviceSpec the model runs with: the device, at the measured under-load clock when there is one."""
        from ptxsim.model.devices import get_device

        base = get_device(self.device)
        if self.under_load_clock_hz is None:
            return base
        return dataclasses.replace(base, under_load_clock_hz=float(self.under_load_clock_hz))

    def measured_ratios(self) -> dict[str, float]:
        """{pair: measured ratio}, what paired.measured_pair_rows takes."""
        return {name: pair.ratio for name, pair in self.pairs.items()}

    def to_json(self) -> dict:
        clock = None if self.under_load_clock_hz is None else {**self.clock, "under_load_hz": self.under_load_clock_hz}
        doc = {"schema": SCHEMA, "device": self.device, "constants": dict(self.constants),
               "measured": dict(self.measured), "fitted_from": dict(self.fitted_from), "clock": clock,
               "pairs": {name: pair.to_json() for name, pair in self.pairs.items()}}
        if self.ratios:
            doc["ratios"] = dict(self.ratios)
        return doc


def _peak(spec, what: str) -> float:
    """The peak the model scales by each fraction: the per-clock rates at the model's one clock (the under-load
    clock), so a fitted fraction reproduces the measured rate (not the datasheet's 1830 MHz tensor peak)."""
    tensor = spec.tensor_bf16_flop_per_clk_per_sm * spec.sm_count * spec.under_load_clock_hz
    return {"dram": spec.memory_bandwidth, "l2": spec.l2_bandwidth, "shared": spec.shared_bandwidth,
            "bf16": tensor}[what]


# constant -> (bench, f(measured quantity in the bench's unit, DeviceSpec) -> constant value)
FITS = {
    "dram_achievable_fraction": ("dram_read", lambda q, s: q * 1e9 / _peak(s, "dram")),
    "l2_achievable_fraction": ("l2_copy", lambda q, s: q * 1e9 / _peak(s, "l2")),
    "shared_achievable_fraction": ("shared_bw", lambda q, s: q * 1e12 / _peak(s, "shared")),
    "sfu_achievable_fraction": ("sfu_sin", lambda q, s: s.warp_size * s.sub_partitions_per_sm / s.sfu_lanes_per_sm / q),
    "mma_sync_fraction_of_peak": ("mma_bf16", lambda q, s: q * 1e12 / _peak(s, "bf16")),
    "wgmma_fraction_of_peak": ("wgmma_bf16", lambda q, s: q * 1e12 / _peak(s, "bf16")),
    "l1_latency_s": ("chase_l1", lambda q, s: q * 1e-9),
    "l2_latency_s": ("chase_l2", lambda q, s: q * 1e-9),
    "dram_latency_s": ("chase_dram", lambda q, s: q * 1e-9),
    "launch_overhead_s": ("launch_gap", lambda q, s: q * 1e-6),
}


def fit(device: str, measured: Mapping[str, float], clock: Mapping | None = None,
        pairs: Mapping[str, MeasuredPair] | None = None) -> DeviceProfile:
    """Fit a profile from measured quantities ({bench name: quantity in the bench's unit}), with the measured clock
    ({"under_load_hz", "method", "samples", ...}: the fractions are then fitted against peaks at that clock) and the
    measured pairs, when given."""
    from ptxsim.model.costs import MODEL_CONSTANTS
    from ptxsim.model.microbench import BENCHES
    from ptxsim.model.profile_schema import check_clock, check_pair

    where = f"device profile for {device}"
    clock_hz = check_clock(dict(clock) if clock is not None else None, where)
    for name, pair in (pairs or {}).items():
        check_pair(name, {"ratio": pair.ratio, "ci95": list(pair.ci95), "samples": pair.samples}, where)
    spec = DeviceProfile(device, {}, under_load_clock_hz=clock_hz).spec()
    clean = {}
    for name, value in measured.items():
        if name not in BENCHES:
            raise ProfileError(f"measurement {name!r} is not a microbenchmark; expected one of {', '.join(BENCHES)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ProfileError(f"measurement {name!r} = {value!r}; expected a positive number in "
                               f"{BENCHES[name].unit}")
        clean[name] = float(value)
    constants, fitted = {}, {}
    for key, (bench, formula) in FITS.items():
        if bench in clean and key in MODEL_CONSTANTS:
            constants[key] = float(formula(clean[bench], spec))
            fitted[key] = bench
    return DeviceProfile(spec.name, constants, clean, fitted, clock_hz, dict(clock or {}), dict(pairs or {}))


def save_profile(profile: DeviceProfile, path: str | Path) -> None:
    """Write atomically (temporary file, then rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(profile.to_json(), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def load_profile(path: str | Path) -> DeviceProfile:
    """Read and check a profile written by save_profile (schema 2, or 1: no clock, no pairs).

    Raises:
        ProfileError: unreadable, not JSON, another schema, or a field that is not what profile_schema expects (the
            message names the file, the field and what was expected).
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise ProfileError(f"device profile {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ProfileError(f"device profile {path}: not JSON ({exc})") from None
    got = check_document(doc, f"device profile {path}")
    pairs = {name: MeasuredPair(name, ratio, ci, n) for name, (ratio, ci, n) in got["pairs"].items()}
    return DeviceProfile(got["device"], got["constants"], got["measured"], got["fitted_from"], got["clock_hz"],
                         got["clock"], pairs, got["ratios"])
