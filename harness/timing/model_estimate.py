"""The timing model's estimate recorded next to a GPU measurement: the same implementation, preset and inputs run
once on ptxsim under the sim rows' own sampling policy (`--sample`, harness.sampling: big GEMM launches simulate
whole waves of routing blocks, everything else runs every CTA), then `harness.timing.sim.model_row` on the GPU's
DeviceSpec, so a GPU row's estimate is the figure a sim row of the same cell reports. Honest, not free:
- rows whose inputs exceed MAX_INPUT_BYTES (the dsv3 GEMM weights) are skipped, with the reason: a GPU session's
  device time is short, and the sim rows (`--backend sim`) give those estimates on any machine;
- a launch that fails is recorded as the row's `error`.
`sample_ctas=N` (tests, old callers) instead samples about N CTAs of every launch, scattered over the grid: cheaper,
but its extrapolated DRAM bytes on GEMMs can be several times the minimum (issue #13).
"""
from __future__ import annotations

import time

import numpy as np

MAX_INPUT_BYTES = 512 * 2**20


def model_estimate(run, inputs: dict, preset, run_params: dict, spec, device: str, sample: str | None = "auto",
                   sample_ctas: int | None = None, max_input_bytes: int = MAX_INPUT_BYTES,
                   profile: str | None = None) -> dict:
    """{basis: "modelled", device, sample (the policy), sample_ctas, modelled_us, launches (each with estimate +
    limiter), limiter (of the row's slowest launch), sim_wall_s, skipped, error}; never raises for a failing
    simulation. `sample`: the --sample policy text (auto, off, N waves); `sample_ctas` overrides it; `profile`: the
    --device-profile file whose constants the model uses (None: its own)."""
    out: dict = {"basis": "modelled", "device": device,
                 "sample": None if sample_ctas is not None else (sample or "auto"),
                 "sample_ctas": None if sample_ctas is None else int(sample_ctas), "modelled_us": None,
                 "launches": [], "limiter": None, "sim_wall_s": None, "skipped": None, "error": None}
    input_bytes = sum(int(np.asarray(a).nbytes) for a in inputs.values())
    if input_bytes > max_input_bytes:
        out["skipped"] = (f"inputs are {input_bytes / 1e9:.2f} GB, over the {max_input_bytes / 1e9:.2f} GB a "
                          f"sampled ptxsim run may copy; no estimate for this row")
        return out
    from contract.kernels import POISON_BYTE
    from harness.backends.sim import SimBackend
    from harness.timing.sim import model_row

    t0 = time.perf_counter()
    try:
        if sample_ctas is not None:
            sim = SimBackend(sample_ctas=sample_ctas)
        else:
            from harness.sampling import parse_sample

            sim = SimBackend(sample=parse_sample(sample).for_preset(preset))
        args = {name: sim.to_device(np.ascontiguousarray(arr)) for name, arr in inputs.items()}
        for o in spec.output_specs(preset, inputs):
            args[o.name] = sim.empty(o.shape, o.dtype, fill_byte=POISON_BYTE)
        records = list(run(sim, args, preset, **run_params) or sim.records)
    except Exception as exc:  # noqa: BLE001 - the estimate is an extra on a measured row, never fatal to it
        out["error"] = f"sampled ptxsim run failed: {type(exc).__name__}: {str(exc)[:500]}"
        out["sim_wall_s"] = time.perf_counter() - t0
        return out
    model = model_row(records, sim.launched_sources(), device, profile)
    out.update(modelled_us=model["modelled_us"], launches=model["launches"], error=model["error"],
               sim_wall_s=time.perf_counter() - t0)
    timed = [launch for launch in model["launches"] if launch.get("modelled_s") is not None and launch["estimate"]]
    if timed:
        out["limiter"] = max(timed, key=lambda launch: launch["modelled_s"])["estimate"].get("limiter")
    return out
