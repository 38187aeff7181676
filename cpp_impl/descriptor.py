"""One small descriptor per CUDA C++ kernel: which .cu file, which extern "C" entry, what it takes.

A kernel module (gate.py, permute.py, ...) states its kernel with `cuda_entry` (a contract.launch.TextKernel, the
descriptor ptx_impl's modules use too) and keeps only the shape logic; `launch` compiles the file with NVRTC for the
given compile-time constants (`-D NAME=VALUE`, cached) and launches the entry through
contract.launch.EntrySignature, which type-checks every value against the declared parameter list.
"""
from __future__ import annotations

from collections.abc import Mapping

from contract.launch import TextKernel, ceil_div
from contract.launch import check_array as _check_array
from contract.launch import reject_params as _reject_params
from contract.launch import require as _require
from cpp_impl.nvrtc import compile_file


def require(kernel: str, ok: bool, what: str, value, expected: str) -> None:
    """Raise InputError naming the C++ kernel, the offending value and the expectation unless `ok`."""
    _require(f"cpp {kernel}", ok, what, value, expected)


def check_array(kernel: str, args: Mapping, name: str, shape, dtype) -> None:
    """The argument `name` exists with exactly this shape and dtype."""
    _check_array(f"cpp {kernel}", args, name, shape, dtype)


def reject_params(kernel: str, params: Mapping) -> None:
    """Unknown keyword parameters are an error, not silently ignored."""
    _reject_params(f"cpp {kernel}", params)


def cuda_entry(file: str, entry: str, params: tuple[tuple[str, str], ...],
               defines: tuple[tuple[str, int], ...] = ()) -> TextKernel:
    """The descriptor (contract.launch.TextKernel) of an extern "C" __global__ entry of cpp_impl/kernels/<file>:
    its PTX is NVRTC's (compile_file, cached) for the compile-time constants (-D NAME=VALUE; `defines` their
    defaults, overridable per launch with `constants=`)."""
    return TextKernel(file, entry, params, make_ptx=compile_file, language="cpp", constants=defines)


STREAM_BLOCK = 256       # threads per CTA of the streaming kernels (permute, swiglu, combine): __launch_bounds__(256)
STREAM_MAX_CTAS = 1024   # grid-stride cap: ~8 CTAs per SM on a 132-SM H100/H200, enough to saturate HBM


def stream_grid(n_chunks: int):
    """(grid, block, shared_bytes) of a grid-stride streaming kernel over `n_chunks` 16-byte chunks."""
    ctas = min(STREAM_MAX_CTAS, max(1, ceil_div(n_chunks, STREAM_BLOCK)))
    return (ctas, 1, 1), (STREAM_BLOCK, 1, 1), 0
