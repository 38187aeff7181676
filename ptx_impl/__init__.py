"""ptx_impl: the MoE kernels of kernels.md in hand-written PTX for Hopper (sm_90).

`KERNELS` maps each kernel name to its `run(backend, args, preset, **params) -> list[LaunchRecord]`;
grouped_gemm is imported on first use (it lives in its own module, written separately).
"""
from __future__ import annotations

from contract.registry import Implementation
from ptx_impl import act_quant, align, combine, gate, layer, permute, swiglu


def _grouped_gemm(backend, args, preset, **params):
    """Lazy entry for ptx_impl.grouped_gemm.run (kernels.md section 5)."""
    from ptx_impl import grouped_gemm

    return grouped_gemm.run(backend, args, preset, **params)


def _grouped_gemm_fp8(backend, args, preset, **params):
    """Lazy entry for ptx_impl.grouped_gemm_fp8.run (the ablation ladder; `rung=N`, default the top rung)."""
    from ptx_impl import grouped_gemm_fp8

    return grouped_gemm_fp8.run(backend, args, preset, **params)


KERNELS = {
    "gate": gate.run,
    "align": align.run,
    "permute": permute.run,
    "act_quant": act_quant.run,
    "grouped_gemm": _grouped_gemm,
    "grouped_gemm_fp8": _grouped_gemm_fp8,
    "swiglu": swiglu.run,
    "combine": combine.run,
    "layer": layer.run,
}

def _ladders() -> dict[str, tuple[str, ...]]:
    from ptx_impl import grouped_gemm_fp8

    return {"grouped_gemm_fp8": grouped_gemm_fp8.rung_names()}


IMPLEMENTATION = Implementation(name="ptx", language="hand-written PTX", kernels=KERNELS, ladders=_ladders())

__all__ = ["IMPLEMENTATION", "KERNELS"]
