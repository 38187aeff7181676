"""CUTLASS's sm90 GEMMs on ptxsim, run unmodified (their NVRTC PTX, their own Params): the bf16 GEMM D = A @ B^T and
the FP8 blockwise-scaled one D = sum over 128-deep k blocks of (A_k @ B_k^T) x SFA[m, k] x SFB[n // 128, k]."""
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
FP8_NAME = "gemm_fp8_blockwise_sm90"


@dataclass(frozen=True)
class HostParams:
    """What the host shim gives for one problem: Params bytes with the tensor maps encoded, launch shape."""

    params: bytes
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    tensor_maps: int
    extra: str = ""  # the shim's other lines (the FP8 GEMM's scale layout)


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


def host_params(M: int, N: int, K: int, addrs: tuple[int, ...], name: str = NAME) -> HostParams:  # noqa: N803
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "params.bin"
        done = subprocess.run([str(shim(name)), str(M), str(N), str(K), *(hex(a) for a in addrs), str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise InputError(f"CUTLASS {name} {M}x{N}x{K}: {done.stderr.strip() or done.stdout.strip()}")
        params = bytearray(out.read_bytes())
    head = re.search(r"params (\d+) grid (\d+) (\d+) (\d+) block (\d+) (\d+) (\d+) smem (\d+)", done.stdout)
    v = [int(x) for x in head.groups()]
    lines = done.stdout.splitlines()
    maps = _encode_maps(params, [ln for ln in lines if ln.startswith("encode ")])
    extra = "\n".join(ln for ln in lines if not ln.startswith(("encode ", "params ")))
    return HostParams(bytes(params), (v[1], v[2], v[3]), (v[4], v[5], v[6]), v[7], maps, extra)


def _launch(backend, name: str, hp: HostParams, **launch_options):
    ptx = load_ptx(name)
    entry = re.search(r"^\.entry (\S+)\(", ptx, re.M).group(1)
    kernel = backend.module(ptx).kernel(entry)
    return backend.device.launch(kernel, hp.grid, hp.block, [hp.params], shared_bytes=hp.shared_bytes,
                                 **launch_options)


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
    stats = _launch(backend, NAME, hp, **launch_options)
    return backend.to_host(dd), stats


def run_gemm_fp8_blockwise(backend, a: np.ndarray, b: np.ndarray, sfa: np.ndarray, sfb: np.ndarray,
                           **launch_options):
    """D (bf16, M x N) of e4m3 a (M x K) and b (N x K) with DeepSeek-V3's scales sfa (f32 M x K/128: 1 x 128 per row)
    and sfb (f32 N/128 x K/128: 128 x 128 blocks) on a SimBackend; returns (D, ptxsim launch stats)."""
    import ml_dtypes

    e4m3, bf16 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.bfloat16)
    (M, K), (N, Kb) = a.shape, b.shape  # noqa: N806
    if a.dtype != e4m3 or b.dtype != e4m3 or K != Kb or K % 128 or N % 128:
        raise InputError(f"CUTLASS {FP8_NAME}: a {a.dtype}{a.shape}, b {b.dtype}{b.shape}; expected e4m3 M x K and "
                         f"N x K, K and N multiples of 128")
    if sfa.shape != (M, K // 128) or sfb.shape != (N // 128, K // 128):
        raise InputError(f"CUTLASS {FP8_NAME}: scales {sfa.shape} and {sfb.shape}; expected {(M, K // 128)} and "
                         f"{(N // 128, K // 128)}")
    da, db = backend.to_device(np.ascontiguousarray(a)), backend.to_device(np.ascontiguousarray(b))
    dc = backend.to_device(np.zeros((M, N), bf16))
    dd = backend.empty((M, N), bf16, fill_byte=0xFF)
    # scale buffers as CUTLASS's ScaleConfig lays them out: the shim says the index step of each axis
    probe = host_params(M, N, K, (da.addr, db.addr, dc.addr, dd.addr, 0, 0), FP8_NAME)
    sa_n, sa_m, sa_k, sb_n, sb_nb, sb_k = (int(x) for x in re.findall(r"-?\d+", probe.extra))
    flat_a = np.zeros(sa_n, np.float32)
    m, kb = np.meshgrid(np.arange(M), np.arange(K // 128), indexing="ij")
    flat_a[m * sa_m + kb * sa_k] = sfa
    flat_b = np.zeros(sb_n, np.float32)
    nb, kb = np.meshgrid(np.arange(N // 128), np.arange(K // 128), indexing="ij")
    flat_b[nb * sb_nb + kb * sb_k] = sfb
    dsa, dsb = backend.to_device(flat_a), backend.to_device(flat_b)
    hp = host_params(M, N, K, (da.addr, db.addr, dc.addr, dd.addr, dsa.addr, dsb.addr), FP8_NAME)
    stats = _launch(backend, FP8_NAME, hp, **launch_options)
    return backend.to_host(dd), stats
