"""cpp_impl: the MoE kernels of kernels.md in idiomatic, tuned CUDA C++ without inline asm, compiled by NVRTC.

This is the baseline DeepSeek dropped below: what a CUDA C++ programmer writes with cuda_bf16.h / cuda_fp8.h,
vector types and __ldg, warp intrinsics (__shfl_*_sync, __reduce_*_sync, cooperative_groups), nvcuda::wmma bf16
fragments for the grouped GEMM and __pipeline_memcpy_async staging. Each kernel module exposes
`run(backend, args, preset, **params) -> list[LaunchRecord]`; the .cu sources are in kernels/, compiled to PTX for
sm_90 by NVRTC (cpp_impl.nvrtc, cached by source digest) and launched through `backend.launch_ptx` like ptx_impl's.

Attributes (loaded lazily, so importing the package compiles nothing):
    KERNELS: {name: run} for the kernels written so far.
    IMPLEMENTATION: the contract.registry.Implementation the harness finds this package by.
"""
from __future__ import annotations

import importlib

# kernel name -> module
KERNEL_MODULES: dict[str, str] = {
    "gate": "gate",
    "align": "align",
    "permute": "permute",
    "act_quant": "act_quant",
    "swiglu": "swiglu",
    "combine": "combine",
    "grouped_gemm": "grouped_gemm",
    "grouped_gemm_fp8": "grouped_gemm_fp8",
    "layer": "layer",
}


def __getattr__(name):
    if name == "KERNELS":
        table = {k: importlib.import_module(f"cpp_impl.{m}").run for k, m in KERNEL_MODULES.items()}
        globals()["KERNELS"] = table
        return table
    if name == "IMPLEMENTATION":
        from contract.registry import Implementation

        impl = Implementation(name="cpp", language="CUDA C++ (NVRTC)", kernels=__getattr__("KERNELS"))
        globals()["IMPLEMENTATION"] = impl
        return impl
    raise AttributeError(f"module 'cpp_impl' has no attribute {name!r}")
