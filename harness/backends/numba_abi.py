"""Numba's CUDA kernel ABI, so a plain Python kernel compiled by `numba.cuda.compile_ptx` can be launched by hand.

Numba lowers every array argument of a kernel to a flattened struct of scalar parameters:

    meminfo u64 (0), parent u64 (0), nitems i64, itemsize i64, data u64 (device pointer),
    shape[ndim] i64, strides[ndim] i64 (bytes)

and every scalar argument to one parameter of its type. bf16 arrays are `uint16` arrays to Numba and e4m3 arrays
`uint8` ones (the same bits), so the itemsize, not the dtype, must match the signature.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.backends.base import DeviceArray
from harness.errors import InputError

# NOTE: cc (9, 0) is what the H200 runs; compile_ptx needs no GPU.
NUMBA_CC = (9, 0)



@dataclass(frozen=True)
class ArgType:
    """One argument of a Numba signature: an array (ndim > 0 or is_array) or a scalar of `dtype`."""

    is_array: bool
    dtype: np.dtype
    ndim: int = 0
    layout: str = "C"


@dataclass(frozen=True)
class CompiledNumba:
    """A Numba kernel compiled to PTX for sm_90: its text, entry name and entry parameter types."""

    pyname: str
    ptx: str
    entry: str
    param_types: tuple[str, ...]  # PTX .param types of the entry ("u64", "f32", ...)
    arg_types: tuple[ArgType, ...]


def parse_signature(signature) -> tuple[ArgType, ...]:
    """Numba signature (string like "void(float32[:, ::1], int32)" or a tuple of Numba types) -> ArgTypes.

    Raises:
        InputError: when the signature does not parse or names an argument kind the ABI here does not cover.
    """
    from numba.core import sigutils, types
    from numba.np import numpy_support

    try:
        args, _ret = sigutils.normalize_signature(signature)
    except Exception as exc:
        raise InputError(f"bad Numba signature {signature!r}: {exc}") from exc
    out = []
    for i, t in enumerate(args):
        if isinstance(t, types.Array):
            if t.layout != "C" and t.ndim > 1:
                raise InputError(f"signature {signature!r} argument {i}: array layout {t.layout!r}; expected 'C' "
                                 f"(write float32[:, ::1]) because DeviceArrays are C-contiguous")
            out.append(ArgType(True, np.dtype(numpy_support.as_dtype(t.dtype)), t.ndim, t.layout))
        elif isinstance(t, (types.Integer, types.Float, types.Boolean)):
            out.append(ArgType(False, np.dtype(numpy_support.as_dtype(t))))
        else:
            raise InputError(f"signature {signature!r} argument {i}: type {t} is neither an array nor a number")
    return tuple(out)


def entry_params(ptx: str) -> dict[str, tuple[str, ...]]:
    """{entry name: PTX .param types ("u64", "f32", ...)} for every .entry of a PTX module, read by ptxsim's parser.

    NOTE: one PTX parser in the project: comments, `.ptr` qualifiers and alignment are ptxsim's business. A parameter
    that is an array (`.param .align 8 .b8 p[16]`, a by-value struct) is given as "b8[16]" so no launch passes it
    as a scalar.

    Raises:
        ptxsim.errors.PtxSyntaxError: the text does not parse (with line and column).
    """
    from ptxsim.parser import parse

    out = {}
    for fn in parse(ptx).functions:
        if fn.kind == "entry":
            out[fn.name] = tuple(p.type.lstrip(".") + (f"[{p.count}]" if p.count not in (None, 1) else "")
                                 for p in fn.params)
    return out


_CACHE: dict[tuple, CompiledNumba] = {}


def _compile(pyfunc, signature) -> CompiledNumba:
    from numba import cuda

    arg_types = parse_signature(signature)
    try:
        ptx, _resty = cuda.compile_ptx(pyfunc, signature, cc=NUMBA_CC)
    except Exception as exc:
        raise InputError(f"numba.cuda.compile_ptx failed for {getattr(pyfunc, '__name__', pyfunc)} "
                         f"with signature {signature!r}: {exc}") from exc
    entries = entry_params(ptx)
    if len(entries) != 1:
        raise InputError(f"PTX of {pyfunc.__name__} has {len(entries)} .entry functions ({', '.join(entries)}); "
                         f"expected exactly one")
    (entry, params), = entries.items()
    expected = sum(5 + 2 * a.ndim if a.is_array else 1 for a in arg_types)
    if len(params) != expected:
        raise InputError(f"PTX entry of {pyfunc.__name__} has {len(params)} parameters; the Numba ABI for "
                         f"signature {signature!r} expects {expected}")
    return CompiledNumba(pyfunc.__name__, ptx, entry, params, arg_types)


def compile_numba(pyfunc, signature) -> CompiledNumba:
    """Compile `pyfunc` for sm_90 with `numba.cuda.compile_ptx` once per (pyfunc, signature) and find its entry.

    Raises:
        InputError: when compilation fails or the entry's parameter count does not match the ABI.
    """
    key = (pyfunc, str(signature))
    if key not in _CACHE:
        _CACHE[key] = _compile(pyfunc, signature)
    return _CACHE[key]


def check_args(name: str, arg_types: Sequence[ArgType], args: Sequence) -> None:
    """Check launch arguments against a parsed signature; raise InputError naming the first mismatch."""
    if len(args) != len(arg_types):
        raise InputError(f"kernel {name}: {len(args)} arguments given; its signature takes {len(arg_types)}")
    for i, (t, a) in enumerate(zip(arg_types, args, strict=True)):
        if t.is_array:
            if not isinstance(a, DeviceArray):
                raise InputError(f"kernel {name} argument {i}: got {type(a).__name__}; expected a DeviceArray "
                                 f"({t.dtype}[{t.ndim}-D])")
            if len(a.shape) != t.ndim:
                raise InputError(f"kernel {name} argument {i}: DeviceArray of shape {a.shape} ({len(a.shape)}-D); "
                                 f"signature wants {t.ndim}-D")
            if np.dtype(a.dtype).itemsize != t.dtype.itemsize:
                raise InputError(f"kernel {name} argument {i}: DeviceArray dtype {np.dtype(a.dtype)} "
                                 f"(itemsize {np.dtype(a.dtype).itemsize}); signature wants {t.dtype} "
                                 f"(itemsize {t.dtype.itemsize})")
        elif isinstance(a, DeviceArray):
            raise InputError(f"kernel {name} argument {i}: got a DeviceArray; signature wants a {t.dtype} scalar")


def expand_args(name: str, arg_types: Sequence[ArgType], args: Sequence) -> list[np.generic]:
    """Flatten launch arguments to the entry's parameters per the Numba ABI (all as NumPy scalars)."""
    check_args(name, arg_types, args)
    flat: list[np.generic] = []
    for t, a in zip(arg_types, args, strict=True):
        if t.is_array:
            itemsize = np.dtype(a.dtype).itemsize
            strides, acc = [], itemsize
            for dim in reversed(a.shape):
                strides.append(acc)
                acc *= int(dim)
            strides.reverse()
            flat += [np.uint64(0), np.uint64(0), np.int64(a.size), np.int64(itemsize), np.uint64(a.addr)]
            flat += [np.int64(d) for d in a.shape] + [np.int64(s) for s in strides]
        else:
            dtype = np.dtype(np.uint8) if t.dtype == np.bool_ else t.dtype
            flat.append(dtype.type(a))
    return flat
