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

from contract.errors import InputError
from contract.launch import EntrySignature, ceil_div  # noqa: F401 - ceil_div is part of this module's API
from contract.launch import check_array as _check_array
from contract.launch import reject_params as _reject_params
from contract.launch import require as _require

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

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
    """Raise InputError naming the PTX kernel, the offending value and the expectation unless `ok`."""
    _require(f"ptx {kernel}", ok, what, value, expected)


def check_array(kernel: str, args: Mapping, name: str, shape, dtype) -> None:
    """The argument `name` exists with exactly this shape and dtype."""
    _check_array(f"ptx {kernel}", args, name, shape, dtype)


def reject_params(kernel: str, params: Mapping) -> None:
    """Unknown keyword parameters are an error, not silently ignored."""
    _reject_params(f"ptx {kernel}", params)


@dataclass(frozen=True)
class PtxKernel:
    """A hand-written PTX entry point (file + entry) and its parameter list.

    params: (name, type) in PTX order; type is one of ".ptr" (a DeviceArray, passed as its .u64 address), ".u32",
    ".s32", ".u64", ".f32" (contract.launch.EntrySignature checks them).
    """

    file: str
    entry: str
    params: tuple[tuple[str, str], ...]
    consts: tuple[tuple[str, int], ...] = ()  # default tile constants (what `ptx` and static analysis use)

    @property
    def ptx(self) -> str:
        return self.source()

    @property
    def signature(self) -> EntrySignature:
        return EntrySignature(self.entry, self.params)

    def source(self, **consts: int) -> str:
        """The PTX text specialised for these tile constants (missing ones take their defaults)."""
        merged = dict(self.consts)
        unknown = sorted(set(consts) - set(merged))
        require(self.entry, not unknown, "tile constants", unknown, f"a subset of {sorted(merged)}")
        merged.update({k: int(v) for k, v in consts.items()})
        return load_ptx(self.file, tuple(sorted(merged.items())))

    def pack(self, values: Mapping) -> list:
        """Values by parameter name -> the positional list launch_ptx takes, each checked against its PTX type."""
        return self.signature.pack(values)

    def launch(self, backend, grid, block, values: Mapping, shared_bytes: int = 0, tag: str = "",
               consts: Mapping[str, int] | None = None):
        """Type-check `values` against the parameter list and launch on `backend` (the module specialised for the
        tile constants `consts`); returns its LaunchRecord."""
        return self.signature.launch(backend, self.source(**(consts or {})), grid, block, values,
                                     shared_bytes=shared_bytes, tag=tag)


STREAM_BLOCK = 256       # threads per CTA of the streaming kernels (permute, swiglu, combine)
STREAM_MAX_CTAS = 1024   # grid-stride cap: ~8 CTAs per SM on a 132-SM H100/H200, enough to saturate HBM


def stream_grid(n_chunks: int):
    """(grid, block, shared_bytes) of a grid-stride streaming kernel over `n_chunks` 16-byte chunks."""
    ctas = min(STREAM_MAX_CTAS, max(1, ceil_div(n_chunks, STREAM_BLOCK)))
    return (ctas, 1, 1), (STREAM_BLOCK, 1, 1), 0
