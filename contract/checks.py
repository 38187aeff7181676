"""Checkers with the tolerances of kernels.md. Each returns a CheckResult naming what failed and where."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contract.generators import BF16


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    kernel: str
    message: str
    errors: dict = field(default_factory=dict)  # error norms / counts, for run.json

    def __bool__(self) -> bool:
        return self.ok


COMPARE_CHUNK_ELEMENTS = 1 << 24  # compared at a time: the masks of a whole dsv3-prefill xp took 1.4 GB at the peak


def _mismatches(actual: np.ndarray, expected: np.ndarray) -> tuple[int, tuple | None]:
    """(how many elements differ, the first's index in C order), compared in chunks of leading-axis entries so the
    temporaries stay small whatever the arrays' size."""
    actual, expected = np.broadcast_arrays(actual, expected)
    if actual.ndim == 0:
        return (0, None) if actual == expected else (1, ())
    step = max(1, COMPARE_CHUNK_ELEMENTS // max(1, int(np.prod(actual.shape[1:], dtype=np.int64))))
    count, first = 0, None
    for lo in range(0, actual.shape[0], step):
        differ = actual[lo: lo + step] != expected[lo: lo + step]
        n = int(np.count_nonzero(differ))
        if n and first is None:
            at = np.argwhere(differ)[0]
            first = (int(at[0]) + lo, *(int(i) for i in at[1:]))
        count += n
    return count, first


def _mismatch_text(count: int, first: tuple, got, expected) -> str:
    return f"{count} mismatches; first at {first}: got {got!r}, expected {expected!r}"


def first_mismatch(actual: np.ndarray, expected: np.ndarray) -> str:
    """"" when equal, else how many elements differ and the first (in C order), with both values."""
    count, first = _mismatches(actual, expected)
    if not count:
        return ""
    actual, expected = np.broadcast_arrays(actual, expected)
    return _mismatch_text(count, first, actual[first], expected[first])


def _raw_bits(actual: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays as unsigned words of actual's width (expected cast to actual's dtype first; no copy if it is)."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    a = np.ascontiguousarray(actual).view(width)
    e = np.ascontiguousarray(np.asarray(expected).astype(actual.dtype, copy=False)).view(width)
    return a, e


def exact(name: str, actual: np.ndarray, expected: np.ndarray) -> tuple[bool, str]:
    """Exact equality (bitwise for floats: compares the raw bits)."""
    if actual.shape != expected.shape:
        return False, f"{name}: shape {actual.shape}, expected {expected.shape}"
    where = first_mismatch(*_raw_bits(actual, expected))
    if where:
        return False, f"{name}: {where} (as raw bits)"
    return True, ""


def exact_by_rows(name: str, actual: np.ndarray, expected_rows) -> tuple[bool, str]:
    """exact() of `actual` against a reference built a chunk of leading-axis rows at a time (`expected_rows(lo, hi)`
    gives rows [lo, hi)): the same verdict and message as exact() on the whole reference, which at dsv3-prefill is
    hundreds of MB (permute's xp) that need not be held at once."""
    step = max(1, COMPARE_CHUNK_ELEMENTS // max(1, int(np.prod(actual.shape[1:], dtype=np.int64))))
    count, first = 0, None
    for lo in range(0, actual.shape[0], step):
        hi = min(actual.shape[0], lo + step)
        expected = expected_rows(lo, hi)
        if expected.shape != actual[lo:hi].shape:
            return False, f"{name}[{lo}:{hi}]: shape {actual[lo:hi].shape}, expected {expected.shape}"
        a, e = _raw_bits(actual[lo:hi], expected)
        n, at = _mismatches(a, e)
        if n and first is None:
            first = ((at[0] + lo, *at[1:]), a[at], e[at])
        count += n
    if not count:
        return True, ""
    return False, f"{name}: {_mismatch_text(count, *first)} (as raw bits)"


def unwritten(name: str, actual: np.ndarray) -> tuple[bool, str]:
    """Poisoned (NaN) floats mean elements the kernel never wrote."""
    values = actual.astype(np.float32) if actual.dtype == BF16 else actual
    if values.dtype.kind != "f":
        return True, ""
    nan = np.argwhere(np.isnan(values))
    if nan.size:
        return False, f"{name}: {nan.shape[0]} elements unwritten or NaN; first at {tuple(int(i) for i in nan[0])}"
    return True, ""


def normwise_rel_error(actual: np.ndarray, expected: np.ndarray) -> float:
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    denom = np.linalg.norm(e)
    err = np.linalg.norm(a - e)
    return float(err / denom) if denom > 0 else float(err)


def bf16_ulp(values: np.ndarray) -> np.ndarray:
    """Spacing of bf16 numbers at each value (8 bits of precision: 2^(exponent-7))."""
    v = np.abs(values.astype(np.float64))
    v = np.maximum(v, np.finfo(np.float32).tiny)
    return np.ldexp(1.0, np.floor(np.log2(v)).astype(np.int64) - 7)


def untouched(name: str, actual: np.ndarray, poison: np.ndarray) -> tuple[bool, str]:
    """Rows that a kernel must not write still hold the poison bytes."""
    ok, msg = exact(name, actual, poison)
    return ok, (msg.replace(name, f"{name} (rows that must stay untouched)") if not ok else "")
