"""Recording fakes of cuda-python's driver bindings and of numba.cuda, strict where the real ones are strict.

`FakeGpu` holds one device's state and a timeline of what the host queued (allocations, frees, memsets, events,
launches, synchronisations). The fake driver checks every cuLaunchKernel against the `.entry` signature as ptxsim
parses it (parameter count and ctypes sizes) and refuses dynamic shared memory over 48 KB unless the function's
MAX_DYNAMIC_SHARED_SIZE_BYTES was raised first, as the real driver does; the fake numba.cuda checks kernel arguments
against the explicit signature. Module loads are refused as the real JIT refuses them: a `.version` above the
driver's (9.0 for CUDA 13.0's driver; CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and an arch-specific `.target sm_90a`
without CU_JIT_TARGET = CU_TARGET_COMPUTE_90A (the JIT's default is the device's compute_90; CUDA_ERROR_INVALID_PTX);
a cubin (cuModuleLoadData) is accepted for its `.text.<entry>` sections. Static shared memory counts against the
opt-in: MAX_DYNAMIC_SHARED_SIZE_BYTES above the opt-in less the static, or a launch whose static plus dynamic
shared memory passes it, is refused. A sticky error (`gpu.poison(entry, code)`) surfaces at the next synchronisation and
from then on every call fails with it, like a real CUDA context after an illegal address.
No kernel computes anything: device memory reads back as zeros, except what a test makes a kernel "write"
(`gpu.kernel_writes[entry] = fn(launch values) -> {device address: array}`, e.g. the counters a clock kernel would
have stored): fake readings for plumbing tests.
"""
from __future__ import annotations

import ctypes
import enum
import itertools
from types import SimpleNamespace

import numpy as np

DEFAULT_SHARED = 48 * 1024
OPTIN_SHARED = 227 * 1024
_PTX_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_TIMEOUT = 702
    CUDA_ERROR_LAUNCH_FAILED = 719
    CUDA_ERROR_UNKNOWN = 999


class CUjit_option(enum.IntEnum):
    CU_JIT_INFO_LOG_BUFFER = 3
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
    CU_JIT_ERROR_LOG_BUFFER = 5
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
    CU_JIT_TARGET = 9
    CU_JIT_LOG_VERBOSE = 12


class CUjit_target(enum.IntEnum):
    CU_TARGET_COMPUTE_90 = 90
    CU_TARGET_COMPUTE_90A = 65626


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class CUtensorMapDataType(enum.IntEnum):
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0
    CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9


class CUtensorMapInterleave(enum.IntEnum):
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0


class CUtensorMapSwizzle(enum.IntEnum):
    CU_TENSOR_MAP_SWIZZLE_NONE = 0
    CU_TENSOR_MAP_SWIZZLE_32B = 1
    CU_TENSOR_MAP_SWIZZLE_64B = 2
    CU_TENSOR_MAP_SWIZZLE_128B = 3


class CUtensorMapL2promotion(enum.IntEnum):
    CU_TENSOR_MAP_L2_PROMOTION_NONE = 0
    CU_TENSOR_MAP_L2_PROMOTION_L2_64B = 1
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3


class CUtensorMapFloatOOBfill(enum.IntEnum):
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1


class CUlaunchAttributeID(enum.IntEnum):
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


class CUlaunchAttribute:
    def __init__(self):
        self.id = None
        self.value = SimpleNamespace(clusterDim=SimpleNamespace(x=0, y=0, z=0))


class CUlaunchConfig:
    def __init__(self):
        self.gridDimX = self.gridDimY = self.gridDimZ = 0
        self.blockDimX = self.blockDimY = self.blockDimZ = 0
        self.sharedMemBytes, self.hStream, self.attrs, self.numAttrs = 0, None, [], 0


class cuuint64_t(int):  # noqa: N801 - cuda-python's spelling
    pass


class cuuint32_t(int):  # noqa: N801 - cuda-python's spelling
    pass


class CUtensorMap:
    """The binding's opaque 128-byte map; this fake keeps ptxsim's encoding of the same parameters."""

    def __init__(self, raw: bytes = bytes(128)):
        self.opaque = raw

    def getPtr(self):  # noqa: N802 - cuda-python's spelling
        return id(self)


