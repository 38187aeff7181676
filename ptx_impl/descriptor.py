"""One small descriptor per hand-written PTX kernel: which file, which entry, what it takes, how to launch it.

A kernel module (gate.py, permute.py, ...) states its kernel with `ptx_entry` (a contract.launch.TextKernel, the
descriptor cpp_impl's modules use too) and keeps only the shape logic: checking its assumptions (`require`), sizing
the grid, and calling its `launch`, which type-checks every value against the declared PTX parameter list before
anything reaches the backend.

The .ptx files are plain PTX with one optional convenience, an unroll block for short fixed-count repetitions:

    //@unroll J 0 8
    ...text using $J...
    //@end

expands to eight copies with `$J` replaced by 0..7 (so the hand-written file stays one copy long and the emitted
PTX stays deterministic). A bound may also be a named tile constant (`//@unroll J 0 K`) that the kernel module
supplies per shape (`KERNEL.source(K=8)`): the kernel is then specialised, e.g. combine issues all K gathers
before the first add. `$J+1`-style arithmetic is not supported on purpose; write a second variable instead.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable, Mapping

from contract.errors import InputError
from contract.launch import TextKernel, ceil_div  # noqa: F401 - ceil_div is part of this module's API
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


def ptx_entry(file: str, entry: str, params: tuple[tuple[str, str], ...],
              consts: tuple[tuple[str, int], ...] = ()) -> TextKernel:
    """The descriptor (contract.launch.TextKernel) of a hand-written PTX entry of ptx_impl/kernels/<file>: its PTX
    is the file with its unroll blocks expanded (load_ptx, cached) for the tile constants (`consts` their defaults,
    overridable per launch with `constants=`)."""
    return TextKernel(file, entry, params, make_ptx=load_ptx, language="ptx", constants=consts,
                      constants_are="tile constants")


def checked_in(path: Path) -> tuple[Callable[[], str], Callable[[], dict[str, str]]]:
    """(ptx_source, ptx_modules) of a kernel whose PTX module is the checked-in file `path` as it is (the FP8 GEMM
    rungs 1-3 bind them: `ptx_source, ptx_modules = checked_in(PATH)`): its text, read once, and {its stem: the
    text} for static analysis."""

    @functools.cache
    def ptx_source() -> str:
        """The PTX module text."""
        return path.read_text(encoding="utf-8")

    def ptx_modules() -> dict[str, str]:
        """{module name: PTX text}, for static analysis."""
        return {path.stem: ptx_source()}

    return ptx_source, ptx_modules


STREAM_BLOCK = 256       # threads per CTA of the streaming kernels (permute, swiglu, combine)
STREAM_MAX_CTAS = 1024   # grid-stride cap: ~8 CTAs per SM on a 132-SM H100/H200, enough to saturate HBM


def stream_grid(n_chunks: int):
    """(grid, block, shared_bytes) of a grid-stride streaming kernel over `n_chunks` 16-byte chunks."""
    ctas = min(STREAM_MAX_CTAS, max(1, ceil_div(n_chunks, STREAM_BLOCK)))
    return (ctas, 1, 1), (STREAM_BLOCK, 1, 1), 0
