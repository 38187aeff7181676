"""The FP8 grouped GEMM of every path (numba, cpp, triton, ptx) on a real GPU (sm_89+ for PTX rung 1's e4m3
mma.sync): tiny and DeepSeek-V3's decode sizes (Kd = 7168: 56 promotions per output, where the 128-wide interval
matters), every skew.

Skipped with the reason when no CUDA GPU is visible.
"""
import importlib

import pytest

from contract.presets import SKEWS
from harness.verify import run_and_check

pytestmark = pytest.mark.gpu
PACKAGES = {"numba": "cuda_impl", "cpp": "cpp_impl", "triton": "triton_impl", "ptx": "ptx_impl"}


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
@pytest.mark.parametrize("impl", sorted(PACKAGES))
def test_grouped_gemm_fp8_on_gpu(backend, impl, preset, variant, seed):
    run = importlib.import_module(PACKAGES[impl]).KERNELS["grouped_gemm_fp8"]
    for i, skew in enumerate(SKEWS):
        result = run_and_check(run, backend, "grouped_gemm_fp8", preset, skew, seed + i, variant=variant)
        assert result.ok, f"{impl} {preset} {skew} {variant} seed={seed + i}: {result.message} {result.errors}"
