"""The fp8 layer (kernels.md "The layer", DeepSeek-V3's dataflow) on the hand-written PTX kernels, its GEMMs the
grouped_gemm_fp8 ladder's top rung, through ptxsim.

Fresh seeds per run (PTXMOE_SEED reproduces): tiny at every skew (the first also checks the ten launches in order),
small at one seed-chosen skew, and a ragged preset.
"""
import pytest

import ptx_impl
from contract.presets import SKEWS
from tests.layer_fp8_cases import RAGGED, check_fp8_layer, check_permute_scales

pytestmark = pytest.mark.sim


@pytest.fixture
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@pytest.mark.parametrize("skew", SKEWS)
def test_fp8_layer_tiny(backend, skew, seed):
    check_fp8_layer(ptx_impl.KERNELS["layer"], backend, "tiny", skew, seed, launches=skew == SKEWS[0])


def test_fp8_layer_ragged(backend, seed):
    check_fp8_layer(ptx_impl.KERNELS["layer"], backend, RAGGED, SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.slow
def test_fp8_layer_small(backend, seed):
    check_fp8_layer(ptx_impl.KERNELS["layer"], backend, "small", SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.parametrize("width", [2, 3])
def test_permute_scales(backend, width, seed):
    """The scale gather alone: the layer's check cannot see its padding rows (combine never reads them)."""
    from ptx_impl import permute

    check_permute_scales(permute.run_scales, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, width)
