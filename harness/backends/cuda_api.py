"""The CUDA APIs the gpu backend calls, behind two seams, plus error handling shared by the GPU code.

`driver()` returns cuda-python's `cuda.bindings.driver` and `numba_cuda()` returns `numba.cuda`; the fake-driver test
tier (tests/harness/fakegpu/) replaces both with recording fakes, so every GPU code path runs on a CPU. Everything
here imports CUDA lazily: importing this module needs no GPU.
"""
from __future__ import annotations

import os
import re
import time

from harness.errors import PtxmoeError

JIT_LOG_BYTES = 16 * 1024
_TARGET_RE = re.compile(r"^\s*\.target\s+(sm_(\d+)([af]?))\b", re.M)
_VERSION_RE = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)

# NOTE: after one of these the CUDA context is unusable: every later call fails with the same error (CUDA
# programming guide, "Error Checking"). A sweep must stop at the first one instead of blaming later rows.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    # NOTE: a TMA fault has no CUresult of its own (there is no CUDA_ERROR_TMA_FAILURE); it surfaces as
    # CUDA_ERROR_UNKNOWN or CUDA_ERROR_ILLEGAL_INSTRUCTION, and after either the context is gone
    "CUDA_ERROR_UNKNOWN",
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


def ptx_target(ptx: str) -> str:
    """The module's `.target` architecture ("sm_90a", "sm_90", ...), "" when the text names none."""
    match = _TARGET_RE.search(ptx)
    return match.group(1) if match else ""


def ptx_isa_version(ptx: str) -> tuple[int, int] | None:
    """The module's `.version` (major, minor), None when the text names none."""
    match = _VERSION_RE.search(ptx)
    return (int(match.group(1)), int(match.group(2))) if match else None


def jit_target(drv, target: str):
    """The CUjit_target an architecture-specific `.target` (sm_90a) must be JIT-compiled for, None for a plain one.

    NOTE: without CU_JIT_TARGET the driver JITs for the context's device (compute_90 on an H200) and ptxas refuses a
    `.target sm_90a` module for it ("cannot be compiled for architecture 'sm_90'"): wgmma and setmaxnreg need the
    arch-specific target named explicitly."""
    match = _TARGET_RE.search(f".target {target}")
    if match is None or not match.group(3):
        return None
    name = f"CU_TARGET_COMPUTE_{match.group(2)}{match.group(3).upper()}"
    value = getattr(drv.CUjit_target, name, None)
    if value is None:
        raise GpuError(f"this cuda-python has no CUjit_target.{name} for `.target {target}`; a newer cuda-bindings "
                       f"is needed to load such a module", "CUDA_ERROR_INVALID_VALUE")
    return value


def _c_text(buf: bytearray) -> str:
    return bytes(buf).split(b"\x00", 1)[0].decode(errors="replace").strip()


def load_ptx_module(ptx: str, what: str, logs: dict | None = None, via: str = "auto"):
    """Load PTX text as a module: the driver's JIT (cuModuleLoadDataEx, arch-specific targets named explicitly, the
    error and the info log captured), or a cubin from ptxas (`via="cubin"`, `-arch=` the module's target).

    `via="auto"` JITs, and when the driver refuses the PTX's `.version` (CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX from
    a toolchain newer than the driver) assembles with ptxas instead. `logs`, when given, receives {"via", "target",
    "info_log"} (the JIT's info log: spills, and a `setmaxnreg` it ignored, are reported there, not as errors).

    Raises:
        GpuError: the load failed; the message quotes the JIT's error log (and ptxas's, when it was tried).
    """
    if via not in ("auto", "jit", "cubin"):
        from harness.errors import InputError

        raise InputError(f"load_ptx_module via={via!r}; expected 'auto', 'jit' or 'cubin'")
    target = ptx_target(ptx)
    if via == "cubin":
        return _load_cubin(ptx, what, target, logs)
    try:
        return _load_jit(ptx, what, target, logs)
    except GpuError as exc:
        if via == "jit" or exc.code != "CUDA_ERROR_UNSUPPORTED_PTX_VERSION":
            raise
        try:
            return _load_cubin(ptx, what, target, logs)
        except GpuError as cubin_exc:
            raise GpuError(f"{exc}; assembling with ptxas instead failed too: {cubin_exc}", exc.code) from None


