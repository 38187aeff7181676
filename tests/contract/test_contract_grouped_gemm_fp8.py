"""The grouped_gemm_fp8 contract: quantisation of the weights, the float64 reference, and a check that catches the
mistakes an FP8 GEMM makes (a scale missing, applied at the wrong granularity, no bf16 rounding is fine)."""
from __future__ import annotations

import numpy as np
import pytest

from contract import reference as ref
from contract.errors import UnknownNameError
from contract.generators import BF16, E4M3
from contract.kernels import FP8_TOL, get_kernel, poisoned
from contract.presets import get_preset

SPEC = get_kernel("grouped_gemm_fp8")
TINY = get_preset("tiny")


def _inputs(skew="balanced", seed=3, variant="up"):
    return SPEC.make_inputs(TINY, skew, seed, variant=variant)


def _emulate(inputs, *, a_scale=True, w_scale=True, w_scale_of_block=None):
    """What a kernel computes, in float64 then bf16, with the chosen scale mistakes."""
    total = int(inputs["total_padded"][0])
    c = poisoned(SPEC.output_specs(TINY, inputs))["c"]
    asc = inputs["a_scale"] if a_scale else np.ones_like(inputs["a_scale"])
    a = ref.dequant_rows(inputs["a"][:total], asc[:total])
    for b in range(total // TINY.BM):
        e = int(inputs["block_expert"][b])
        rows = slice(b * TINY.BM, (b + 1) * TINY.BM)
        if e < 0:
            continue
        ws = inputs["w_scale"][e] if w_scale else np.ones_like(inputs["w_scale"][e])
        if w_scale_of_block is not None:
            ws = np.broadcast_to(ws[w_scale_of_block], ws.shape)
        c[rows] = (a[rows] @ ref.dequant_blocks(inputs["w"][e], ws).T).astype(np.float32).astype(BF16)
    return {"c": c}


def test_weight_quant_round_trips_within_e4m3_precision_and_saturates_nothing():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((2, 256, 384)) * np.array([1e-3, 5.0])[:, None, None]).astype(BF16)
    out = ref.weight_quant(w)
    assert out["q"].dtype == E4M3 and out["scale"].shape == (2, 2, 3)
    back = ref.dequant_blocks(out["q"], out["scale"])
    wf = w.astype(np.float64)
    # e4m3 keeps 3 mantissa bits: relative error <= 2^-4 for values in the normal range of their block
    big = np.abs(wf) > np.repeat(np.repeat(out["scale"], 128, 1), 128, 2) * 2**-6
    assert np.all(np.abs(back - wf)[big] <= np.abs(wf)[big] * 2**-4)
    # each block's largest magnitude maps to 448 exactly (amax / scale in fp32)
    assert float(np.abs(out["q"].astype(np.float32)).max()) == 448.0


@pytest.mark.parametrize("skew", ["balanced", "imbalanced", "extreme"])
@pytest.mark.parametrize("variant", ["up", "down"])
def test_an_honest_kernel_passes_at_every_skew_and_variant(skew, variant):
    inputs = _inputs(skew, 11, variant)
    result = SPEC.check(_emulate(inputs), inputs, TINY)
    assert result.ok, result.message
    assert 0 < result.errors["worst_block_normwise_rel"] < FP8_TOL / 2


@pytest.mark.parametrize("mistake", [{"a_scale": False}, {"w_scale": False}, {"w_scale_of_block": (0, 0)}])
def test_a_missing_or_coarse_scale_fails(mistake):
    inputs = _inputs()
    result = SPEC.check(_emulate(inputs, **mistake), inputs, TINY)
    assert not result.ok and "normwise relative error" in result.message


def test_rows_past_total_padded_must_stay_untouched_and_rows_before_written():
    inputs = _inputs()
    total = int(inputs["total_padded"][0])
    out = _emulate(inputs)
    out["c"][total:] = 0
    assert "untouched" in SPEC.check(out, inputs, TINY).message
    out = _emulate(inputs)
    out["c"][0, 0] = np.nan
    assert "unwritten" in SPEC.check(out, inputs, TINY).message


def test_inputs_are_keyed_codes_with_differing_scales_and_fresh_per_seed():
    inputs = _inputs()
    assert inputs["a"].dtype == E4M3 and inputs["w"].dtype == E4M3
    assert inputs["a_scale"].shape == (TINY.P_max, TINY.H // 128)
    assert inputs["w_scale"].shape == (TINY.E, 2 * TINY.I // 128, TINY.H // 128)
    assert len(np.unique(inputs["w_scale"])) == 5 and len(np.unique(inputs["a_scale"])) == 5  # 2^-2 .. 2^2
    assert np.all(inputs["w_scale"] > 0) and np.all(inputs["a_scale"] > 0)
    codes = inputs["w"].astype(np.float32)
    assert np.isfinite(codes).all() and np.abs(codes).max() <= 448 and 90 < codes.std() < 130  # realistic codes
    assert not np.array_equal(_inputs(seed=4)["a"].view(np.uint8), inputs["a"].view(np.uint8))


@pytest.mark.parametrize("variant", ["up", "down"])
def test_lazy_inputs_equal_materialised_ones_and_check_alike(variant):
    eager = _inputs(variant=variant)
    lazy = SPEC.make_inputs(TINY, "balanced", 3, variant=variant, lazy=True)
    for name in ("a", "w"):
        assert not isinstance(lazy[name], np.ndarray)
        assert np.array_equal(np.asarray(lazy[name]).view(np.uint8), eager[name].view(np.uint8))
    for name in ("a_scale", "w_scale", "block_expert", "total_padded"):
        assert np.array_equal(lazy[name], eager[name])
    out = _emulate(eager)
    assert SPEC.check(out, lazy, TINY).errors["worst_block_normwise_rel"] == \
        SPEC.check(out, eager, TINY).errors["worst_block_normwise_rel"]


def test_unknown_variant_is_named():
    with pytest.raises(UnknownNameError, match="sideways"):
        _inputs(variant="sideways")


def test_dequant_blocks_scales_each_128x128_block_by_its_scale_in_place():
    """The blocked in-place form (no repeated scale array: 2 x 235 MB an expert at dsv3) gives exactly q * the scale
    of its block, for all experts at once and for one expert's [N, Kd]."""
    from contract.generators import E4M3
    from contract.reference import dequant_blocks

    rng = np.random.default_rng(11)
    q = rng.standard_normal((3, 256, 384)).astype(E4M3)
    scale = rng.random((3, 2, 3)).astype(np.float32)
    want = q.astype(np.float64)
    for e, n, k in np.ndindex(scale.shape):
        want[e, n * 128:(n + 1) * 128, k * 128:(k + 1) * 128] *= float(scale[e, n, k])
    assert np.array_equal(dequant_blocks(q, scale), want)
    assert np.array_equal(dequant_blocks(q[2], scale[2]), want[2])
