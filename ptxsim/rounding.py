"""Round exact values once to a narrower float format, with every PTX rounding mode.

Two entry points, both vectorised and exact (no double rounding anywhere):
- `round_float(x, fmt, mode)`: an f64 value (exact source) to f64/f32/f16/bf16;
- `round_int(v, signed, fmt, mode)`: a 64-bit integer to the same formats (f64 cannot hold every u64/s64, so the
  integer is rounded to the format's precision in integer arithmetic first).
Both return the rounded value as float64 (every f32/f16/bf16 value is exact in f64); `to_format` packs it.
Overflow follows IEEE 754: .rn -> +-inf, .rz -> +-max, .rm -> +max / -inf, .rp -> +inf / -max; infinities and NaN
pass through every mode unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    name: str
    precision: int  # significand bits, hidden bit included
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite

    @property
    def max(self) -> float:
        return (2.0 - 2.0 ** (1 - self.precision)) * 2.0 ** self.emax


FORMATS = {f.name: f for f in (FloatFormat("f64", 53, -1022, 1023), FloatFormat("f32", 24, -126, 127),
                               FloatFormat("f16", 11, -14, 15), FloatFormat("bf16", 8, -126, 127))}
_MODES = (".rn", ".rz", ".rm", ".rp")


def _round_up(neg, odd, rem_sign, half_cmp, mode):
    """Whether to add one unit in the last place. rem_sign: remainder > 0; half_cmp: remainder vs half an ulp
    (-1, 0, 1); neg: sign of the value; odd: the truncated significand is odd."""
    if mode == ".rn":
        return (half_cmp > 0) | ((half_cmp == 0) & odd)
    if mode == ".rz":
        return np.zeros_like(rem_sign)
    if mode == ".rm":
        return rem_sign & neg
    if mode == ".rp":
        return rem_sign & ~neg
    raise ValueError(f"rounding mode {mode!r} (expected one of {_MODES})")


def _overflow(val, neg, fmt: FloatFormat, mode):
    """Apply the IEEE overflow rule to rounded magnitudes `val` (f64, may exceed fmt.max)."""
    over = val > fmt.max
    if not over.any():
        return val
    to_inf = {".rn": np.ones_like(neg), ".rz": np.zeros_like(neg), ".rm": neg, ".rp": ~neg}[mode]
    return np.where(over, np.where(to_inf, np.inf, fmt.max), val)


def round_float(x, fmt_name: str, mode: str = ".rn") -> np.ndarray:
    """The exact f64 values x rounded once to format fmt_name (as f64 values)."""
    fmt = FORMATS[fmt_name]
    x = np.asarray(x, np.float64)
    if fmt.name == "f64":
        return x
    a = np.abs(x)
    neg = np.signbit(x)
    special = ~np.isfinite(a) | (a == 0)
    safe = np.where(special, 1.0, a)
    _, e = np.frexp(safe)  # safe = f * 2**e, f in [0.5, 1): unbiased exponent e - 1
    exp = np.clip(e - 1, fmt.emin, fmt.emax + 1)
    shift = (fmt.precision - 1) - exp  # safe * 2**shift has precision-1 fractional... integer part = significand
    m = np.ldexp(safe, shift)  # exact (power-of-two scaling inside f64's range)
    mi = np.floor(m)
    rem = m - mi  # exact, in [0, 1)
    up = _round_up(neg, np.fmod(mi, 2) == 1, rem > 0, np.sign(rem - 0.5), mode)
    val = np.ldexp(mi + up, -shift)
    val = _overflow(val, neg, fmt, mode)
    out = np.where(neg, -val, val)
    return np.where(special, x, out)


def _bit_length(a: np.ndarray) -> np.ndarray:
    n = np.zeros(a.shape, np.int64)
    x = a.copy()
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        n += np.where(big, s, 0)
        x = np.where(big, x >> np.uint64(s), x)
    return n + (x > 0)


def round_int(v, signed: bool, fmt_name: str, mode: str = ".rn") -> np.ndarray:
    """64-bit (or narrower) integers v rounded once to format fmt_name (as f64 values)."""
    fmt = FORMATS[fmt_name]
    v = np.asarray(v)
    if signed:
        s = v.astype(np.int64)
        neg = s < 0
        a = np.where(neg, (np.int64(0) - s).view(np.uint64), s.view(np.uint64))  # |INT64_MIN| = 2**63 as u64
    else:
        a = v.astype(np.uint64)
        neg = np.zeros(a.shape, bool)
    shift = np.maximum(_bit_length(a) - fmt.precision, 0)
    sh = shift.astype(np.uint64)
    mi = a >> sh
    rem = a - (mi << sh)
    half = np.uint64(1) << (np.maximum(sh, np.uint64(1)) - np.uint64(1))
    half_cmp = np.where(shift == 0, -1, np.where(rem > half, 1, np.where(rem == half, 0, -1)))
    up = _round_up(neg, (mi & np.uint64(1)) == 1, rem > 0, half_cmp, mode)
    val = np.ldexp((mi + up.astype(np.uint64)).astype(np.float64), shift)  # <= 2**precision: exact
    val = _overflow(val, neg, fmt, mode)
    return np.where(neg, -val, val)


def to_format(val, fmt_name: str) -> np.ndarray:
    """Pack exactly representable f64 values into fmt_name's storage (bf16 -> uint16 bits)."""
    val = np.asarray(val, np.float64)
    with np.errstate(all="ignore"):
        if fmt_name == "f64":
            return val
        if fmt_name == "f32":
            return val.astype(np.float32)
        if fmt_name == "f16":
            return val.astype(np.float16)
        if fmt_name == "bf16":
            bits = (val.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
            return np.where(np.isnan(val), bits | np.uint16(0x40), bits).astype(np.uint16)
    raise ValueError(f"float format {fmt_name!r} (expected one of {sorted(FORMATS)})")
