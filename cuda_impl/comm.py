"""Persistent dispatch / combine "all-to-all" kernels in Numba CUDA, for the SM-partition experiment (issue #9).

DeepSeek-V3 gives 20 of the H800's 132 SMs to the all-to-all while the others compute. On one GPU the peers'
memory is stood in for by a receive buffer in device memory, so both kernels are row moves by an index map:

    dispatch:  for r < R:  recv[dst_slot[r]] = x[src_row[r]]                       (bf16 rows of H, bit-exact)
    combine:   for t < T:  out[t] = bf16_rn(sum_{k<K} w[t,k] * recv[slot[t,k]])      (fp32 accumulation, k in order)

Arguments (DeviceArrays, C-contiguous): dispatch x bf16[T,H], src_row i32[R], dst_slot i32[R] (distinct values,
each < S), recv bf16[S,H] (rows no dst_slot names stay untouched); combine recv bf16[S,H], w f32[T,K], slot i32[T,K]
(each < S), out bf16[T,H]. H must be a multiple of 8 (the PTX twins move 16-byte chunks; the same rule here keeps the
two paths interchangeable).

Both kernels are *persistent*: the launch has exactly `ctas` CTAs (one per SM the communication is given) of
BLOCK threads, and warp w of CTA b walks rows b*W + w, b*W + w + ctas*W, ... (W = BLOCK/32). Lane l moves 8-byte
words l, l+32, ... of a row (Numba has no 16-byte vector loads; ptx_impl/comm.py moves 16 bytes per lane and can
choose the cache policy: ld.global.nc.L1::no_allocate, which Numba cannot express).
"""
from __future__ import annotations

from numba import cuda, float32, types

from cuda_impl.common import check_shape, require, view
from cuda_impl.prims import bf16_hi, bf16_lo, pack_bf16x2

BLOCK = 512  # threads per CTA: 16 warps, one row per warp at a time
MAX_CTAS = 132  # the whole H100/H200/H800: the partition experiment never gives communication more SMs
OPS = ("dispatch", "combine")

DISPATCH_SIGNATURE = (types.uint64[:, ::1], types.int32[::1], types.int32[::1], types.uint64[:, ::1])
COMBINE_SIGNATURE = (types.uint32[:, ::1], types.float32[:, ::1], types.int32[:, ::1], types.uint32[:, ::1])


def comm_dispatch(x, src_row, dst_slot, recv):
    """recv[dst_slot[r]] = x[src_row[r]], rows as uint64 words; persistent warp-per-row loop."""
    lane = cuda.threadIdx.x % 32
    warps = cuda.blockDim.x // 32
    r = cuda.blockIdx.x * warps + cuda.threadIdx.x // 32
    stride = cuda.gridDim.x * warps
    rows = src_row.shape[0]
    width = x.shape[1]
    while r < rows:
        s = src_row[r]
        d = dst_slot[r]
        c = lane
        while c < width:
            recv[d, c] = x[s, c]
            c += 32
        r += stride


def comm_combine(recv, w, slot, out):
    """out[t] = bf16(sum_k w[t,k] * recv[slot[t,k]]), rows as uint32 bf16 pairs; persistent warp-per-token loop."""
    lane = cuda.threadIdx.x % 32
    warps = cuda.blockDim.x // 32
    t = cuda.blockIdx.x * warps + cuda.threadIdx.x // 32
    stride = cuda.gridDim.x * warps
    tokens = w.shape[0]
    k_count = w.shape[1]
    width = out.shape[1]
    while t < tokens:
        c = lane
        while c < width:
            lo = float32(0.0)
            hi = float32(0.0)
            for k in range(k_count):
                wk = w[t, k]
                v = recv[slot[t, k], c]
                lo += wk * bf16_lo(v)
                hi += wk * bf16_hi(v)
            out[t, c] = pack_bf16x2(lo, hi)
            c += 32
        t += stride


def _check_ctas(ctas) -> int:
    require("comm", isinstance(ctas, int) and not isinstance(ctas, bool) and 1 <= ctas <= MAX_CTAS,
            f"ctas = {ctas!r}; expected an integer in 1..{MAX_CTAS} (the SMs given to communication)")
    return int(ctas)


