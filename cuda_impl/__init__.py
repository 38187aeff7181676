"""cuda_impl: the DeepSeek-V3 MoE kernels of kernels.md in tuned Numba CUDA (implementation `numba`).

Registered as `numba` beside `cpp` (cpp_impl, CUDA C++) and `ptx` (ptx_impl, hand-written PTX). Numba at its best: the
streaming cache hint numba-cuda offers (ld.global.cs) on data read once (act_quant, permute, swiglu, combine), fast
math (ex2.approx / div.approx) where kernels.md's tolerances allow it (gate's sigmoid and normaliser, swiglu) and never
where rounding is specified exactly (act_quant) -- see prims.py. Numba exposes no tensor-core API, so the grouped
GEMM is the best CUDA-core (fp32 FMA) GEMM Numba can write; the CUDA C++ and PTX paths use tensor cores.

One module per kernel (gate, align, permute, act_quant, grouped_gemm, swiglu, combine) plus `layer`; each exposes
`run(backend, args, preset, **params) -> list[LaunchRecord]`, `launch_config(...)` (its launch shape per preset) and
`sources(preset) -> [(pyfunc, signature)]`. Kernels are plain Python functions with explicit Numba signatures,
launched through `backend.launch_numba`, so the same source runs on ptxsim (compile_ptx), under Numba's simulator and
on a GPU. `static` gives the PTX and ptxas resource usage.

Attributes (loaded lazily so importing the package does not import Numba):
    KERNELS: {name: run} for the 7 kernels and "layer".
    IMPLEMENTATION: the contract.registry.Implementation the harness finds this package by.
    KERNEL_SOURCES: {name: [(pyfunc, signature)]} at static.DEFAULT_PRESET; `static.kernel_sources(name, preset)`
        for another preset.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping

from cuda_impl.names import KERNEL_NAMES, LAYER_KERNELS

__all__ = ["KERNELS", "KERNEL_NAMES", "KERNEL_SOURCES", "IMPLEMENTATION", "LAYER_KERNELS", "SOURCE_MODULES"]


class _Sources(Mapping):
    """KERNEL_SOURCES: a read-only mapping that compiles nothing until asked."""

    def __getitem__(self, name):
        from cuda_impl import static

        return static.kernel_sources(name)

    def __iter__(self):
        return iter((*KERNEL_NAMES, "layer"))

    def __len__(self):
        return len(KERNEL_NAMES) + 1


KERNEL_SOURCES = _Sources()


def __getattr__(name):
    if name == "KERNELS":
        table = {k: importlib.import_module(f"cuda_impl.{k}").run for k in (*KERNEL_NAMES, "layer")}
        globals()["KERNELS"] = table
        return table
    if name == "IMPLEMENTATION":
        from contract.registry import Implementation

        impl = Implementation(name="numba", language="Numba CUDA (Python)", kernels=__getattr__("KERNELS"))
        globals()["IMPLEMENTATION"] = impl
        return impl
    if name == "SOURCE_MODULES":
        from cuda_impl.static import source_modules

        mods = source_modules()
        globals()["SOURCE_MODULES"] = mods
        return mods
    raise AttributeError(f"module 'cuda_impl' has no attribute {name!r}")
