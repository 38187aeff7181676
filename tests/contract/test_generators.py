"""Keyed inputs: an element's value depends on (seed, tensor name, index) only, never on how the tensor is cut."""
from itertools import pairwise

import numpy as np
import pytest

from contract.errors import InputError
from contract.generators import (
    BF16,
    E4M3,
    STREAM_BLOCK,
    KeyedE4M3,
    KeyedNormal,
    fill_chunks,
    keyed_bf16,
    keyed_scales,
    tensor_key,
    write_chunked,
)
from contract.kernels import get_kernel
from contract.presets import PRESETS

SMALL = PRESETS["small"]


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def test_same_element_same_value_however_cut():
    t = KeyedNormal("w", (3, 50, 1000), seed=7, std=0.25)
    whole = bits(t.materialise()).reshape(-1)
    assert t.size > 3 * STREAM_BLOCK  # crosses stream blocks
    for chunk in (4094, 65536, 1 << 20):  # bytes: inside a block, page-sized, several blocks
        pieces = [bits(t.fill_bytes(s, min(s + chunk, t.nbytes)).view(BF16)) for s in range(0, t.nbytes, chunk)]
        assert np.array_equal(np.concatenate(pieces), whole)
    assert np.array_equal(bits(t[1]), bits(t.materialise()[1]))
    assert np.array_equal(bits(t[1:3]).reshape(-1), whole[50000:])
    for lo, hi in ((0, 1), (32767, 32770), (149999, 150000), (5, 5)):  # single elements, across a block boundary
        assert np.array_equal(bits(t.elements(lo, hi)), whole[lo:hi])


def test_fill_chunks_covers_the_tensor_once_in_order():
    t = KeyedNormal("x", (5, 20000), seed=1)
    offsets, pieces = zip(*fill_chunks(t, chunk_bytes=3 * STREAM_BLOCK * 2), strict=True)
    assert offsets[0] == 0 and all(b - a == p.size for (a, b), p in zip(pairwise(offsets), pieces[:-1], strict=True))
    assert max(p.size for p in pieces) <= 3 * STREAM_BLOCK * 2
    assert np.array_equal(np.concatenate(pieces), t.materialise().reshape(-1).view(np.uint8))
    arr = np.arange(10, dtype=np.float32)
    assert np.array_equal(np.concatenate([p for _, p in fill_chunks(arr, 12)]).view(np.float32), arr)
    with pytest.raises(InputError, match="chunk_bytes"):
        list(fill_chunks(t, 0))


def test_write_chunked_fills_device_memory_a_chunk_at_a_time():
    from ptxsim.device import Device

    t = KeyedNormal("layer.W1", (4, 64, 1024), seed=9, std=0.03)
    dev = Device()
    buf = dev.alloc(t.nbytes)  # an ordinary (eager) device buffer, as on a GPU
    sizes = []

    def write(offset, chunk):
        sizes.append(chunk.size)
        dev.gmem.write_bytes(buf.addr + offset, chunk)

    assert write_chunked(t, write, chunk_bytes=STREAM_BLOCK * 2 * 2) == t.nbytes
    assert len(sizes) == 4 and max(sizes) == STREAM_BLOCK * 2 * 2
    got = dev.read(buf, BF16, t.shape)
    assert np.array_equal(bits(got), bits(t.materialise()))


def test_keys_separate_tensors_and_seeds():
    assert not np.array_equal(tensor_key(0, "a"), tensor_key(0, "b"))
    a = keyed_bf16(0, "a", (4096,))
    assert not np.array_equal(bits(a), bits(keyed_bf16(0, "b", (4096,))))
    assert not np.array_equal(bits(a), bits(keyed_bf16(1, "a", (4096,))))
    assert np.array_equal(bits(a), bits(keyed_bf16(0, "a", (4096,))))


def test_values_are_normal_never_zero_and_scaled():
    v = keyed_bf16(3, "w", (200, 1000), std=0.5).astype(np.float64)
    assert np.count_nonzero(v) > 0.99 * v.size
    assert abs(v.mean()) < 0.01 and abs(v.std() - 0.5) < 0.01


def test_bad_ranges_are_input_errors():
    t = KeyedNormal("w", (10,), seed=0)
    with pytest.raises(InputError, match=r"elements \[0, 11\)"):
        t.elements(0, 11)
    with pytest.raises(InputError, match="element boundaries"):
        t.fill_bytes(1, 4)
    with pytest.raises(InputError, match="row 10"):
        t[10]


def test_e4m3_codes_same_however_cut_saturated_and_realistic():
    t = KeyedE4M3("w", (3, 40, 2000), seed=9)
    whole = t.materialise()
    assert whole.dtype == E4M3 and t.nbytes == whole.size
    cut = np.concatenate([t.fill_bytes(a, b) for a, b in pairwise((0, 1, STREAM_BLOCK + 3, 100_001, t.nbytes))])
    assert np.array_equal(cut, whole.reshape(-1).view(np.uint8))
    assert np.array_equal(t[1:3].view(np.uint8), whole[1:3].view(np.uint8))
    codes = whole.astype(np.float32)
    assert np.isfinite(codes).all() and np.abs(codes).max() == 448  # 4-sigma tails saturate instead of NaN
    assert np.count_nonzero(codes) > 0.99 * codes.size and 100 < codes.std() < 120
    assert not np.array_equal(KeyedE4M3("w", (10,), seed=9).materialise().view(np.uint8),
                              KeyedE4M3("v", (10,), seed=9).materialise().view(np.uint8))


