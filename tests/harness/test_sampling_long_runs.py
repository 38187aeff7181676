"""harness/sampling.py's long runs (_head_and_body) against the whole run: a GEMM shape whose groups are long runs of
one expert, sampled as each chosen run's first group and the next, models the same time and DRAM bytes as every CTA
(benchmarks/gemm_table.py relies on it at DeepGEMM's shapes; checked there at 2x1024x4096x1024: 0.9998x, 0.9972x)."""
from dataclasses import replace

import numpy as np
import pytest

from contract.kernels import KERNELS, POISON_BYTE
from contract.presets import get_preset
from harness.backends.sim import SimBackend
from harness.sampling import parse_sample
from harness.timing.sim import model_row

# two runs of 8 routing blocks (BM = 64): 4 token tiles of 128 rows each. NOTE: at 2x512x256x256 (1 us, launch-bound,
# 16 items on 132 CTAs) rung 7's sampled time was 0.88x the whole run's (DRAM bytes equal): the launch-bound model's
# fixed costs do not extrapolate from two phases of 2 items; from K = 512 (and at every table shape) within 0.2%
SHAPE = "contiguous-2x512x256x512"


def _run(impl: str, policy) -> tuple[float, float, float]:
    """(modelled us, DRAM bytes, least simulated fraction) of one implementation's row under `policy`."""
    preset = get_preset(SHAPE)
    spec = KERNELS["grouped_gemm_fp8"]
    inputs = spec.checked_inputs(preset, "balanced", 28)
    sim = SimBackend(sample=policy)
    args = {name: sim.to_device(np.ascontiguousarray(a)) for name, a in inputs.items()}
    for o in spec.output_specs(preset, inputs):
        args[o.name] = sim.empty(o.shape, o.dtype, fill_byte=POISON_BYTE)
    if impl == "ptx":
        from ptx_impl.grouped_gemm_fp8 import run

        # rung 8, the highest rung whose windows are token tiles: from rung 9 on a window is a whole raster group,
        # which at this shape is every block of a run, so nothing smaller than the run could be sampled
        run(sim, args, preset, rung=8)
    else:
        from harness.implementations import implementation_table

        implementation_table(impl)[0]["grouped_gemm_fp8"](sim, args, preset)
    model = model_row(sim.records, sim.launched_sources(), "h800")
    dram = sum(float(r.stats.metrics["dram__bytes_read.sum"]) for r in sim.records)
    return model["modelled_us"], dram, min(r.stats.sample_fraction for r in sim.records)


@pytest.mark.parametrize("impl", ["triton", "ptx"])  # grid rows (sample_ranges); rung 8's items (phases)
def test_head_and_body_of_long_runs_model_the_whole_runs_time_and_dram_bytes(impl):
    preset = get_preset(SHAPE)
    sampled_policy = replace(parse_sample("auto@0").for_preset(preset))
    sampled = _run(impl, sampled_policy)
    whole = _run(impl, parse_sample("off").for_preset(preset))
    assert sampled[2] < 0.6  # it did sample: 2 of 8 blocks per run (grid rows), 2 of 4 token tiles (items)
    assert whole[2] == 1.0
    assert sampled[0] == pytest.approx(whole[0], rel=0.02)
    assert sampled[1] == pytest.approx(whole[1], rel=0.02)
