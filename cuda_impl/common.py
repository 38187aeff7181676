"""Host-side helpers shared by the cuda_impl modules: launch shapes, array views, argument checks."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from contract.device import DeviceArray
from contract.errors import InputError


@dataclass(frozen=True)
class Launch:
    """One kernel launch shape: grid and block (x, y, z), dynamic shared bytes, and the tile knobs behind it."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0
    knobs: tuple[tuple[str, int], ...] = ()

    def knob(self, name: str) -> int:
        return dict(self.knobs)[name]


def launch(grid: int, block: int, shared_bytes: int = 0, **knobs) -> Launch:
    return Launch((int(grid), 1, 1), (int(block), 1, 1), int(shared_bytes), tuple(sorted(knobs.items())))


def cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def view(array: DeviceArray, dtype, kernel: str, name: str) -> DeviceArray:
    """The same device bytes seen with another element type (last dimension rescaled), e.g. bf16[T,H] as u64[T,H/4].

    Raises:
        InputError: when the last dimension's byte size is not a multiple of the new element size.
    """
    dtype = np.dtype(dtype)
    old = np.dtype(array.dtype).itemsize
    last = array.shape[-1] * old
    if last % dtype.itemsize:
        raise InputError(f"{kernel}: {name} of shape {array.shape} ({np.dtype(array.dtype)}) has rows of {last} bytes, "
                         f"not a multiple of {dtype.itemsize} (needed to read it as {dtype})")
    return dataclasses.replace(array, shape=(*array.shape[:-1], last // dtype.itemsize), dtype=dtype)


def require(kernel: str, ok: bool, message: str) -> None:
    """Raise InputError('<kernel>: <message>') unless ok (the message names the bad value and what was expected);
    the kernel first, as contract.launch.require."""
    if not ok:
        raise InputError(f"{kernel}: {message}")


def check_shape(kernel: str, args: dict, name: str, shape: tuple[int, ...]) -> DeviceArray:
    """args[name] with its shape checked against the expected one."""
    if name not in args:
        raise InputError(f"{kernel}: argument {name!r} missing; got {sorted(args)}")
    arr = args[name]
    if tuple(arr.shape) != tuple(shape):
        raise InputError(f"{kernel}: {name} has shape {tuple(arr.shape)}; expected {tuple(shape)}")
    return arr