class _Handle:
    def __init__(self, value=0):
        self.value = int(value)

    def __int__(self):
        return self.value


class CUdeviceptr(_Handle):
    pass


class CUstream(_Handle):
    pass


class CUdevice(_Handle):
    pass


class CUmodule(_Handle):
    pass


class CUfunction(_Handle):
    pass


class CUkernel(_Handle):
    pass


class FakeCudaAPIError(Exception):
    """What numba-cuda raises for a failed driver call (CudaAPIError: code, msg)."""

    def __init__(self, code, msg):
        super().__init__(f"[{int(code)}] {msg}")
        self.code, self.msg = code, msg


class FakeGpu:
    """One fake device: ids, the timeline, attributes set, launches, and the sticky error state."""

    def __init__(self):
        self.ids = itertools.count(1)
        self.timeline: list[tuple] = []
        self.errors: list[str] = []  # why a launch was refused
        self.launches: list[dict] = []
        self.attributes: dict[tuple, int] = {}  # (handle type, value) -> max dynamic shared bytes
        self.modules: dict[int, dict] = {}  # module id -> {entry: params (ptxsim VarDecls), None from a cubin}
        self.static_shared: dict[int, int] = {}  # module id -> bytes of static (.shared) memory its entries have
        self.module_loads: list[dict] = []  # every load: how (jit/cubin), the JIT target asked for, the result
        self.driver_ptx_version = (9, 0)  # the newest PTX ISA the driver's JIT takes (CUDA 13.0's driver: 9.0)
        self.free_device_bytes = 140 << 30  # what cuMemGetInfo reports free (an H200's, about)
        self.device_sm = 90  # compute capability of the device (an H200)
        self.sm_count = 132
        self.max_active_clusters = 66  # cuOccupancyMaxActiveClusters of a 2-CTA cluster kernel
        self.occupancy_queries: list[tuple] = []
        self.functions: dict[int, tuple[int, str]] = {}
        self.poisoned: dict[str, CUresult] = {}  # kernel name -> the sticky error its launch causes
        self.hangs: set[str] = set()  # kernel names that never finish (a deadlock): the stream stays busy
        self.hung = False
        self.kernel_writes: dict = {}  # kernel name -> fn(launch values) -> {device address: array it "stores"}
        self.memory: dict[int, bytes] = {}  # device address -> bytes a kernel_writes effect stored there
        self.sticky: CUresult | None = None
        self.pending: CUresult | None = None
        self.jit_error: str | None = None
        self.nvml = FakeNvml(self)
        self.driver = FakeDriver(self)
        self.numba = FakeNumbaCuda(self)

    def poison(self, kernel: str, code=CUresult.CUDA_ERROR_ILLEGAL_ADDRESS) -> None:
        self.poisoned[kernel] = code

    def log(self, *entry) -> None:
        self.timeline.append(entry)

    def launched(self, name: str, stream: int, shared: int, values: tuple = (), grid=None) -> None:
        self.launches.append({"name": name, "stream": stream, "shared": shared, "values": tuple(values),
                              "grid": grid})
        self.log("launch", name, stream)
        for addr, array in (self.kernel_writes[name](tuple(values)) if name in self.kernel_writes else {}).items():
            self.memory[int(addr)] = np.ascontiguousarray(array).tobytes()
        if name in self.poisoned:
            self.pending = self.poisoned[name]
        if name in self.hangs:
            self.hung = True

    def sync_error(self) -> CUresult | None:
        """The error a synchronisation reports: a pending fault becomes sticky."""
        if self.pending is not None:
            self.sticky, self.pending = self.pending, None
        return self.sticky

    def allowed_shared(self, handle) -> int:
        return max(DEFAULT_SHARED, self.attributes.get((type(handle).__name__, int(handle)), 0))

    def static_of(self, func) -> int:
        """Static shared memory of a CUfunction's module (0 for Numba's CUkernels: the fake cannot see it)."""
        if type(func).__name__ != "CUfunction" or int(func) not in self.functions:
            return 0
        return self.static_shared.get(self.functions[int(func)][0], 0)