def _arg(kernel: str, args: dict, name: str):
    require(kernel, name in args, f"argument {name!r} missing; got {sorted(args)}")
    return args[name]


def _check_h(kernel: str, arr, name: str) -> int:
    require(kernel, len(arr.shape) == 2 and arr.shape[1] > 0 and arr.shape[1] % 8 == 0,
            f"{name} has shape {tuple(arr.shape)}; expected [rows, H] with H a positive multiple of 8")
    return int(arr.shape[1])


def dispatch(backend, args: dict, ctas: int, shared_bytes: int = 0, tag: str = ""):
    """Launch the dispatch row move with exactly `ctas` CTAs; returns its LaunchRecord.

    Args:
        backend: a harness Backend.
        args: DeviceArrays x bf16[T,H], src_row i32[R], dst_slot i32[R], recv bf16[S,H] (see the module docstring).
        ctas: CTAs of the persistent launch (1..132).
        shared_bytes: dynamic shared memory per CTA (the gpu sweep reserves whole SMs with it; the kernel uses none).
    Raises:
        InputError: a missing argument, a shape that does not match, or ctas out of range.
    """
    ctas = _check_ctas(ctas)
    kernel = "comm dispatch"
    H = _check_h(kernel, _arg(kernel, args, "x"), "x")
    R = _arg(kernel, args, "src_row").shape[0]
    check_shape(kernel, args, "src_row", (R,))
    check_shape(kernel, args, "dst_slot", (R,))
    check_shape(kernel, args, "recv", (_arg(kernel, args, "recv").shape[0], H))
    x = view(args["x"], "u8", "comm dispatch", "x")
    recv = view(args["recv"], "u8", "comm dispatch", "recv")
    return backend.launch_numba(comm_dispatch, DISPATCH_SIGNATURE, (ctas, 1, 1), (BLOCK, 1, 1),
                                [x, args["src_row"], args["dst_slot"], recv], shared_bytes=shared_bytes,
                                tag=tag or "cuda_comm_dispatch")


def combine(backend, args: dict, ctas: int, shared_bytes: int = 0, tag: str = ""):
    """Launch the weighted combine with exactly `ctas` CTAs; returns its LaunchRecord.

    Args:
        backend: a harness Backend.
        args: DeviceArrays recv bf16[S,H], w f32[T,K], slot i32[T,K], out bf16[T,H].
        ctas: CTAs of the persistent launch (1..132).
        shared_bytes: dynamic shared memory per CTA (SM reservation on the gpu sweep; unused by the kernel).
    Raises:
        InputError: a missing argument, a shape that does not match, or ctas out of range.
    """
    ctas = _check_ctas(ctas)
    kernel = "comm combine"
    H = _check_h(kernel, _arg(kernel, args, "recv"), "recv")
    w = _arg(kernel, args, "w")
    require(kernel, len(w.shape) == 2, f"w has shape {tuple(w.shape)}; expected [T, K]")
    T, K = w.shape
    check_shape(kernel, args, "slot", (T, K))
    check_shape(kernel, args, "out", (T, H))
    recv = view(args["recv"], "u4", "comm combine", "recv")
    out = view(args["out"], "u4", "comm combine", "out")
    return backend.launch_numba(comm_combine, COMBINE_SIGNATURE, (ctas, 1, 1), (BLOCK, 1, 1),
                                [recv, args["w"], args["slot"], out], shared_bytes=shared_bytes,
                                tag=tag or "cuda_comm_combine")


def run(backend, args: dict, preset=None, op: str = "dispatch", ctas: int = 20, shared_bytes: int = 0):
    """The implementation-module entry: `op` is "dispatch" or "combine"; returns [LaunchRecord]."""
    require("comm", op in OPS, f"op = {op!r}; expected one of {', '.join(OPS)}")
    launcher = dispatch if op == "dispatch" else combine
    return [launcher(backend, args, ctas, shared_bytes=shared_bytes)]
