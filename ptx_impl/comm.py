"""Persistent dispatch / combine "all-to-all" kernels in hand-written PTX, for the SM-partition experiment (issue #9).

Same contract as cuda_impl/comm.py (see its docstring):

    dispatch:  for r < R:  recv[dst_slot[r]] = x[src_row[r]]                       (bf16 rows of H, bit-exact)
    combine:   for t < T:  out[t] = bf16_rn(sum_{k<K} w[t,k] * recv[slot[t,k]])      (fp32 accumulation, k in order)

launched with exactly `ctas` CTAs of BLOCK threads (persistent, warp per row; kernels/comm_dispatch.ptx and
kernels/comm_combine.ptx document the loops). The descriptor flag `loads` picks one of the two entries per file:

    "plain"        ld.global / st.global                                    (lines allocate in L1 and L2)
    "no_allocate"  ld.global.nc.L1::no_allocate.v4 / st.global.L1::no_allocate.v4   (DeepSeek-V3's custom PTX)

With "no_allocate" the inputs go through the non-coherent path: they must not change during the launch and must
not alias the output (x vs recv, recv vs out).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from contract.launch import TextKernel
from ptx_impl.descriptor import check_array, ptx_entry, require

BLOCK = 512  # threads per CTA (16 warps), as on the Numba path
MAX_CTAS = 132
VECTOR = 8  # bf16 per 16-byte chunk
LOADS = ("plain", "no_allocate")
OPS = ("dispatch", "combine")
_ENTRY_SUFFIX = {"plain": "plain", "no_allocate": "noalloc"}

DISPATCH = {
    loads: ptx_entry(
        file="comm_dispatch.ptx",
        entry=f"ptx_comm_dispatch_{suffix}",
        params=(("x", ".ptr"), ("src_row", ".ptr"), ("dst_slot", ".ptr"), ("recv", ".ptr"), ("rows", ".u32"),
                ("chunks_per_row", ".u32")),
    )
    for loads, suffix in _ENTRY_SUFFIX.items()
}
COMBINE = {
    loads: ptx_entry(
        file="comm_combine.ptx",
        entry=f"ptx_comm_combine_{suffix}",
        params=(("recv", ".ptr"), ("w", ".ptr"), ("slot", ".ptr"), ("out", ".ptr"), ("tokens", ".u32"),
                ("chunks_per_row", ".u32"), ("k", ".u32")),
    )
    for loads, suffix in _ENTRY_SUFFIX.items()
}
KERNELS = {"dispatch": DISPATCH, "combine": COMBINE}


def kernel_for(op: str, loads: str) -> TextKernel:
    """The descriptor of `op` ("dispatch" | "combine") with cache policy `loads` ("plain" | "no_allocate")."""
    require("comm", op in OPS, "op", op, f"one of {', '.join(OPS)}")
    require("comm", loads in LOADS, "loads", loads, f"one of {', '.join(LOADS)}")
    return KERNELS[op][loads]


def _check_ctas(ctas) -> int:
    require("comm", isinstance(ctas, (int, np.integer)) and not isinstance(ctas, bool) and 1 <= ctas <= MAX_CTAS,
            "ctas", ctas, f"an integer in 1..{MAX_CTAS} (the SMs given to communication)")
    return int(ctas)


def _h_of(kernel: str, args, name: str) -> int:
    require(kernel, name in args, "argument", name, f"one of the arguments ({', '.join(sorted(args))} given)")
    shape = tuple(args[name].shape)
    require(kernel, len(shape) == 2 and shape[1] > 0 and shape[1] % VECTOR == 0, f"{name}.shape", shape,
            f"[rows, H] with H a positive multiple of {VECTOR}")
    return shape[1]


def dispatch(backend, args, ctas: int, loads: str = "no_allocate", shared_bytes: int = 0, tag: str = ""):
    """recv[dst_slot[r]] = x[src_row[r]] with exactly `ctas` CTAs; returns the LaunchRecord.

    Args:
        backend: a harness Backend.
        args: DeviceArrays x bf16[T,H], src_row i32[R], dst_slot i32[R] (distinct), recv bf16[S,H].
        ctas: CTAs of the persistent launch (1..132).
        loads: "plain" or "no_allocate" (which entry of kernels/comm_dispatch.ptx).
        shared_bytes: dynamic shared memory per CTA (the gpu sweep reserves whole SMs with it; the kernel uses none).
    Raises:
        InputError: a missing argument, a wrong shape or dtype, ctas or loads out of range.
    """
    kernel = kernel_for("dispatch", loads)
    ctas = _check_ctas(ctas)
    H = _h_of("comm dispatch", args, "x")
    require("comm dispatch", "src_row" in args, "argument", "src_row", "present")
    R = int(args["src_row"].shape[0])
    require("comm dispatch", "recv" in args, "argument", "recv", "present")
    check_array("comm dispatch", args, "x", (args["x"].shape[0], H), ml_dtypes.bfloat16)
    check_array("comm dispatch", args, "src_row", (R,), np.int32)
    check_array("comm dispatch", args, "dst_slot", (R,), np.int32)
    check_array("comm dispatch", args, "recv", (args["recv"].shape[0], H), ml_dtypes.bfloat16)
    values = {"x": args["x"], "src_row": args["src_row"], "dst_slot": args["dst_slot"], "recv": args["recv"],
              "rows": R, "chunks_per_row": H // VECTOR}
    return kernel.launch(backend, (ctas, 1, 1), (BLOCK, 1, 1), values, shared_bytes, tag=tag or kernel.entry)


def combine(backend, args, ctas: int, loads: str = "no_allocate", shared_bytes: int = 0, tag: str = ""):
    """out[t] = bf16(sum_k w[t,k] * recv[slot[t,k]]) with exactly `ctas` CTAs; returns the LaunchRecord.

    Args:
        backend: a harness Backend.
        args: DeviceArrays recv bf16[S,H], w f32[T,K], slot i32[T,K], out bf16[T,H].
        ctas: CTAs of the persistent launch (1..132).
        loads: "plain" or "no_allocate" (which entry of kernels/comm_combine.ptx).
        shared_bytes: dynamic shared memory per CTA (SM reservation on the gpu sweep; unused by the kernel).
    Raises:
        InputError: a missing argument, a wrong shape or dtype, ctas or loads out of range.
    """
    kernel = kernel_for("combine", loads)
    ctas = _check_ctas(ctas)
    H = _h_of("comm combine", args, "recv")
    require("comm combine", "w" in args and len(args["w"].shape) == 2, "w", args.get("w"), "a [T, K] array")
    T, K = (int(d) for d in args["w"].shape)
    check_array("comm combine", args, "recv", (args["recv"].shape[0], H), ml_dtypes.bfloat16)
    check_array("comm combine", args, "w", (T, K), np.float32)
    check_array("comm combine", args, "slot", (T, K), np.int32)
    check_array("comm combine", args, "out", (T, H), ml_dtypes.bfloat16)
    values = {"recv": args["recv"], "w": args["w"], "slot": args["slot"], "out": args["out"], "tokens": T,
              "chunks_per_row": H // VECTOR, "k": K}
    return kernel.launch(backend, (ctas, 1, 1), (BLOCK, 1, 1), values, shared_bytes, tag=tag or kernel.entry)


def run(backend, args, preset=None, op: str = "dispatch", ctas: int = 20, loads: str = "no_allocate",
        shared_bytes: int = 0):
    """The implementation-module entry: [LaunchRecord] of one dispatch or combine launch."""
    require("comm", op in OPS, "op", op, f"one of {', '.join(OPS)}")
    launcher = dispatch if op == "dispatch" else combine
    return [launcher(backend, args, ctas, loads=loads, shared_bytes=shared_bytes)]