def _static_shared_bytes(module) -> int:
    """Bytes of sized `.shared` variables of a parsed module, module-level and inside its functions."""
    from ptxsim.ast import VarDecl

    decls = list(module.variables)
    for f in module.functions:
        decls += [d for d in f.body if isinstance(d, VarDecl)]
    return sum(d.elem_bytes * d.count for d in decls if d.space == "shared" and d.count)


def _jit_refusal(text: str, options: dict, gpu: FakeGpu) -> tuple[CUresult, str] | None:
    """What the driver's JIT refuses in a PTX text with these options (None: it loads)."""
    import re

    version = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, re.M)
    if version and (int(version.group(1)), int(version.group(2))) > gpu.driver_ptx_version:
        have = ".".join(map(str, gpu.driver_ptx_version))
        return (CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION, f"ptxas application ptx input, line 1; fatal   : "
                f"Unsupported .version {version.group(1)}.{version.group(2)}; current version is '{have}'")
    target = re.search(r"^\s*\.target\s+sm_(\d+)([af]?)", text, re.M)
    if target is None:
        return CUresult.CUDA_ERROR_INVALID_PTX, "ptxas fatal   : no .target directive"
    sm, suffix = int(target.group(1)), target.group(2)
    jit = options.get(CUjit_option.CU_JIT_TARGET)
    jit_sm, jit_suffix = (gpu.device_sm, "") if jit is None else (int(jit) & 0xFFFF, "a" if int(jit) >> 16 else "")
    if sm > gpu.device_sm or (suffix and (sm, suffix) != (jit_sm, jit_suffix)):
        return (CUresult.CUDA_ERROR_INVALID_PTX, f"ptxas fatal   : SM version specified by .target (sm_{sm}{suffix}) "
                f"cannot be compiled for architecture 'sm_{jit_sm}{jit_suffix}'")
    return None


