"""PTX rung 2 of the FP8 grouped GEMM (wgmma + cp.async, sm_90a) on a real Hopper GPU: every token-tile entry (n16 at
tiny and DeepSeek-V3's decode sizes, where Kd = 7168 means 56 promotions per output; n32 at small; n64 at BM = 64),
every skew, both variants. Skipped with the reason when no CUDA GPU is visible.
"""
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r2 as r2
from tests.ptx_impl.fp8_rungs import BM64, check

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("preset", ["tiny", "small", "dsv3-decode", BM64], ids=lambda p: getattr(p, "name", p))
def test_rung2_on_gpu(backend, preset, variant, seed):
    for i, skew in enumerate(SKEWS):
        check(r2, backend, preset, skew, seed + i, variant)
