"""The cuda_impl kernels on a real GPU through numba-cuda (GpuBackend); skipped with the reason where none is visible.

Same run() functions and the same plain-Python kernel sources as the ptxsim tests; fresh seeds; the kernels.md checks.
"""
import pytest

from contract.presets import SKEWS

pytestmark = pytest.mark.gpu

KERNELS = ("gate", "align", "permute", "act_quant", "swiglu", "combine", "grouped_gemm")


@pytest.fixture(scope="module")
def gpu():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


def check(gpu, kernel, preset, skew, seed, **params):
    import cuda_impl
    from harness.verify import run_and_check

    result = run_and_check(cuda_impl.KERNELS[kernel], gpu, kernel, preset, skew, seed, **params)
    assert result.ok, f"{kernel} {preset} {skew} {params} seed={seed}: {result.message}"


@pytest.mark.parametrize("preset", ["tiny", "small"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_on_gpu(gpu, kernel, preset, seed):
    for i, skew in enumerate(SKEWS):
        if kernel == "grouped_gemm":
            check(gpu, kernel, preset, skew, seed + i, variant="up")
            check(gpu, kernel, preset, skew, seed + i, variant="down")
        elif kernel == "act_quant":
            check(gpu, kernel, preset, skew, seed + i, pow2_scale=bool(i % 2))
        else:
            check(gpu, kernel, preset, skew, seed + i)


@pytest.mark.parametrize("kernel", ["gate", "align", "permute", "act_quant", "swiglu", "combine"])
def test_kernel_on_gpu_dsv3_decode(gpu, kernel, seed):
    check(gpu, kernel, "dsv3-decode", SKEWS[seed % 3], seed)


@pytest.mark.parametrize("variant", ["bf16", "fp8"])
@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_layer_on_gpu(gpu, preset, variant, seed):
    for i, skew in enumerate(SKEWS):
        check(gpu, "layer", preset, skew, seed + i, variant=variant)
