"""The fp8 layer (kernels.md "The layer", DeepSeek-V3's dataflow) on the CUDA C++ kernels, its GEMMs
cpp_impl.grouped_gemm_fp8 (bf16 wmma on dequantised tiles), through ptxsim.

Fresh seeds per run (PTXMOE_SEED reproduces): tiny at every skew (the first also checks the ten launches in order),
small at one seed-chosen skew, and a ragged preset.
"""
import pytest

import cpp_impl
from contract.presets import SKEWS
from tests.layer_fp8_cases import RAGGED, check_act_quant_rows, check_fp8_layer, check_permute_scales

pytestmark = pytest.mark.sim


@pytest.fixture
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@pytest.mark.parametrize("skew", SKEWS)
def test_fp8_layer_tiny(backend, skew, seed):
    check_fp8_layer(cpp_impl.KERNELS["layer"], backend, "tiny", skew, seed, launches=skew == SKEWS[0])


def test_fp8_layer_ragged(backend, seed):
    check_fp8_layer(cpp_impl.KERNELS["layer"], backend, RAGGED, SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.long  # ~22 s on 2 cores: make test keeps tiny and ragged; the sampled small fp8 layer runs in
# tests/harness/test_verify_layer_fp8.py
def test_fp8_layer_small(backend, seed):
    check_fp8_layer(cpp_impl.KERNELS["layer"], backend, "small", SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.parametrize("width", [2, 3])
def test_permute_scales(backend, width, seed):
    """The scale gather alone: the layer's check cannot see its padding rows (combine never reads them)."""
    from cpp_impl import permute

    check_permute_scales(permute.run_scales, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, width)


def test_act_quant_bounded_by_total_padded(backend, seed):
    """The second quantisation reads and writes only the rows swiglu wrote (below total_padded, on the device)."""
    from cpp_impl import act_quant

    check_act_quant_rows(act_quant.run, backend, RAGGED, seed, rows=16 + seed % 40)
