"""Device profiles: the model's constants fitted to microbenchmarks measured on one GPU (`ptxmoe calibrate`), saved
as JSON and loaded with `--device-profile FILE`.

A profile is
    {"schema": "ptxmoe-device-profile/1", "device": "H100 SXM", "measured": {bench: quantity},
     "constants": {MODEL_CONSTANTS key: value}, "fitted_from": {constant: bench}}
Each constant is fitted from one measured quantity in closed form (FITS below), so a profile says which measurement
set which number. Constants without a measurement keep their defaults (they are not written).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ptxsim.model.errors import ModelError

SCHEMA = "ptxmoe-device-profile/1"


class ProfileError(ModelError, ValueError):
    """A device profile or measurement file that cannot be used (unreadable, wrong schema, bad value)."""


@dataclass(frozen=True)
class DeviceProfile:
    device: str
    constants: Mapping[str, float]
    measured: Mapping[str, float] = field(default_factory=dict)
    fitted_from: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "device": self.device, "constants": dict(self.constants),
                "measured": dict(self.measured), "fitted_from": dict(self.fitted_from)}


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


def fit(device: str, measured: Mapping[str, float]) -> DeviceProfile:
    """Fit a profile from measured quantities ({bench name: quantity in the bench's unit})."""
    from ptxsim.model.costs import MODEL_CONSTANTS
    from ptxsim.model.devices import get_device
    from ptxsim.model.microbench import BENCHES

    spec = get_device(device)
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
    return DeviceProfile(spec.name, constants, clean, fitted)


def save_profile(profile: DeviceProfile, path: str | Path) -> None:
    """Write atomically (temporary file, then rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(profile.to_json(), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def load_profile(path: str | Path) -> DeviceProfile:
    """Read and check a profile written by save_profile.

    Raises:
        ProfileError: unreadable, not JSON, another schema, an unknown constant or a non-positive value.
    """
    from ptxsim.model.costs import MODEL_CONSTANTS
    from ptxsim.model.devices import get_device

    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise ProfileError(f"device profile {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ProfileError(f"device profile {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ProfileError(f"device profile {path}: schema {got!r}; expected {SCHEMA!r}")
    constants = doc.get("constants")
    if not isinstance(constants, dict):
        raise ProfileError(f"device profile {path}: 'constants' must be an object, got {constants!r}")
    for key, value in constants.items():
        if key not in MODEL_CONSTANTS:
            raise ProfileError(f"device profile {path}: unknown constant {key!r}; known: {', '.join(MODEL_CONSTANTS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ProfileError(f"device profile {path}: constant {key!r} = {value!r}; expected a positive number")
    device = get_device(doc.get("device", "")).name
    return DeviceProfile(device, {k: float(v) for k, v in constants.items()}, doc.get("measured") or {},
                         doc.get("fitted_from") or {})
