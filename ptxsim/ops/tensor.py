"""Tensor-core ops per warp: mma.sync m16n8k16 / m16n8k8 (bf16, f16 -> f32 or f16) and m16n8k32 (e4m3/e5m2),
ldmatrix / stmatrix m8n8 x1/x2/x4 (.trans). Fragment layouts follow the PTX ISA (see docs/ptx-notes.md)."""
from __future__ import annotations

import numpy as np

from ptxsim import access
from ptxsim import numerics as nm
from ptxsim.errors import PtxSimError
from ptxsim.ops import spec
from ptxsim.ops.common import unsupported
from ptxsim.program import VEC
from ptxsim.ptxtypes import TYPES

U32 = TYPES["u32"]
_L = np.arange(32)
_G, _T = _L >> 2, _L & 3


def _warps(st, ins, lanes):
    la = st.lane_array(lanes)
    if len(la) % 32 or np.any(la.reshape(-1, 32) != (la.reshape(-1, 32)[:, :1] + _L)) or np.any(la[::32] & 31):
        lane = int(la[0])
        cta, tid = st.where(lane)
        raise PtxSimError(f"{ins.op} at PTX line {ins.line} in kernel {st.prog.name} needs all 32 lanes of each warp "
                          f"converged; CTA {cta} thread {tid}'s warp has {int(np.sum((la >> 5) == (lane >> 5)))}")
    return la.reshape(-1, 32)


def _regs(st, op, la2):
    items = op.items if op.kind == VEC else (op,)
    return [st.regs[o.idx][la2].astype(np.uint32) if o.kind == 0 else np.full(la2.shape, np.uint32(o.value))
            for o in items]