class FakeNvml:
    """pynvml, as far as harness.timing.gpu reads clocks: the H200 as seen on the target machine, idle at 345 MHz
    (reason "GPU idle", 0x1) until the first kernel launch, then 1980 MHz with no reason; `slow_reads` (indices of
    reads) report a HW slowdown (0x8) at 1400 MHz."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    IDLE_MHZ, LOADED_MHZ, SLOW_MHZ = 345, 1980, 1400

    def __init__(self, gpu: FakeGpu):
        self.gpu = gpu
        self.reads = 0
        self.slow_reads: set[int] = set()

    def nvmlInit(self):  # noqa: N802 - pynvml's spelling
        pass

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802
        return ("fake nvml device", index)

    def _state(self) -> tuple[int, int]:
        if not self.gpu.launches:
            return self.IDLE_MHZ, 0x1
        return (self.SLOW_MHZ, 0x8) if self.reads in self.slow_reads else (self.LOADED_MHZ, 0x0)

    def nvmlDeviceGetClockInfo(self, handle, kind):  # noqa: N802
        if kind == self.NVML_CLOCK_MEM:
            return 3201
        return self._state()[0]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):  # noqa: N802
        return self._state()[1]

    def nvmlDeviceGetTemperature(self, handle, kind):  # noqa: N802
        return 40

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        self.reads += 1  # NOTE: read_clocks asks for the power last: one read ends here
        return 150_000


class FakeDriver:
    """cuda.bindings.driver, as far as ptxmoe uses it; calls return (CUresult, *values) tuples."""

    CUresult = CUresult
    CUjit_option = CUjit_option
    CUjit_target = CUjit_target
    CUfunction_attribute = CUfunction_attribute
    CUdevice_attribute = CUdevice_attribute
    CUdeviceptr, CUstream, CUdevice, CUfunction, CUkernel = CUdeviceptr, CUstream, CUdevice, CUfunction, CUkernel
    CUmodule = CUmodule
    CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle = (CUtensorMapDataType, CUtensorMapInterleave,
                                                                       CUtensorMapSwizzle)
    CUtensorMapL2promotion, CUtensorMapFloatOOBfill, CUtensorMap = (CUtensorMapL2promotion, CUtensorMapFloatOOBfill,
                                                                    CUtensorMap)
    cuuint64_t, cuuint32_t = cuuint64_t, cuuint32_t
    CUlaunchConfig, CUlaunchAttribute, CUlaunchAttributeID = CUlaunchConfig, CUlaunchAttribute, CUlaunchAttributeID

    def __init__(self, gpu: FakeGpu):
        self.gpu = gpu

    def _fail(self, why: str):
        self.gpu.errors.append(why)
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)

    def cuGetErrorString(self, err):
        return CUresult.CUDA_SUCCESS, f"fake {CUresult(err).name}".encode()

    def cuDeviceGetAttribute(self, attr, dev):
        values = {CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 50 * 2**20,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: OPTIN_SHARED,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: self.gpu.sm_count,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.gpu.device_sm // 10,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: self.gpu.device_sm % 10}
        return CUresult.CUDA_SUCCESS, values[attr]

    def cuTensorMapEncodeTiled(self, dtype, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                               l2_promotion, oob_fill):
        """Strict like the binding (enum and cuuint*_t argument types) and like the driver (ptxsim's checks of the
        same rules); the map keeps ptxsim's encoding so a test can decode what the backend asked for."""
        from ptxsim.tensormap import TensorMapError, encode_tiled

        typed = [(dtype, CUtensorMapDataType), (interleave, CUtensorMapInterleave), (swizzle, CUtensorMapSwizzle),
                 (l2_promotion, CUtensorMapL2promotion), (oob_fill, CUtensorMapFloatOOBfill)]
        for value, kind in typed:
            if not isinstance(value, kind):
                raise TypeError(f"cuTensorMapEncodeTiled: {value!r} is not a {kind.__name__}")
        for name, seq, kind in (("globalDim", dims, cuuint64_t), ("globalStrides", strides, cuuint64_t),
                                ("boxDim", box, cuuint32_t), ("elementStrides", element_strides, cuuint32_t)):
            if not all(isinstance(v, kind) for v in seq):
                raise TypeError(f"Argument '{name}' is not instance of type (expected list[{kind.__name__}])")
        try:
            raw = encode_tiled(int(dtype), int(rank), int(address), dims, strides, box, element_strides,
                               int(interleave), int(swizzle), int(l2_promotion), int(oob_fill))
        except TensorMapError as exc:
            return self._fail(str(exc))
        return CUresult.CUDA_SUCCESS, CUtensorMap(raw)

    def cuMemsetD8Async(self, ptr, value, nbytes, stream):
        if self.gpu.sticky:
            return (self.gpu.sticky,)
        self.gpu.log("memset", int(ptr), int(nbytes), int(stream))
        return (CUresult.CUDA_SUCCESS,)

    def cuModuleLoadDataEx(self, image, n, options, values):
        from ptxsim.parser import parse

        assert isinstance(image, bytes) and image.endswith(b"\x00"), "PTX image must be NUL-terminated bytes"
        assert n == len(options) == len(values)
        text = image[:-1].decode()
        opts = dict(zip(options, values, strict=True))
        jit = CUjit_option
        for buf_opt, size_opt in ((jit.CU_JIT_ERROR_LOG_BUFFER, jit.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
                                  (jit.CU_JIT_INFO_LOG_BUFFER, jit.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)):
            assert (buf_opt in opts) == (size_opt in opts), f"{buf_opt.name} without {size_opt.name} or back"
            if buf_opt in opts:
                assert opts[size_opt] == len(opts[buf_opt]), f"{size_opt.name} is not the buffer's length"
        refusal = _jit_refusal(text, opts, self.gpu)
        if refusal is None and self.gpu.jit_error is not None:
            refusal = (CUresult.CUDA_ERROR_INVALID_PTX, self.gpu.jit_error)
        self.gpu.module_loads.append({"via": "jit", "target": opts.get(CUjit_option.CU_JIT_TARGET),
                                      "result": refusal[0].name if refusal else "CUDA_SUCCESS"})
        if refusal is not None:
            self._write_log(opts, CUjit_option.CU_JIT_ERROR_LOG_BUFFER, refusal[1])
            return refusal[0], None
        parsed = parse(text)
        module = next(self.gpu.ids)
        self.gpu.modules[module] = {f.name: f.params for f in parsed.functions if f.kind == "entry"}
        self.gpu.static_shared[module] = _static_shared_bytes(parsed)
        self._write_log(opts, CUjit_option.CU_JIT_INFO_LOG_BUFFER,
                        "; ".join(f"ptxas info    : Function properties for {e}: 0 bytes spill stores"
                                  for e in self.gpu.modules[module]))
        return CUresult.CUDA_SUCCESS, self.CUmodule(module)

    @staticmethod
    def _write_log(opts: dict, which, text: str) -> None:
        buf = opts.get(which)
        if buf is not None:
            msg = text.encode()[:len(buf) - 1]
            buf[:len(msg) + 1] = msg + b"\x00"

    def cuModuleLoadData(self, image):
        """A cubin: an ELF image whose `.text.<entry>` sections name its kernels (their parameters are not checked)."""
        import re

        if not isinstance(image, bytes) or not image.startswith(b"\x7fELF"):
            self.gpu.module_loads.append({"via": "cubin", "target": None, "result": "CUDA_ERROR_INVALID_IMAGE"})
            return CUresult.CUDA_ERROR_INVALID_IMAGE, None
        module = next(self.gpu.ids)
        names = {m.decode() for m in re.findall(rb"\.text\.([A-Za-z_$][\w$]*)\x00", image)}
        self.gpu.modules[module] = dict.fromkeys(names)
        self.gpu.static_shared[module] = 0
        self.gpu.module_loads.append({"via": "cubin", "target": None, "result": "CUDA_SUCCESS"})
        return CUresult.CUDA_SUCCESS, self.CUmodule(module)

    def cuOccupancyMaxActiveClusters(self, func, config):
        """gpu.max_active_clusters, after checks the driver makes: a CUfunction, a cluster size given and a grid of
        whole clusters, shared memory the function is allowed."""
        if type(func).__name__ != "CUfunction":
            return self._fail(f"cuOccupancyMaxActiveClusters on a {type(func).__name__}")
        dims = [a.value.clusterDim for a in config.attrs[:config.numAttrs]
                if a.id == CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION]
        size = dims[0].x * dims[0].y * dims[0].z if dims else 0
        if not size or config.gridDimX % dims[0].x:
            return self._fail(f"cuOccupancyMaxActiveClusters: grid {config.gridDimX} and cluster {size}")
        if config.sharedMemBytes > self.gpu.allowed_shared(func):
            return self._fail(f"cuOccupancyMaxActiveClusters: {config.sharedMemBytes} B of shared memory not allowed")
        self.gpu.occupancy_queries.append((size, config.blockDimX, config.sharedMemBytes))
        return CUresult.CUDA_SUCCESS, self.gpu.max_active_clusters

    def cuStreamQuery(self, stream):
        """NOT_READY while a hung kernel holds the stream; else a pending fault (now sticky), or success."""
        if self.gpu.hung:
            return (CUresult.CUDA_ERROR_NOT_READY,)
        err = self.gpu.sync_error()
        return (err or CUresult.CUDA_SUCCESS,)

    def cuDriverGetVersion(self):
        major, minor = self.gpu.driver_ptx_version
        return CUresult.CUDA_SUCCESS, {(9, 0): 13000, (8, 8): 12090}.get((major, minor), 13000)

    def cuFuncGetAttribute(self, attr, func):
        if attr != CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
            return self._fail(f"cuFuncGetAttribute({attr}): the fake knows only SHARED_SIZE_BYTES")
        return CUresult.CUDA_SUCCESS, self.gpu.static_of(func)

    def cuModuleGetFunction(self, module, name):
        entries = self.gpu.modules[int(module)]
        if name.decode() not in entries:
            return CUresult.CUDA_ERROR_INVALID_VALUE, None
        handle = next(self.gpu.ids)
        self.gpu.functions[handle] = (int(module), name.decode())
        return CUresult.CUDA_SUCCESS, self.CUfunction(handle)

    def cuFuncSetAttribute(self, func, attr, value):
        if type(func).__name__ != "CUfunction":
            return self._fail(f"cuFuncSetAttribute on a {type(func).__name__}; expected a CUfunction")
        return self._set_shared(func, attr, value)

    def cuKernelSetAttribute(self, attr, value, kernel, dev):
        if type(kernel).__name__ != "CUkernel" or type(dev).__name__ != "CUdevice":
            return self._fail(f"cuKernelSetAttribute({type(kernel).__name__}, {type(dev).__name__}); "
                              "expected a CUkernel and a CUdevice")
        return self._set_shared(kernel, attr, value)

    def _set_shared(self, handle, attr, value):
        limit = OPTIN_SHARED - self.gpu.static_of(handle)  # the driver counts the static shared memory too
        if attr != CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES or value > limit:
            return self._fail(f"attribute {attr}={value}: over the {OPTIN_SHARED}-byte opt-in limit less "
                              f"{OPTIN_SHARED - limit} bytes of static shared memory")
        self.gpu.attributes[(type(handle).__name__, int(handle))] = int(value)
        self.gpu.log("attribute", int(handle), int(value))
        return (CUresult.CUDA_SUCCESS,)

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, shared, stream, args, extra):
        from ptxsim.ptxtypes import type_bits

        if self.gpu.sticky:
            return (self.gpu.sticky,)
        module, entry = self.gpu.functions[int(func)]
        params = self.gpu.modules[module][entry]
        values, ctys = args
        if params is None:  # a cubin's kernel: the count of arguments is all the fake can check
            params = [None] * len(values)
        elif len(values) != len(params) or len(ctys) != len(params):
            return self._fail(f"{entry}: {len(values)} arguments for {len(params)} .param entries")
        for i, (p, cty) in enumerate(zip(params, ctys, strict=True)):
            if p is None:
                continue
            size = max(type_bits(p.type) // 8, 1) * (p.count or 1)
            if cty is None:  # by address: a CUtensorMap (getPtr()) or a by-value struct (a ctypes.Structure)
                if isinstance(values[i], ctypes.Structure):
                    if ctypes.sizeof(values[i]) != size:
                        return self._fail(f"{entry} parameter {i} ({p.name} {p.type}[{p.count}]): a "
                                          f"{ctypes.sizeof(values[i])}-byte struct for a {size}-byte .param")
                    continue
                if not isinstance(values[i], CUtensorMap) or size != 128:
                    return self._fail(f"{entry} parameter {i} ({p.name} {p.type}[{p.count}]): type None needs a "
                                      f"CUtensorMap for a 128-byte .param; got {type(values[i]).__name__}")
                continue
            if ctypes.sizeof(cty) != size:
                return self._fail(f"{entry} parameter {i} ({p.name} {p.type}): ctypes {cty.__name__} of "
                                  f"{ctypes.sizeof(cty)} bytes; the .param holds {size}")
        if bx * by * bz > 1024 or min(gx, gy, gz, bx, by, bz) < 1:
            return self._fail(f"{entry}: grid {(gx, gy, gz)} block {(bx, by, bz)}")
        if shared > self.gpu.allowed_shared(func):
            return self._fail(f"{entry}: {shared} bytes of dynamic shared memory; allowed "
                              f"{self.gpu.allowed_shared(func)} (MAX_DYNAMIC_SHARED_SIZE_BYTES not raised)")
        if shared + self.gpu.static_of(func) > OPTIN_SHARED:
            return self._fail(f"{entry}: {shared} bytes of dynamic shared memory plus {self.gpu.static_of(func)} "
                              f"static pass the {OPTIN_SHARED}-byte opt-in")
        self.gpu.launched(entry, int(stream), int(shared), values, grid=(gx, gy, gz))
        return (CUresult.CUDA_SUCCESS,)


class FakeStream:
    def __init__(self, gpu: FakeGpu):
        self.gpu = gpu
        self.handle = SimpleNamespace(value=next(gpu.ids))

    def synchronize(self):
        self.gpu.log("sync", self.handle.value)
        if self.gpu.hung:
            raise AssertionError("synchronize on a hung stream would block forever (a real GPU never returns)")
        err = self.gpu.sync_error()
        if err:
            raise FakeCudaAPIError(err, f"Call to cuStreamSynchronize results in {err.name}")


class FakeEvent:
    def __init__(self, gpu: FakeGpu):
        self.gpu, self.id, self.stream, self.t = gpu, next(gpu.ids), None, None

    def record(self, stream=0):
        self.stream = stream.handle.value if stream else 0
        self.t = len(self.gpu.timeline)
        self.gpu.log("event", self.id, self.stream)

    def synchronize(self):
        self.gpu.log("sync-event", self.id)
        err = self.gpu.sync_error()
        if err:
            raise FakeCudaAPIError(err, f"Call to cuEventSynchronize results in {err.name}")

    def wait(self, stream=0):
        self.gpu.log("wait", self.id, stream.handle.value if stream else 0)

    def elapsed_time(self, other):
        """Milliseconds: one µs per timeline entry between the events (deterministic, positive)."""
        return (other.t - self.t) * 1e-3


class FakeDeviceArray:
    """A numba device array: shape, dtype, a device address; reads back zeros; its free is logged."""

    def __init__(self, gpu: FakeGpu, shape, dtype, addr=None, owner=True):
        self.gpu, self.shape, self.dtype = gpu, tuple(int(d) for d in shape), np.dtype(dtype)
        self.addr = addr if addr is not None else next(gpu.ids) << 20
        self.owner = owner
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        if owner:
            gpu.log("alloc", self.addr, self.nbytes)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.addr, False), "version": 3}

    def view(self, dtype):
        return FakeDeviceArray(self.gpu, self.shape, dtype, self.addr, owner=False)

    def copy_to_host(self, stream=0):
        out = np.zeros(self.shape, self.dtype)
        stored = self.gpu.memory.get(self.addr, b"")[:self.nbytes]
        out.reshape(-1).view(np.uint8)[:len(stored)] = np.frombuffer(stored, np.uint8)
        return out

    def copy_to_device(self, host, stream=0):
        self.gpu.log("copy", self.addr)

    def __del__(self):
        if self.owner:
            self.gpu.log("free", self.addr)


