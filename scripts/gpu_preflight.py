#!/usr/bin/env python3
"""The GPU check's first step (~30 s): what the machine is, and whether each GPU feature the project leans on works,
tried on tiny kernels before anything big runs.

Checks, in order (each logged as it ends, each failure recorded and the next one tried):
  packages      versions of numpy, numba, numba-cuda, cuda-bindings/-core/-pathfinder, the NVIDIA wheels, torch ...
  device        cuInit, the driver's CUDA version, name, compute capability, SMs, L2, shared-memory opt-in
  ptx           one sm_90 PTX kernel through GpuBackend.launch_ptx (JIT)
  sm90a_jit     an sm_90a module JIT-compiled with CU_JIT_TARGET = CU_TARGET_COMPUTE_90A
  sm90a_cubin   the same module assembled by ptxas -arch=sm_90a and loaded as a cubin
  cluster       a `.reqnctapercluster 2` kernel: %cluster_ctarank per CTA, a cluster barrier
  tensor_map    a map from the driver's cuTensorMapEncodeTiled, one TMA load into shared memory (a bounded wait)
  shared_optin  200 KB of dynamic shared memory (MAX_DYNAMIC_SHARED_SIZE_BYTES raised), exchanged through it
  numba         one Numba kernel (numba-cuda's JIT) through GpuBackend.launch_numba
  cpp           one CUDA C++ kernel: NVRTC (cpp_impl.nvrtc's headers) to PTX, then the driver
  tools         nvcc, ptxas, ncu, compute-sanitizer, nvidia-smi versions; NVRTC's and libNVVM's
  setmaxnreg    an sm_90a kernel whose two warpgroups move registers (setmaxnreg.dec 40 / .inc 232); last, as the one
                check that could wait forever (for registers)

Every result is one JSON line appended (and flushed) to --out before the next check starts, so a kill keeps what
ran. After a sticky CUDA error (the context is lost) the remaining checks run in a fresh process. Every kernel here
ends on its own: waits are bounded and report a timeout instead of hanging.

    python3 scripts/gpu_preflight.py --out preflight.jsonl [--only ptx,cluster]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402 - after the repository is on the path

PACKAGES = ("numpy", "numba", "numba-cuda", "llvmlite", "cuda-bindings", "cuda-core", "cuda-pathfinder", "cuda-python",
            "cuda-toolkit", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc-cu13",
            "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu13", "nvidia-nvjitlink",
            "nvidia-nvjitlink-cu12", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-cccl-cu12", "nvidia-ml-py", "ml-dtypes",
            "torch", "nvtx", "pytest", "pytest-timeout")
TOOLS = (("nvcc", ("--version",)), ("ncu", ("--version",)), ("compute-sanitizer", ("--version",)),
         ("nvidia-smi", ("--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader")))
THREADS = 32


class Wrong(Exception):
    """The kernel ran but wrote something else than expected."""


def _ptx(entry: str, body: str, target: str = "sm_90", params: str = ".param .u64 p_out", extra: str = "",
         head: str = "") -> str:
    return (f".version 8.0\n.target {target}\n.address_size 64\n{head}"
            f".visible .entry {entry}({params}){extra}\n{{\n{body}\n}}\n")


# out[tid] = tid + base: the plain launches (ptx, sm_90a both ways)
_IOTA_BODY = """  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2;
  add.u32 %r2, %r1, BASE;
  st.global.u32 [%rd3], %r2;
  ret;"""


def iota_ptx(entry: str, base: int, target: str = "sm_90") -> str:
    return _ptx(entry, _IOTA_BODY.replace("BASE", str(base)), target)


CLUSTER_PTX = _ptx("preflight_cluster", """  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %cluster_ctarank;
  barrier.cluster.arrive; barrier.cluster.wait;
  mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;""", extra="\n.reqnctapercluster 2, 1, 1")

GAVE_UP = 0xDEADBEEF
# thread 0 initialises the mbarrier and issues the TMA load of one 16 x 16-byte box; bar.sync makes the init visible
# before anyone waits; each of 64 threads then copies one u32 of the box out (GAVE_UP when the wait ran out)
TMA_PTX = _ptx("preflight_tma", f"""  .reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
  mov.b64 %rd6, tm; cvta.param.u64 %rd6, %rd6;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r0, %tid.x; mov.u32 %r1, tile; mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra SYNC;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
SYNC:
  bar.sync 0;
  @!%p1 bra WAIT_START;
  mov.u32 %r3, 0; mov.u32 %r8, 256;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], %r8;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd6, {{%r3, %r3}}], [%r2];