def _load_jit(ptx: str, what: str, target: str, logs: dict | None):
    drv = driver()
    error_log, info_log = bytearray(JIT_LOG_BYTES), bytearray(JIT_LOG_BYTES)
    opt = drv.CUjit_option
    opts = [opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, opt.CU_JIT_INFO_LOG_BUFFER,
            opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, opt.CU_JIT_LOG_VERBOSE]
    values: list = [error_log, len(error_log), info_log, len(info_log), 1]
    explicit = jit_target(drv, target)
    if explicit is not None:
        opts.append(opt.CU_JIT_TARGET)
        values.append(explicit)
    result = drv.cuModuleLoadDataEx(ptx.encode() + b"\x00", len(opts), opts, values)
    if logs is not None:
        logs.update(via="jit", target=target, jit_target=getattr(explicit, "name", None), info_log=_c_text(info_log))
    try:
        return check(result, f"cuModuleLoadDataEx({what})")
    except GpuError as exc:
        raise GpuError(f"{exc}; PTX JIT log: {_c_text(error_log) or '(empty)'}", exc.code) from None


def _load_cubin(ptx: str, what: str, target: str, logs: dict | None):
    from harness import toolchain
    from harness.errors import ToolchainError

    # NOTE: a cubin runs only on its own architecture: an arch-specific target as written, anything else for the
    # project's one device family (sm_90, Hopper)
    arch = target if target.endswith(("a", "f")) else "sm_90"
    try:
        cubin, _ = toolchain.assemble(ptx, arch=arch, name="module.ptx")
    except ToolchainError as exc:
        raise GpuError(f"ptxas -arch={arch} ({what}): {exc}", "CUDA_ERROR_INVALID_PTX") from None
    if logs is not None:
        logs.update(via="cubin", target=arch, jit_target=None, info_log="")
    return check(driver().cuModuleLoadData(cubin), f"cuModuleLoadData(cubin of {what}, {arch})")


SYNC_TIMEOUT_ENV = "PTXMOE_GPU_SYNC_TIMEOUT"
# failed mbarrier.try_wait tries before a bounded kernel traps (Backend.wait_bound): a try suspends the thread for a
# system-dependent time (PTX ISA, mbarrier.try_wait), at least tens of ns, so 2**26 tries is over a second; a wait in a
# working persistent GEMM lasts microseconds
WAIT_BOUND = 1 << 26


def sync_timeout_from_env() -> float | None:
    """Seconds from $PTXMOE_GPU_SYNC_TIMEOUT (unset, empty or 0: no watchdog).

    Raises:
        InputError: a value that is no positive number."""
    from harness.errors import InputError

    text = os.environ.get(SYNC_TIMEOUT_ENV, "").strip()
    if text in ("", "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InputError(f"${SYNC_TIMEOUT_ENV}={text!r}: expected seconds > 0 (or 0 for no watchdog)")
    return value


def wait_for_stream(stream, timeout_s: float, last_launches: str = "", clock=time.monotonic, sleep=time.sleep) -> None:
    """Poll cuStreamQuery until the stream is idle; a fault is raised as check() raises it; still busy after
    `timeout_s`: GpuError CUDA_ERROR_LAUNCH_TIMEOUT (sticky: the hung kernel keeps the context) naming the launches."""
    drv = driver()
    handle = drv.CUstream(stream_handle(stream))
    deadline = clock() + timeout_s
    pause = 20e-6
    while True:
        result = drv.cuStreamQuery(handle)
        err = result[0] if isinstance(result, tuple) else result
        if err != drv.CUresult.CUDA_ERROR_NOT_READY:
            check(result, "cuStreamQuery")
            return
        if clock() >= deadline:
            raise GpuError(f"the stream was still busy after {timeout_s:g} s (${SYNC_TIMEOUT_ENV}): a kernel hung "
                           f"or ran far too long; last launches: {last_launches or 'unknown'}",
                           "CUDA_ERROR_LAUNCH_TIMEOUT")
        sleep(pause)
        pause = min(pause * 2, 0.01)


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
