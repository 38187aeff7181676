"""Every checker accepts the reference's own answer and rejects planted mistakes with a message saying where."""
import numpy as np
import pytest

from contract.generators import BF16
from contract.kernels import KERNELS, get_kernel, poisoned
from contract.presets import SKEWS, get_preset

TINY = get_preset("tiny")
ROWS_LIMITED = {"permute": "xp", "grouped_gemm": "c", "swiglu": "a"}


def reference_outputs(name, inputs):
    spec = get_kernel(name)
    outs = poisoned(spec.output_specs(TINY, inputs))
    for key, value in spec.reference(inputs, TINY).items():
        if key not in outs:
            continue
        outs[key][: len(value)] = value.astype(outs[key].dtype) if value.dtype != outs[key].dtype else value
    return outs


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_reference_passes_its_own_check(name, skew, seed):
    spec = get_kernel(name)
    inputs = spec.make_inputs(TINY, skew, seed)
    result = spec.check(reference_outputs(name, inputs), inputs, TINY)
    assert result.ok, result.message


def _plant(name, outs, inputs):
    """One realistic bug per kernel; returns the text the failure message must contain."""
    if name == "gate":
        outs["topk_ids"][3, [0, 1]] = outs["topk_ids"][3, [1, 0]]  # order swapped
        return "topk_ids"
    if name == "align":
        outs["sorted_ids"][[0, 1]] = outs["sorted_ids"][[1, 0]]  # unstable order within expert 0
        return "sorted_ids"
    if name == "permute":
        total = int(inputs["total_padded"][0])
        outs["xp"][total].view(np.uint16)[0] = 0  # wrote a row beyond total_padded
        return "untouched"
    if name == "act_quant":
        outs["q"].view(np.uint8)[2, 7] ^= 1  # one bit of one byte
        return "q"
    if name in ("grouped_gemm", "grouped_gemm_fp8"):  # fp8: as if one scale were 5% off
        block = int(np.argmax(inputs["block_expert"] >= 0))
        rows = slice(block * TINY.BM, (block + 1) * TINY.BM)
        outs["c"][rows] = (outs["c"][rows].astype(np.float32) * 1.05).astype(BF16)
        return "block"
    if name == "swiglu":
        v = outs["a"].view(np.uint16)
        v[0, 0] = v[0, 0] + 3 if v[0, 0] & 0x7F80 else v[0, 0] + 0x100  # 3 bf16 ulps off
        return "ulps"
    if name == "combine":
        outs["out"][5, 0] = np.float32(np.nan)  # an unwritten element
        return "unwritten"
    if name == "layer":
        outs["out"][:] = (outs["out"].astype(np.float32) * 1.05).astype(BF16)
        return "normwise"
    raise AssertionError(name)


@pytest.mark.parametrize("name", list(KERNELS))
def test_check_catches_a_planted_bug(name, seed):
    spec = get_kernel(name)
    inputs = spec.make_inputs(TINY, "balanced", seed)
    outs = reference_outputs(name, inputs)
    expected_text = _plant(name, outs, inputs)
    result = spec.check(outs, inputs, TINY)
    assert not result.ok
    assert expected_text in result.message


@pytest.mark.parametrize("name", list(KERNELS))
def test_all_poison_fails(name, seed):
    spec = get_kernel(name)
    inputs = spec.make_inputs(TINY, "balanced", seed)
    assert not spec.check(poisoned(spec.output_specs(TINY, inputs)), inputs, TINY).ok


def test_grouped_gemm_down_variant_shapes(seed):
    spec = get_kernel("grouped_gemm")
    inputs = spec.make_inputs(TINY, "imbalanced", seed, variant="down")
    assert inputs["a"].shape == (TINY.P_max, TINY.I) and inputs["w"].shape == (TINY.E, TINY.H, TINY.I)
    assert spec.check(reference_outputs("grouped_gemm", inputs), inputs, TINY).ok


def test_act_quant_pow2_check_uses_the_param(seed):
    spec = get_kernel("act_quant")
    inputs = spec.make_inputs(TINY, "balanced", seed)
    plain = reference_outputs("act_quant", inputs)
    assert spec.check(plain, inputs, TINY).ok
    assert not spec.check(plain, inputs, TINY, pow2_scale=True).ok


def test_inputs_are_fresh_per_seed_and_never_zero():
    a = get_kernel("combine").make_inputs(TINY, "balanced", 1)
    b = get_kernel("combine").make_inputs(TINY, "balanced", 2)
    assert not np.array_equal(a["y"].view(np.uint16), b["y"].view(np.uint16))
    assert np.count_nonzero(a["y"].astype(np.float32)) > 0.99 * a["y"].size


def test_bytes_and_flops_are_positive_and_scale(seed):
    gemm = get_kernel("grouped_gemm")
    inputs = gemm.make_inputs(TINY, "balanced", seed)
    assert gemm.flops(inputs, TINY) == 2 * TINY.T * TINY.K * 2 * TINY.I * TINY.H
    assert gemm.min_bytes(inputs, TINY) > inputs["a"].nbytes // 2
    combine = get_kernel("combine")
    ci = combine.make_inputs(TINY, "balanced", seed)
    assert combine.min_bytes(ci, TINY) == TINY.T * TINY.K * TINY.H * 2 + ci["topk_w"].nbytes + ci["inverse"].nbytes \
        + TINY.T * TINY.H * 2
