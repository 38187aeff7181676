"""The `gpu` backend: Numba device arrays on a real CUDA GPU; PTX through the driver API on the same stream and buffers.

Numba kernels are compiled with `numba.cuda.jit(signature)` once per (pyfunc, signature) and launched on the backend's
stream. PTX text is loaded once per text with cuda-python's `cuModuleLoadDataEx` (a JIT failure quotes the JIT's error
log) and launched with `cuLaunchKernel` on that same stream, with the device pointers of the same Numba buffers
(`__cuda_array_interface__`), so both paths see identical memory; parameters are checked against the `.entry` as
ptxsim's parser reads it. A launch asking for more than 48 KB of dynamic shared memory first raises the function's
MAX_DYNAMIC_SHARED_SIZE_BYTES (Numba kernels too: numba-cuda never does). Every launch is bracketed by CUDA events
(`LaunchRecord.stats` is a GpuLaunchStats) and the host-side call time is recorded as `host_seconds` (what a caller
pays to dispatch, not the kernel's duration).
Everything CUDA comes through harness.backends.cuda_api (imported lazily, replaced by fakes in tests/harness/fakegpu).
"""
from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from contract.device import StructArg, TensorMapArg
from harness.backends import cuda_api, numba_abi
from harness.backends.base import Backend, DeviceArray, LaunchArg, LaunchRecord, flatten_work_items
from harness.backends.sim import dim3
from harness.errors import InputError

