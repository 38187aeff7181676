"""PTX rungs 4 and 5 of the FP8 grouped GEMM on a real GPU (sm_90a: wgmma, TMA, setmaxnreg, clusters): tiny and
DeepSeek-V3's decode sizes (BM = 16, Kd = 7168: 56 promotions per output), and ragged presets at BM = 32 and 64 (the
32- and 64-token tiles; prefill's float64 reference is too slow for a test), every skew, on the full persistent grid and
on a few SMs; the two rungs give bit-identical outputs (same wgmma order, same promotion).

Skipped with the reason when no CUDA GPU is visible.
"""
import functools

import numpy as np
import pytest

from contract.presets import SKEWS
from harness.verify import run_and_check, run_kernel
from ptx_impl import gemm_fp8_r4, gemm_fp8_r5
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM

pytestmark = pytest.mark.gpu
RUNGS = {4: gemm_fp8_r4.run, 5: gemm_fp8_r5.run}


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode", "ragged-bm32", "ragged-bm64"])
@pytest.mark.parametrize("rung", sorted(RUNGS))
def test_rung_on_gpu(backend, rung, preset, variant, seed):
    preset = RAGGED_BM[int(preset[-2:])] if preset.startswith("ragged") else preset
    for i, skew in enumerate(SKEWS):
        for sms in (None, 6):
            run = RUNGS[rung] if sms is None else functools.partial(RUNGS[rung], sms=sms)
            result = run_and_check(run, backend, "grouped_gemm_fp8", preset, skew, seed + i, variant=variant)
            where = f"rung {rung} {getattr(preset, 'name', preset)} {skew} {variant} sms={sms} seed={seed + i}"
            assert result.ok, f"{where}: {result.message}"


@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
def test_rungs_4_and_5_agree_bitwise_on_gpu(backend, preset, seed):
    outs = [run_kernel(RUNGS[r], backend, "grouped_gemm_fp8", preset, "imbalanced", seed, variant="up")[1]["c"]
            for r in (4, 5)]
    assert np.array_equal(outs[0].view(np.uint16), outs[1].view(np.uint16))
