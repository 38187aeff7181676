"""The fp8 layer (kernels.md "The layer", DeepSeek-V3's dataflow) on the CUDA C++ kernels, its GEMMs
cpp_impl.grouped_gemm_fp8 (bf16 wmma on dequantised tiles), through ptxsim: the cases every path runs
(tests/layer_fp8_cases.Fp8LayerTests: tiny at every skew, ragged, small in the long tier, permute_scales, act_quant).
"""
import pytest

from tests.layer_fp8_cases import Fp8LayerTests

pytestmark = pytest.mark.sim


class TestFp8Layer(Fp8LayerTests):
    impl = "cpp_impl"
