"""What an implementation may use of a backend: device arrays, workspaces, launch records and the launch calls.

An implementation module (cuda_impl/<kernel>.py, cpp_impl/<kernel>.py, ptx_impl/<kernel>.py) exposes

    def run(backend: KernelBackend, args: dict[str, DeviceArray], preset: Preset, **params) -> list[LaunchRecord]

where `args` holds every input and output of the kernel by its kernels.md name (outputs pre-poisoned by the caller).
The Numba path calls `backend.launch_numba(pyfunc, signature, ...)` with the plain (undecorated) Python kernel
function and an explicit Numba signature; the PTX and CUDA C++ paths call `backend.launch_ptx(ptx_text, entry, ...)`
with raw pointers. The harness's backends (harness.backends.sim / .gpu) implement this protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

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
    impl: str  # implementation name (contract.registry)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    host_seconds: float  # wall time of the launch call on the host (sim: the whole simulation)
    stats: Any = field(default=None, compare=False, repr=False)  # ptxsim LaunchStats on `sim`


@dataclass(frozen=True)
class TensorMapArg:
    """A tiled tensor map (CUDA's CUtensorMap) over a DeviceArray, for `cp.async.bulk.tensor`: pass it to launch_ptx
    for a `.param .align 64 .b8 name[128]` kernel parameter (by value, as `const __grid_constant__ CUtensorMap`).

    shape and box are in NumPy order (outermost first, as array.shape); the backend hands the driver (or ptxsim's
    host helper) the same map innermost first.
    """

    array: DeviceArray
    shape: tuple[int, ...]  # the view of `array` the map describes (its shape, or a re-view of the same bytes)
    box: tuple[int, ...]  # elements per TMA copy along each dimension
    swizzle: int  # shared-memory swizzle span in bytes: 0, 32, 64 or 128
    oob_fill: str  # "zero" or "nan": what a box reads past the tensor's edge
    raw: bytes = field(default=b"", compare=False, repr=False)  # the 128 bytes where the backend has them (sim)
    handle: Any = field(default=None, compare=False, repr=False)  # the backend's object (gpu: the CUtensorMap)


LaunchArg = DeviceArray | np.generic | TensorMapArg



class KernelBackend(Protocol):
    """The calls an implementation makes on a backend (and nothing else)."""

    name: str

    def to_device(self, host: np.ndarray) -> DeviceArray: ...

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A new device array with every byte set to `fill_byte` (poison: unwritten elements are detectable)."""
        ...

    def free(self, array: DeviceArray) -> None: ...

    def workspace(self, owner: str, specs: dict) -> dict[str, DeviceArray]:
        """Poisoned arrays {name: (shape, dtype)} for `owner`'s intermediates; kept across the calls of a timing loop
        (no allocation inside a timed window). Give them back with `done_with_workspace`."""
        ...

    def done_with_workspace(self, arrays: dict[str, DeviceArray]) -> None: ...

    def tensor_map(self, array: DeviceArray, box: Sequence[int], swizzle: int = 128, shape: Sequence[int] | None = None,
                   oob_fill: str = "zero") -> TensorMapArg:
        """A tiled tensor map over `array` viewed as `shape` (default its own; NumPy order), copying `box` elements
        per dimension into shared memory with the given swizzle span (cuTensorMapEncodeTiled on a GPU)."""
        ...

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        """Launch entry `entry` of PTX module text `ptx` (cached per text); DeviceArray params pass their address."""
        ...

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        """Launch a Numba CUDA kernel given as a plain Python function plus its explicit Numba signature."""
        ...
