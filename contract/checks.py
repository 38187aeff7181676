"""Checkers with the tolerances of kernels.md. Each returns a CheckResult naming what failed and where."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contract.errors import CheckError
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
    return exact_many_by_rows({name: actual}, lambda lo, hi: {name: expected_rows(lo, hi)})[name]


def exact_many_by_rows(actuals: dict[str, np.ndarray], expected_rows) -> dict[str, tuple[bool, str]]:
    """exact_by_rows of several outputs with the same leading axis whose reference comes together (act_quant's q and
    scale): `expected_rows(lo, hi)` gives {name: rows [lo, hi)} once per chunk, the chunk sized by the widest."""
    n_rows = {a.shape[0] for a in actuals.values()}
    if len(n_rows) != 1:
        raise CheckError(f"exact_many_by_rows: {sorted(actuals)} have {sorted(n_rows)} rows, expected one count")
    (rows,) = n_rows
    step = min(_chunk_rows(a, COMPARE_CHUNK_ELEMENTS) for a in actuals.values())
    counts = dict.fromkeys(actuals, 0)
    first: dict[str, tuple] = {}
    bad_shape: dict[str, str] = {}
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        expected = expected_rows(lo, hi)
        for name, actual in actuals.items():
            if name in bad_shape:
                continue
            if expected[name].shape != actual[lo:hi].shape:
                bad_shape[name] = f"{name}[{lo}:{hi}]: shape {actual[lo:hi].shape}, expected {expected[name].shape}"
                continue
            a, e = _raw_bits(actual[lo:hi], expected[name])
            n, at = _mismatches(a, e)
            if n and name not in first:
                first[name] = ((at[0] + lo, *at[1:]), a[at], e[at])
            counts[name] += n
    out = {}
    for name in actuals:
        if name in bad_shape:
            out[name] = (False, bad_shape[name])
        elif counts[name]:
            out[name] = (False, f"{name}: {_mismatch_text(counts[name], *first[name])} (as raw bits)")
        else:
            out[name] = (True, "")
    return out


def unwritten(name: str, actual: np.ndarray) -> tuple[bool, str]:
    """Poisoned (NaN) floats mean elements the kernel never wrote. Looked at a chunk of leading-axis rows at a time
    (a bf16 array is widened to float32 to test it: 0.4 GB for the whole of dsv3-prefill's swiglu a)."""
    if actual.dtype != BF16 and actual.dtype.kind != "f":
        return True, ""
    count, first = 0, None
    step = _chunk_rows(actual, FLOAT_CHUNK_ELEMENTS) if actual.ndim else 1
    for lo in range(0, max(1, actual.shape[0] if actual.ndim else 1), step):
        part = actual[lo: lo + step] if actual.ndim else actual
        values = part.astype(np.float32) if part.dtype == BF16 else part
        nan = np.isnan(values)
        n = int(np.count_nonzero(nan))
        if n and first is None:
            at = np.argwhere(nan)[0]
            first = (int(at[0]) + lo, *(int(i) for i in at[1:])) if actual.ndim else ()
        count += n
    if count:
        return False, f"{name}: {count} elements unwritten or NaN; first at {first}"
    return True, ""


FLOAT_CHUNK_ELEMENTS = 1 << 22  # float64 rows compared at a time (32 MB an array; a reference's temporaries are 4-6)


def _chunk_rows(actual: np.ndarray, elements: int) -> int:
    return max(1, elements // max(1, int(np.prod(actual.shape[1:], dtype=np.int64))))


@dataclass(frozen=True)
class FloatErrors:
    """compare_float_rows' result: the normwise relative error and, if asked, the worst error in bf16 ulps (NaN counts
    as infinitely wrong), where (an index of `actual`) and the two values there."""

    normwise_rel: float
    worst_ulps: float = 0.0
    where: tuple = ()
    got: float = 0.0
    expected: float = 0.0


def compare_float_rows(actual: np.ndarray, expected_rows, ulps: bool = False) -> FloatErrors:
    """normwise_rel_error (and with `ulps`, the worst bf16-ulp error as kernels.md's swiglu check reads it) of
    `actual` against a float64 reference built a chunk of leading-axis rows at a time (`expected_rows(lo, hi)` gives
    rows [lo, hi)), so neither the float64 reference nor its temporaries are ever whole: at dsv3-prefill swiglu's
    whole check held 5.2 GB that way, combine's 3.9 GB. The same figures as on whole arrays (up to the sums' order)."""
    n_rows = actual.shape[0] if actual.ndim else 1
    step = _chunk_rows(actual, FLOAT_CHUNK_ELEMENTS) if actual.ndim else 1
    err_sq = ref_sq = 0.0
    worst, where, got_at, expected_at = 0.0, None, 0.0, 0.0
    for lo in range(0, n_rows, step):
        hi = min(n_rows, lo + step)
        a = (actual[lo:hi] if actual.ndim else actual).astype(np.float64)
        e = np.asarray(expected_rows(lo, hi), np.float64)
        if e.shape != a.shape:
            raise CheckError(f"compare_float_rows: reference rows [{lo}:{hi}] have shape {e.shape}, expected {a.shape}")
        diff = a - e
        err_sq += float(np.dot(diff.ravel(), diff.ravel()))
        ref_sq += float(np.dot(e.ravel(), e.ravel()))
        if ulps and diff.size:
            u = np.abs(diff, out=diff) / bf16_ulp(e)
            u[np.isnan(u)] = np.inf  # an unwritten (NaN) element is infinitely wrong
            at = int(np.argmax(u))
            if where is None or u.flat[at] > worst:
                local = np.unravel_index(at, u.shape)
                worst, got_at, expected_at = float(u.flat[at]), float(a[local]), float(e[local])
                where = (int(local[0]) + lo, *(int(i) for i in local[1:])) if actual.ndim else ()
    err, denom = float(np.sqrt(err_sq)), float(np.sqrt(ref_sq))
    return FloatErrors(err / denom if denom > 0 else err, worst, where or (), got_at, expected_at)


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
