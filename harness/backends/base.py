"""The harness side of the backend contract (tinygrad's Allocator + Program, in a dozen methods).

contract.device says what an implementation may call (`KernelBackend`: to_device, empty, free, launch_ptx,
launch_numba) and defines DeviceArray / LaunchRecord; `Backend` is the base class the harness's backends
(harness.backends.sim.SimBackend, harness.backends.gpu.GpuBackend) implement, with the host-side calls the runner
uses besides. The same source compiles with `numba.cuda.compile_ptx` for ptxsim and with `numba.cuda.jit(signature)`
on a GPU; PTX text (hand-written or NVRTC's) is loaded once per text.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from contract.device import DeviceArray, LaunchArg, LaunchRecord

__all__ = ["Backend", "DeviceArray", "LaunchArg", "LaunchRecord"]


class Backend:
    """What a backend provides. Subclasses: harness.backends.sim.SimBackend, harness.backends.gpu.GpuBackend."""

    name: str = "abstract"

    def to_device(self, host: np.ndarray) -> DeviceArray:
        raise NotImplementedError

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A new device array with every byte set to `fill_byte` (poison: unwritten elements are detectable)."""
        raise NotImplementedError

    def to_host(self, array: DeviceArray) -> np.ndarray:
        raise NotImplementedError

    def free(self, array: DeviceArray) -> None:
        raise NotImplementedError

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        """Launch entry `entry` of PTX module text `ptx` (cached per text); DeviceArray params pass their address."""
        raise NotImplementedError

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        """Launch a Numba CUDA kernel given as a plain Python function plus its explicit Numba signature.

        Array arguments are DeviceArrays (1-D or N-D C-contiguous, matching the signature's array types); scalars are
        NumPy scalars matching the signature. Compiled once per (pyfunc, signature).
        """
        raise NotImplementedError

    def synchronize(self) -> None:
        pass
