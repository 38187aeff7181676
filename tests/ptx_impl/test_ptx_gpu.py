"""The same hand-written PTX on a real Hopper GPU (cuda-python module load through the gpu backend).

Skipped with the reason when no CUDA GPU is visible. Covers the tiny preset and DeepSeek-V3's decode sizes
(E=256: eight experts per gate lane, BM=16, H=7168), every skew, and the whole layer.
"""
import pytest

import ptx_impl
from contract.presets import SKEWS
from harness.verify import run_and_check

pytestmark = pytest.mark.gpu
KERNELS = ("gate", "align", "permute", "act_quant", "swiglu", "combine")


@pytest.fixture(scope="module")
def backend():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


def _check(backend, kernel, preset, skew, seed, **params):
    result = run_and_check(ptx_impl.KERNELS[kernel], backend, kernel, preset, skew, seed, **params)
    assert result.ok, f"{kernel} {preset} {skew} seed={seed}: {result.message} {result.errors}"


@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_on_gpu(backend, kernel, preset, skew, seed):
    _check(backend, kernel, preset, skew, seed)


@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
def test_act_quant_pow2_on_gpu(backend, preset, seed):
    _check(backend, "act_quant", preset, "balanced", seed, pow2_scale=True)


@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("variant", ["bf16", "fp8"])
def test_layer_on_gpu(backend, preset, skew, variant, seed):
    _check(backend, "layer", preset, skew, seed, variant=variant)