class FakeNumbaCuda:
    """numba.cuda, as far as ptxmoe uses it."""

    def __init__(self, gpu: FakeGpu):
        self.gpu = gpu
        self.device = SimpleNamespace(id=0, MULTIPROCESSOR_COUNT=132, name=b"Fake H200", CLOCK_RATE=1980000)  # kHz

    def current_context(self):
        free = self.gpu.free_device_bytes
        return SimpleNamespace(device=self.device, get_memory_info=lambda: (free, 141 << 30))

    def stream(self):
        return FakeStream(self.gpu)

    def event(self, timing=True):
        return FakeEvent(self.gpu)

    def to_device(self, host, stream=0):
        host = np.asarray(host)
        return FakeDeviceArray(self.gpu, host.shape, host.dtype)

    def device_array(self, shape, dtype=np.float64, stream=0):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
        return FakeDeviceArray(self.gpu, shape, dtype)

    def mapped_array(self, shape, dtype=np.float64):
        host = np.zeros(shape, dtype)
        self.gpu.log("mapped", host.nbytes)
        mapped = FakeMapped(host, next(self.gpu.ids) << 20)
        mapped.gpu = self.gpu
        return mapped

    def jit(self, signature):
        return lambda pyfunc: FakeDispatcher(self.gpu, pyfunc, signature)