def _elems(regs, kind, per):
    """Split [W,32] b32 registers into element values (f64) [W, 32, nregs*per], element i = reg i//per."""
    out = []
    for r in regs:
        for k in range(per):
            bits = (r >> np.uint32(k * (32 // per))) & np.uint32((1 << (32 // per)) - 1)
            if kind in ("bf16", "f16"):
                out.append(nm.half_bits_to_f32(bits, kind).astype(np.float64))
            else:
                out.append(nm.fp8_bits_to_f32(bits, kind).astype(np.float64))
    return np.stack(out, axis=-1)


def _layout(shape, kind):
    """(rowsA, colsA, rowsB, colsB) index arrays [32, nelem] for the fragments of one shape."""
    i16 = np.arange(8)
    if shape == "m16n8k16":
        ia = i16
        ra = _G[:, None] + 8 * ((ia[None, :] >> 1) & 1)
        ca = 2 * _T[:, None] + (ia[None, :] & 1) + 8 * (ia[None, :] >= 4)
        ib = np.arange(4)
        rb = 2 * _T[:, None] + (ib[None, :] & 1) + 8 * (ib[None, :] >= 2)
        cb = np.broadcast_to(_G[:, None], rb.shape)
        return ra, ca, rb, cb, 16
    if shape == "m16n8k8":
        ia = np.arange(4)
        ra = _G[:, None] + 8 * (ia[None, :] >= 2)
        ca = 2 * _T[:, None] + (ia[None, :] & 1)
        ib = np.arange(2)
        rb = 2 * _T[:, None] + ib[None, :]
        cb = np.broadcast_to(_G[:, None], rb.shape)
        return ra, ca, rb, cb, 8
    if shape == "m16n8k32":
        ia = np.arange(16)
        ra = _G[:, None] + 8 * ((ia[None, :] >> 2) & 1)
        ca = 4 * _T[:, None] + (ia[None, :] & 3) + 16 * (ia[None, :] >= 8)
        ib = np.arange(8)
        rb = 4 * _T[:, None] + (ib[None, :] & 3) + 16 * (ib[None, :] >= 4)
        cb = np.broadcast_to(_G[:, None], rb.shape)
        return ra, ca, rb, cb, 32
    raise ValueError(shape)


_IC = np.arange(4)
_RC = _G[:, None] + 8 * (_IC[None, :] >= 2)
_CC = 2 * _T[:, None] + (_IC[None, :] & 1)


def mma(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    w = la2.shape[0]
    dt, at, bt, ct = ins.types
    kind = at.name if at.name in ("bf16", "f16") else at.name
    per = 2 if kind in ("bf16", "f16") else 4
    ra, ca, rb, cb, k = ins.aux["layout"]
    A = np.zeros((w, 16, k))
    B = np.zeros((w, k, 8))
    ea = _elems(_regs(st, ins.ops[1], la2), kind, per)
    eb = _elems(_regs(st, ins.ops[2], la2), kind if bt.name == at.name else bt.name, per)
    wi = np.arange(w)[:, None, None]
    A[wi, ra[None], ca[None]] = ea
    B[wi, rb[None], cb[None]] = eb
    C = np.zeros((w, 16, 8))
    if ct.name == "f32":
        cr = _regs(st, ins.ops[3], la2)
        C[wi, _RC[None], _CC[None]] = np.stack([r.view(np.float32).astype(np.float64) for r in cr], axis=-1)
    else:  # f16 accumulators: two f16x2 registers
        C[wi, _RC[None], _CC[None]] = _elems(_regs(st, ins.ops[3], la2), "f16", 2)
    D = np.matmul(A, B) + C
    vals = D[wi, _RC[None], _CC[None]]  # [W, 32, 4]
    dregs = ins.ops[0].items
    flat = la2.reshape(-1)  # all inputs are read: now the outputs may overwrite them
    if dt.name == "f32":
        outs = [vals[..., i].astype(np.float32).view(np.uint32).reshape(-1) for i in range(4)]
    else:
        h = vals.astype(np.float16).view(np.uint16).astype(np.uint32)
        outs = [(h[..., 2 * i] | (h[..., 2 * i + 1] << np.uint32(16))).reshape(-1) for i in range(2)]
    for i, d in enumerate(dregs):
        st.regs[d.idx][flat] = outs[i]


def _prep_mma(ins, dec, ctx):
    shape = next((m for m in ins.modlist if m.startswith(".m")), None)
    if shape not in (".m16n8k16", ".m16n8k8", ".m16n8k32") or ".row" not in ins.mods or ".col" not in ins.mods:
        raise unsupported(ins, "only mma.sync.aligned.{m16n8k16,m16n8k8,m16n8k32}.row.col are supported")
    if len(ins.types) != 4:
        raise unsupported(ins, "expected .dtype.atype.btype.ctype")
    dt, at, bt, ct = ins.types
    ok_ab = {".m16n8k16": ("bf16", "f16"), ".m16n8k8": ("bf16", "f16"), ".m16n8k32": ("e4m3", "e5m2")}[shape]
    if at.name not in ok_ab or bt.name not in ok_ab or dt.name not in ("f32", "f16") or ct.name != dt.name:
        raise unsupported(ins, f"type combination .{dt.name}.{at.name}.{bt.name}.{ct.name} for {shape[1:]}")
    if at.name in ("bf16",) and dt.name != "f32":
        raise unsupported(ins, "bf16 inputs accumulate in f32 only")
    _check_fragments(ins, _FRAGS[shape] + ((4, 4) if dt.name == "f32" else (2, 2)))
    ins.aux["layout"] = _layout(shape[1:], at.name)
    ins.klass = "tensor"


_FRAGS = {".m16n8k16": (4, 2), ".m16n8k8": (2, 1), ".m16n8k32": (4, 2)}  # b32 registers of A, B per thread


def _check_fragments(ins, counts):
    """Each of d, a, b, c must be a vector of `count` 32-bit registers (c may hold immediates)."""
    if len(ins.ops) != 4:
        raise unsupported(ins, f"takes d, a, b, c; got {len(ins.ops)} operand(s)")
    for name, op, n in zip("dabc", ins.ops, (counts[2], counts[0], counts[1], counts[3])):
        items = op.items if op.kind == VEC else (op,)
        if len(items) != n:
            raise unsupported(ins, f"fragment {name} needs {n} register(s), got {len(items)}")
        bad = [o for o in items if not (o.kind == 0 and o.bits == 32) and not (name == "c" and o.kind == 1)]
        if bad:
            raise unsupported(ins, f"fragment {name} needs 32-bit registers, got {bad[0]!r}")


# -- ldmatrix / stmatrix ----------------------------------------------------------------------------------------
def _nmat(ins):
    return {".x1": 1, ".x2": 2, ".x4": 4}[ins.aux["x"]]


def ldmatrix(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    q = _nmat(ins)
    addr = st.address(ins.ops[1], la2.reshape(-1)).reshape(la2.shape)
    rows_from = la2[:, : 8 * q].reshape(-1)  # lanes 8i..8i+7 give the rows of matrix i
    raddr = addr[:, : 8 * q].reshape(-1)
    vals = access.load(st, ins, "shared" if ins.space else "", raddr, rows_from, np.uint16, 8)
    M = vals.reshape(la2.shape[0], q, 8, 8)  # [W, matrix, row, col]
    if ins.aux["trans"]:
        M = np.swapaxes(M, 2, 3)
    lo = M[:, :, _G, 2 * _T]  # [W, q, 32]
    hi = M[:, :, _G, 2 * _T + 1]
    flat = la2.reshape(-1)
    for i, d in enumerate(ins.ops[0].items if ins.ops[0].kind == VEC else (ins.ops[0],)):
        st.regs[d.idx][flat] = (lo[:, i].astype(np.uint32) | (hi[:, i].astype(np.uint32) << np.uint32(16))).reshape(-1)


def stmatrix(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    q = _nmat(ins)
    w = la2.shape[0]
    addr = st.address(ins.ops[0], la2.reshape(-1)).reshape(la2.shape)
    M = np.zeros((w, q, 8, 8), np.uint16)
    for i, s in enumerate(ins.ops[1].items if ins.ops[1].kind == VEC else (ins.ops[1],)):
        r = st.regs[s.idx][la2].astype(np.uint32)
        M[:, i, _G, 2 * _T] = (r & np.uint32(0xFFFF)).astype(np.uint16)
        M[:, i, _G, 2 * _T + 1] = (r >> np.uint32(16)).astype(np.uint16)
    if ins.aux["trans"]:
        M = np.swapaxes(M, 2, 3)
    rows_from = la2[:, : 8 * q].reshape(-1)
    raddr = addr[:, : 8 * q].reshape(-1)
    access.store(st, ins, "shared" if ins.space else "", raddr, rows_from, M.reshape(-1, 8), np.uint16, 8)


def _prep_ldm(ins, dec, ctx):
    if ".m8n8" not in ins.mods:
        raise unsupported(ins, "only .m8n8 ldmatrix/stmatrix shapes are supported")
    x = [m for m in ins.modlist if m in (".x1", ".x2", ".x4")]
    if len(x) != 1 or not ins.types or ins.types[0].name != "b16":
        raise unsupported(ins, "expected .x1/.x2/.x4 and .b16")
    ins.aux["x"] = x[0]
    ins.aux["trans"] = ".trans" in ins.mods
    regs = ins.ops[0 if ins.op == "ldmatrix" else 1]
    n = len(regs.items) if regs.kind == VEC else 1
    if n != {".x1": 1, ".x2": 2, ".x4": 4}[x[0]]:
        raise unsupported(ins, f"{x[0]} needs {x[0][2]} register(s), got {n}")
    ins.klass = "ld_shared" if ins.op == "ldmatrix" else "st_shared"


_LDM = (".sync", ".aligned", ".m8n8", ".x1", ".x2", ".x4", ".trans", ".shared", ".shared::cta")
OPS = {
    "mma": spec(mma, "tensor", (".sync", ".aligned", ".m16n8k16", ".m16n8k8", ".m16n8k32", ".row", ".col"),
                _prep_mma),
    "ldmatrix": spec(ldmatrix, "ld_shared", _LDM, _prep_ldm),
    "stmatrix": spec(stmatrix, "st_shared", _LDM, _prep_ldm),
}
