"""CUDA C++ -> PTX with NVRTC from the nvidia-cuda-nvrtc wheel (no CUDA install, no GPU), cached by source digest.

Headers: NVRTC's built-ins plus the nvidia-cuda-runtime wheel's include/ (cuda_bf16.h, cuda_fp8.h, mma.h,
cuda_pipeline_primitives.h, cooperative_groups), the nvidia-cuda-nvcc wheel's include/ (crt/mma.h, which the
runtime wheel's mma.h includes but does not ship) and the nvidia-cuda-cccl wheel's include/ (<nv/target>, which
cooperative_groups needs). Kernels are `extern "C" __global__` so their PTX entry names are
the C names. Compile errors raise contract.errors.BuildError carrying NVRTC's log (file:line: error ...).
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from contract.errors import BuildError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
DEFAULT_ARCH = "compute_90"
# -default-device: every function is __device__ unless said otherwise; fast-math stays off (kernels.md tolerances
# are met with IEEE division/sqrt; each kernel opts into intrinsics such as __expf explicitly where allowed).
BASE_OPTIONS = ("-default-device", "-std=c++17", "-lineinfo")


@functools.lru_cache(maxsize=1)
def runtime_include_dir() -> str:
    """The nvidia-cuda-runtime wheel's include/ folder."""
    try:
        import nvidia.cuda_runtime
    except ImportError as exc:
        raise BuildError("the nvidia-cuda-runtime-cu12 wheel is not installed (CUDA headers for NVRTC); "
                         "`make install` installs it") from exc
    return str(Path(next(iter(nvidia.cuda_runtime.__path__))) / "include")


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str | None:
    """The nvidia-cuda-cccl wheel's include/ folder (libcu++: <nv/target> for cooperative_groups), or None."""
    try:
        import nvidia.cuda_cccl
    except ImportError:
        return None
    return str(Path(next(iter(nvidia.cuda_cccl.__path__))) / "include")


def include_options() -> tuple[str, ...]:
    """-I options for the CUDA headers the kernels include."""
    dirs = [runtime_include_dir(), crt_include_dir(), cccl_include_dir()]
    return tuple(f"-I{d}" for d in dirs if d)


@functools.lru_cache(maxsize=1)
def crt_include_dir() -> str:
    """The nvidia-cuda-nvcc wheel's include/ folder: crt/mma.h (nvcuda::wmma) lives there, not in the runtime wheel."""
    try:
        import nvidia.cuda_nvcc
    except ImportError as exc:
        raise BuildError("the nvidia-cuda-nvcc-cu12 wheel is not installed (crt/mma.h for nvcuda::wmma); "
                         "`make install` installs it") from exc
    return str(Path(next(iter(nvidia.cuda_nvcc.__path__))) / "include")


def source_digest(source: str, name: str, arch: str, options: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join((source, name, arch, *options)).encode()).hexdigest()[:16]


_CACHE: dict[str, str] = {}


def compile_source(source: str, name: str = "kernel.cu", arch: str = DEFAULT_ARCH,
                   options: tuple[str, ...] = ()) -> str:
    """The PTX NVRTC makes of `source` (cached per digest of source, name, arch and options).

    Raises:
        BuildError: NVRTC's log (file:line: error) when compilation fails, or a missing NVRTC/header wheel.
    """
    key = source_digest(source, name, arch, tuple(options))
    if key not in _CACHE:
        _CACHE[key] = _compile(source, name, arch, tuple(options))
    return _CACHE[key]


def compile_file(file: str, defines: tuple[tuple[str, int], ...] = (), arch: str = DEFAULT_ARCH) -> str:
    """The PTX of cpp_impl/kernels/<file>, with `-D NAME=VALUE` for each define (tile constants)."""
    path = KERNEL_DIR / file
    if not path.is_file():
        raise BuildError(f"cpp: no kernel source {path}")
    options = tuple(f"-D{k}={int(v)}" for k, v in defines)
    return compile_source(path.read_text(), name=file, arch=arch, options=options)


def _compile(source: str, name: str, arch: str, options: tuple[str, ...]) -> str:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise BuildError("cuda-python (cuda.bindings.nvrtc) is not installed; `make install` installs it") from exc
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise BuildError(f"nvrtcCreateProgram failed for {name}: {err}")
    try:
        opts = [f"-arch={arch}", *BASE_OPTIONS, *include_options(), *options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            text = log.decode(errors="replace").strip()
            if "nv/target" in text and cccl_include_dir() is None:
                text += "\n(<nv/target> comes with the nvidia-cuda-cccl-cu12 wheel; `make install` installs it)"
            raise BuildError(f"NVRTC failed to compile {name} ({' '.join(options) or 'no defines'}):\n{text}")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\x00 ").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
