"""The CUDA APIs the gpu backend calls, behind two seams, plus error handling shared by the GPU code.

`driver()` returns cuda-python's `cuda.bindings.driver` and `numba_cuda()` returns `numba.cuda`; the fake-driver test
tier (tests/harness/fakegpu/) replaces both with recording fakes, so every GPU code path runs on a CPU. Everything
here imports CUDA lazily: importing this module needs no GPU.
"""
from __future__ import annotations

from harness.errors import PtxmoeError

JIT_LOG_BYTES = 16 * 1024

# NOTE: after one of these the CUDA context is unusable: every later call fails with the same error (CUDA
# programming guide, "Error Checking"). A sweep must stop at the first one instead of blaming later rows.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_CONTEXT_IS_DESTROYED", "CUDA_ERROR_TMA_FAILURE",
})


class GpuError(PtxmoeError):
    """A CUDA driver call failed; `code` is the CUresult name, `sticky` whether the context is now unusable."""

    def __init__(self, message: str, code: str = ""):
        super().__init__(message)
        self.code = code
        self.sticky = code in STICKY_ERRORS


def driver():
    """cuda-python's driver bindings (`cuda.bindings.driver`)."""
    from cuda.bindings import driver as drv

    return drv


def numba_cuda():
    """The `numba.cuda` module (numba-cuda)."""
    from numba import cuda

    return cuda


def check(result, call: str):
    """Unpack a cuda-python (err, *values) tuple; raise GpuError naming the call and the CUresult on failure."""
    drv = driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        name = getattr(err, "name", str(err))
        _, msg = drv.cuGetErrorString(err)
        text = msg.decode() if isinstance(msg, bytes) else str(msg or "")
        raise GpuError(f"{call} failed: {name} ({text})", name)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def stream_handle(stream) -> int:
    """The CUstream value of a numba stream (or anything with a `handle`)."""
    handle = stream.handle
    value = getattr(handle, "value", None)
    if value is None:
        try:
            value = int(handle)
        except TypeError:
            value = handle.getPtr() if hasattr(handle, "getPtr") else 0
    return int(value or 0)


def load_ptx_module(ptx: str, what: str):
    """cuModuleLoadDataEx of PTX text with the JIT error log captured; GpuError quoting that log on failure."""
    drv = driver()
    log = bytearray(JIT_LOG_BYTES)
    opts = [drv.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, drv.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    result = drv.cuModuleLoadDataEx(ptx.encode() + b"\x00", len(opts), opts, [log, len(log)])
    try:
        return check(result, f"cuModuleLoadDataEx({what})")
    except GpuError as exc:
        text = bytes(log).split(b"\x00", 1)[0].decode(errors="replace").strip()
        raise GpuError(f"{exc}; PTX JIT log: {text or '(empty)'}", exc.code) from None


def error_code(exc: BaseException) -> str:
    """The CUresult name behind an exception from our code or numba-cuda ("" when it is no CUDA error).

    Follows __cause__/__context__; numba-cuda's CudaAPIError carries `code` (a CUresult or its int value).
    """
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        code = getattr(link, "code", None)
        if isinstance(code, str) and code.startswith("CUDA_ERROR"):
            return code
        if code is not None and not isinstance(code, str):
            name = getattr(code, "name", None)
            if name is None:
                try:
                    name = driver().CUresult(int(code)).name
                except Exception:  # noqa: BLE001 - an int that is no CUresult, or no cuda-python here
                    name = None
            if name:
                return str(name)
        for name in STICKY_ERRORS:  # e.g. a message only: "... CUDA_ERROR_ILLEGAL_ADDRESS ..."
            if name in str(link):
                return name
        link = link.__cause__ or link.__context__
    return ""


def is_sticky(exc: BaseException) -> bool:
    """Whether `exc` comes from a sticky CUDA error (the context is unusable for every later row)."""
    return error_code(exc) in STICKY_ERRORS
