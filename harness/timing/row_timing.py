"""How a row is timed, as one value handed to the backend (Backend.time_row): the model device and its calibrated
profile for modelled times, the GPU sampling settings and the L2 size to fall back on for measured ones."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.timing.gpu import GpuTimingSettings

DEFAULT_L2_BYTES = 50 * 2**20  # an H100/H200's L2, when neither the driver nor the device spec says


@dataclass(frozen=True)
class RowTiming:
    """`model_device`: the GPU the ptxsim timing model models; `device_profile`: a `ptxmoe calibrate` profile file
    whose constants replace the model's (None: the model's own); `timing_model`: v1 or v2; `gpu`: warm-up, stopping
    rule, budget, rotation; `l2_fallback_bytes`: the L2 size when the driver cannot say (the device spec's)."""

    model_device: str = "H200 SXM"
    device_profile: str | None = None
    timing_model: str = "v1"  # --timing-model: the ptxsim timing model version (harness.timing.sim.MODEL_VERSIONS)
    gpu: GpuTimingSettings = field(default_factory=GpuTimingSettings)
    l2_fallback_bytes: int = DEFAULT_L2_BYTES


@dataclass(frozen=True)
class RowTimes:
    """What timing one row gives: the run.json `timing` record, its time in µs (None without one) and, on a
    simulating backend, the simulator's counters (`sim_counters`)."""

    timing: dict
    time_us: float | None
    sim_counters: dict | None = None
