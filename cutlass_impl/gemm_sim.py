"""CUTLASS's sm90 bf16 GEMM on ptxsim: D = A @ B^T, run unmodified (its NVRTC PTX, its own Params)."""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contract.errors import BuildError, InputError
from cutlass_impl.build import load_ptx, shim

NAME = "gemm_bf16_sm90"


@dataclass(frozen=True)
class HostParams:
    """What the host shim gives for one problem: Params bytes with the tensor maps encoded, launch shape."""

    params: bytes
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    tensor_maps: int


def _encode_maps(params: bytearray, lines: list[str]) -> int:
    """Encode each recorded cuTensorMapEncodeTiled call with ptxsim's encoder over its marker in params."""
    from ptxsim.tensormap import encode_tiled

    for n, line in enumerate(lines):
        f = [int(x) for x in line.split()[1:]]
        dtype, rank, addr = f[:3]
        dims, strides = f[3:3 + rank], f[3 + rank:2 + 2 * rank]
        box, estr = f[2 + 2 * rank:2 + 3 * rank], f[2 + 3 * rank:2 + 4 * rank]
        il, sw, l2, oob = f[2 + 4 * rank:]
        marker = (n + 1).to_bytes(8, "little") + bytes(120)
        at = [o for o in range(0, len(params) - 127, 64) if params[o:o + 128] == marker]
        if len(at) != 1:
            raise BuildError(f"CUTLASS Params: tensor map {n + 1} found at {at} (expected one 64-aligned slot)")
        params[at[0]:at[0] + 128] = encode_tiled(dtype, rank, addr, dims, strides, box, estr, il, sw, l2, oob)
    return len(lines)


def host_params(M: int, N: int, K: int, addrs: tuple[int, int, int, int]) -> HostParams:  # noqa: N803
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "params.bin"
        done = subprocess.run([str(shim(NAME)), str(M), str(N), str(K), *(hex(a) for a in addrs), str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise InputError(f"CUTLASS {NAME} {M}x{N}x{K}: {done.stderr.strip() or done.stdout.strip()}")
        params = bytearray(out.read_bytes())
    head = re.search(r"params (\d+) grid (\d+) (\d+) (\d+) block (\d+) (\d+) (\d+) smem (\d+)", done.stdout)
    v = [int(x) for x in head.groups()]
    maps = _encode_maps(params, [ln for ln in done.stdout.splitlines() if ln.startswith("encode ")])
    return HostParams(bytes(params), (v[1], v[2], v[3]), (v[4], v[5], v[6]), v[7], maps)


def run_gemm_bf16(backend, a: np.ndarray, b: np.ndarray, **launch_options):
    """D (bf16, M x N) = a (bf16 M x K) @ b (bf16 N x K)^T on a SimBackend; returns (D, ptxsim launch stats)."""
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    (M, K), (N, Kb) = a.shape, b.shape  # noqa: N806
    if a.dtype != bf16 or b.dtype != bf16 or K != Kb:
        raise InputError(f"CUTLASS {NAME}: a {a.dtype}{a.shape}, b {b.dtype}{b.shape}; expected bf16 M x K and N x K")
    da, db = backend.to_device(np.ascontiguousarray(a)), backend.to_device(np.ascontiguousarray(b))
    dc = backend.to_device(np.zeros((M, N), bf16))
    dd = backend.empty((M, N), bf16, fill_byte=0xFF)
    hp = host_params(M, N, K, (da.addr, db.addr, dc.addr, dd.addr))
    ptx = load_ptx(NAME)
    entry = re.search(r"^\.entry (\S+)\(", ptx, re.M).group(1)
    kernel = backend.module(ptx).kernel(entry)
    stats = backend.device.launch(kernel, hp.grid, hp.block, [hp.params], shared_bytes=hp.shared_bytes,
                                  **launch_options)
    return backend.to_host(dd), stats
