"""Every cuda_impl kernel and the layer pass the kernels.md checks on ptxsim (SimBackend) at the tiny preset.

Fresh seeds every run; every kernel, the grouped GEMM's two variants and the layer at all three skews.
"""
import pytest

from contract.presets import SKEWS, get_preset

pytestmark = pytest.mark.sim

FAST = ("gate", "align", "permute", "swiglu", "combine")


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def check(backend, kernel, skew, seed, preset="tiny", **params):
    import cuda_impl
    from harness.verify import run_and_check

    result = run_and_check(cuda_impl.KERNELS[kernel], backend, kernel, preset, skew, seed, **params)
    assert result.ok, f"{kernel} {preset} {skew} {params} seed={seed}: {result.message}"
    return result


@pytest.mark.parametrize("kernel", FAST)
def test_kernel_all_skews(backend, kernel, seed):
    for i, skew in enumerate(SKEWS):
        check(backend, kernel, skew, seed + i)


@pytest.mark.parametrize("preset", ["small", "dsv3-decode"])
@pytest.mark.parametrize("kernel", ["gate", "align"])
def test_kernel_larger_presets(backend, kernel, preset, seed):
    """Shapes that change the structure: at small 32 experts fill the warp and align scatters two 1024-slot chunks;
    at dsv3-decode each lane owns 8 of 256 experts, a group is a whole warp, the scan sums 8 experts per lane."""
    check(backend, kernel, SKEWS[seed % len(SKEWS)], seed, preset=preset)


@pytest.mark.parametrize("pow2_scale", [False, True])
def test_act_quant(backend, pow2_scale, seed):
    for i, skew in enumerate(SKEWS):
        check(backend, "act_quant", skew, seed + i, pow2_scale=pow2_scale)


def test_grouped_gemm_other_tile(backend, seed):
    """The GEMM kernel is generic in its tile: a 16 x 128 tile with 4 x 8 micro-tiles also passes."""
    from cuda_impl.grouped_gemm import Tile

    check(backend, "grouped_gemm", SKEWS[seed % len(SKEWS)], seed, variant="down", tile=Tile(128, 16, 4, 8))


def test_layer_launch_order(backend, seed):
    """The whole layer passes its check, through the eight documented launches in order, all on the Numba path."""
    import cuda_impl
    from contract.kernels import get_kernel
    from harness.verify import run_kernel

    skew = SKEWS[seed % len(SKEWS)]
    inputs, outputs, records = run_kernel(cuda_impl.KERNELS["layer"], backend, "layer", "tiny", skew, seed)
    result = get_kernel("layer").check(outputs, inputs, get_preset("tiny"))
    assert result.ok, f"layer {skew} seed={seed}: {result.message}"
    assert [r.name for r in records] == ["gate", "align", "act_quant", "permute", "grouped_gemm_up", "swiglu",
                                         "grouped_gemm_down", "combine"]
    assert {r.impl for r in records} == {"numba"}


@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_grouped_gemm_matrix(backend, variant, skew, seed):
    check(backend, "grouped_gemm", skew, seed, variant=variant)


@pytest.mark.parametrize("skew", SKEWS)
def test_layer_matrix(backend, skew, seed):
    check(backend, "layer", skew, seed)


def test_grouped_gemm_fp8_all_skews(backend, seed):
    """The FP8 GEMM (dequantise + CUDA cores) passes at every skew (down: Kd=128, one scale group) and once up
    (Kd=256: two scale groups per row, two K chunks per group)."""
    for i, skew in enumerate(SKEWS):
        check(backend, "grouped_gemm_fp8", skew, seed + i, variant="down")
    check(backend, "grouped_gemm_fp8", SKEWS[seed % len(SKEWS)], seed, variant="up")


def test_grouped_gemm_fp8_ragged(backend, seed):
    """T = 67, E = 40 (blocks of expert -1, a ragged total), Kd = 384 up: three scale groups."""
    from contract.presets import Preset

    ragged = Preset("ragged-fp8", T=67, H=384, E=40, K=6, G=8, TG=3, I=128, BM=16)
    check(backend, "grouped_gemm_fp8", SKEWS[seed % len(SKEWS)], seed, preset=ragged, variant="up")