WAIT_START:
  mov.u32 %r5, 0;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @%p2 bra DONE;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p3, %r5, 1000000;
  @%p3 bra WAIT;
  mov.u32 %r6, {GAVE_UP};
  bra STORE;
DONE:
  shl.b32 %r7, %r0, 2; add.u32 %r7, %r7, %r1; ld.shared.u32 %r6, [%r7];
STORE:
  mul.wide.u32 %rd3, %r0, 4; add.s64 %rd4, %rd1, %rd3; st.global.u32 [%rd4], %r6;
  ret;""", params=".param .align 64 .b8 tm[128], .param .u64 p_out",
               head=".shared .align 128 .b8 tile[256];\n.shared .align 8 .b64 bar;\n")

OPTIN_BYTES = 200 * 1024
# each thread writes tid + 5000 near the end of 200 KB of dynamic shared memory; after bar.sync it reads its right
# neighbour's word: out[tid] = (tid + 1) % 32 + 5000
OPTIN_PTX = _ptx("preflight_optin", f"""  .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r1, %tid.x; mov.u32 %r2, dyn;
  add.u32 %r2, %r2, {OPTIN_BYTES - 4 * THREADS};
  shl.b32 %r3, %r1, 2; add.u32 %r4, %r2, %r3;
  add.u32 %r5, %r1, 5000; st.shared.u32 [%r4], %r5;
  bar.sync 0;
  add.u32 %r6, %r1, 1; and.b32 %r6, %r6, {THREADS - 1}; shl.b32 %r6, %r6, 2; add.u32 %r6, %r2, %r6;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  ret;""", head=".extern .shared .align 16 .b8 dyn[];\n")

# warpgroup 0 gives registers back (40), warpgroup 1 takes them (232), as rung 4's producer and consumers do. NOTE:
# .maxnreg fixes the count at entry (without it ptxas ignores setmaxnreg, C7508), and 136 balances the pool: 128 x
# (136 - 40) released = 128 x (232 - 136) taken, or the .inc would wait for registers no one frees
SETMAXNREG_PTX = _ptx("preflight_setmaxnreg", """  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 128;
  @%p1 bra.uni GIVE;
  setmaxnreg.inc.sync.aligned.u32 232;
  bra.uni STORE;
GIVE:
  setmaxnreg.dec.sync.aligned.u32 40;
