"""One small descriptor per hand-written PTX kernel: which file, which entry, what it takes, how to launch it.

A kernel module (gate.py, permute.py, ...) states its kernel as a `PtxKernel` and keeps only the shape logic:
checking its assumptions (`require`), sizing the grid, and calling `PtxKernel.launch`, which type-checks every value
against the declared PTX parameter list before anything reaches the backend.

The .ptx files are plain PTX with one optional convenience, an unroll block for short fixed-count repetitions:

    //@unroll J 0 8
    ...text using $J...
    //@end

expands to eight copies with `$J` replaced by 0..7 (so the hand-written file stays one copy long and the emitted
PTX stays deterministic). A bound may also be a named tile constant (`//@unroll J 0 K`) that the kernel module
supplies per shape (`PtxKernel.source(K=8)`): the kernel is then specialised, e.g. combine issues all K gathers
before the first add. `$J+1`-style arithmetic is not supported on purpose; write a second variable instead.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from harness.errors import InputError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

# PTX parameter type -> (accepted Python kind, NumPy scalar type it is passed as)
_SCALAR_TYPES = {
    ".u32": np.uint32,
    ".s32": np.int32,
    ".u64": np.uint64,
    ".f32": np.float32,
}
_POINTER = ".ptr"  # a .u64 parameter that must be a DeviceArray (its address is passed)

_UNROLL_HEAD_RE = re.compile(r"^[ \t]*//@unroll[ \t]+(\w+)[ \t]+(\w+)[ \t]+(\w+)[ \t]*\n", re.MULTILINE)
_UNROLL_END_RE = re.compile(r"^[ \t]*//@end[ \t]*(?:\n|$)", re.MULTILINE)


def _bound(token: str, consts: Mapping[str, int], where: str) -> int:
    if token.isdigit():
        return int(token)
    if token not in consts:
        raise InputError(f"{where}: unroll bound {token!r} is not an integer or one of the tile constants "
                         f"{sorted(consts) or '(none given)'}")
    return int(consts[token])


def expand_unrolls(text: str, consts: Mapping[str, int] | None = None, where: str = "ptx") -> str:
    """Expand every `//@unroll VAR lo hi` ... `//@end` block, innermost first (so blocks may nest).

    lo and hi are integers or names in `consts` (tile constants of the specialisation).
    """
    consts = consts or {}
    while True:
        end = _UNROLL_END_RE.search(text)
        if end is None:
            return text
        heads = [h for h in _UNROLL_HEAD_RE.finditer(text, 0, end.start())]
        if not heads:
            return text  # an //@end without a head: load_ptx reports it
        head = heads[-1]  # the innermost block is the last head before the first end
        var, lo, hi = head.group(1), _bound(head.group(2), consts, where), _bound(head.group(3), consts, where)
        body = text[head.end():end.start()]
        copies = "".join(body.replace(f"${var}", str(i)) for i in range(lo, hi))
        text = text[:head.start()] + copies + text[end.end():]


@functools.lru_cache(maxsize=None)
def load_ptx(file: str, consts: tuple[tuple[str, int], ...] = ()) -> str:
    """The PTX text of kernels/<file>, unroll blocks expanded with the tile constants `consts` (cached: the backend
    caches modules per text, so each specialisation is parsed / loaded once)."""
    path = KERNEL_DIR / file
    text = expand_unrolls(path.read_text(), dict(consts), where=file)
    if "//@unroll" in text or "//@end" in text:
        raise InputError(f"{file}: unbalanced //@unroll ... //@end block")
    return text


def require(kernel: str, ok: bool, what: str, value, expected: str) -> None:
    """Raise InputError naming the kernel, the offending value and the expectation unless `ok`."""
    if not ok:
        raise InputError(f"ptx {kernel}: {what} = {value!r}, expected {expected}")


def check_array(kernel: str, args: Mapping, name: str, shape, dtype) -> None:
    """The argument `name` exists with exactly this shape and dtype."""
    require(kernel, name in args, "argument", name, f"one of the arguments ({', '.join(sorted(args))} given)")
    arr = args[name]
    require(kernel, tuple(arr.shape) == tuple(shape), f"{name}.shape", tuple(arr.shape), f"{tuple(shape)}")
    require(kernel, np.dtype(arr.dtype) == np.dtype(dtype), f"{name}.dtype", str(np.dtype(arr.dtype)),
            str(np.dtype(dtype)))


@dataclass(frozen=True)
class PtxKernel:
    """A hand-written PTX entry point and its parameter list.

    params: (name, type) in PTX order; type is one of ".ptr" (a DeviceArray, passed as its .u64 address), ".u32",
    ".s32", ".u64", ".f32".
    """

    file: str
    entry: str
    params: tuple[tuple[str, str], ...]
    consts: tuple[tuple[str, int], ...] = ()  # default tile constants (what `ptx` and static analysis use)

    @property
    def ptx(self) -> str:
        return self.source()

    def source(self, **consts: int) -> str:
        """The PTX text specialised for these tile constants (missing ones take their defaults)."""
        merged = dict(self.consts)
        unknown = sorted(set(consts) - set(merged))
        require(self.entry, not unknown, "tile constants", unknown, f"a subset of {sorted(merged)}")
        merged.update({k: int(v) for k, v in consts.items()})
        return load_ptx(self.file, tuple(sorted(merged.items())))

    def pack(self, values: Mapping) -> list:
        """Values by parameter name -> the positional list launch_ptx takes, each checked against its PTX type."""
        from harness.backends.base import DeviceArray

        names = [n for n, _ in self.params]
        missing = [n for n in names if n not in values]
        extra = [n for n in values if n not in names]
        require(self.entry, not missing and not extra, "parameters",
                f"missing {missing}, unexpected {extra}", f"exactly {names}")
        packed = []
        for name, ptype in self.params:
            value = values[name]
            if ptype == _POINTER:
                require(self.entry, isinstance(value, DeviceArray), f"parameter {name}", type(value).__name__,
                        "a DeviceArray (.u64 device pointer)")
                packed.append(value)
                continue
            if ptype not in _SCALAR_TYPES:
                raise InputError(f"ptx {self.entry}: parameter {name} has unknown PTX type {ptype!r}; "
                                 f"expected one of {_POINTER}, {', '.join(_SCALAR_TYPES)}")
            np_type = _SCALAR_TYPES[ptype]
            if ptype == ".f32":
                require(self.entry, isinstance(value, (float, int, np.floating, np.integer))
                        and not isinstance(value, bool), f"parameter {name}", value, "a real number for .f32")
                packed.append(np_type(value))
                continue
            require(self.entry, isinstance(value, (int, np.integer)) and not isinstance(value, bool),
                    f"parameter {name}", value, f"an integer for {ptype}")
            info = np.iinfo(np_type)
            require(self.entry, info.min <= int(value) <= info.max, f"parameter {name}", int(value),
                    f"an integer in [{info.min}, {info.max}] for {ptype}")
            packed.append(np_type(int(value)))
        return packed

    def launch(self, backend, grid, block, values: Mapping, shared_bytes: int = 0, tag: str = "",
               consts: Mapping[str, int] | None = None):
        """Type-check `values` against the parameter list and launch on `backend` (the module specialised for the
        tile constants `consts`); returns its LaunchRecord."""
        grid3 = _dim3(self.entry, "grid", grid)
        block3 = _dim3(self.entry, "block", block)
        threads = block3[0] * block3[1] * block3[2]
        require(self.entry, 1 <= threads <= 1024, "threads per block", threads, "1..1024")
        require(self.entry, 0 <= shared_bytes <= 227 * 1024, "shared_bytes", shared_bytes, "0..232448 (sm_90)")
        return backend.launch_ptx(self.source(**(consts or {})), self.entry, grid3, block3, self.pack(values),
                                  shared_bytes=int(shared_bytes), tag=tag or self.entry)


def _dim3(entry: str, what: str, dims) -> tuple[int, int, int]:
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    require(entry, 1 <= len(dims) <= 3 and all(isinstance(d, (int, np.integer)) and d >= 1 for d in dims),
            what, dims, "1 to 3 positive integers")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    require(entry, dims[0] < 2**31 and dims[1] < 65536 and dims[2] < 65536, what, dims,
            "x < 2^31, y and z < 65536")
    return dims


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def reject_params(kernel: str, params: Mapping) -> None:
    """Unknown keyword parameters are an error, not silently ignored."""
    require(kernel, not params, "parameters", sorted(params), "none beyond the documented ones")


STREAM_BLOCK = 256       # threads per CTA of the streaming kernels (permute, swiglu, combine)
STREAM_MAX_CTAS = 1024   # grid-stride cap: ~8 CTAs per SM on a 132-SM H100/H200, enough to saturate HBM


def stream_grid(n_chunks: int):
    """(grid, block, shared_bytes) of a grid-stride streaming kernel over `n_chunks` 16-byte chunks."""
    ctas = min(STREAM_MAX_CTAS, max(1, ceil_div(n_chunks, STREAM_BLOCK)))
    return (ctas, 1, 1), (STREAM_BLOCK, 1, 1), 0
