"""triton_impl: kernels written in Triton, compiled for sm_90a ahead of time (triton_impl.generate) and committed as
PTX, so running them needs neither Triton nor a GPU. Today: grouped_gemm_fp8, as vLLM's fused-MoE kernel does
block-FP8 w8a8 (docs/kernels.md, "The paths")."""
from __future__ import annotations

from contract.registry import Implementation


def _grouped_gemm_fp8(backend, args, preset, **params):
    """Lazy entry for triton_impl.grouped_gemm_fp8.run."""
    from triton_impl import grouped_gemm_fp8

    return grouped_gemm_fp8.run(backend, args, preset, **params)


KERNELS = {"grouped_gemm_fp8": _grouped_gemm_fp8}

IMPLEMENTATION = Implementation(name="triton", language="Triton (compiled to sm_90a PTX)", kernels=KERNELS)
