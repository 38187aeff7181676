"""Build CUTLASS kernels without a GPU: the device code by NVRTC (committed, gzipped, with a source record) and the
host shim that builds a kernel's Params by g++ (cached per source digest under ~/.cache/ptxmoe/cutlass).

    python -m cutlass_impl.build            # recompile the committed PTX (minutes: CUTLASS's templates)

What NVRTC needs (../shared/docs/ptx-notes.md, last section): the runtime, CCCL and nvcc wheels' includes, CUTLASS's
include/ from the nvidia-cutlass wheel, two std:: names (kernels/nvrtc_unit.h) and the explicit instantiation as
declared. What g++ needs for CUTLASS's host code: kernels/host_prelude.h and kernels/rt_stubs.cpp.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from contract.errors import BuildError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
ARCH = "sm_90a"
# family -> (device source, shared header, host shim source)
FAMILIES = {
    "bf16": ("gemm_bf16_sm90.cu", "gemm_bf16_sm90.h", "gemm_bf16_sm90_host.cpp"),
    "fp8": ("gemm_fp8_blockwise_sm90.cu", "gemm_fp8_blockwise_sm90.h", "gemm_fp8_blockwise_sm90_host.cpp"),
    # the grouped (pointer-array) kernels: one launch for every group
    "bf16_grouped": ("gemm_bf16_grouped_sm90.cu", "gemm_bf16_grouped_sm90.h", "gemm_bf16_grouped_sm90_host.cpp"),
    "fp8_grouped": ("gemm_fp8_blockwise_grouped_sm90.cu", "gemm_fp8_blockwise_grouped_sm90.h",
                    "gemm_fp8_blockwise_grouped_sm90_host.cpp"),
}
# the files every family's device code includes (hashed into every source digest) and its host shim is built from
# (hashed into every shim digest) besides its own
DEVICE_COMMON = ("nvrtc_unit.h", "gemm_sm90_config.h", "grouped_instance.h")
HOST_COMMON = ("host_shim.h", "host_prelude.h", "rt_stubs.cpp")


@dataclass(frozen=True)
class Config:
    """One of CUTLASS's own candidate configurations of a kernel family (what its profiler sweeps): tile, schedule,
    cluster. A cluster other than 1x1 (grouped families only) is compiled into the entry as __cluster_dims__ (the
    family's .cu): CUTLASS's own launcher passes it at launch time, and the harness's launch_ptx has no cluster
    dimensions, but cuLaunchKernel and ptxsim honour the PTX's .reqnctapercluster (docs/cutlass.md)."""

    family: str
    tile_m: int
    tile_n: int
    tile_k: int
    schedule: str  # "cooperative" or "pingpong"
    cluster_m: int = 1
    cluster_n: int = 1

    @property
    def defines(self) -> tuple[str, ...]:
        cluster = () if (self.cluster_m, self.cluster_n) == (1, 1) else \
            (f"-DPTXMOE_CLUSTER_M={self.cluster_m}", f"-DPTXMOE_CLUSTER_N={self.cluster_n}")
        return (f"-DPTXMOE_TILE_M={self.tile_m}", f"-DPTXMOE_TILE_N={self.tile_n}",
                f"-DPTXMOE_PINGPONG={int(self.schedule == 'pingpong')}", *cluster)

    @property
    def cluster_ctas(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def label(self) -> str:
        """"cooperative 128x128x64" (", cluster 1x2" when not 1x1): how a row and the docs name the configuration."""
        cluster = "" if self.cluster_ctas == 1 else f", cluster {self.cluster_m}x{self.cluster_n}"
        return f"{self.schedule} {self.tile_m}x{self.tile_n}x{self.tile_k}{cluster}"


# name -> configuration; the first of each family is the one the ptxsim tests of issue 28 item 3 run
CONFIGS = {
    "gemm_bf16_sm90": Config("bf16", 128, 128, 64, "cooperative"),
    "gemm_bf16_sm90_pingpong_64x128": Config("bf16", 64, 128, 64, "pingpong"),
    "gemm_bf16_sm90_cooperative_128x256": Config("bf16", 128, 256, 64, "cooperative"),
    "gemm_fp8_blockwise_sm90": Config("fp8", 128, 128, 128, "cooperative"),
    "gemm_fp8_blockwise_sm90_pingpong_64x128": Config("fp8", 64, 128, 128, "pingpong"),
    "gemm_fp8_blockwise_sm90_cooperative_256x128": Config("fp8", 256, 128, 128, "cooperative"),
    # the grouped (pointer-array) kernels' candidates: CUTLASS's default first, then the ping-pong 64-row tile (the
    # per-expert sweep's choice at small) and a 1x2 cluster (the A tile multicast to two N tiles: the sm90 grouped
    # block-FP8 MoE configuration SGLang runs for small M on H100/H200)
    "gemm_bf16_grouped_sm90": Config("bf16_grouped", 128, 128, 64, "cooperative"),
    "gemm_bf16_grouped_sm90_pingpong_64x128": Config("bf16_grouped", 64, 128, 64, "pingpong"),
    "gemm_bf16_grouped_sm90_cluster_1x2": Config("bf16_grouped", 128, 128, 64, "cooperative", 1, 2),
    "gemm_fp8_blockwise_grouped_sm90": Config("fp8_grouped", 128, 128, 128, "cooperative"),
    "gemm_fp8_blockwise_grouped_sm90_pingpong_64x128": Config("fp8_grouped", 64, 128, 128, "pingpong"),
    "gemm_fp8_blockwise_grouped_sm90_cluster_1x2": Config("fp8_grouped", 128, 128, 128, "cooperative", 1, 2),
}
KERNELS = {name: FAMILIES[c.family][:2] for name, c in CONFIGS.items()}  # name -> (device source, shared header)


def candidates(family: str) -> tuple[str, ...]:
    """The configuration names of `family` ("bf16" or "fp8"), in CONFIGS order."""
    return tuple(n for n, c in CONFIGS.items() if c.family == family)


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
    """SHA-256 of what the device code of kernel `name` is compiled from (its .cu, shared header, the headers every
    kernel includes, and defines)."""
    h = hashlib.sha256(" ".join(CONFIGS[name].defines).encode())
    for f in (*KERNELS[name], *DEVICE_COMMON):
        h.update(f.encode() + b"\0" + (KERNEL_DIR / f).read_bytes())
    return h.hexdigest()


def shim_digest(name: str) -> str:
    """SHA-256 of what the host shim of kernel `name` is built from."""
    h = hashlib.sha256(source_digest(name).encode())
    for f in (FAMILIES[CONFIGS[name].family][2], *HOST_COMMON):
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
    # NOTE: no -lineinfo: its .file lines would commit the compiling checkout's paths
    return nvrtc._compile((KERNEL_DIR / source).read_text(), source, ARCH,
                          (f"-I{KERNEL_DIR}", f"-I{inc}", f"-I{util}", "-DNDEBUG", *CONFIGS[name].defines),
                          lineinfo=False)


def generate(name: str) -> None:
    ptx = compile_ptx(name)
    # NOTE: mtime 0, so the same PTX gzips to the same bytes
    ptx_path(name).write_bytes(gzip.compress(ptx.encode(), mtime=0))
    c = CONFIGS[name]
    record_path(name).write_text(json.dumps({"source_sha256": source_digest(name), "nvidia_cutlass": cutlass_version(),
                                             "arch": ARCH, "ptx_chars": len(ptx), "defines": list(c.defines),
                                             "config": c.label}, indent=1, sort_keys=True) + "\n")


@lru_cache(maxsize=None)
def load_ptx(name: str) -> str:
    """The committed PTX of kernel `name`."""
    return gzip.decompress(ptx_path(name).read_bytes()).decode()


def _cuda_includes() -> list[str]:
    from cpp_impl import nvrtc

    return [f"-I{d}" for d in nvrtc.include_dirs()]


def shim(name: str) -> Path:
    """The host shim binary of kernel `name` (its family's host .cpp + rt_stubs.cpp), built by g++ once per source
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
             *CONFIGS[name].defines, f"-I{KERNEL_DIR}", f"-I{inc}", f"-I{util}", *_cuda_includes()]
    tmp = cache / f"{name}_host.tmp{os.getpid()}"
    host = FAMILIES[CONFIGS[name].family][2]
    cmd = [gxx, *flags, str(KERNEL_DIR / host), str(KERNEL_DIR / "rt_stubs.cpp"), "-o", str(tmp)]
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
