"""A Backend over Numba's own CUDA simulator (NUMBA_ENABLE_CUDASIM=1): the independent cross-check of ptxsim.

Device arrays are host NumPy arrays; `launch_numba` runs `numba.cuda.jit(signature)(pyfunc)` in the simulator, so the
very `run()` functions of cuda_impl execute unchanged. Import only in a process that set NUMBA_ENABLE_CUDASIM=1
before numba.cuda was imported (the tests run it in a subprocess).
"""
from __future__ import annotations

import itertools
import time

import numpy as np

from harness.backends.base import Backend, DeviceArray, LaunchRecord
from harness.backends.numba_abi import check_args, parse_signature


class CudaSimBackend(Backend):
    name = "cudasim"

    def __init__(self):
        from numba.cuda.core import config

        if not config.ENABLE_CUDASIM:
            raise RuntimeError("CudaSimBackend needs NUMBA_ENABLE_CUDASIM=1 set before numba.cuda is imported")
        self._buffers: dict[int, np.ndarray] = {}
        self._next = itertools.count(1 << 20, 1 << 20)
        self._jitted: dict = {}
        self.records: list[LaunchRecord] = []

    def _register(self, host: np.ndarray) -> DeviceArray:
        addr = next(self._next)
        self._buffers[addr] = host
        return DeviceArray(tuple(host.shape), host.dtype, addr, handle=host)

    def to_device(self, host):
        return self._register(np.array(host, copy=True, order="C"))

    def empty(self, shape, dtype, fill_byte=0xFF):
        shape = (int(shape),) if np.isscalar(shape) else tuple(int(d) for d in shape)
        arr = np.empty(shape, dtype)
        arr.view(np.uint8).fill(fill_byte & 0xFF)
        return self._register(arr)

    def to_host(self, array):
        return self._buffers[array.addr].copy()

    def free(self, array):
        self._buffers.pop(array.addr, None)

    def _host_view(self, a: DeviceArray, dtype) -> np.ndarray:
        base = self._buffers[a.addr]
        flat = base.reshape(-1).view(np.uint8)
        return flat[: a.nbytes].view(dtype).reshape(a.shape)

    def launch_numba(self, pyfunc, signature, grid, block, args, shared_bytes=0, tag=""):
        from numba import cuda

        arg_types = parse_signature(signature)
        check_args(pyfunc.__name__, arg_types, args)
        key = (pyfunc, str(signature))
        if key not in self._jitted:
            self._jitted[key] = cuda.jit(signature)(pyfunc)
        call = [self._host_view(a, t.dtype) if t.is_array else t.dtype.type(a)
                for t, a in zip(arg_types, args, strict=True)]
        t0 = time.perf_counter()
        self._jitted[key][grid, block, 0, int(shared_bytes)](*call)
        rec = LaunchRecord(tag or pyfunc.__name__, "numba", tuple(np.atleast_1d(grid)), tuple(np.atleast_1d(block)),
                           int(shared_bytes), time.perf_counter() - t0)
        self.records.append(rec)
        return rec
