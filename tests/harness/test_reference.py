"""The float64 references themselves: invariants, hand-computed cases, and properties over shapes and skews."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract import reference as ref
from contract.generators import BF16, E4M3, gate_inputs, selection_margins
from contract.presets import PRESETS, SKEWS, Preset, get_preset

TINY = get_preset("tiny")


# ---------------------------------------------------------------- gate
def test_gate_hand_case():
    p = Preset("hand", T=1, H=128, E=8, K=2, G=4, TG=2, I=16, BM=4)
    # groups {0,1} {2,3} {4,5} {6,7}; bias steers group 3 to win although its raw scores are lowest
    logits = np.array([[2.0, 1.0, 0.5, 0.4, -1.0, -2.0, -3.0, -3.5]], np.float32)
    bias = np.array([0, 0, 0, 0, 0, 0, 5.0, 5.0], np.float32)
    out = ref.gate(logits, bias, p)
    s = 1 / (1 + np.exp(-logits.astype(np.float64)))[0]
    # group scores: g0 = s0+s1, g1 = s2+s3, g2 = s4+s5, g3 = s6+s7+10 -> keep g3 and g0; top-2 of {0,1,6,7} by sb
    assert out["topk_ids"].tolist() == [[6, 7]]
    np.testing.assert_allclose(out["topk_w"][0], s[[6, 7]] / s[[6, 7]].sum() * 2.5, rtol=1e-12)


def test_gate_ties_lower_index_wins():
    p = Preset("ties", T=1, H=128, E=8, K=3, G=4, TG=2, I=16, BM=4)
    logits = np.zeros((1, 8), np.float32)  # every score ties
    out = ref.gate(logits, np.zeros(8, np.float32), p)
    assert out["topk_ids"].tolist() == [[0, 1, 2]]  # groups 0 and 1 kept, experts 0, 1, 2 in index order


@pytest.mark.parametrize("skew", SKEWS)
def test_gate_weights_sum_to_route_scale_and_ids_valid(skew, seed):
    inputs = gate_inputs(TINY, skew, np.random.default_rng(seed))
    out = ref.gate(inputs["logits"], inputs["bias"], TINY)
    np.testing.assert_allclose(out["topk_w"].sum(axis=1), TINY.route_scale, rtol=1e-12)
    ids = out["topk_ids"]
    assert all(len(set(row)) == TINY.K for row in ids.tolist())
    groups = ids // TINY.experts_per_group
    assert all(len(set(row)) <= TINY.TG for row in groups.tolist())
    # descending sb order
    sb = ref.sigmoid64(inputs["logits"]) + inputs["bias"]
    chosen = np.take_along_axis(sb, ids, axis=1)
    assert np.all(np.diff(chosen, axis=1) < 0)


def test_gate_matches_brute_force(rng):
    """The vectorised reference against plain per-token loops over groups and experts."""
    p = TINY
    inputs = gate_inputs(p, "balanced", rng)
    out = ref.gate(inputs["logits"], inputs["bias"], p)
    s = ref.sigmoid64(inputs["logits"])
    sb = s + inputs["bias"]
    for t in range(p.T):
        scores = []
        for g in range(p.G):
            per_group = p.experts_per_group
            members = sorted(sb[t, g * per_group:(g + 1) * per_group], reverse=True)
            scores.append((-(members[0] + members[1]), g))
        kept = [g for _, g in sorted(scores)[: p.TG]]
        cands = sorted((-sb[t, e], e) for e in range(p.E) if e // p.experts_per_group in kept)
        assert out["topk_ids"][t].tolist() == [e for _, e in cands[: p.K]]


@pytest.mark.parametrize("skew", SKEWS)
def test_generators_avoid_near_ties(skew, seed):
    inputs = gate_inputs(TINY, skew, np.random.default_rng(seed))
    assert selection_margins(inputs["logits"], inputs["bias"], TINY).all()
    assert np.abs(inputs["logits"]).max() > 0  # never zeros


def test_extreme_skew_routes_every_token_to_the_same_experts(seed):
    inputs = gate_inputs(TINY, "extreme", np.random.default_rng(seed))
    ids = ref.gate(inputs["logits"], inputs["bias"], TINY)["topk_ids"]
    assert len({tuple(sorted(row)) for row in ids.tolist()}) == 1
    counts = np.bincount(ids.ravel(), minlength=TINY.E)
    assert (counts == 0).sum() == TINY.E - TINY.K


def test_imbalanced_skew_favours_low_ids(seed):
    inputs = gate_inputs(TINY, "imbalanced", np.random.default_rng(seed))
    counts = np.bincount(ref.gate(inputs["logits"], inputs["bias"], TINY)["topk_ids"].ravel(), minlength=TINY.E)
    assert counts[: TINY.E // 4].sum() > counts[-TINY.E // 4:].sum()


# ---------------------------------------------------------------- align
def test_align_hand_case():
    p = Preset("hand", T=3, H=128, E=3, K=2, G=1, TG=1, I=16, BM=4)
    ids = np.array([[2, 0], [0, 2], [0, 1]], np.int32)  # slots 0..5 -> experts 2,0,0,2,0,1
    out = ref.align(ids, p)
    assert out["counts"].tolist() == [3, 1, 2]
    assert out["offsets"].tolist() == [0, 4, 8, 12]
    assert out["total_padded"].tolist() == [12]
    S = 6
    assert out["sorted_ids"][:12].tolist() == [1, 2, 4, S, 5, S, S, S, 0, 3, S, S]
    assert p.P_max == 16 and out["sorted_ids"][12:].tolist() == [S] * 4
    assert out["block_expert"].tolist() == [0, 1, 2, -1]
    assert out["inverse"].tolist() == [[8, 0], [1, 9], [2, 4]]


@given(st.sampled_from(list(PRESETS.values())[:2]), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.sampled_from(SKEWS))
@settings(max_examples=25, deadline=None)
def test_align_invariants(preset, tokens, seed, skew):
    p = dataclasses.replace(preset, T=tokens)
    ids = ref.gate(**gate_inputs(p, skew, np.random.default_rng(seed)), preset=p)["topk_ids"]
    out = ref.align(ids, p)
    counts, offsets, sorted_ids = out["counts"], out["offsets"], out["sorted_ids"]
    assert counts.sum() == p.T * p.K
    assert offsets[0] == 0 and np.all(np.diff(offsets) % p.BM == 0) and np.all(np.diff(offsets) >= counts)
    assert np.all(np.diff(offsets) < counts + p.BM)
    total = int(out["total_padded"][0])
    assert total == offsets[-1] <= p.P_max and sorted_ids.size == p.P_max
    flat = ids.ravel()
    for e in range(p.E):
        seg = sorted_ids[offsets[e]: offsets[e] + counts[e]]
        assert np.all(flat[seg] == e) and np.all(np.diff(seg) > 0)  # routed to e, stable ascending
        assert np.all(sorted_ids[offsets[e] + counts[e]: offsets[e + 1]] == p.slots)
        assert np.all(out["block_expert"][offsets[e] // p.BM: offsets[e + 1] // p.BM] == e)
    assert np.all(sorted_ids[total:] == p.slots) and np.all(out["block_expert"][total // p.BM:] == -1)
    assert np.array_equal(sorted_ids[out["inverse"].ravel()], np.arange(p.T * p.K))


# ---------------------------------------------------------------- permute + combine
@pytest.mark.parametrize("skew", SKEWS)
def test_permute_then_combine_with_unit_weights_gives_x_times_k(skew, seed):
    rng = np.random.default_rng(seed)
    ids = ref.gate(**gate_inputs(TINY, skew, rng), preset=TINY)["topk_ids"]
    al = ref.align(ids, TINY)
    x = (rng.standard_normal((TINY.T, TINY.H)) + 0.5).astype(BF16)
    rows = ref.permute(x, al["sorted_ids"], al["total_padded"], TINY)
    xp = np.zeros((TINY.P_max, TINY.H), BF16)
    xp[: rows.shape[0]] = rows
    out = ref.combine(xp, np.ones((TINY.T, TINY.K)), al["inverse"])
    np.testing.assert_array_equal(out, x.astype(np.float64) * TINY.K)


def test_permute_padding_rows_are_zero(seed):
    rng = np.random.default_rng(seed)
    ids = ref.gate(**gate_inputs(TINY, "balanced", rng), preset=TINY)["topk_ids"]
    al = ref.align(ids, TINY)
    x = (rng.standard_normal((TINY.T, TINY.H)) + 3).astype(BF16)
    rows = ref.permute(x, al["sorted_ids"], al["total_padded"], TINY)
    pad = al["sorted_ids"][: rows.shape[0]] == TINY.slots
    assert pad.any() and np.all(rows[pad].astype(np.float32) == 0) and np.all(rows[~pad].astype(np.float32) != 0)


def test_combine_hand_case():
    y = np.array([[1, 2], [3, 4], [5, 6]], np.float64).astype(BF16)
    out = ref.combine(y, np.array([[0.5, 2.0]]), np.array([[2, 0]]))
    assert out.tolist() == [[0.5 * 5 + 2 * 1, 0.5 * 6 + 2 * 2]]


# ---------------------------------------------------------------- act_quant
def test_act_quant_hand_case():
    a = np.zeros((1, 128), np.float32)
    a[0, :4] = [448.0, -224.0, 1.0, 0.0]
    out = ref.act_quant(a.astype(BF16))
    assert out["scale"].tolist() == [[1.0]]
    assert out["q"].astype(np.float32)[0, :4].tolist() == [448.0, -224.0, 1.0, 0.0]
    tiny = ref.act_quant(np.full((1, 128), 1e-6, np.float32).astype(BF16))
    assert tiny["scale"][0, 0] == np.float32(1e-4) / np.float32(448)  # the 1e-4 floor


def test_act_quant_pow2_scale_rounds_up_to_a_power_of_two():
    a = np.zeros((1, 256), np.float32)
    a[0, 0], a[0, 128] = 300.0, 896.0  # scales 300/448 (-> 1.0) and exactly 2.0 (stays)
    out = ref.act_quant(a.astype(BF16), pow2_scale=True)
    assert out["scale"].tolist() == [[1.0, 2.0]]
    assert out["q"].astype(np.float32)[0, 0] == 288.0  # 300 rounds to e4m3 288 (step 32 in [256, 448])


def test_pow2_ceil_exact():
    values = np.array([1.0, 1.0000001, 0.75, 0.5, 3.0, 2.0 ** -20], np.float32)
    assert ref.pow2_ceil_f32(values).tolist() == [1.0, 2.0, 1.0, 0.5, 4.0, 2.0 ** -20]


def test_act_quant_dequantises_within_e4m3_rounding_and_saturates(rng):
    a = (rng.standard_normal((8, 512)) * rng.uniform(0.01, 100, (8, 1))).astype(BF16)
    out = ref.act_quant(a)
    deq = out["q"].astype(np.float32).reshape(8, 4, 128) * out["scale"][:, :, None]
    orig = a.astype(np.float32).reshape(8, 4, 128)
    # e4m3 has 3 mantissa bits: relative rounding error <= 2^-4 for normals; absolute for subnormals <= 2^-10 * scale
    bound = np.maximum(np.abs(orig) * 2.0 ** -4, 2.0 ** -10 * out["scale"][:, :, None])
    assert np.all(np.abs(deq - orig) <= bound * 1.0001)
    assert np.abs(out["q"].astype(np.float32)).max() == 448.0  # the amax element maps to 448 exactly
    big = ref.act_quant((np.ones((1, 128)) * 1000).astype(BF16))
    assert np.isfinite(big["q"].astype(np.float32)).all()


def test_act_quant_saturates_instead_of_nan():
    # 1e-4 floor: with amax tiny, a/scale of the largest element is 448 exactly; a row whose amax is below the floor
    # but whose values sit right at it stays finite too. Direct case: values scaled past 448 by the pow2 scale floor.
    a = np.zeros((1, 128), np.float32)
    a[0, 0], a[0, 1] = 2.0 ** -14, -(2.0 ** -14)  # amax 6.1e-5 < 1e-4: scale from the floor, q well inside range
    out = ref.act_quant(a.astype(BF16))
    assert np.isfinite(out["q"].astype(np.float32)).all()
    big = np.full((1, 128), 465.0, np.float32)
    assert np.isnan(big.astype(E4M3).astype(np.float32)).all()  # why the reference clips: ml_dtypes gives NaN here
    q = ref.act_quant(np.full((1, 128), 465.0, np.float32).astype(BF16))["q"].astype(np.float32)
    assert np.all(q == 448.0)


# ---------------------------------------------------------------- grouped_gemm, swiglu
def test_grouped_gemm_uses_the_block_expert_and_skips_negative_blocks(rng):
    p = Preset("hand", T=2, H=32, E=2, K=1, G=1, TG=1, I=8, BM=2)
    a = rng.standard_normal((6, 4)).astype(BF16)
    w = rng.standard_normal((2, 3, 4)).astype(BF16)
    out = ref.grouped_gemm(a, w, np.array([1, 0, -1]), np.array([6]), p)
    af, wf = a.astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(out[0:2], af[0:2] @ wf[1].T)
    np.testing.assert_allclose(out[2:4], af[2:4] @ wf[0].T)
    assert np.all(out[4:6] == 0)


def test_swiglu_hand_case():
    h = np.array([[0.0, 2.0, 5.0, 3.0]], np.float32).astype(BF16)
    out = ref.swiglu(h, np.array([1]))
    np.testing.assert_allclose(out, [[0.0, 2.0 / (1 + np.exp(-2.0)) * 3.0]])


def test_layer_reference_composes_the_kernels(seed):
    from contract.kernels import get_kernel

    inputs = get_kernel("layer").make_inputs(TINY, "balanced", seed)
    out = ref.layer(inputs["logits"], inputs["bias"], inputs["x"], inputs["W1"], inputs["W2"], TINY)["out"]
    g = ref.gate(inputs["logits"], inputs["bias"], TINY)
    t = 3
    acc = np.zeros(TINY.H)
    for k in range(TINY.K):
        e = g["topk_ids"][t, k]
        hidden = inputs["W1"][e].astype(np.float64) @ inputs["x"][t].astype(np.float64)
        gate_half, up = hidden[: TINY.I], hidden[TINY.I:]
        acc += g["topk_w"][t, k] * (inputs["W2"][e].astype(np.float64) @ (gate_half / (1 + np.exp(-gate_half)) * up))
    np.testing.assert_allclose(out[t], acc, rtol=1e-9, atol=1e-9)
    assert np.abs(out).max() > 0
