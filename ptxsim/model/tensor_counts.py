"""Tensor-core work of one launch, counted from the decoded program and its per-pc warp-instruction counts.

`tensor_metrics(instrs, warp_counts)` returns counts (they scale with the launch like every other counter):

  ptxsim__mma_flops_16bit.sum      FLOPs of warp-level mma.sync / wmma.mma with 16-bit inputs (bf16, f16):
                                   2 x M x N x K per warp-instruction, by its shape (m16n8k8 is 2048, m16n8k16 4096,
                                   wmma m16n16k16 8192)
  ptxsim__mma_flops_8bit.sum       the same for 8-bit inputs (e4m3, e5m2; m16n8k32 = 8192)
  ptxsim__wgmma_flops_16bit.sum    FLOPs of wgmma.mma_async with 16-bit inputs: 2 x 64 x N x 16 per warpgroup
  ptxsim__wgmma_flops_8bit.sum     ... with 8-bit inputs: 2 x 64 x N x 32 per warpgroup
  ptxsim__wgmma_inst.sum           wgmma.mma_async per warpgroup (the simulator counts each of the 4 warps)
  ptxsim__wgmma_shared_bytes.sum   bytes the tensor cores read from shared memory for wgmma operands: B (N rows x 32
                                   bytes of K) always, A (64 x 32 bytes) when it comes from a descriptor (SS mode)
  ptxsim__wgmma_commit.sum         wgmma.commit_group per warpgroup
  ptxsim__wgmma_drain.sum          wgmma.wait_group 0 per warpgroup (the warpgroup waits for all its wgmma)
  ptxsim__wgmma_wait.sum           wgmma.wait_group N >= 1 per warpgroup (pipelined: N groups stay in flight)
  ptxsim__tensor_warp_inst.sum     warp-instructions of the "tensor" class as executed (the class counter
                                   ptxsim__inst_executed_tensor.sum counts m16n8k16-equivalent units instead)

The model reads decoded instructions duck-typed (op, mods, modlist, types, aux, klass), as stream.py does: ptxsim's
core is not imported here. A tensor-class instruction of a shape this table does not know is charged as m16n8k16.
"""
from __future__ import annotations

from collections.abc import Sequence

WARPGROUP_WARPS = 4
WGMMA_M = 64
WGMMA_K_BYTES = 32          # every wgmma shape reads 32 bytes of K per row (k16 x 2 B, k32 x 1 B)
EIGHT_BIT = frozenset({"e4m3", "e5m2", "s8", "u8"})
# mma.sync shapes: modifier -> (M, N, K)
MMA_SHAPES = {".m16n8k8": (16, 8, 8), ".m16n8k16": (16, 8, 16), ".m16n8k32": (16, 8, 32), ".m8n8k4": (8, 8, 4)}
WMMA_FLOPS = 2 * 16 * 16 * 16
DEFAULT_FLOPS = 2 * 16 * 8 * 16
KEYS = (
    "ptxsim__mma_flops_16bit.sum", "ptxsim__mma_flops_8bit.sum", "ptxsim__wgmma_flops_16bit.sum",
    "ptxsim__wgmma_flops_8bit.sum", "ptxsim__wgmma_inst.sum", "ptxsim__wgmma_shared_bytes.sum",
    "ptxsim__wgmma_commit.sum", "ptxsim__wgmma_drain.sum", "ptxsim__wgmma_wait.sum", "ptxsim__tensor_warp_inst.sum",
)


def _type_name(t) -> str:
    return getattr(t, "name", str(t))


def _wgmma(ins) -> dict[str, float]:
    """Per-warpgroup counters of one wgmma instruction (before multiplying by how often it ran)."""
    mods = ins.mods
    if ".mma_async" in mods:
        aux = ins.aux
        n, atype = int(aux.n), aux.atype
        width = "8bit" if atype in EIGHT_BIT else "16bit"
        k = WGMMA_K_BYTES if width == "8bit" else WGMMA_K_BYTES // 2
        shared = n * WGMMA_K_BYTES + (0 if aux.a_regs else WGMMA_M * WGMMA_K_BYTES)
        return {f"ptxsim__wgmma_flops_{width}.sum": 2.0 * WGMMA_M * n * k, "ptxsim__wgmma_inst.sum": 1.0,
                "ptxsim__wgmma_shared_bytes.sum": float(shared)}
    if ".commit_group" in mods:
        return {"ptxsim__wgmma_commit.sum": 1.0}
    if ".wait_group" in mods:
        return {"ptxsim__wgmma_drain.sum" if int(ins.aux.n or 0) == 0 else "ptxsim__wgmma_wait.sum": 1.0}
    return {}


def _warp_mma(ins) -> dict[str, float]:
    """Per-warp counters of one warp-level tensor instruction (mma.sync, wmma.mma, anything else "tensor")."""
    names = [_type_name(t) for t in ins.types]
    if ins.op == "mma":
        shape = next((m for m in ins.modlist if m in MMA_SHAPES), None)
        atype = names[1] if len(names) > 1 else "f16"
        flops = 2.0 * MMA_SHAPES[shape][0] * MMA_SHAPES[shape][1] * MMA_SHAPES[shape][2] if shape else DEFAULT_FLOPS
    elif ins.op == "wmma":
        atype = names[1] if len(names) == 4 else "f16"
        flops = float(WMMA_FLOPS)
    else:
        atype = names[1] if len(names) > 1 else "f16"
        flops = float(DEFAULT_FLOPS) * float(ins.aux.class_units or 1)
    width = "8bit" if atype in EIGHT_BIT else "16bit"
    return {f"ptxsim__mma_flops_{width}.sum": flops, "ptxsim__tensor_warp_inst.sum": 1.0}


def tensor_metrics(instrs: Sequence, warp_counts) -> dict[str, float]:
    """Tensor work of one launch (see the module docstring); {} when the program has no tensor instruction."""
    out: dict[str, float] = {}
    for ins in instrs:
        is_wgmma = ins.op == "wgmma"
        if not is_wgmma and ins.klass != "tensor":
            continue
        count = float(warp_counts[ins.pc]) if ins.pc < len(warp_counts) else 0.0
        if is_wgmma:
            per = _wgmma(ins)
            count /= WARPGROUP_WARPS
            if ins.klass == "tensor":
                per["ptxsim__tensor_warp_inst.sum"] = float(WARPGROUP_WARPS)
        else:
            per = _warp_mma(ins)
        for key, value in per.items():
            out[key] = out.get(key, 0.0) + value * count
    if out:
        for key in KEYS:
            out.setdefault(key, 0.0)
    return out
