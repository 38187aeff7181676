"""How an implementation package registers itself: one `Implementation` value, found by the harness by name.

Each implementation package (cuda_impl, cpp_impl, ptx_impl) defines `IMPLEMENTATION = Implementation(...)` in its
`__init__`; the harness (harness.implementations) imports the packages it is asked for and reads that value, so an
implementation depends on the contract alone and the harness drives it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

# run(backend: contract.device.KernelBackend, args: {name: DeviceArray}, preset: Preset, **params)
#     -> list[contract.device.LaunchRecord]
RunFunction = Callable[..., list]


@dataclass(frozen=True)
class Implementation:
    """One implementation of the kernel contract.

    name: the short name used on the command line and in run.json ("numba", "cpp", "ptx").
    language: what it is written in, for people ("Numba CUDA (Python)", "CUDA C++ (NVRTC)", "hand-written PTX").
    kernels: kernel name -> run function, for the kernels of contract.kernels it implements.
    ladders: kernel name -> the names of its rungs, lowest first, for a kernel written as an ablation ladder (issue
        #16: each rung adds one hardware feature and passes the same checks). Its run function takes `rung=<1-based
        number>`; without it, it runs the top rung, so the implementation's plain row is its best kernel.
    """

    name: str
    language: str
    kernels: Mapping[str, RunFunction]
    ladders: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
