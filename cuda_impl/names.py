"""The Numba path's kernel names (a leaf: the package and its static module both read them)."""
from __future__ import annotations

LAYER_KERNELS = ("gate", "align", "permute", "act_quant", "grouped_gemm", "swiglu", "combine")
KERNEL_NAMES = (*LAYER_KERNELS, "grouped_gemm_fp8")  # LAYER_KERNELS: the bf16 layer; its fp8 variant adds the FP8 GEMM