class FakeMapped(np.ndarray):
    """Host-mapped memory: a NumPy array with a device pointer."""

    def __new__(cls, host, addr):
        obj = host.view(cls)
        obj.device_addr = addr
        return obj

    def __array_finalize__(self, obj):
        self.device_addr = getattr(obj, "device_addr", 0)
        self.gpu = getattr(obj, "gpu", None)

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        if self.gpu is not None:
            self.gpu.log("flag", index, int(value))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.device_addr, False), "version": 3}


class FakeDispatcher:
    """numba.cuda.jit(signature)(pyfunc): one overload with a CUkernel; kernel[grid, block, stream, shared](*args)."""

    def __init__(self, gpu: FakeGpu, pyfunc, signature):
        from harness.backends.numba_abi import parse_signature

        self.gpu, self.pyfunc, self.__name__ = gpu, pyfunc, pyfunc.__name__
        self.arg_types = parse_signature(signature)
        handle = CUkernel(next(gpu.ids))
        library = SimpleNamespace(get_cufunc=lambda: SimpleNamespace(handle=handle))
        self.overloads = {tuple(signature) if not isinstance(signature, str) else signature:
                          SimpleNamespace(library=library)}
        self.handle = handle

    def __getitem__(self, config):
        grid, block, stream, shared = config
        return lambda *args: self._launch(grid, block, stream, shared, args)

    def _launch(self, grid, block, stream, shared, args):
        gpu = self.gpu
        if gpu.sticky:
            raise FakeCudaAPIError(gpu.sticky, f"Call to cuLaunchKernel results in {gpu.sticky.name}")
        name = self.__name__
        if len(args) != len(self.arg_types):
            raise TypeError(f"{name}: {len(args)} arguments; the signature takes {len(self.arg_types)}")
        for i, (t, a) in enumerate(zip(self.arg_types, args, strict=True)):
            if t.is_array:
                if not isinstance(a, FakeDeviceArray) or a.dtype != t.dtype or a.ndim != t.ndim:
                    raise TypeError(f"{name} argument {i}: {type(a).__name__} "
                                    f"{getattr(a, 'dtype', '')}{getattr(a, 'shape', '')}; signature wants "
                                    f"{t.dtype}[{t.ndim}-D]")
            elif not isinstance(a, np.generic) or np.dtype(type(a)) != t.dtype:
                raise TypeError(f"{name} argument {i}: {a!r} ({type(a).__name__}); signature wants {t.dtype}")
        if shared > gpu.allowed_shared(self.handle):
            gpu.errors.append(f"{name}: {shared} bytes of dynamic shared memory; allowed "
                              f"{gpu.allowed_shared(self.handle)}")
            raise FakeCudaAPIError(CUresult.CUDA_ERROR_INVALID_VALUE, "Call to cuLaunchKernel results in "
                                   "CUDA_ERROR_INVALID_VALUE")
        if int(np.prod(block)) > 1024:
            raise FakeCudaAPIError(CUresult.CUDA_ERROR_INVALID_VALUE, f"{name}: block {block}")
        gpu.launched(name, stream.handle.value, int(shared))


