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


def first_mismatch(actual: np.ndarray, expected: np.ndarray) -> str:
    bad = np.argwhere(actual != expected)
    if bad.size == 0:
        return ""
    idx = tuple(int(i) for i in bad[0])
    return f"{bad.shape[0]} mismatches; first at {idx}: got {actual[idx]!r}, expected {expected[idx]!r}"


def exact(name: str, actual: np.ndarray, expected: np.ndarray) -> tuple[bool, str]:
    """Exact equality (bitwise for floats: compares the raw bits)."""
    if actual.shape != expected.shape:
        return False, f"{name}: shape {actual.shape}, expected {expected.shape}"
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    a = np.ascontiguousarray(actual).view(width)
    e = np.ascontiguousarray(expected.astype(actual.dtype)).view(width)
    where = first_mismatch(a, e)
    if where:
        return False, f"{name}: {where} (as raw bits)"
    return True, ""


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
