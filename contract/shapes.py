"""Every kernel's arguments as shapes and dtypes in the preset's symbols: its inputs (here) beside its outputs
(contract.kernels' output_specs), so what an implementation is handed is declared once and checked once
(KernelSpec.checked_inputs) rather than assumed.

Symbols (kernels.md): T tokens, E experts, K experts per token, H hidden, I the expert's intermediate size, P_max the
padded rows, n_blocks the routing blocks; GEMM "up" multiplies by W1 (E, 2I, H), "down" by W2 (E, H, I); FP8 scales
are per 1x128 group of an activation row and per 128x128 block of a weight.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.errors import InputError
from contract.generators import BF16, E4M3

GROUP = 128  # FP8 scale groups: 1x128 of an activation row, 128x128 of a weight


@dataclass(frozen=True)
class ArgSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


F32, I32 = np.dtype(np.float32), np.dtype(np.int32)


def _gemm_dims(p, variant: str) -> tuple[int, int]:
    """(N, Kd): the output columns and the reduction length of the up or down GEMM."""
    if variant not in ("up", "down"):
        raise InputError(f"grouped GEMM variant {variant!r}: expected up or down")
    return (2 * p.I, p.H) if variant == "up" else (p.H, p.I)


def gate_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("logits", (p.T, p.E), F32), ArgSpec("bias", (p.E,), F32)]


def align_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("topk_ids", (p.T, p.K), I32)]


def permute_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("x", (p.T, p.H), BF16), ArgSpec("sorted_ids", (p.P_max,), I32), ArgSpec("total_padded", (1,), I32)]


def act_quant_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("a", (p.T, p.H), BF16)]


def gemm_inputs(p, variant: str = "up", **_) -> list[ArgSpec]:
    n, kd = _gemm_dims(p, variant)
    return [ArgSpec("a", (p.P_max, kd), BF16), ArgSpec("w", (p.E, n, kd), BF16),
            ArgSpec("block_expert", (p.n_blocks,), I32), ArgSpec("total_padded", (1,), I32)]


def fp8_gemm_inputs(p, variant: str = "up", **_) -> list[ArgSpec]:
    n, kd = _gemm_dims(p, variant)
    return [ArgSpec("a", (p.P_max, kd), E4M3), ArgSpec("a_scale", (p.P_max, kd // GROUP), F32),
            ArgSpec("w", (p.E, n, kd), E4M3), ArgSpec("w_scale", (p.E, n // GROUP, kd // GROUP), F32),
            ArgSpec("block_expert", (p.n_blocks,), I32), ArgSpec("total_padded", (1,), I32)]


def swiglu_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("h", (p.P_max, 2 * p.I), BF16), ArgSpec("total_padded", (1,), I32)]


def combine_inputs(p, **_) -> list[ArgSpec]:
    return [ArgSpec("y", (p.P_max, p.H), BF16), ArgSpec("topk_w", (p.T, p.K), F32), ArgSpec("inverse", (p.T, p.K), I32)]


def layer_inputs(p, variant: str = "bf16", **_) -> list[ArgSpec]:
    head = [*gate_inputs(p), ArgSpec("x", (p.T, p.H), BF16)]
    if variant == "bf16":
        return [*head, ArgSpec("W1", (p.E, 2 * p.I, p.H), BF16), ArgSpec("W2", (p.E, p.H, p.I), BF16)]
    if variant == "fp8":
        return [*head, ArgSpec("W1", (p.E, 2 * p.I, p.H), E4M3),
                ArgSpec("W1_scale", (p.E, 2 * p.I // GROUP, p.H // GROUP), F32),
                ArgSpec("W2", (p.E, p.H, p.I), E4M3), ArgSpec("W2_scale", (p.E, p.H // GROUP, p.I // GROUP), F32)]
    raise InputError(f"layer variant {variant!r}: expected bf16 or fp8")


def check_args(kernel: str, specs: list[ArgSpec], values: dict) -> None:
    """InputError naming the argument, what it is and what was expected, unless `values` are exactly `specs` (the
    same names, shapes and dtypes; lazy tensors are checked by their shape and dtype too)."""
    want = {s.name: s for s in specs}
    extra, missing = sorted(set(values) - set(want)), sorted(set(want) - set(values))
    if extra or missing:
        raise InputError(f"{kernel}: inputs {sorted(values)}; expected {sorted(want)}"
                         + (f" (missing {', '.join(missing)})" if missing else "")
                         + (f" (not inputs: {', '.join(extra)})" if extra else ""))
    for name, spec in want.items():
        value = values[name]
        # NOTE: a lazy tensor (contract.generators.KeyedNormal) has shape and dtype; it is never materialised here
        shape = tuple(int(d) for d in value.shape) if hasattr(value, "shape") else np.shape(value)
        dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype
        if shape != spec.shape or dtype != spec.dtype:
            raise InputError(f"{kernel}: input {name} is {dtype} of shape {shape}; expected {spec.dtype} of shape "
                             f"{spec.shape}")
