"""Build CUTLASS kernels without a GPU: the device code by NVRTC (committed, gzipped, with a source record) and the
host shim that builds a kernel's Params by g++ (cached per source digest under ~/.cache/ptxmoe/cutlass).

    python -m cutlass_impl.build            # recompile the committed PTX (minutes: CUTLASS's templates)

What NVRTC needs (../shared/docs/ptx-notes.md, last section): the runtime, CCCL and nvcc wheels' includes, CUTLASS's
include/ from the nvidia-cutlass wheel, two std:: names (in the .cu) and the explicit instantiation as declared. What
g++ needs for CUTLASS's host code: kernels/host_prelude.h and kernels/rt_stubs.cpp.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from contract.errors import BuildError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
ARCH = "sm_90a"
KERNELS = {  # name -> (device source, shared header)
    "gemm_bf16_sm90": ("gemm_bf16_sm90.cu", "gemm_bf16_sm90.h"),
    "gemm_fp8_blockwise_sm90": ("gemm_fp8_blockwise_sm90.cu", "gemm_fp8_blockwise_sm90.h"),
}


@lru_cache(maxsize=1)
def cutlass_dirs() -> tuple[Path, Path]:
    """(include/, tools/util/include/) of the installed nvidia-cutlass wheel; BuildError when it is not installed."""
    try:
        import cutlass_library
    except ImportError:
        raise BuildError("CUTLASS headers: the nvidia-cutlass wheel is not installed (make install)") from None
    root = Path(cutlass_library.__file__).resolve().parent / "source"
    inc, util = root / "include", root / "tools" / "util" / "include"
    if not (inc / "cutlass" / "cutlass.h").exists():
        raise BuildError(f"CUTLASS headers: {inc}/cutlass/cutlass.h missing in the nvidia-cutlass wheel")
    return inc, util


def cutlass_version() -> str:
    from importlib.metadata import version

    return version("nvidia-cutlass")


def source_digest(name: str) -> str:
    """SHA-256 of what the device code of kernel `name` is compiled from (its .cu and shared header)."""
    h = hashlib.sha256()
    for f in KERNELS[name]:
        h.update(f.encode() + b"\0" + (KERNEL_DIR / f).read_bytes())
    return h.hexdigest()


def shim_digest(name: str) -> str:
    """SHA-256 of what the host shim of kernel `name` is built from."""
    h = hashlib.sha256(source_digest(name).encode())
    for f in (f"{name}_host.cpp", "host_prelude.h", "rt_stubs.cpp"):
        h.update(f.encode() + b"\0" + (KERNEL_DIR / f).read_bytes())
    return h.hexdigest()


def ptx_path(name: str) -> Path:
    return KERNEL_DIR / f"{name}.ptx.gz"


def record_path(name: str) -> Path:
    return KERNEL_DIR / f"{name}.json"


def compile_ptx(name: str) -> str:
    """NVRTC's PTX of kernel `name` for sm_90a (minutes)."""
    from cpp_impl import nvrtc

    inc, util = cutlass_dirs()
    source, _ = KERNELS[name]
    return nvrtc._compile((KERNEL_DIR / source).read_text(), source, ARCH,
                          (f"-I{KERNEL_DIR}", f"-I{inc}", f"-I{util}", "-DNDEBUG"))


def generate(name: str) -> None:
    ptx = compile_ptx(name)
    # NOTE: mtime 0, so the same PTX gzips to the same bytes
    ptx_path(name).write_bytes(gzip.compress(ptx.encode(), mtime=0))
    record_path(name).write_text(json.dumps({"source_sha256": source_digest(name), "nvidia_cutlass": cutlass_version(),
                                             "arch": ARCH, "ptx_chars": len(ptx)}, indent=1, sort_keys=True) + "\n")


@lru_cache(maxsize=None)
def load_ptx(name: str) -> str:
    """The committed PTX of kernel `name`."""
    return gzip.decompress(ptx_path(name).read_bytes()).decode()


def _cuda_includes() -> list[str]:
    from cpp_impl import nvrtc

    return [f"-I{d}" for d in nvrtc.include_dirs()]


def shim(name: str) -> Path:
    """The host shim binary of kernel `name` (kernels/<name>_host.cpp + rt_stubs.cpp), built by g++ once per source
    digest (about a minute: CUTLASS's templates) and cached. BuildError when g++ is missing or fails."""
    gxx = shutil.which(os.environ.get("CXX", "g++"))
    if gxx is None:
        raise BuildError("CUTLASS host shim: no C++ compiler (g++, or $CXX)")
    inc, util = cutlass_dirs()
    key = hashlib.sha256((shim_digest(name) + cutlass_version() + gxx).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("PTXMOE_CACHE", Path.home() / ".cache" / "ptxmoe")) / "cutlass" / key
    exe = cache / f"{name}_host"
    if exe.exists():
        return exe
    cache.mkdir(parents=True, exist_ok=True)
    flags = ["-std=c++17", "-O0", "-fpermissive", "-w", "-DCUTLASS_SM90_COLLECTIVE_BUILDER_SUPPORTED",
             f"-I{KERNEL_DIR}", f"-I{inc}", f"-I{util}", *_cuda_includes()]
    tmp = cache / f"{name}_host.tmp{os.getpid()}"
    cmd = [gxx, *flags, str(KERNEL_DIR / f"{name}_host.cpp"), str(KERNEL_DIR / "rt_stubs.cpp"), "-o", str(tmp)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise BuildError(f"CUTLASS host shim {name}: g++ failed:\n{done.stderr[-4000:]}")
    tmp.replace(exe)
    return exe


def main(argv: list[str] | None = None) -> int:
    for name in (argv if argv else sys.argv[1:]) or list(KERNELS):
        generate(name)
        print(f"wrote {ptx_path(name).name} and {record_path(name).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
