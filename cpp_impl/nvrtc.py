"""CUDA C++ -> PTX with NVRTC (no GPU needed), cached by source digest.

Headers: NVRTC's built-ins plus the CUDA runtime headers (cuda_bf16.h, cuda_fp8.h, mma.h,
cuda_pipeline_primitives.h, cooperative_groups), crt/mma.h (nvcuda::wmma; optional: only the wmma kernels include
it) and CCCL's libcu++ (<nv/target>, which cooperative_groups needs; optional). Each folder is found through
cuda.pathfinder's find_nvidia_header_directory (the CUDA 12 wheels' nvidia/cuda_runtime/include,
nvidia/cuda_nvcc/include and nvidia/cuda_cccl/include; the CUDA 13 wheels' single nvidia/cu13/include with CCCL under
include/cccl), then under $CUDA_HOME (or $CUDA_PATH, /usr/local/cuda) include/ and include/cccl. Kernels are
`extern "C" __global__` so their PTX entry names are the C names. Compile errors raise contract.errors.BuildError
carrying NVRTC's log (file:line: error ...).
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from contract.errors import BuildError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
DEFAULT_ARCH = "compute_90"
# -default-device: every function is __device__ unless said otherwise; fast-math stays off (kernels.md tolerances
# are met with IEEE division/sqrt; each kernel opts into intrinsics such as __expf explicitly where allowed).
BASE_OPTIONS = ("-default-device", "-std=c++17", "-lineinfo")
# (cuda.pathfinder's library name, a file its folder must hold, a folder under $CUDA_HOME/include that may hold it)
_HEADERS = {"runtime": ("cudart", "cuda_runtime.h", ""), "crt": ("nvcc", "crt/mma.h", ""),
            "cccl": ("cccl", "nv/target", "cccl")}


def _pathfinder_dir(libname: str) -> str | None:
    """cuda.pathfinder's header folder of `libname` ("cudart", "nvcc", "cccl"), None when it finds none or is absent."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    try:
        return find_nvidia_header_directory(libname)
    except Exception:  # noqa: BLE001 - an unknown name in an older pathfinder, or a failed probe: not found
        return None


def cuda_home() -> Path:
    """$CUDA_HOME, else $CUDA_PATH, else /usr/local/cuda."""
    return Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda")


def _header_dir(kind: str, near: tuple[str, ...] = ()) -> str | None:
    """The first folder holding `kind`'s marker file: cuda.pathfinder's, then the folders in `near` (the runtime
    folder: CUDA 13 wheels and toolkits keep crt/ beside the runtime headers and CCCL in its cccl/), then
    $CUDA_HOME/include[/sub]."""
    libname, marker, sub = _HEADERS[kind]
    candidates = [_pathfinder_dir(libname), *(str(Path(d) / sub) if sub else d for d in near),
                  str(cuda_home() / "include" / sub) if sub else str(cuda_home() / "include")]
    for folder in candidates:
        if folder and (Path(folder) / marker).is_file():
            return folder
    return None


@functools.lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """The header folders NVRTC gets: the runtime's (required), then crt's and CCCL's when found elsewhere.

    Raises:
        BuildError: no folder with cuda_runtime.h, saying where it looked.
    """
    runtime = _header_dir("runtime")
    if runtime is None:
        raise BuildError("CUDA headers for NVRTC not found: no cuda_runtime.h from cuda.pathfinder (the "
                         "nvidia-cuda-runtime-cu12 wheel, or the CUDA 13 wheels' nvidia/cu13/include) nor in "
                         f"{cuda_home() / 'include'} ($CUDA_HOME); `make install` installs the wheel")
    dirs = [runtime]
    for kind in ("crt", "cccl"):
        folder = _header_dir(kind, near=(runtime,))
        if folder is not None and folder not in dirs:
            dirs.append(folder)
    return tuple(dirs)


def include_options() -> tuple[str, ...]:
    """-I options for the CUDA headers the kernels include."""
    return tuple(f"-I{d}" for d in include_dirs())


def cccl_include_dir() -> str | None:
    """The folder holding CCCL's <nv/target> (cooperative_groups needs it), or None."""
    runtime = _header_dir("runtime")
    return _header_dir("cccl", near=(runtime,) if runtime else ())


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


def _compile(source: str, name: str, arch: str, options: tuple[str, ...], lineinfo: bool = True) -> str:
    """NVRTC's PTX of `source`; lineinfo=False leaves out -lineinfo (PTX committed to the repository: its `.file`
    lines would name the compiling checkout's paths)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise BuildError("cuda-python (cuda.bindings.nvrtc) is not installed; `make install` installs it") from exc
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise BuildError(f"nvrtcCreateProgram failed for {name}: {err}")
    try:
        base = BASE_OPTIONS if lineinfo else tuple(o for o in BASE_OPTIONS if o != "-lineinfo")
        opts = [f"-arch={arch}", *base, *include_options(), *options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            text = log.decode(errors="replace").strip()
            if "nv/target" in text and cccl_include_dir() is None:
                text += ("\n(<nv/target> comes with the nvidia-cuda-cccl-cu12 wheel, or CCCL under a CUDA 13 "
                         "include/cccl; `make install` installs the wheel)")
            raise BuildError(f"NVRTC failed to compile {name} ({' '.join(options) or 'no defines'}):\n{text}")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\x00 ").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
