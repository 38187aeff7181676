"""References on a subset equal the same part of the full reference, and a sampled run is checked on exactly what
its CTAs wrote (and fails when a written part is wrong, a tile is partial, or nothing was written)."""
import numpy as np
import pytest

from contract import reference as ref
from contract.coverage import POISON_BYTE, tile_holes, written
from contract.kernels import get_kernel
from contract.presets import get_preset

TINY = get_preset("tiny")


def test_subset_references_match_the_full_ones():
    g = get_kernel("grouped_gemm").make_inputs(TINY, "imbalanced", 2, lazy=True)
    full = ref.grouped_gemm(np.asarray(g["a"]), np.asarray(g["w"]), g["block_expert"], g["total_padded"], TINY)
    used = [b for b in range(int(g["total_padded"][0]) // TINY.BM) if g["block_expert"][b] >= 0]
    some = used[::3]
    cols = {some[0]: np.array([1, 5, 7])}
    part = ref.grouped_gemm_blocks(g["a"], g["w"], g["block_expert"], some, TINY, cols)
    for b in some:
        expect = full[b * TINY.BM: (b + 1) * TINY.BM]
        np.testing.assert_array_equal(part[b], expect[:, cols[b]] if b in cols else expect)
    rows = np.array([0, 3, 17])
    s = get_kernel("swiglu").make_inputs(TINY, "balanced", 1, lazy=True)
    np.testing.assert_array_equal(ref.swiglu(s["h"], s["total_padded"], rows=rows),
                                  ref.swiglu(np.asarray(s["h"]), s["total_padded"])[rows])
    c = get_kernel("combine").make_inputs(TINY, "balanced", 1, lazy=True)
    np.testing.assert_array_equal(ref.combine(c["y"], c["topk_w"], c["inverse"], tokens=rows),
                                  ref.combine(np.asarray(c["y"]), c["topk_w"], c["inverse"])[rows])
    p = get_kernel("permute").make_inputs(TINY, "balanced", 1, lazy=True)
    np.testing.assert_array_equal(ref.permute(p["x"], p["sorted_ids"], p["total_padded"], TINY, rows=rows),
                                  ref.permute(np.asarray(p["x"]), p["sorted_ids"], p["total_padded"], TINY)[rows])
    gi = get_kernel("gate").make_inputs(TINY, "balanced", 1)
    full_g, part_g = ref.gate(gi["logits"], gi["bias"], TINY), ref.gate(gi["logits"], gi["bias"], TINY, tokens=rows)
    np.testing.assert_array_equal(part_g["topk_ids"], full_g["topk_ids"][rows])
    aq = get_kernel("act_quant").make_inputs(TINY, "balanced", 1)
    np.testing.assert_array_equal(ref.act_quant(aq["a"], rows=rows)["q"].view(np.uint8),
                                  ref.act_quant(aq["a"])["q"][rows].view(np.uint8))


def test_written_and_tile_holes():
    c = np.full((6, 6), np.nan, np.float32)
    c.view(np.uint32)[:] = 0xFFFFFFFF
    c[:, 2:4] = 1.0
    c[4:, 4:] = 2.0  # another tile, rows 4-5
    assert written(c).sum() == 16
    assert tile_holes(written(c)) == ""
    c.view(np.uint32)[2, 3] = 0xFFFFFFFF  # a hole inside the first tile
    problem = tile_holes(written(c))
    assert "row 2" in problem and "column 3" in problem


def _sampled(kernel, impl="ptx", ctas=3, **params):
    import importlib

    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel, was_sampled

    run = importlib.import_module(f"{impl}_impl").IMPLEMENTATION.kernels[kernel]
    # waves of `ctas` CTAs (sampling simulates whole waves; the device's wave would cover a tiny grid whole)
    backend = SimBackend(sample_ctas=ctas, wave_ctas=ctas)
    inputs, outputs, records = run_kernel(run, backend, kernel, TINY, "balanced", 4, lazy=True, **params)
    assert was_sampled(records)
    return inputs, outputs


def test_sampled_grouped_gemm_checks_exactly_the_written_tiles():
    spec = get_kernel("grouped_gemm")
    inputs, outputs = _sampled("grouped_gemm", ctas=5, variant="up")
    result = spec.check(outputs, inputs, TINY, sampled=True)
    assert result.ok, result.message
    assert 0 < result.errors["coverage"] < 1 and result.errors["blocks_checked"] >= 1
    assert not spec.check(outputs, inputs, TINY).ok  # unsampled check: the unwritten rest is an error
    c = outputs["c"]
    m = written(c)
    inner = np.zeros_like(m)
    inner[1:-1] = m[1:-1] & m[:-2] & m[2:]  # written, with written elements above and below: inside a tile
    inner[np.arange(len(m)) % TINY.BM == 0] = inner[np.arange(len(m)) % TINY.BM == TINY.BM - 1] = False
    r, col = np.argwhere(inner)[0]
    bad = dict(outputs, c=c.copy())
    bad["c"][r, col] = np.float32(bad["c"][r, col].astype(np.float32) * 4 + 3)
    assert not spec.check(bad, inputs, TINY, sampled=True).ok
    hole = dict(outputs, c=c.copy())
    hole["c"].view(np.uint16)[r, col] = POISON_BYTE * 0x101
    res = spec.check(hole, inputs, TINY, sampled=True)
    assert not res.ok and "partial tile" in res.message
    none = dict(outputs, c=np.full_like(c, np.nan))
    none["c"].view(np.uint16)[:] = 0xFFFF
    res = spec.check(none, inputs, TINY, sampled=True)
    assert not res.ok and "wrote no element" in res.message


@pytest.mark.parametrize("kernel", ["swiglu", "combine", "gate", "permute", "act_quant"])
def test_sampled_elementwise_kernels(kernel):
    spec = get_kernel(kernel)
    inputs, outputs = _sampled(kernel, ctas=1)
    name = spec.output_specs(TINY, inputs)[0].name
    result = spec.check(outputs, inputs, TINY, sampled=True)
    assert result.ok, result.message
    assert 0 < result.errors["coverage"] < 1
    out = outputs[name].copy()
    idx = tuple(np.argwhere(written(out))[-1])
    if out.dtype.itemsize >= 2 and out.dtype.kind != "i":  # bf16 / f32: well outside the tolerances
        out[idx] = out[idx].astype(np.float32) * 3 + 1
    else:  # ids and e4m3 codes are checked exactly: flip a bit (never into the poison byte, which reads as unwritten)
        raw = out.view(np.uint8).reshape(*out.shape, out.dtype.itemsize)
        raw[idx][0] ^= 1 if raw[idx][0] ^ 1 != POISON_BYTE else 2
    assert not spec.check(dict(outputs, **{name: out}), inputs, TINY, sampled=True).ok


def test_full_checks_report_full_coverage_and_layer_refuses_sampled():
    import ptx_impl
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    result = run_and_check(ptx_impl.IMPLEMENTATION.kernels["grouped_gemm"], SimBackend(), "grouped_gemm", TINY,
                           "balanced", 0, variant="up")
    assert result.ok and result.errors["coverage"] == 1.0 and result.errors["sampled"] is False
    res = get_kernel("layer").check({}, {}, TINY, sampled=True)
    assert not res.ok and "not checkable" in res.message


def test_take_rows_of_a_lazy_tensor_any_order_and_repeats():
    from contract.generators import KeyedNormal

    t = KeyedNormal("y", (50, 70), seed=1)
    rows = np.array([5, 3, 4, 4, 49, 0, 7])
    np.testing.assert_array_equal(ref.take_rows(t, rows).view(np.uint16), t.materialise()[rows].view(np.uint16))
    assert ref.take_rows(t, np.array([], np.int64)).shape == (0, 70)
