"""Find and drive the NVIDIA toolchain that ships in PyPI wheels (never a system CUDA install).

ptxas and libNVVM come from `nvidia-cuda-nvcc-cu12`, NVRTC from `nvidia-cuda-nvrtc-cu12`, nvdisasm from
`nvidia-cuda-nvdisasm`. Everything here works without a GPU.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ToolchainError


def _nvidia_roots() -> list[Path]:
    """site-packages/nvidia folders of the running interpreter (wheels install their tools there)."""
    import importlib.util

    roots: list[Path] = []
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        roots.extend(Path(p) for p in spec.submodule_search_locations)
    return roots


def _find_in_wheels(pattern: str) -> Path | None:
    for root in _nvidia_roots():
        hits = sorted(root.glob(pattern))
        if hits:
            return hits[0]
    return None


ALLOW_SYSTEM_CUDA_ENV = "PTXMOE_ALLOW_SYSTEM_CUDA"
# tool name -> "wheel" or the system path used; filled only when the system fallback was taken
TOOL_SOURCES: dict[str, str] = {}


def _system_tool(name: str) -> Path | None:
    """Fallback used only when PTXMOE_ALLOW_SYSTEM_CUDA=1: $CUDA_HOME/bin/<name>, then PATH (e.g. a lent GPU
    machine)."""
    import shutil

    if os.environ.get(ALLOW_SYSTEM_CUDA_ENV) != "1":
        return None
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = Path(cuda_home) / "bin" / name
    found = candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    if found is None:
        which = shutil.which(name)
        found = Path(which) if which else None
    if found is not None:
        TOOL_SOURCES[name] = f"system:{found}"
    return found


@functools.lru_cache(maxsize=None)
def ptxas_path() -> Path:
    """Path of ptxas from the nvidia-cuda-nvcc wheel."""
    path = _find_in_wheels("cuda_nvcc/bin/ptxas") or _find_in_wheels("*/bin/ptxas") or _system_tool("ptxas")
    if path is None:
        raise ToolchainError("ptxas not found in the nvidia-cuda-nvcc-cu12 wheel; "
                             "run `make install` (pip install -e .)")
    return path


@functools.lru_cache(maxsize=None)
def nvdisasm_path() -> Path:
    """Path of nvdisasm from the nvidia-cuda-nvdisasm wheel."""
    path = (_find_in_wheels("*/bin/nvdisasm") or _find_in_wheels("cuda_nvdisasm/bin/nvdisasm")
            or _system_tool("nvdisasm"))
    if path is None:
        raise ToolchainError("nvdisasm not found in the nvidia-cuda-nvdisasm wheel; run `make install`")
    return path


@functools.lru_cache(maxsize=None)
def nvvm_path() -> Path:
    """Path of libnvvm.so from the nvidia-cuda-nvcc wheel (what Numba's compile_ptx uses)."""
    # NOTE: CUDA 12 wheels: nvidia/cuda_nvcc/nvvm; CUDA 13 wheels: nvidia/cu13/nvvm (the wheel layout moved)
    path = _find_in_wheels("cuda_nvcc/nvvm/lib64/libnvvm.so*") or _find_in_wheels("*/nvvm/lib64/libnvvm.so*")
    if path is None:
        raise ToolchainError("libNVVM not found in the nvidia-cuda-nvcc-cu12 wheel; run `make install`")
    return path


def _tool_version(path: Path) -> str:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return match.group(2) if match else out.strip().splitlines()[-1] if out.strip() else "unknown"


def ptxas_version() -> str:
    return _tool_version(ptxas_path())


def nvdisasm_version() -> str:
    return _tool_version(nvdisasm_path())


def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def nvvm_version() -> str:
    """NVVM IR version as Numba reports it (loads libNVVM from the wheel)."""
    from numba.cuda.cudadrv import nvvm

    return ".".join(map(str, nvvm.NVVM().get_version()))


def compile_cuda_to_ptx(source: str, name: str = "kernel.cu", arch: str = "compute_90", options=()) -> str:
    """Compile CUDA C++ source to PTX with NVRTC from the wheel (the nvcc front end, no CUDA install needed).

    Raises:
        ToolchainError: with NVRTC's log when compilation fails.
    """
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _nvrtc_check(err, "nvrtcCreateProgram", name)
    try:
        opts = [f"-arch={arch}".encode(), b"-default-device", b"-std=c++17"] + [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise ToolchainError(f"NVRTC failed to compile {name}:\n{log.decode(errors='replace').strip()}")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\x00 ").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _nvrtc_check(err, call: str, name: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise ToolchainError(f"{call} failed for {name}: {err}")


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas -v reports for one entry point."""

    entry: str
    registers: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    stack_frame_bytes: int
    shared_bytes: int
    constant_bytes: int

    @property
    def spills(self) -> int:
        return self.spill_stores_bytes + self.spill_loads_bytes


_FUNC_RE = re.compile(r"(?:Compiling entry function|Function properties for) '([^']+)'")
_REGS_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_CMEM_RE = re.compile(r"(\d+) bytes cmem\[0\]")
_SPILL_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_report(text: str) -> dict[str, ResourceUsage]:
    """Parse `ptxas -v` output into one ResourceUsage per entry function."""
    facts: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if (m := _FUNC_RE.search(line)):
            current = m.group(1)
            facts.setdefault(current, {})
            continue
        if current is None:
            continue
        if (m := _SPILL_RE.search(line)):
            facts[current].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        if (m := _REGS_RE.search(line)):
            facts[current]["regs"] = int(m.group(1))
            if (s := _SMEM_RE.search(line)):
                facts[current]["smem"] = int(s.group(1))
            if (c := _CMEM_RE.search(line)):
                facts[current]["cmem"] = int(c.group(1))
    return {
        name: ResourceUsage(name, f.get("regs", 0), f.get("spill_st", 0), f.get("spill_ld", 0), f.get("stack", 0),
                            f.get("smem", 0), f.get("cmem", 0))
        for name, f in facts.items() if "regs" in f
    }


def assemble(ptx: str, arch: str = "sm_90", name: str = "module.ptx") -> tuple[bytes, dict[str, ResourceUsage]]:
    """Assemble PTX with ptxas -v; return (cubin bytes, resource usage per entry).

    Raises:
        ToolchainError: with ptxas's messages (file:line) when the PTX does not assemble.
    """
    with tempfile.TemporaryDirectory(prefix="ptxmoe-ptxas-") as tmp:
        src = Path(tmp) / name
        out = Path(tmp) / (Path(name).stem + ".cubin")
        src.write_text(ptx)
        proc = subprocess.run([str(ptxas_path()), "-v", f"-arch={arch}", str(src), "-o", str(out)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolchainError(f"ptxas failed on {name} for {arch}:\n{proc.stderr.strip()}")
        return out.read_bytes(), parse_ptxas_report(proc.stderr + proc.stdout)


def sass_listing(cubin: bytes, control_words: bool = False) -> str:
    """nvdisasm -c text of a cubin (functions, labels, one instruction a line); with `control_words` (nvdisasm -hex)
    each instruction's two 64-bit words follow it as comments, the second on a line of its own (the control bits
    ptxsim.model.sass.sass_loop_issue reads)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        flags = ["-hex", "-c"] if control_words else ["-c"]
        proc = subprocess.run([str(nvdisasm_path()), *flags, f.name], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolchainError(f"nvdisasm failed: {proc.stderr.strip()}")
    return proc.stdout


def sass_histogram(cubin: bytes, listing: str | None = None) -> dict[str, int]:
    """Count SASS opcodes (with their modifiers, e.g. LDG.E.128, HMMA.16816.F32.BF16) in a cubin via nvdisasm
    (or in its `listing`, when already read)."""
    counts: dict[str, int] = {}
    for line in (sass_listing(cubin) if listing is None else listing).splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def gpu_visible() -> tuple[bool, str]:
    """(True, device name) when a CUDA device is usable, else (False, the reason)."""
    if os.environ.get("PTXMOE_FORCE_NO_GPU"):
        return False, "PTXMOE_FORCE_NO_GPU is set"
    try:
        from cuda.bindings import driver
    except Exception as exc:  # noqa: BLE001 - any import problem means no GPU path
        return False, f"cuda-python not importable: {exc}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - libcuda.so missing raises at call time
        return False, f"no CUDA driver (libcuda.so): {exc}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return False, f"cuInit failed: {err.name}"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return False, "no CUDA device visible"
    err, dev = driver.cuDeviceGet(0)
    err, name = driver.cuDeviceGetName(128, dev)
    return True, name.split(b"\x00")[0].decode()