STORE:
  mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2;
  add.u32 %r2, %r1, 3000;
  st.global.u32 [%rd3], %r2;
  ret;""", target="sm_90a", extra="\n.maxntid 256, 1, 1\n.maxnreg 136")


try:
    from numba import cuda
except ImportError:  # the numba check then fails, naming the import; the others still run
    cuda = None


def _numba_iota(out, base):  # compiled by Numba, run on the device
    i = cuda.threadIdx.x
    out[i] = i + base


CPP_SRC = r'''
#include <cuda_bf16.h>
extern "C" __global__ void preflight_cpp(unsigned* out) {
    unsigned i = threadIdx.x;
    out[i] = i + (unsigned)__bfloat162float(__float2bfloat16(4000.0f));
}
'''


class Context:
    """What the checks share: the backend (a GpuBackend made by the first check that needs one, or given: a test
    passes a SimBackend)."""

    def __init__(self, backend=None):
        self.backend = backend

    def need_backend(self):
        if self.backend is None:
            from harness.backends.gpu import GpuBackend

            self.backend = GpuBackend()
        return self.backend


def _expect(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    if not np.array_equal(got, want):
        bad = int(np.flatnonzero(got != want)[0])
        raise Wrong(f"{what}: element {bad} is {int(got[bad])}, expected {int(want[bad])} "
                    f"({int((got != want).sum())} of {got.size} differ)")


def _launch_and_read(ctx: Context, ptx: str, entry: str, grid, block, params_before=(), n=THREADS, shared=0):
    backend = ctx.need_backend()
    out = backend.empty((n,), np.uint32)
    backend.launch_ptx(ptx, entry, grid, block, [*params_before, out], shared_bytes=shared)
    backend.synchronize()
    return backend.to_host(out)


def check_packages(ctx: Context) -> dict:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"python": platform.python_version(), "executable": sys.executable, "packages": found,
            "CUDA_HOME": os.environ.get("CUDA_HOME"), "missing": [p for p in ("numba-cuda", "cuda-bindings")
                                                                  if p not in found]}


def check_device(ctx: Context) -> dict:
    from harness.backends import cuda_api

    drv = cuda_api.driver()
    backend = ctx.need_backend()
    dev = backend._device()
    attr = drv.CUdevice_attribute
    values = {name: int(cuda_api.check(drv.cuDeviceGetAttribute(getattr(attr, f"CU_DEVICE_ATTRIBUTE_{name}"), dev),
                                       f"cuDeviceGetAttribute({name})"))
              for name in ("COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR", "MULTIPROCESSOR_COUNT",
                           "L2_CACHE_SIZE", "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")}
    version = int(cuda_api.check(drv.cuDriverGetVersion(), "cuDriverGetVersion"))
    name = backend.context.device.name
    return {"name": name.decode() if isinstance(name, bytes) else str(name),
            "driver_cuda": f"{version // 1000}.{version % 1000 // 10}", **values}


def check_ptx(ctx: Context) -> dict:
    got = _launch_and_read(ctx, iota_ptx("preflight_ptx", 1000), "preflight_ptx", 1, THREADS)
    _expect(got, np.arange(THREADS, dtype=np.uint32) + 1000, "sm_90 PTX")
    return {}


def _sm90a(ctx: Context, via: str, base: int) -> dict:
    entry = f"preflight_sm90a_{via}"
    backend = ctx.need_backend()
    saved = getattr(backend, "load_via", None)
    if saved is not None:
        backend.load_via = via
    try:
        got = _launch_and_read(ctx, iota_ptx(entry, base, "sm_90a"), entry, 1, THREADS)
    finally:
        if saved is not None:
            backend.load_via = saved
    _expect(got, np.arange(THREADS, dtype=np.uint32) + base, f"sm_90a module ({via})")
    logs = getattr(backend, "module_logs", {}).get(f"module of {entry}", {})
    return {"loaded": logs}


def check_sm90a_jit(ctx: Context) -> dict:
    return _sm90a(ctx, "jit", 2000)


def check_sm90a_cubin(ctx: Context) -> dict:
    return _sm90a(ctx, "cubin", 2500)


def check_cluster(ctx: Context) -> dict:
    got = _launch_and_read(ctx, CLUSTER_PTX, "preflight_cluster", 4, 32, n=4)
    _expect(got, np.array([0, 1, 0, 1], np.uint32), "%cluster_ctarank of CTAs 0..3 in clusters of 2")
    return {}


def check_tensor_map(ctx: Context) -> dict:
    backend = ctx.need_backend()
    host = (np.arange(16 * 64, dtype=np.uint32) * 7 % 251).astype(np.uint8).reshape(16, 64)
    arr = backend.to_device(host)
    tmap = backend.tensor_map(arr, box=(16, 16), swizzle=0)
    got = _launch_and_read(ctx, TMA_PTX, "preflight_tma", 1, 64, params_before=(tmap,), n=64)
    if (got == GAVE_UP).any():
        raise Wrong("the TMA load never completed the mbarrier's transaction (the bounded wait gave up)")
    _expect(got.view(np.uint8).reshape(16, 16), host[:, :16], "TMA box (16 rows x 16 bytes at 0, 0)")
    return {}


def check_shared_optin(ctx: Context) -> dict:
    got = _launch_and_read(ctx, OPTIN_PTX, "preflight_optin", 1, THREADS, shared=OPTIN_BYTES)
    _expect(got, (np.arange(THREADS, dtype=np.uint32) + 1) % THREADS + 5000, f"{OPTIN_BYTES} B dynamic shared")
    return {"dynamic_shared_bytes": OPTIN_BYTES}


def check_setmaxnreg(ctx: Context) -> dict:
    got = _launch_and_read(ctx, SETMAXNREG_PTX, "preflight_setmaxnreg", 1, 256, n=256)
    _expect(got, np.arange(256, dtype=np.uint32) + 3000, "setmaxnreg kernel")
    logs = getattr(ctx.backend, "module_logs", {}).get("module of preflight_setmaxnreg", {})
    return {"jit_info_log": logs.get("info_log")}


def check_numba(ctx: Context) -> dict:
    backend = ctx.need_backend()
    out = backend.empty((THREADS,), np.int32)
    backend.launch_numba(_numba_iota, "void(int32[:], int32)", 1, THREADS, [out, np.int32(6000)])
    backend.synchronize()
    _expect(backend.to_host(out), np.arange(THREADS, dtype=np.int32) + 6000, "Numba kernel")
    return {}


def check_cpp(ctx: Context) -> dict:
    from cpp_impl import nvrtc

    ptx = nvrtc.compile_source(CPP_SRC, "preflight.cu")
    got = _launch_and_read(ctx, ptx, "preflight_cpp", 1, THREADS)
    _expect(got, np.arange(THREADS, dtype=np.uint32) + 4000, "CUDA C++ kernel")
    from harness.backends.cuda_api import ptx_isa_version

    return {"include_dirs": list(nvrtc.include_dirs()), "ptx_version": ptx_isa_version(ptx)}


def _tool_version(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"({type(exc).__name__}: {exc})"
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[-1] if proc.returncode == 0 and lines else f"(exit {proc.returncode}: {' '.join(lines[-2:])})"


def check_tools(ctx: Context) -> dict:
    import shutil

    from harness import toolchain

    out: dict = {}
    for name, args in TOOLS:
        path = shutil.which(name)
        out[name] = _tool_version([path, *args]) if path else "(not on PATH)"
    for name, fn in (("ptxas", toolchain.ptxas_version), ("nvrtc", toolchain.nvrtc_version),
                     ("nvvm", toolchain.nvvm_version)):
        try:
            out[name] = fn()
        except Exception as exc:  # noqa: BLE001 - a missing piece is the answer here
            out[name] = f"({type(exc).__name__}: {exc})"
    try:
        out["ptxas_path"] = str(toolchain.ptxas_path())
    except Exception as exc:  # noqa: BLE001
        out["ptxas_path"] = f"({exc})"
    try:
        from numba.cuda.cudadrv import libs

        out["libnvvm"] = str(libs.get_cudalib("nvvm"))
    except Exception as exc:  # noqa: BLE001
        out["libnvvm"] = f"({type(exc).__name__}: {exc})"
    return out


CHECKS = (("packages", check_packages), ("device", check_device), ("ptx", check_ptx),
          ("sm90a_jit", check_sm90a_jit), ("sm90a_cubin", check_sm90a_cubin), ("cluster", check_cluster),
          ("tensor_map", check_tensor_map), ("shared_optin", check_shared_optin), ("numba", check_numba),
          ("cpp", check_cpp), ("tools", check_tools), ("setmaxnreg", check_setmaxnreg))
# NOTE: setmaxnreg last: a .inc that never gets its registers would hang the process (the step's limit ends it), and
# by then everything else is on disk
NAMES = tuple(name for name, _ in CHECKS)


def run_checks(names, out_path: Path | None, ctx: Context, log=sys.stdout) -> list[dict]:
    """Run the named checks in order; each result is printed and appended to `out_path` before the next starts.
    Stops after a sticky CUDA error and returns, with the names not yet run in the last result's "rest"."""
    from harness.backends import cuda_api

    results = []
    names = list(names)
    for i, name in enumerate(names):
        fn = dict(CHECKS)[name]
        t0 = time.perf_counter()
        result: dict = {"check": name}
        try:
            result.update(status="ok", detail=fn(ctx))
        except Wrong as exc:
            result.update(status="wrong", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and the next check tried
            result.update(status="error", error=f"{type(exc).__name__}: {exc}", sticky=cuda_api.is_sticky(exc))
        result["seconds"] = round(time.perf_counter() - t0, 3)
        if result.get("sticky"):
            result["rest"] = names[i + 1:]
        results.append(result)
        shown = json.dumps(result.get("detail") if result["status"] == "ok" else result.get("error"), default=str)
        print(f"=== preflight {name}: {result['status']} ({result['seconds']:.2f}s) {shown[:2000]}", file=log,
              flush=True)
        if out_path is not None:
            with out_path.open("a") as f:
                f.write(json.dumps(result, default=str) + "\n")
        if result.get("sticky"):
            break
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="append one JSON line per check here")
    parser.add_argument("--only", default=None, help=f"comma-separated checks (of {', '.join(NAMES)})")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(NAMES)
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"unknown check(s) {unknown}; choose from {', '.join(NAMES)}")
    out = Path(args.out) if args.out else None
    results = run_checks(names, out, Context())
    rest = results[-1].get("rest") if results else None
    if rest:  # the context is lost: the rest in a fresh process (and a fresh context)
        print(f"=== preflight: sticky CUDA error; {', '.join(rest)} in a fresh process", flush=True)
        cmd = [sys.executable, __file__, "--only", ",".join(rest)] + (["--out", str(out)] if out else [])
        return subprocess.run(cmd, check=False).returncode
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