def test_keyed_scales_are_powers_of_two_apart_keyed_and_positive():
    s = keyed_scales(4, "s", (50, 60), base=0.01)
    ratio = np.log2(s.astype(np.float64) / np.float32(0.01))
    assert set(np.unique(np.rint(ratio))) == {-2, -1, 0, 1, 2} and np.allclose(ratio, np.rint(ratio))
    assert np.array_equal(s, keyed_scales(4, "s", (50, 60), base=0.01))
    assert not np.array_equal(s, keyed_scales(5, "s", (50, 60), base=0.01))


@pytest.mark.parametrize(("kernel", "params"), [("grouped_gemm", {}), ("swiglu", {}), ("combine", {}),
                                                ("permute", {}), ("layer", {}), ("layer", {"variant": "fp8"}),
                                                ("grouped_gemm_fp8", {"variant": "down"})])
def test_lazy_inputs_equal_materialised(kernel, params):
    spec = get_kernel(kernel)
    eager = spec.make_inputs(SMALL, "balanced", 5, **params)
    lazy = spec.make_inputs(SMALL, "balanced", 5, lazy=True, **params)
    assert any(isinstance(v, KeyedNormal) for v in lazy.values())
    for name, value in eager.items():
        assert isinstance(value, np.ndarray)
        got = np.asarray(lazy[name])
        assert got.shape == value.shape and np.array_equal(got.view(np.uint8), value.view(np.uint8)), name
        if value.dtype in (BF16, E4M3):
            assert np.count_nonzero(value.astype(np.float32)) > 0.99 * value.size, name


def test_skews_still_shape_the_routing():
    counts = {}
    for skew in ("balanced", "extreme"):
        ids = get_kernel("align").make_inputs(SMALL, skew, 0)["topk_ids"]
        counts[skew] = np.bincount(ids.reshape(-1), minlength=SMALL.E)
    favoured = np.sort(counts["extreme"])[-SMALL.K:]
    assert favoured.min() >= SMALL.T * 0.9  # the K favoured experts take (nearly) every token
    assert counts["balanced"].max() < favoured.min()


def test_drawn_blocks_are_cached_within_a_budget_and_never_shared_writable(monkeypatch):
    """A block drawn once (the simulator's page fill) is served again from the cache (the check's reference), the same
    values as a fresh draw; the oldest blocks go past the budget; callers get their own arrays."""
    import contract.generators as gen

    monkeypatch.setattr(gen, "BLOCK_CACHE_BYTES", 3 * gen.STREAM_BLOCK * 2)  # three bf16 blocks
    monkeypatch.setattr(gen, "_block_cache", {})
    monkeypatch.setattr(gen, "_block_cache_bytes", 0)
    t = KeyedNormal("w_cache", (8, gen.STREAM_BLOCK), 5, 0.5)
    first = t.elements(0, 4 * gen.STREAM_BLOCK)  # blocks 0-3: block 0 evicted
    assert sorted(b for (_, b) in gen._block_cache) == [1, 2, 3] and gen._block_cache_bytes == 3 * gen.STREAM_BLOCK * 2
    first[:] = 0  # the caller's copy, not the cache's
    again = t.elements(gen.STREAM_BLOCK, 3 * gen.STREAM_BLOCK)
    gen._block_cache.clear()
    gen._block_cache_bytes = 0
    fresh = t.elements(gen.STREAM_BLOCK, 3 * gen.STREAM_BLOCK)
    assert np.array_equal(again.view(np.uint16), fresh.view(np.uint16)) and np.count_nonzero(again.view(np.uint16))
    # the e4m3 payload of the same name and seed is another tensor: its own blocks
    q = KeyedE4M3("w_cache", (8, gen.STREAM_BLOCK), 5)
    assert q.elements(0, 16).dtype == E4M3 and len({k[0] for k in gen._block_cache}) == 2


def test_every_kernels_inputs_are_what_its_input_specs_declare():
    """contract.shapes: the inputs make_inputs draws (lazy or not) have exactly the declared names, shapes and dtypes
    at tiny and small, and an input of another shape or dtype is refused naming it and what was expected."""
    import numpy as np
    import pytest

    from contract.errors import InputError
    from contract.kernels import KERNELS
    from contract.presets import get_preset

    for preset in (get_preset("tiny"), get_preset("small")):
        for spec in KERNELS.values():
            for variant in spec.variants or (None,):
                params = {"variant": variant} if variant else {}
                inputs = spec.checked_inputs(preset, "balanced", 3, **params)  # raises on any difference
                assert set(inputs) == {s.name for s in spec.input_specs(preset, **params)} <= set(spec.inputs)
    spec, tiny = KERNELS["grouped_gemm"], get_preset("tiny")
    lazy = spec.checked_inputs(tiny, "balanced", 3, lazy=True, variant="up")
    assert not isinstance(lazy["w"], np.ndarray)  # checked by its shape and dtype, not drawn
    bad = dict(spec.make_inputs(tiny, "balanced", 3, variant="up"))
    bad["w"] = bad["w"][:, :, :128]
    from contract.shapes import check_args

    with pytest.raises(InputError, match=r"grouped_gemm: input w is bfloat16 of shape \(16, 256, 128\); expected "
                                         r"bfloat16 of shape \(16, 256, 256\)"):
        check_args("grouped_gemm", spec.input_specs(tiny, variant="up"), bad)
    with pytest.raises(InputError, match=r"missing total_padded"):
        check_args("grouped_gemm", spec.input_specs(tiny, variant="up"), {k: v for k, v in bad.items()
                                                                            if k != "total_padded"})
