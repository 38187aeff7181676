"""contract.checks.compare_float_rows and the chunked unwritten(): the figures of a whole-array check (normwise error,
worst bf16 ulps and where) a chunk of rows at a time, so swiglu's and combine's checks at dsv3-prefill hold a chunk of
float64 reference, not the whole (5.2 GB and 3.9 GB before)."""
import numpy as np

import contract.checks as checks
from contract.checks import bf16_ulp, compare_float_rows, normwise_rel_error, unwritten
from contract.generators import BF16


def _whole(actual, expected):
    """The whole-array figures the checks computed before: the reference for the chunked ones."""
    got = actual.astype(np.float64)
    ulps = np.abs(got - expected) / bf16_ulp(expected)
    ulps = np.where(np.isnan(ulps), np.inf, ulps)
    where = np.unravel_index(int(np.argmax(ulps)), ulps.shape)
    return normwise_rel_error(actual, expected), float(ulps.max()), tuple(int(i) for i in where)


def test_chunks_give_the_whole_arrays_figures(monkeypatch):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    expected = rng.standard_normal((301, 96))
    actual = (expected * (1 + 1e-3 * rng.standard_normal(expected.shape))).astype(BF16)
    actual[250, 17] = BF16.type(expected[250, 17] * 1.5)  # the worst element, in a late chunk
    monkeypatch.setattr(checks, "FLOAT_CHUNK_ELEMENTS", 96 * 7)  # 7 rows a chunk: 43 chunks, the last short
    calls = []

    def rows(lo, hi):
        calls.append((lo, hi))
        return expected[lo:hi]

    stats = compare_float_rows(actual, rows, ulps=True)
    err, worst, where = _whole(actual, expected)
    assert len(calls) == 43 and max(hi - lo for lo, hi in calls) == 7  # never the whole reference at once
    assert np.isclose(stats.normwise_rel, err, rtol=1e-12) and stats.worst_ulps == worst
    assert stats.where == where == (250, 17) and stats.got == float(actual[250, 17].astype(np.float64))
    assert stats.expected == expected[250, 17]


def test_an_unwritten_element_is_infinitely_wrong_and_found_in_any_chunk(monkeypatch):
    monkeypatch.setattr(checks, "FLOAT_CHUNK_ELEMENTS", 64)
    expected = np.linspace(1, 2, 40 * 16).reshape(40, 16)
    actual = expected.astype(BF16)
    actual[33, 5] = BF16.type(np.nan)
    stats = compare_float_rows(actual, lambda lo, hi: expected[lo:hi], ulps=True)
    assert stats.worst_ulps == np.inf and stats.where == (33, 5) and not stats.normwise_rel <= 1e-2
    assert unwritten("a", actual) == (False, "a: 1 elements unwritten or NaN; first at (33, 5)")
    actual[37, 0] = BF16.type(np.nan)
    actual[2, 9] = BF16.type(np.nan)
    assert unwritten("a", actual) == (False, "a: 3 elements unwritten or NaN; first at (2, 9)")
    assert unwritten("a", actual[:2]) == (True, "")
    assert unwritten("ids", np.full((40, 3), -1, np.int32)) == (True, "")  # not a float: nothing to say


def test_a_reference_of_the_wrong_shape_is_named():
    import pytest

    from contract.errors import CheckError

    with pytest.raises(CheckError, match=r"rows \[0:4\] have shape \(4, 3\), expected \(4, 2\)"):
        compare_float_rows(np.ones((4, 2)), lambda lo, hi: np.ones((hi - lo, 3)))
