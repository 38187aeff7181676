"""Cell values and units of Nsight output, normalised to one base unit per quantity.

Base units: ns (time), byte, byte/s, hz (hz and cycle/second alike), %, and counts under their own name (inst,
cycle, sector, register/thread...). Prefixes are SI decimal (ncu's Kbyte is 1000 bytes); Kibyte-style binary ones
are honoured when spelled so. A unit we do not know is kept as written with the value unchanged.
"""
from __future__ import annotations

import functools
import math
import re

# Thousands separators are stripped only from values shaped like this (nsight-formats.md).
THOUSANDS = re.compile(r"-?\d{1,3}(,\d{3})+(\.\d+)?")
# An instance-exported cell, "158 (0: 158)": the leading aggregate is the value.
_INSTANCES = re.compile(r"(\S+) \(.*\)")
MISSING = frozenset({"", "n/a", "N/A", "nan", "NaN", "-nan", "(none)"})

_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "nsec": 1.0, "us": 1e3, "usecond": 1e3, "usec": 1e3, "ms": 1e6,
            "msecond": 1e6, "msec": 1e6, "s": 1e9, "second": 1e9, "sec": 1e9}
_PER_SECOND = {name: 1e9 / factor for name, factor in _TIME_NS.items()}  # denominator units in one second (exact)
_BYTES = {"byte": 1.0, "bytes": 1.0, "b": 1.0, "kbyte": 1e3, "kb": 1e3, "mbyte": 1e6, "mb": 1e6, "gbyte": 1e9,
          "gb": 1e9, "tbyte": 1e12, "tb": 1e12, "pbyte": 1e15, "kibyte": 2.0**10, "kib": 2.0**10,
          "mibyte": 2.0**20, "mib": 2.0**20, "gibyte": 2.0**30, "gib": 2.0**30, "tibyte": 2.0**40, "tib": 2.0**40}
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "thz": 1e12}
_PERCENT = frozenset({"%", "pct", "percent"})
_NONE = frozenset({"", "(none)", "none", "n/a"})
# Count-like atoms that may carry an SI prefix (K, M, G, T), e.g. "Kinst", "Mcycle".
_COUNTS = frozenset({"inst", "cycle", "sector", "request", "warp", "thread", "block", "register", "wavefront",
                     "transaction", "instruction", "sample", "byte_pass", "launch", "event", "thread_inst"})
_SI = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _atom(name: str):
    """(factor, base) of a unit without '/', or None when unknown."""
    if name in _TIME_NS:
        return _TIME_NS[name], "ns"
    low = name.lower()
    if low in _BYTES:
        return _BYTES[low], "byte"
    if low in _HZ:
        return _HZ[low], "hz"
    if name in _PERCENT:
        return 1.0, "%"
    if name in _COUNTS:
        return 1.0, name
    if name[:1] in _SI and name[1:] in _COUNTS:
        return _SI[name[:1]], name[1:]
    return None


@functools.lru_cache(maxsize=512)
def unit_factor(unit: str) -> tuple[float, str]:
    """Multiply a value in `unit` by factor to get it in base unit: returns (factor, base).

    >>> unit_factor("Gbyte/s")
    (1000000000.0, 'byte/s')
    """
    unit = (unit or "").strip()
    if unit in _NONE:
        return 1.0, ""
    parts = unit.split("/")
    if len(parts) == 1:
        return _atom(unit) or (1.0, unit)
    if len(parts) != 2:
        return 1.0, unit
    num, den = parts
    top = _atom(num)
    if top is None:
        return 1.0, unit
    factor, base = top
    if den in _PER_SECOND:  # a rate: per second
        rate = factor * _PER_SECOND[den]
        return (rate, "hz") if base == "cycle" else (rate, f"{base}/s")
    bottom = _atom(den)
    if bottom is None or bottom[1] in ("byte", "hz", "%"):
        return factor, f"{base}/{den}"
    return factor / bottom[0], f"{base}/{bottom[1]}"


def parse_number(text):
    """A cell as float, None (missing: empty, n/a, nan, inf) or the stripped string when it is not a number.

    Thousands separators are removed only when the whole cell matches THOUSANDS; "1,5" stays a string.
    """
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text)
        return value if math.isfinite(value) else None
    cell = str(text).strip()
    if cell in MISSING:
        return None
    if THOUSANDS.fullmatch(cell):
        cell = cell.replace(",", "")
    try:
        value = float(cell)
    except ValueError:
        match = _INSTANCES.fullmatch(cell)
        if match and not match.group(1).startswith("("):
            inner = parse_number(match.group(1))
            if isinstance(inner, float):
                return inner
        return str(text).strip()
    return value if math.isfinite(value) else None


def normalise(value, unit: str):
    """(value in base unit, base unit) for a parsed cell; strings and None keep their value and get unit ''
    unless the unit is known (then the base unit is still reported)."""
    factor, base = unit_factor(unit)
    if isinstance(value, float):
        return value * factor, base
    return value, base