# PTX .param type -> ctypes type for cuLaunchKernel's (values, types) argument form
_CTYPES = {
    "u8": ctypes.c_uint8, "s8": ctypes.c_int8, "b8": ctypes.c_uint8,
    "u16": ctypes.c_uint16, "s16": ctypes.c_int16, "b16": ctypes.c_uint16,
    "u32": ctypes.c_uint32, "s32": ctypes.c_int32, "b32": ctypes.c_uint32,
    "u64": ctypes.c_uint64, "s64": ctypes.c_int64, "b64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}


# NOTE: kept under their old names: harness.timing.gpu and older callers import them from here
GpuError = cuda_api.GpuError
_check = cuda_api.check
_stream_handle = cuda_api.stream_handle
DEFAULT_DYNAMIC_SHARED = 48 * 1024  # above this a launch needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def _numba_kernel_handle(dispatcher):
    """The CUkernel (numba-cuda >= 0.x loads through cuLibrary) or CUfunction behind a Numba dispatcher compiled for
    one explicit signature."""
    try:
        (kernel,) = dispatcher.overloads.values()
        library = getattr(kernel, "library", None) or kernel._codelibrary
        return library.get_cufunc().handle
    except (AttributeError, ValueError) as exc:
        raise GpuError(f"cannot find the CUDA function of Numba kernel {getattr(dispatcher, '__name__', dispatcher)} "
                       f"({type(exc).__name__}: {exc}); expected one compiled overload whose "
                       f"library.get_cufunc().handle is the kernel (numba-cuda 0.30)") from exc


@dataclass
class GpuLaunchStats:
    """CUDA events recorded on the stream right before and after one launch."""

    start: Any
    end: Any

    def elapsed_ms(self) -> float:
        """Device time between the events (synchronises on the end event)."""
        self.end.synchronize()
        return float(self.start.elapsed_time(self.end))


def tensor_map_bytes(tmap) -> bytes:
    """The 128 bytes of a CUtensorMap: cuda-python's `opaque` is 16 64-bit words (a fake's may be the bytes)."""
    opaque = tmap.opaque
    if isinstance(opaque, (bytes, bytearray)):
        raw = bytes(opaque)
    else:
        raw = b"".join(int(w).to_bytes(8, "little") for w in opaque)
    if len(raw) != 128:
        raise InputError(f"a CUtensorMap of {len(raw)} bytes; expected 128")
    return raw


def numba_view_dtype(dtype) -> np.dtype:
    """bf16 -> uint16 and e4m3 -> uint8 (Numba has neither type); other dtypes as they are."""
    dtype = np.dtype(dtype)
    if dtype.kind == "V" or dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return np.dtype(f"u{dtype.itemsize}")
    return dtype


class GpuBackend(Backend):
    """Backend over numba-cuda on device 0 with one dedicated stream."""

    name = "gpu"

    def __init__(self, event_timing: bool = True):
        cuda = cuda_api.numba_cuda()
        self._cuda = cuda
        self.context = cuda.current_context()  # makes the primary context current for the driver API too
        self.stream = cuda.stream()
        self.event_timing = event_timing
        self._jitted: dict[tuple, Any] = {}
        self._modules: dict[str, Any] = {}
        self._functions: dict[tuple[str, str], Any] = {}
        self._params: dict[str, dict[str, tuple[str, ...]]] = {}
        self._dyn_shared: dict[tuple, int] = {}  # (handle type, value) -> the dynamic shared memory it is allowed
        self.module_logs: dict[str, dict] = {}  # module (its entries) -> how it was loaded and the JIT's info log
        self._persistent: dict[tuple, int] = {}  # persistent_ctas answers per launch shape
        self._structs: dict[StructArg, ctypes.Structure] = {}  # StructArg -> its ctypes struct, maps encoded
        self.sync_timeout_s = cuda_api.sync_timeout_from_env()
        # with the watchdog on, spinning kernels also bound their waits: a trap ends the launch (and frees the GPU for
        # the next step) where the watchdog can only report it (docs/gpu-check.md)
        self.wait_bound = cuda_api.WAIT_BOUND if self.sync_timeout_s is not None else 0
        self.load_via = "auto"  # load_ptx_module via: "auto" (JIT; ptxas on a refused .version), "jit", "cubin"
        self.records: list[LaunchRecord] = []
        self.sources: dict[str, tuple] = {}  # launch name -> ("ptx", text, entry) | ("numba", pyfunc, signature)

    # memory ---------------------------------------------------------------------------------------------------
    def _wrap(self, dev, shape, dtype) -> DeviceArray:
        cai = getattr(dev, "__cuda_array_interface__", None)
        # NOTE: Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, used by the CPU tests of this backend) has no
        # device pointers; its arrays get address 0 and only the Numba path works there.
        addr = int(cai["data"][0]) if cai else 0
        return DeviceArray(tuple(int(d) for d in shape), np.dtype(dtype), addr, handle=dev)

    def device_free_bytes(self) -> int | None:
        """Free device memory (the CUDA context's cuMemGetInfo through Numba), None when it cannot be asked."""
        try:
            free, _total = self._cuda.current_context().get_memory_info()
        except Exception:  # noqa: BLE001 - an estimate's input: unknown rather than fatal
            return None
        # NOTE: Numba's CUDA simulator answers float('inf'): no figure, so nothing to skip a row by
        return int(free) if math.isfinite(free) else None

    def to_device(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host)
        dev = self._cuda.to_device(host.view(numba_view_dtype(host.dtype)), stream=self.stream)
        self.stream.synchronize()
        return self._wrap(dev, host.shape, host.dtype)

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A new device array filled with `fill_byte` by a memset on the stream (no host copy, no sync: cheap
        enough to call inside a timed `run`, e.g. for a layer's intermediates)."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        dev = self._cuda.device_array(shape, dtype=numba_view_dtype(dtype), stream=self.stream)
        array = self._wrap(dev, shape, dtype)
        if nbytes and array.addr:
            driver = cuda_api.driver()
            _check(driver.cuMemsetD8Async(driver.CUdeviceptr(array.addr), fill_byte & 0xFF, nbytes,
                                          driver.CUstream(_stream_handle(self.stream))), "cuMemsetD8Async")
        elif nbytes:  # Numba's CUDA simulator: no device pointers, fill from the host
            fill = np.full(nbytes, fill_byte & 0xFF, np.uint8).view(numba_view_dtype(dtype)).reshape(shape)
            dev.copy_to_device(fill, stream=self.stream)
        return array

    def to_host(self, array: DeviceArray) -> np.ndarray:
        host = array.handle.copy_to_host(stream=self.stream)
        self.stream.synchronize()
        return np.ascontiguousarray(host).view(np.dtype(array.dtype)).reshape(array.shape)

    def free(self, array: DeviceArray) -> None:
        pass  # Numba frees the buffer when the last reference (the DeviceArray's handle) goes away

    def synchronize(self) -> None:
        """Wait for the stream; with `sync_timeout_s` (env PTXMOE_GPU_SYNC_TIMEOUT) a watchdog: a stream still busy
        after that long raises a sticky GpuError (CUDA_ERROR_LAUNCH_TIMEOUT) naming the hang, so a deadlocked kernel
        ends its row as an error (and the sweep, whose context it holds) instead of blocking forever."""
        if self.sync_timeout_s is None:
            self.stream.synchronize()
            return
        cuda_api.wait_for_stream(self.stream, self.sync_timeout_s, ", ".join(r.name for r in self.records[-3:]))

    # launches -------------------------------------------------------------------------------------------------
    def _events(self):
        if not self.event_timing:
            return None, None
        return self._cuda.event(), self._cuda.event()  # timing=True is the default

    def _function(self, ptx: str, entry: str):
        driver = cuda_api.driver()
        key = (ptx, entry)
        if key not in self._functions:
            if ptx not in self._modules:
                self._params[ptx] = numba_abi.entry_params(ptx)
                what = f"module of {', '.join(self._params[ptx])}"
                logs: dict[str, str | None] = {}
                self.module_logs[what] = logs
                self._modules[ptx] = cuda_api.load_ptx_module(ptx, what, logs, via=self.load_via)
            if entry not in self._params[ptx]:
                raise InputError(f"PTX module has no entry {entry!r}; entries: {', '.join(self._params[ptx])}")
            self._functions[key] = _check(driver.cuModuleGetFunction(self._modules[ptx], entry.encode()),
                                          f"cuModuleGetFunction({entry})")
        return self._functions[key]

    def _allow_dynamic_shared(self, func, shared_bytes: int, kernel_name: str) -> None:
        """Raise the function's dynamic shared-memory limit when a launch asks for more than the default 48 KB (once
        per function and size); CUkernel handles (Numba) use cuKernelSetAttribute, CUfunctions cuFuncSetAttribute."""
        if shared_bytes <= DEFAULT_DYNAMIC_SHARED:
            return
        value = getattr(func, "value", None) if not hasattr(func, "__int__") else int(func)  # ctypes handles: .value
        key = (type(func).__name__, value)
        if self._dyn_shared.get(key, 0) >= shared_bytes:
            return
        driver = cuda_api.driver()
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        if type(func).__name__ not in ("CUkernel", "CUfunction"):  # NOTE: an older numba-cuda's raw handle
            func = driver.CUfunction(int(value or 0))
        if type(func).__name__ == "CUfunction":
            self._check_shared_fits(func, int(shared_bytes), kernel_name)
        if type(func).__name__ == "CUkernel":
            _check(driver.cuKernelSetAttribute(attr, int(shared_bytes), func, self._device()),
                   f"cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={shared_bytes}, {kernel_name})")
        else:
            _check(driver.cuFuncSetAttribute(func, attr, int(shared_bytes)),
                   f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={shared_bytes}, {kernel_name})")
        self._dyn_shared[key] = int(shared_bytes)

    def _check_shared_fits(self, func, shared_bytes: int, kernel_name: str) -> None:
        """InputError when the kernel's static shared memory plus `shared_bytes` of dynamic exceed the device's
        per-block opt-in (the driver only answers CUDA_ERROR_INVALID_VALUE)."""
        driver = cuda_api.driver()
        static = int(_check(driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                      func), f"cuFuncGetAttribute(SHARED_SIZE_BYTES, {kernel_name})"))
        optin = self.max_dynamic_shared()
        if static + shared_bytes > optin:
            raise InputError(f"{kernel_name}: {shared_bytes} bytes of dynamic shared memory plus {static} static "
                             f"exceed the device's per-block opt-in of {optin} bytes (at most {optin - static} "
                             f"dynamic with this much static)")

    def _device(self):
        return cuda_api.driver().CUdevice(int(self.context.device.id))

    def max_dynamic_shared(self) -> int:
        """The most dynamic shared memory one block may opt into on this device (232448 bytes on H100/H200)."""
        driver = cuda_api.driver()
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        return int(_check(driver.cuDeviceGetAttribute(attr, self._device()), "cuDeviceGetAttribute(MAX_SHARED_"
                                                                            "MEMORY_PER_BLOCK_OPTIN)"))

    def sm_count(self) -> int:
        """The device's streaming multiprocessors (132 on an H200)."""
        driver = cuda_api.driver()
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        return int(_check(driver.cuDeviceGetAttribute(attr, self._device()), "cuDeviceGetAttribute(MULTIPROCESSOR_"
                                                                            "COUNT)"))

    def persistent_ctas(self, ptx: str, entry: str, block, shared_bytes: int, cluster_size: int = 1) -> int:
        """CTAs a persistent launch of `entry` should have so that all are resident at once: one per SM, or for a
        cluster kernel cuOccupancyMaxActiveClusters x the cluster size (clusters must fit in a GPC, so fewer SMs may
        be usable than the device has).

        Raises:
            GpuError: a driver call failed.
        """
        key = (ptx, entry, dim3(block, "block"), int(shared_bytes), int(cluster_size))
        if key not in self._persistent:  # NOTE: asked on every run() of a rung: once per shape, not per timed call
            self._persistent[key] = self._ask_persistent_ctas(ptx, entry, block, shared_bytes, cluster_size)
        return self._persistent[key]

    def _ask_persistent_ctas(self, ptx: str, entry: str, block, shared_bytes: int, cluster_size: int) -> int:
        sms = self.sm_count()
        if cluster_size <= 1:
            return sms
        driver = cuda_api.driver()
        func = self._function(ptx, entry)
        self._allow_dynamic_shared(func, int(shared_bytes), entry)
        b = dim3(block, "block")
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = sms - sms % cluster_size, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = b
        config.sharedMemBytes = int(shared_bytes)
        config.hStream = driver.CUstream(_stream_handle(self.stream))
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = int(cluster_size), 1, 1
        config.attrs = [attr]
        config.numAttrs = 1
        clusters = int(_check(driver.cuOccupancyMaxActiveClusters(func, config),
                              f"cuOccupancyMaxActiveClusters({entry}, cluster {cluster_size})"))
        return max(1, clusters) * int(cluster_size)

    def launch_ptx_raw(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg],
                       shared_bytes: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """Launch on the stream without events or a LaunchRecord (e.g. the timing loop's stream blocker).

        Returns:
            (grid, block) as dim3 tuples.
        Raises:
            InputError: wrong parameter count or a non-scalar .param; GpuError: a driver call failed.
        """
        driver = cuda_api.driver()
        func = self._function(ptx, entry)
        ptypes = self._params[ptx][entry]
        params = flatten_work_items(params)  # a persistent kernel's item range: the whole work, (0, count)
        if len(ptypes) != len(params):
            raise InputError(f"PTX entry {entry} takes {len(ptypes)} parameters ({', '.join(ptypes)}); "
                             f"{len(params)} given")
        values: list = []
        ctys: list = []
        for i, (p, t) in enumerate(zip(params, ptypes, strict=True)):
            if isinstance(p, TensorMapArg):  # by-value CUtensorMap: cuda-python takes the binding object, type None
                if t != "b8[128]" or p.handle is None:
                    raise InputError(f"PTX entry {entry} parameter {i} has type .{t}; a tensor map needs "
                                     f".param .align 64 .b8 name[128] and a map made by this backend's tensor_map")
                values.append(p.handle)
                ctys.append(None)
                continue
            if isinstance(p, StructArg):  # by-value struct (CUTLASS's Params): a ctypes.Structure, type None
                if t != f"b8[{len(p.raw)}]":
                    raise InputError(f"PTX entry {entry} parameter {i} has type .{t}; a {len(p.raw)}-byte struct "
                                     f"needs .param .align 64 .b8 name[{len(p.raw)}]")
                values.append(self._struct(p, entry, i))
                ctys.append(None)
                continue
            cty = _CTYPES.get(t)
            if cty is None:
                raise InputError(f"PTX entry {entry} parameter {i} has type .{t}; the gpu backend passes only scalar "
                                 f"types ({', '.join(_CTYPES)})")
            values.append(int(p.addr) if isinstance(p, DeviceArray) else (p.item() if isinstance(p, np.generic) else p))
            ctys.append(cty)
        g, b = dim3(grid, "grid"), dim3(block, "block")
        self._allow_dynamic_shared(func, int(shared_bytes), entry)
        _check(driver.cuLaunchKernel(func, *g, *b, int(shared_bytes), driver.CUstream(_stream_handle(self.stream)),
                                     (tuple(values), tuple(ctys)), 0), f"cuLaunchKernel({entry})")
        return g, b

    def _struct(self, arg: StructArg, entry: str, index: int):
        """A StructArg as a ctypes.Structure of its bytes, each tensor map in it encoded by the driver's
        cuTensorMapEncodeTiled with the recorded arguments (cached per StructArg: the same Params every timed call)."""
        done = self._structs.get(arg)
        if done is not None:
            return done
        driver = cuda_api.driver()
        raw = bytearray(arg.raw)
        for offset, c in arg.tensor_maps:
            if offset % 64 or not 0 <= offset <= len(raw) - 128:
                raise InputError(f"PTX entry {entry} parameter {index}: a tensor map at byte {offset} of a "
                                 f"{len(raw)}-byte struct; expected a 64-aligned 128-byte slot inside it")
            tmap = _check(driver.cuTensorMapEncodeTiled(
                driver.CUtensorMapDataType(c.data_type), c.rank, int(c.address),
                [driver.cuuint64_t(d) for d in c.dims], [driver.cuuint64_t(s) for s in c.strides],
                [driver.cuuint32_t(b) for b in c.box], [driver.cuuint32_t(e) for e in c.element_strides],
                driver.CUtensorMapInterleave(c.interleave), driver.CUtensorMapSwizzle(c.swizzle),
                driver.CUtensorMapL2promotion(c.l2_promotion), driver.CUtensorMapFloatOOBfill(c.oob_fill)),
                f"cuTensorMapEncodeTiled({entry} parameter {index}, map at byte {offset})")
            raw[offset:offset + 128] = tensor_map_bytes(tmap)
        fields = [("raw", ctypes.c_uint8 * len(raw))]
        struct = type("StructParam", (ctypes.Structure,), {"_fields_": fields, "_pack_": 1})()
        ctypes.memmove(ctypes.addressof(struct), bytes(raw), len(raw))
        self._structs[arg] = struct
        return struct

    def tensor_map(self, array: DeviceArray, box, swizzle: int = 128, shape=None, oob_fill: str = "zero"
                   ) -> TensorMapArg:
        """A tiled tensor map over `array` from the driver's cuTensorMapEncodeTiled (harness.backends.tensormaps has
        the NumPy-order -> driver-order translation the sim backend shares)."""
        from harness.backends.tensormaps import request, tiled_params

        driver = cuda_api.driver()
        p = tiled_params(array, box, swizzle, shape, oob_fill)
        tmap = _check(driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType(p.data_type), p.rank, int(p.address),
            [driver.cuuint64_t(d) for d in p.dims], [driver.cuuint64_t(s) for s in p.strides],
            [driver.cuuint32_t(b) for b in p.box], [driver.cuuint32_t(e) for e in p.element_strides],
            driver.CUtensorMapInterleave(0), driver.CUtensorMapSwizzle(p.swizzle),
            driver.CUtensorMapL2promotion(p.l2_promotion), driver.CUtensorMapFloatOOBfill(p.oob_fill)),
            f"cuTensorMapEncodeTiled(shape {tuple(array.shape)}, box {tuple(box)}, swizzle {swizzle})")
        return request(array, box, swizzle, shape, oob_fill, handle=tmap)

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        self._function(ptx, entry)  # NOTE: module load and JIT before the first event, not between the two
        self.sources.setdefault(tag or entry, ("ptx", ptx, entry))
        start, end = self._events()
        t0 = time.perf_counter()
        if start is not None:
            start.record(self.stream)
        g, b = self.launch_ptx_raw(ptx, entry, grid, block, params, shared_bytes)
        if end is not None:
            end.record(self.stream)
        seconds = time.perf_counter() - t0
        record = LaunchRecord(tag or entry, "ptx", g, b, int(shared_bytes), seconds,
                              GpuLaunchStats(start, end) if start is not None else None)
        self.records.append(record)
        return record

    def _jit(self, pyfunc, signature):
        key = (pyfunc, str(signature))
        if key not in self._jitted:
            arg_types = numba_abi.parse_signature(signature)
            self._jitted[key] = (self._cuda.jit(signature)(pyfunc), arg_types)
        return self._jitted[key]

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        kernel, arg_types = self._jit(pyfunc, signature)
        numba_abi.check_args(pyfunc.__name__, arg_types, args)
        call_args = []
        for t, a in zip(arg_types, args, strict=True):
            if t.is_array:
                dev = cast(DeviceArray, a).handle  # check_args made sure array parameters got DeviceArrays
                call_args.append(dev if dev.dtype == t.dtype else dev.view(t.dtype))
            else:
                call_args.append(t.dtype.type(a))
        g, b = dim3(grid, "grid"), dim3(block, "block")
        self.sources.setdefault(tag or pyfunc.__name__, ("numba", pyfunc, signature))
        if shared_bytes > DEFAULT_DYNAMIC_SHARED:
            self._allow_dynamic_shared(_numba_kernel_handle(kernel), int(shared_bytes), pyfunc.__name__)
        start, end = self._events()
        t0 = time.perf_counter()
        if start is not None:
            start.record(self.stream)
        kernel[g, b, self.stream, int(shared_bytes)](*call_args)
        if end is not None:
            end.record(self.stream)
        seconds = time.perf_counter() - t0
        record = LaunchRecord(tag or pyfunc.__name__, "numba", g, b, int(shared_bytes), seconds,
                              GpuLaunchStats(start, end) if start is not None else None)
        self.records.append(record)
        return record

    def l2_bytes(self, fallback: int) -> int:
        """The device's L2 size from the driver, else `fallback` (the device spec's)."""
        driver = cuda_api.driver()
        try:
            value = _check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                                       self._device()), "cuDeviceGetAttribute(L2_CACHE_SIZE)")
        except Exception:  # noqa: BLE001 - a driver (or a fake) that cannot say: the spec's size
            return int(fallback)
        return int(value) if isinstance(value, int) and value > 0 else int(fallback)

    def time_row(self, call, args: dict, inputs: dict, records: list, timing):
        """CUDA-event samples of `call` (harness.timing.gpu.time_gpu: L2 flushed, stream held, warm-up, stopping
        rule), rotating over copies of the array inputs while they fit in L2 twice over."""
        from harness.timing.gpu import rotation_count, time_gpu
        from harness.timing.row_timing import RowTimes

        l2 = self.l2_bytes(timing.l2_fallback_bytes)
        arrays = {n: a for n, a in inputs.items() if isinstance(a, np.ndarray) and a.ndim > 0}
        input_bytes = sum(int(a.nbytes) for a in arrays.values())
        extra = [{**args, **{n: self.to_device(np.ascontiguousarray(a)) for n, a in arrays.items()}}
                 for _ in range(rotation_count(input_bytes, l2, timing.gpu.max_rotation) - 1)]
        try:
            measured = time_gpu(self, call, [args, *extra], l2, timing.gpu)
        finally:
            for arg_set in extra:
                for name in arrays:
                    self.free(arg_set[name])
        return RowTimes(measured, measured["device"]["median_us"], None)

    def row_module_loads(self) -> dict:
        """{module: {via, target, jit_target, info_log}} of the PTX modules this row launched (module_logs: how each
        was loaded, and the JIT's info log, where spills and an ignored setmaxnreg are reported)."""
        entries = {src[2] for src in self.sources.values() if src and src[0] == "ptx"}
        return {name: dict(log) for name, log in self.module_logs.items()
                if set(name.removeprefix("module of ").split(", ")) & entries}

    def launched_sources(self) -> dict[str, tuple[str, str]]:
        """{launch name: (PTX text, entry)}; Numba kernels are compiled to PTX with compile_ptx (cc 9.0) here."""
        out = {}
        for name, (kind, a, b) in self.sources.items():
            if kind == "ptx":
                out[name] = (a, b)
            else:
                compiled = numba_abi.compile_numba(a, b)
                out[name] = (compiled.ptx, compiled.entry)
        return out
