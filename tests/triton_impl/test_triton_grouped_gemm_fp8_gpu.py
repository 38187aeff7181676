"""triton_impl's grouped_gemm_fp8 on a real GPU (sm_90a: the 64-row tile is wgmma): tiny, small and one of DeepGEMM's
masked shapes at Kd = 7168 (56 scale groups per output). Skipped with the reason when no CUDA GPU is visible."""
import pytest

from harness.verify import run_and_check
from triton_impl import grouped_gemm_fp8 as tg

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("preset, variant", [("tiny", "up"), ("tiny", "down"), ("small", "up"), ("small", "down"),
                                             ("masked-1x1024x4096x7168", "up")])
def test_triton_grouped_gemm_fp8_on_gpu(backend, preset, variant, seed):
    result = run_and_check(tg.run, backend, "grouped_gemm_fp8", preset, "balanced", seed, variant=variant)
    assert result.ok, f"triton {preset} {variant} seed={seed}: {result.message} {result.errors}"
