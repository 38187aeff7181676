"""Differential tests: the CUDA C++ kernels against the hand PTX and the Numba kernels on the same inputs (ptxsim).

Bitwise where kernels.md defines the rounding (align, permute, act_quant, gate's ids); where it leaves the math
open (sigmoid / exp approximations, fp32 summation), within the stated bound of the other paths: gate weights to
1e-6 relative, swiglu and combine to one bf16 ulp per element.
"""
import numpy as np
import pytest

import cpp_impl
import cuda_impl
import ptx_impl
from contract.kernels import get_kernel
from contract.presets import SKEWS, get_preset
from harness.verify import run_kernel

pytestmark = pytest.mark.sim
OTHERS = {"ptx": ptx_impl, "cuda": cuda_impl}
BITWISE = ("align", "permute", "act_quant")


def _outputs(backend, kernel, preset, skew, seed, **params):
    """(inputs, {impl: outputs}) of cpp, ptx and cuda on one set of inputs."""
    inputs = get_kernel(kernel).make_inputs(preset, skew, seed, **params)
    runs = {"cpp": cpp_impl, **OTHERS}
    return inputs, {name: run_kernel(impl.KERNELS[kernel], backend, kernel, preset, skew, seed, inputs=inputs,
                                     **params)[1] for name, impl in runs.items()}


def _bf16_ulps_apart(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in bf16 steps between same-signed elements (bit patterns as sign-magnitude integers)."""
    def ordered(x):
        bits = x.view(np.uint16).astype(np.int32)
        return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)

    return int(np.max(np.abs(ordered(a) - ordered(b))))


@pytest.mark.parametrize("kernel", BITWISE)
@pytest.mark.parametrize("skew", SKEWS)
def test_bitwise_equal_to_ptx_and_numba(backend, kernel, skew, seed):
    _, outs = _outputs(backend, kernel, get_preset("tiny"), skew, seed)
    for other in OTHERS:
        for name, got in outs["cpp"].items():
            assert np.array_equal(got.view(np.uint8), outs[other][name].view(np.uint8)), \
                f"{kernel}.{name} cpp != {other} ({skew}, seed={seed})"


def test_act_quant_pow2_bitwise_equal(backend, seed):
    _, outs = _outputs(backend, "act_quant", get_preset("tiny"), SKEWS[seed % len(SKEWS)], seed, pow2_scale=True)
    for other in OTHERS:
        for name, got in outs["cpp"].items():
            assert np.array_equal(got.view(np.uint8), outs[other][name].view(np.uint8)), f"{name} vs {other}"


@pytest.mark.parametrize("preset", ["tiny", "dsv3-decode"])
def test_gate_same_ids_close_weights(backend, preset, seed):
    _, outs = _outputs(backend, "gate", get_preset(preset), SKEWS[seed % len(SKEWS)], seed)
    for other in OTHERS:
        np.testing.assert_array_equal(outs["cpp"]["topk_ids"], outs[other]["topk_ids"], err_msg=other)
        np.testing.assert_allclose(outs["cpp"]["topk_w"], outs[other]["topk_w"], rtol=1e-6, err_msg=other)


@pytest.mark.parametrize("kernel, out", [("swiglu", "a"), ("combine", "out")])
def test_within_one_bf16_ulp(backend, kernel, out, seed):
    preset = get_preset("tiny")
    inputs, outs = _outputs(backend, kernel, preset, SKEWS[seed % len(SKEWS)], seed)
    # swiglu leaves rows past total_padded unwritten on every path
    rows = slice(0, int(inputs["total_padded"][0])) if kernel == "swiglu" else slice(None)
    for other in OTHERS:
        assert _bf16_ulps_apart(outs["cpp"][out][rows], outs[other][out][rows]) <= 1, f"{kernel} vs {other}"
