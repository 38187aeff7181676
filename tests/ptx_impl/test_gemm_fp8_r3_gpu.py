"""PTX rung 3 of the FP8 grouped GEMM (wgmma + TMA + mbarrier, sm_90a) on a real Hopper GPU, with the tensor maps
from the driver (cuTensorMapEncodeTiled): every token-tile entry (n16 at tiny and DeepSeek-V3's decode sizes, where
Kd = 7168 means 56 promotions per output and the ring wraps 14 times; n32 at small; n64 at BM = 64), every skew,
both variants. Skipped with the reason when no CUDA GPU is visible.
"""
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r3 as r3
from tests.ptx_impl.fp8_rungs import BM64, DEEP, check

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("preset", ["tiny", "small", "dsv3-decode", BM64, DEEP], ids=lambda p: getattr(p, "name", p))
def test_rung3_on_gpu(backend, preset, variant, seed):
    for i, skew in enumerate(SKEWS):
        check(r3, backend, preset, skew, seed + i, variant)
