"""The layer's fp8 variant in the contract: its inputs, its float64 reference (re-quantising where the kernels do) and
a check that passes an honest emulation of the kernels and fails the mistakes an FP8 layer makes."""
from __future__ import annotations

import numpy as np
import pytest

from contract import reference as ref
from contract.errors import UnknownNameError
from contract.generators import BF16, E4M3, KeyedE4M3
from contract.kernels import FP8_LAYER_TOL, get_kernel
from contract.presets import Preset, get_preset

SPEC = get_kernel("layer")
TINY = get_preset("tiny")
RAGGED = Preset("ragged-fp8", T=67, H=384, E=40, K=6, G=8, TG=3, I=128, BM=16)


def _inputs(preset=TINY, skew="balanced", seed=3, **kw):
    return SPEC.make_inputs(preset, skew, seed, variant="fp8", **kw)


def _emulate(i, p, *, requant=True, w1_scale=True, permute_scales=True, noise=0.0):
    """What the kernels compute, in float64 with their bf16 roundings, optionally with one mistake (or noise: a
    relative error on every GEMM output element, as a low-precision accumulator leaves)."""
    rng = np.random.default_rng(0)
    g = ref.gate(i["logits"], i["bias"], p)
    al = ref.align(g["topk_ids"], p)
    tot, be, sid = al["total_padded"], al["block_expert"], al["sorted_ids"]
    aq = ref.act_quant(i["x"])
    xq = ref.permute(aq["q"], sid, tot, p)
    # the mistake: scales left in token order instead of gathered with their rows
    xs = ref.permute(aq["scale"], sid, tot, p) if permute_scales else aq["scale"][np.arange(int(tot[0])) % p.T]
    ws = i["W1_scale"] if w1_scale else np.ones_like(i["W1_scale"])
    h = ref.grouped_gemm_fp8(xq, xs, i["W1"], ws, be, tot, p)
    h = h * (1 + noise * rng.standard_normal(h.shape))
    act = ref.bf16_round(ref.swiglu(ref.bf16_round(h), tot))
    if requant:
        q = ref.act_quant(act)
        y = ref.grouped_gemm_fp8(q["q"], q["scale"], i["W2"], i["W2_scale"], be, tot, p)
    else:
        y = ref.grouped_gemm(act.astype(np.float64), ref.dequant_blocks(np.asarray(i["W2"]), i["W2_scale"]), be, tot,
                             p)
    y = ref.bf16_round(y * (1 + noise * rng.standard_normal(y.shape))).astype(np.float64)
    yp = np.zeros((p.P_max, p.H))
    yp[: int(tot[0])] = y
    return {"out": ref.bf16_round(ref.combine(yp, g["topk_w"], al["inverse"])), **aq}


def test_fp8_inputs_are_e4m3_weights_with_block_scales_and_bf16_x():
    i = _inputs()
    E, H, inter = TINY.E, TINY.H, TINY.I
    assert i["x"].dtype == BF16 and i["x"].shape == (TINY.T, H)
    assert i["W1"].dtype == E4M3 and i["W1"].shape == (E, 2 * inter, H)
    assert i["W2"].dtype == E4M3 and i["W2"].shape == (E, H, inter)
    assert i["W1_scale"].shape == (E, 2 * inter // 128, H // 128) and i["W2_scale"].shape == (E, H // 128, inter // 128)
    assert np.all(i["W1_scale"] > 0) and len(np.unique(i["W1_scale"])) == 3  # base * 2^-1 .. 2^1
    # dequantised weights have grouped_gemm's magnitudes (sigma ~ 1/sqrt(Kd))
    w1 = ref.dequant_blocks(i["W1"], i["W1_scale"])
    assert 0.5 / np.sqrt(H) < w1.std() < 2 / np.sqrt(H)
    lazy = _inputs(lazy=True)
    assert isinstance(lazy["W1"], KeyedE4M3) and isinstance(lazy["W2"], KeyedE4M3)
    bf16 = SPEC.make_inputs(TINY, "balanced", 3)
    assert "W1_scale" not in bf16 and bf16["W1"].dtype == BF16  # the default variant is the bf16 layer


def test_unknown_layer_variant_is_named():
    assert SPEC.variants == ("bf16", "fp8")
    with pytest.raises(UnknownNameError, match="fp4"):
        SPEC.make_inputs(TINY, "balanced", 0, variant="fp4")


@pytest.mark.parametrize(("preset", "skew"), [(TINY, "balanced"), (TINY, "extreme"), (RAGGED, "imbalanced")])
def test_an_honest_layer_passes_even_with_a_low_precision_accumulator(preset, skew):
    i = _inputs(preset, skew, 7)
    exact = SPEC.check(_emulate(i, preset), i, preset)
    assert exact.ok and exact.errors["normwise_rel"] < 5e-3, exact.message
    noisy = SPEC.check(_emulate(i, preset, noise=1e-3), i, preset)  # ~ Hopper's 14-bit FP8 accumulation
    assert noisy.ok and noisy.errors["normwise_rel"] < FP8_LAYER_TOL / 1.5, noisy.message


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # unscaled W1: huge h
@pytest.mark.parametrize("mistake", [{"w1_scale": False}, {"permute_scales": False}])
def test_a_missing_or_misplaced_scale_fails(mistake):
    i = _inputs()
    result = SPEC.check(_emulate(i, TINY, **mistake), i, TINY)
    assert not result.ok and "normwise relative error" in result.message


def test_the_reference_requantises_swiglus_output():
    """Without the re-quantisation a layer is ~e4m3's rounding away from the reference (the tolerance cannot see
    that: the path tests check the launches), and far closer with it."""
    i = _inputs()
    skipped = SPEC.check(_emulate(i, TINY, requant=False), i, TINY).errors["normwise_rel"]
    honest = SPEC.check(_emulate(i, TINY), i, TINY).errors["normwise_rel"]
    assert skipped > 5 * honest and skipped > 1e-2


def test_the_fp8_payload_is_checked_bit_for_bit():
    i = _inputs()
    out = _emulate(i, TINY)
    out["q"] = out["q"].copy()
    out["q"].view(np.uint8)[3, 5] ^= 1  # one code one step off
    assert "q" in SPEC.check(out, i, TINY).message
