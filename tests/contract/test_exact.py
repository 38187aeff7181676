"""contract/checks.py: exact comparisons, whole and by chunks of rows, count and locate every mismatch."""
import numpy as np
import pytest

from contract import checks


def test_mismatches_are_counted_and_the_first_found_across_chunks(monkeypatch):
    """Chunks of two rows: mismatches in the 4th and 8th chunks are both counted, the first is named with its row in
    the whole array (not in its chunk); equal arrays give ""."""
    monkeypatch.setattr(checks, "COMPARE_CHUNK_ELEMENTS", 10)
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 16, (20, 5)).astype(np.uint16)
    b = a.copy()
    b[7, 3] ^= 1
    b[15, 1] ^= 4
    assert checks.first_mismatch(a, b) == f"2 mismatches; first at (7, 3): got {a[7, 3]!r}, expected {b[7, 3]!r}"
    assert checks.first_mismatch(a, a) == "" and checks.first_mismatch(a[:0], b[:0]) == ""
    ok, message = checks.exact("xp", a.view(np.float16), b.view(np.float16))
    assert not ok and message.startswith("xp: 2 mismatches; first at (7, 3)") and "(as raw bits)" in message


def test_exact_compares_raw_bits_without_a_copy_of_the_expected(monkeypatch):
    """NaNs with the same bits are equal (bitwise), -0.0 differs from 0.0; a same-dtype expected is not copied and
    the masks are one chunk's (the whole of dsv3-prefill's xp took 1.4 GB at once)."""
    nan = np.array([np.nan, -0.0, 1.0], np.float32)
    assert checks.exact("v", nan, nan.copy())[0]
    assert not checks.exact("v", nan, np.array([np.nan, 0.0, 1.0], np.float32))[0]
    monkeypatch.setattr(checks, "COMPARE_CHUNK_ELEMENTS", 1 << 18)
    big = np.zeros((1 << 12, 1 << 10), np.uint16)
    import tracemalloc

    tracemalloc.start()
    assert checks.exact("big", big, big)[0]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < big.nbytes // 8, peak  # a chunk's mask is 256 KiB; a copy of the expected would be 8 MiB


def test_exact_by_rows_says_what_exact_says_on_the_whole(monkeypatch):
    """Built a few rows at a time, the reference gives exact()'s verdict and message (count over every chunk, the
    first mismatch with its index in the whole array); a chunk of the wrong shape is named."""
    monkeypatch.setattr(checks, "COMPARE_CHUNK_ELEMENTS", 12)  # 3 rows of 4
    rng = np.random.default_rng(11)
    want = rng.standard_normal((10, 4)).astype(np.float32)
    got = want.copy()
    got[4, 2] = -got[4, 2]
    got[9, 0] = np.nan

    def rows(lo, hi):
        return want[lo:hi]

    assert checks.exact_by_rows("y", want, rows) == (True, "")
    assert checks.exact_by_rows("y", got, rows) == checks.exact("y", got, want)
    assert checks.exact("y", got, want)[1].startswith("y: 2 mismatches; first at (4, 2)")
    flat = np.arange(7, dtype=np.int32)
    bad = flat.copy()
    bad[5] = 0
    assert checks.exact_by_rows("v", bad, lambda lo, hi: flat[lo:hi]) == checks.exact("v", bad, flat)
    ok, message = checks.exact_by_rows("y", got, lambda lo, hi: want[lo:hi, :3])
    assert not ok and message.startswith("y[0:3]: shape (3, 4), expected (3, 3)")


def test_outputs_checked_together_share_each_chunks_reference(monkeypatch):
    """act_quant's q and scale come from one reference call per chunk, sized by the wider q; a mismatch in each is
    counted and named at its row in the whole array, and a reference chunk of the wrong shape is named."""
    monkeypatch.setattr(checks, "COMPARE_CHUNK_ELEMENTS", 64)  # q rows are 16 wide: 4 rows a chunk
    rng = np.random.default_rng(3)
    q = rng.integers(0, 255, (18, 16)).astype(np.uint8)
    scale = rng.standard_normal((18, 2)).astype(np.float32)
    want_q, want_scale = q.copy(), scale.copy()
    want_q[13, 6] ^= 1
    want_scale[17, 1] *= 2
    calls = []

    def rows(lo, hi):
        calls.append((lo, hi))
        return {"q": want_q[lo:hi], "scale": want_scale[lo:hi]}

    found = checks.exact_many_by_rows({"scale": scale, "q": q}, rows)
    assert calls == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 18)]
    assert found["q"] == (False, f"q: 1 mismatches; first at (13, 6): got {q[13, 6]!r}, expected {want_q[13, 6]!r} "
                                 "(as raw bits)")
    assert not found["scale"][0] and found["scale"][1].startswith("scale: 1 mismatches; first at (17, 1)")
    same = checks.exact_many_by_rows({"q": q}, lambda lo, hi: {"q": q[lo:hi]})
    assert same == {"q": (True, "")}
    short = checks.exact_many_by_rows({"q": q}, lambda lo, hi: {"q": q[lo:hi, :8]})
    assert short["q"] == (False, "q[0:4]: shape (4, 16), expected (4, 8)")
    from contract.errors import CheckError

    with pytest.raises(CheckError, match=r"\['q', 'scale'\] have \[17, 18\] rows"):
        checks.exact_many_by_rows({"scale": scale, "q": q[:17]}, rows)
