"""`sweep`: compare your implementations over one or more size axes (Triton's perf_report, nvbench's axes).

Each combination of the axes' values is one case of `compare` (named "n=4096", or "m=64,n=4096"), its values passed
to make_inputs as keyword arguments; the result is an ordinary Result whose run.json records the axes, so its
DataFrame has a column per axis and its dashboard a "sweep" section: time, and achieved bandwidth / throughput when
`min_bytes` / `flops` are given, against the first axis, one line per implementation (and per value of the others).
"""
from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from ptxmoe.errors import InputError

RESERVED = frozenset({"key", "kernel", "variant", "label", "impl", "preset", "skew", "seed", "backend", "status",
                      "reason", "basis", "time_us"})  # table columns an axis may not shadow


def case_name(values: Mapping[str, Any]) -> str:
    """"n=4096" / "m=64,n=4096": one point of the sweep, as its case (run.json preset) is named."""
    return ",".join(f"{axis}={value}" for axis, value in values.items())


def _axes(sizes) -> dict[str, list]:
    if not isinstance(sizes, Mapping) or not sizes:
        raise InputError(f"sizes = {sizes!r}: expected a non-empty dict {{axis name: [values]}}, e.g. "
                         f"{{'n': [1024, 4096]}}")
    out = {}
    for axis, values in sizes.items():
        if not isinstance(axis, str) or not axis.isidentifier() or axis in RESERVED:
            raise InputError(f"size axis {axis!r}: expected a make_inputs keyword, not one of the table's columns "
                             f"({', '.join(sorted(RESERVED))})")
        values = list(values) if not isinstance(values, (str, bytes)) else []
        if not values or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            raise InputError(f"size axis {axis!r}: {sizes[axis]!r}; expected a non-empty list of numbers")
        if len(set(values)) != len(values):
            raise InputError(f"size axis {axis!r}: {values!r} repeats a value")
        out[axis] = values
    return out


def sweep(kernels: Mapping[str, Any], make_inputs: Callable, sizes: Mapping[str, Any], *,
          fixed: Mapping[str, Any] | None = None, **compare_args):
    """Compare `kernels` at every combination of the size axes.

    Args:
        kernels, make_inputs: as for compare; make_inputs(rng, **point) gets each axis's value by its name.
        sizes: {axis name: [values]}, e.g. {"n": [1 << 12, 1 << 16, 1 << 20]}; several axes run their product.
        fixed: more make_inputs keyword args, the same at every point.
        **compare_args: check, outputs, name, backend, seed, min_bytes, flops, baseline... (compare's; not cases).
    Returns:
        A ptxmoe.Result, one case per point; `result.to_dataframe()` has a column per axis.
    """
    from ptxmoe.compare import compare

    if "cases" in compare_args:
        raise InputError("sweep makes its cases from sizes; pass fixed= for make_inputs args that do not vary")
    axes = _axes(sizes)
    fixed = dict(fixed or {})
    clash = sorted(set(fixed) & set(axes))
    if clash:
        raise InputError(f"fixed= and sizes= both give {', '.join(clash)}")
    cases = {}
    for combo in itertools.product(*axes.values()):
        point = dict(zip(axes, combo, strict=True))
        cases[case_name(point)] = {**fixed, **point}
    return compare(kernels, make_inputs, cases=cases, axes=tuple(axes), **compare_args)
