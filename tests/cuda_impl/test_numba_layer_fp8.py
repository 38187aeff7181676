"""The fp8 layer (kernels.md "The layer", DeepSeek-V3's dataflow) on the Numba kernels, its GEMMs
cuda_impl.grouped_gemm_fp8 (CUDA-core FMAs on dequantised tiles), through ptxsim: the cases every path runs
(tests/layer_fp8_cases.Fp8LayerTests). `small` is in the long tier (PTXMOE_LONG_TESTS=1): its CUDA-core GEMMs take
~2 minutes on ptxsim, a fifth of make test's budget, for shapes the ragged preset and the GPU tier also cover.
"""
import pytest

from tests.layer_fp8_cases import Fp8LayerTests

pytestmark = pytest.mark.sim


class TestFp8Layer(Fp8LayerTests):
    impl = "cuda_impl"

    @pytest.mark.slow  # Numba compiles every kernel afresh for the new shapes (~1 min on 2 cores)
    def test_fp8_layer_ragged(self, backend, seed):
        super().test_fp8_layer_ragged(backend, seed)