class MarshalCheckedDriver:
    """cuda-python's real driver module in front of the fake: the real types and enums, and every call made through
    the real binding first, which converts each argument (a TypeError or ValueError there is a bug in our call) and
    only then fails to find libcuda; the fake then does the call. `calls` lists the calls that passed marshalling.

    Only usable without a CUDA driver (`usable()`): with one, fake handles would reach the real GPU.
    """

    def __init__(self, fake: FakeDriver):
        from cuda.bindings import driver as real

        self._real, self._fake, self.calls = real, fake, []
        for name in ("CUmodule", "CUfunction", "CUkernel"):  # handles the fake returns: the real types
            setattr(fake, name, getattr(real, name))

    @staticmethod
    def usable() -> bool:
        from cuda.bindings import driver as real

        try:
            real.cuInit(0)
        except Exception as exc:  # noqa: BLE001 - only "no driver library" makes the real calls harmless
            return type(exc).__name__ == "DynamicLibNotFoundError"
        return False

    def __getattr__(self, name):
        real_attr = getattr(self._real, name)
        if not name.startswith("cu"):
            return real_attr  # types and enums
        fake_fn = getattr(self._fake, name)

        def call(*args):
            try:
                real_attr(*args)
            except Exception as exc:
                if type(exc).__name__ != "DynamicLibNotFoundError":
                    raise AssertionError(f"{name}{args!r}: the real binding refused the arguments: "
                                         f"{type(exc).__name__}: {exc}") from exc
            self.calls.append(name)
            return fake_fn(*args)
        return call


def install(monkeypatch, real_marshalling: bool = False) -> FakeGpu:
    """Replace the CUDA seams (harness.backends.cuda_api.driver / numba_cuda) and GPU visibility with one FakeGpu;
    `real_marshalling`: driver calls also go through cuda-python's real argument conversion (MarshalCheckedDriver)."""
    from harness.backends import cuda_api

    gpu = FakeGpu()
    if real_marshalling:
        gpu.driver = MarshalCheckedDriver(gpu.driver)
    monkeypatch.setattr(cuda_api, "driver", lambda: gpu.driver)
    monkeypatch.setattr(cuda_api, "numba_cuda", lambda: gpu.numba)
    monkeypatch.setattr("harness.toolchain.gpu_visible", lambda: (True, "fake GPU"))
    return gpu
