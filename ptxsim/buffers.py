"""DeviceMemory: simulated global memory that keeps buffers across launches; argument marshalling; the state one
launch shares among its CTA batches. ptxsim.device.Device adds launch() to it (apart, so that ptxsim/launch.py can
import this without a circle)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import LaunchError, MemoryFault, ParamTypeError
from ptxsim.memory import GLOBAL_BASE, GlobalMemory


@dataclass(frozen=True)
class DeviceBuffer:
    """A simulated device allocation. Pass it in launch args to pass its address as a .u64 param."""

    addr: int
    nbytes: int


@dataclass(frozen=True)
class NumbaArray:
    """An ndarray argument for a Numba-compiled kernel: expands to Numba's array ABI
    (meminfo, parent, nitems, itemsize, data, shape[ndim], strides[ndim]); updated in place after the launch."""

    array: np.ndarray

    @property
    def nparams(self) -> int:
        return 5 + 2 * self.array.ndim


_SERIALS = itertools.count(1)


@dataclass
class Launch:
    """Everything about one launch the execution state needs (shared by all CTA batches)."""

    grid: tuple
    block: tuple
    shared_bytes: int
    gmem: GlobalMemory
    param_buf: np.ndarray
    symaddr: dict
    hooks: list = field(default_factory=list)
    track_written: bool = False
    reg_cache: dict = field(default_factory=dict)
    memcheck: object = None  # the Memcheck sanitizer when enabled (access.check reports through it)
    cluster: tuple | None = None  # thread-block cluster shape (ptxsim/clusters.py); None: no clusters
    strict_async: bool = False  # adversarial timing of asynchronous operations (launch's strict_async)
    wait_timeouts: bool = False  # blocked mbarrier waits time out when nothing else can progress (launch's)
    shared_fill: int = 0  # the byte shared memory holds at a CTA's start (launch's shared_fill)
    serial: int = field(default_factory=lambda: next(_SERIALS))  # unique per launch (per-launch caches key on it)


def _dim3(v, what) -> tuple:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    try:
        if isinstance(v, (str, bytes)) or not all(isinstance(x, (int, np.integer)) for x in v):
            raise TypeError
        t = tuple(int(x) for x in v)
    except TypeError:
        raise LaunchError(f"{what} must be an int or a tuple of up to 3 ints, got {v!r:.100}") from None
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise LaunchError(f"{what} must have 1 to 3 positive extents, got {v!r}")
    return t + (1,) * (3 - len(t))


class DeviceMemory:
    """A simulated GPU's global memory; buffers persist across launches."""

    def __init__(self):
        self.gmem = GlobalMemory()
        self._modules = {}  # module id -> {symbol: address}

    # -- buffers -------------------------------------------------------------------------------------------------
    def alloc(self, nbytes: int, label: str = "") -> DeviceBuffer:
        a = self.gmem.alloc(int(nbytes), label)
        return DeviceBuffer(a.addr, a.nbytes)

    def alloc_lazy(self, nbytes: int, fill, label: str = "") -> DeviceBuffer:
        """A buffer whose pages materialise when first touched (by a simulated access or a copy): `fill` is a byte
        value (e.g. a poison byte) or a callable (start, stop) -> the uint8 bytes [start, stop) of the buffer's
        contents (e.g. contract.generators.KeyedNormal.fill_bytes). Results are identical to copy_in of the whole."""
        if not isinstance(fill, (int, np.integer)) and not callable(fill):
            raise TypeError(f"alloc_lazy: fill must be a byte value or a callable (start, stop) -> bytes, got "
                            f"{type(fill).__name__}")
        a = self.gmem.alloc(int(nbytes), label, fill=fill)
        return DeviceBuffer(a.addr, a.nbytes)

    def memory_stats(self) -> dict:
        """Simulated global memory use: heap extent, lazy pages filled / still pending, initcheck shadow bytes."""
        from ptxsim.memory import PAGE

        g = self.gmem
        return {"heap_bytes": g.top, "lazy_pages_filled": g.filled_pages, "lazy_pages_pending": g.pending_pages,
                "lazy_page_bytes": PAGE, "shadow_bytes": len(g.written) if g.has_shadow else 0}

    def to_device(self, array: np.ndarray, label: str = "") -> DeviceBuffer:
        array = np.ascontiguousarray(array)
        buf = self.alloc(array.nbytes, label)
        self.copy_in(buf, array)
        return buf

    def _check(self, buf: DeviceBuffer, nbytes: int, what: str):
        if not isinstance(buf, DeviceBuffer):
            raise ParamTypeError(f"{what}: expected a DeviceBuffer, got {type(buf).__name__}")
        if nbytes > buf.nbytes:
            raise MemoryFault(f"{what}: {nbytes} bytes do not fit the {buf.nbytes}-byte buffer at {buf.addr:#x}",
                              space="global", addr=buf.addr, size=nbytes)
        if not any(a.addr == buf.addr for a in self.gmem.allocs):
            raise MemoryFault(f"{what}: buffer at {buf.addr:#x} is not a live allocation of this device (freed?)",
                              space="global", addr=buf.addr, size=nbytes)

    def copy_in(self, buf: DeviceBuffer, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        self._check(buf, array.nbytes, "copy_in")
        self.gmem.write_bytes(buf.addr, array.reshape(-1).view(np.uint8))

    def mark_uninitialised(self, buf: DeviceBuffer) -> None:
        """initcheck: treat every byte of `buf` as never written (its contents stay): a harness's poison fill is
        not an initialisation, so a kernel reading poison it never wrote is reported."""
        self._check(buf, 0, "mark_uninitialised")
        self.gmem.mark_written(buf.addr - GLOBAL_BASE, buf.nbytes, False)

    def copy_out(self, buf: DeviceBuffer, array: np.ndarray) -> None:
        """Fill `array` (C-contiguous) in place from the buffer."""
        if not array.flags.c_contiguous:
            raise ParamTypeError("copy_out needs a C-contiguous array to fill in place")
        self._check(buf, array.nbytes, "copy_out")
        self.gmem.read_into(buf.addr, array.reshape(-1).view(np.uint8))

    def snapshot(self, buf: DeviceBuffer, dtype, shape) -> np.ndarray:
        """The buffer's contents now as a read-only view of the simulated heap, no host copy; its pending lazy pages
        are filled first (a buffer a sampled run left partly untouched commits those pages: the tail of a layer's
        intermediates, 17 % of them at dsv3-prefill, against a copy of all of them). Meant for a buffer nothing will
        write again (about to be freed): the view keeps the heap's memory alive after free or after the device is
        dropped, and shows later writes only until the heap grows."""
        self._check(buf, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize, "snapshot")
        view = self.gmem.view(buf.addr, buf.nbytes)
        return view[: int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape)

    def read(self, buf: DeviceBuffer, dtype, shape) -> np.ndarray:
        out = np.empty(shape, dtype)
        self.copy_out(buf, out)
        return out

    def free(self, buf: DeviceBuffer) -> None:
        self.gmem.free(buf.addr)

    # -- module variables ----------------------------------------------------------------------------------------
    def module_symbols(self, module) -> dict:
        """Addresses of a module's .global/.const variables on this device (allocated and initialised once)."""
        syms = self._modules.get(module.id)
        if syms is not None:
            return syms
        from ptxsim.ast import Ident
        from ptxsim.ptxtypes import ptx_type

        syms = {}
        pending = []
        for v in module.variables:
            if v.space not in ("global", "const"):
                continue
            nbytes = max(v.nbytes, v.elem_bytes)
            a = self.gmem.alloc(nbytes, f".{v.space} {v.name}")
            syms[v.name] = a.addr
            if v.init:
                pending.append((v, a.addr))
            self.gmem.mark_written(a.addr - GLOBAL_BASE, nbytes, True)  # module variables are initialised
        for v, addr in pending:
            t = ptx_type(v.type)
            vals = [syms.get(x.name, 0) if isinstance(x, Ident) else x for x in v.init]
            if t.kind == "f":
                raw = np.array(vals, dtype=t.dtype)
            else:
                raw = np.array([int(x) & ((1 << t.bits) - 1) for x in vals], dtype=t.uint)
            self.gmem.write_bytes(addr, raw.view(np.uint8))
        self._modules[module.id] = syms
        return syms


# -- argument marshalling ---------------------------------------------------------------------------------------
_INT_KINDS = ("b", "u", "s")


def _plain(arr: np.ndarray, where: str) -> None:
    """Arrays that reach device memory must hold plain numbers (no Python objects, no structured fields)."""
    if arr.dtype.hasobject or arr.dtype.fields is not None:
        raise ParamTypeError(f"{where}: array of dtype {arr.dtype} cannot be copied to the device (expected plain "
                             "numeric elements)")


def marshal(kernel, args, dev: DeviceMemory):
    """Kernel param buffer from launch args; returns (param_buf, [(ndarray, DeviceBuffer)] to copy back)."""
    from ptxsim.ptxtypes import ptx_type

    params = kernel.params
    prog = kernel.program
    buf = np.zeros((prog.param_bytes + 31) // 16 * 16, np.uint8)
    back = []
    flat = []
    for a in args:
        if isinstance(a, NumbaArray):
            arr = a.array
            _plain(arr, "NumbaArray")
            if not arr.flags.c_contiguous:
                raise ParamTypeError("NumbaArray needs a C-contiguous ndarray")
            db = _upload(arr, dev, back)
            flat += [np.uint64(0), np.uint64(0), np.int64(arr.size), np.int64(arr.itemsize), db]
            flat += [np.int64(s) for s in arr.shape] + [np.int64(s) for s in arr.strides]
        else:
            flat.append(a)
    if len(flat) != len(params):
        hint = ""
        if len(flat) < len(params):
            hint = (" (a Numba kernel takes 5 + 2*ndim params per array argument: wrap arrays in ptxsim.NumbaArray)")
        raise ParamTypeError(f"kernel {kernel.name} takes {len(params)} params, got {len(flat)} argument(s){hint}; "
                             f"params: {', '.join(f'.{p.type} {p.name}' for p in params)}")
    for p, a in zip(params, flat, strict=True):
        t = ptx_type(p.type)
        where = f"param {p.name} (.{p.type}) of kernel {kernel.name}"
        if isinstance(a, np.ndarray) and a.ndim > 0:
            _plain(a, where)
            if not a.flags.c_contiguous:
                raise ParamTypeError(f"{where}: array arguments must be C-contiguous")
            a = _upload(a, dev, back)
        if isinstance(a, DeviceBuffer):
            if t.kind not in _INT_KINDS or t.bits != 64:
                raise ParamTypeError(f"{where}: got a device pointer, but the param is not a 64-bit integer")
            raw = np.array([a.addr], np.uint64).view(np.uint8)
        elif isinstance(a, (bytes, bytearray)):
            if len(a) != p.nbytes:
                raise ParamTypeError(f"{where}: got {len(a)} bytes, the param holds {p.nbytes}")
            raw = np.frombuffer(bytes(a), np.uint8)
        else:
            raw = _scalar_bytes(a, t, p, where)
        buf[p.offset: p.offset + len(raw)] = raw
    return buf, back


def _upload(arr, dev, back):
    """Copy an ndarray argument to the device once per launch: the same array passed twice is one buffer (so
    in-place kernels alias as on a GPU). Distinct arrays that overlap cannot alias here: warn."""
    for a, db in back:
        if a is arr:
            return db
    for a, _ in back:
        if np.shares_memory(a, arr):
            import warnings

            from ptxsim.errors import PtxSimWarning

            warnings.warn(PtxSimWarning("two overlapping but distinct ndarray arguments are copied to separate device "
                                        "buffers (writes through one are not seen through the other, and the last "
                                        "copy-back wins); pass the same array, or DeviceBuffers"), stacklevel=4)
    db = dev.to_device(arr)
    back.append((arr, db))
    return db


def _scalar_bytes(a, t, p, where):
    if isinstance(a, np.ndarray):  # 0-d array
        a = a[()]
    if isinstance(a, (bool, np.bool_)):
        raise ParamTypeError(f"{where}: got a bool; pass np.int32/np.uint8 etc.")
    if isinstance(a, np.generic):
        dt = a.dtype
        if dt.kind in "iu":
            if t.kind not in _INT_KINDS or t.bits != dt.itemsize * 8:
                raise ParamTypeError(f"{where}: got {dt.name} ({dt.itemsize * 8}-bit integer); expected a value "
                                     f"matching .{t.name}")
            return np.array([a]).view(np.uint8)
        if dt.kind == "f":
            if t.kind != "f" or t.bits != dt.itemsize * 8:
                raise ParamTypeError(f"{where}: got {dt.name}; a float argument must match the .f param width "
                                     f"exactly (expected .{t.name})")
            return np.array([a]).view(np.uint8)
        raise ParamTypeError(f"{where}: unsupported argument dtype {dt}")
    if isinstance(a, int):
        if t.kind not in _INT_KINDS:
            raise ParamTypeError(f"{where}: got a Python int for a .{t.name} param; pass np.float32/np.float64")
        lo = -(1 << (t.bits - 1)) if t.kind == "s" else -(1 << (t.bits - 1))
        if not lo <= a < (1 << t.bits):
            raise ParamTypeError(f"{where}: {a} does not fit in {t.bits} bits")
        return np.array([a & ((1 << t.bits) - 1)], t.uint).view(np.uint8)
    if isinstance(a, float):
        if t.kind != "f" or t.bits == 16:
            raise ParamTypeError(f"{where}: got a Python float for a .{t.name} param")
        return np.array([a], t.dtype).view(np.uint8)
    raise ParamTypeError(f"{where}: unsupported argument type {type(a).__name__} (expected an ndarray, DeviceBuffer, "
                         "NumPy scalar or bytes)")

