"""The backend contract both kernel paths run on (tinygrad's Allocator + Program, in a dozen methods).

An implementation module (cuda_impl/<kernel>.py, ptx_impl/<kernel>.py) exposes

    def run(backend: Backend, args: dict[str, DeviceArray], preset: Preset, **params) -> list[LaunchRecord]

where `args` holds every input and output of the kernel by its kernels.md name (outputs pre-poisoned by the caller).
The Numba path calls `backend.launch_numba(pyfunc, signature, ...)` with the plain (undecorated) Python kernel function
and an explicit Numba signature, so the same source compiles with `numba.cuda.compile_ptx` for ptxsim and with
`numba.cuda.jit(signature)` on a GPU. The PTX path calls `backend.launch_ptx(ptx_text, entry, ...)` with raw pointers.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DeviceArray:
    """A C-contiguous array in device memory (simulated or real)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    addr: int  # device address: a ptxsim address on `sim`, a CUdeviceptr value on `gpu`
    handle: Any = field(default=None, compare=False, repr=False)  # the backend's owner object

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class LaunchRecord:
    """One kernel launch as the backend saw it."""

    name: str  # PTX entry or Python function name
    impl: str  # "cuda" (Numba) or "ptx"
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    host_seconds: float  # wall time of the launch call on the host (sim: the whole simulation)
    stats: Any = field(default=None, compare=False, repr=False)  # ptxsim LaunchStats on `sim`


LaunchArg = DeviceArray | np.generic


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

    # workspaces -----------------------------------------------------------------------------------------------
    keep_workspaces: bool = False  # set by a timing loop: workspaces then live until release_workspaces()

    def workspace(self, owner: str, specs: dict) -> dict[str, DeviceArray]:
        """Poisoned (0xFF) arrays {name: (shape, dtype)} for `owner`'s intermediates.

        Fresh every call, unless `keep_workspaces` is set: then the first call's arrays are kept per (owner, specs)
        and handed out again (no allocation or free inside a timed window), until `release_workspaces()`.
        Give them back with `done_with_workspace`.
        """
        key = (owner, tuple((name, tuple(int(d) for d in shape), np.dtype(dtype).str)
                            for name, (shape, dtype) in specs.items()))
        cache = self.__dict__.setdefault("_workspace_cache", {})
        if key in cache:
            return cache[key]
        arrays: dict[str, DeviceArray] = {}
        try:
            for name, (shape, dtype) in specs.items():
                arrays[name] = self.empty(shape, dtype, fill_byte=0xFF)
        except BaseException:
            self._free_all(arrays)
            raise
        if self.keep_workspaces:
            cache[key] = arrays
        return arrays

    def done_with_workspace(self, arrays: dict[str, DeviceArray]) -> None:
        """Free a workspace from `workspace()` unless it is a kept one."""
        if not any(arrays is kept for kept in self.__dict__.get("_workspace_cache", {}).values()):
            self._free_all(arrays)

    def release_workspaces(self) -> None:
        """Free every kept workspace."""
        cache = self.__dict__.pop("_workspace_cache", {})
        for arrays in cache.values():
            self._free_all(arrays)

    def _free_all(self, arrays: dict[str, DeviceArray]) -> None:
        for array in arrays.values():
            self.free(array)
