"""Tensor-core ops per warp: mma.sync m16n8k16 / m16n8k8 (bf16, f16 -> f32 or f16) and m16n8k32 (e4m3/e5m2),
ldmatrix / stmatrix m8n8 x1/x2/x4 (.trans), and wmma m16n16k16 (load.a/b/c, mma, store.d; bf16 / f16 inputs, f32 /
f16 accumulators, row / col layouts, any state space). mma fragment layouts follow the PTX ISA (docs/ptx-notes.md);
wmma's are opaque in the ISA, see `WmmaFrag`.
A wmma.mma counts as two tensor-class instructions (two m16n8k16 MMAs, as in SASS)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim import access
from ptxsim import numerics as nm
from ptxsim.errors import DecodeError, MemoryFault, PtxSimError
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import ADDR, IMM, REG, VEC
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


def _lane_index(la2: np.ndarray):
    """la2's lanes as a slice when they are one contiguous run (every warp of the batch active, the usual case: a
    view instead of a gather), else the flat lane array."""
    lo, hi = int(la2[0, 0]), int(la2[-1, -1]) + 1
    return slice(lo, hi) if hi - lo == la2.size else la2.reshape(-1)


def _regs(st, op, la2):
    """[W, 32] uint32 values of each register of `op` (read-only: may be views of the register file)."""
    items = op.items if op.kind == VEC else (op,)
    index = _lane_index(la2)
    return [st.regs[o.idx][index].reshape(la2.shape).astype(np.uint32, copy=False) if o.kind == REG
            else np.full(la2.shape, np.uint32(o.value)) for o in items]


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


def _gather(rows, cols, width: int, per_lane: int) -> np.ndarray:
    """Flat index into a warp's [32 x per_lane] fragment elements for each element of a row-major matrix
    (`width` columns) whose element (rows[l, i], cols[l, i]) lane l holds as its i-th: a fragment is a permutation of
    the matrix, so one gather builds the matrix (no zero fill and scatter per call)."""
    index = np.full(int(rows.max() + 1) * width, -1, np.int64)
    index[(rows * width + cols).reshape(-1)] = (_L[:, None] * per_lane + np.arange(per_lane)[None, :]).reshape(-1)
    if np.any(index < 0):
        raise ValueError("fragment layout does not cover its matrix")
    return index


_ACC_OUT = (_RC * 8 + _CC).reshape(-1)  # D element of each (lane, i) of the accumulator fragment, lane-major
_ACC_GATHER = _gather(_RC, _CC, 8, 4)
_FP8_TABLES: dict[str, np.ndarray] = {}


def _element_bits(regs: list[np.ndarray], kind: str) -> np.ndarray:
    """[W, 32 * nregs * per] raw elements of packed b32 registers, lane-major (element i of a lane = register
    i // per, lowest bits first): a little-endian byte view of the registers is the elements in that order."""
    packed = np.stack(regs, axis=-1).astype("<u4", copy=False)
    return packed.view("<u2" if kind in ("bf16", "f16") else np.uint8).reshape(packed.shape[0], -1)


def _bits_to_f64(bits: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if kind == "f16":
        return bits.view(np.float16).astype(np.float64)
    table = _FP8_TABLES.get(kind)
    if table is None:
        table = _FP8_TABLES[kind] = nm.fp8_bits_to_f32(np.arange(256, dtype=np.uint8), kind).astype(np.float64)
    return table[bits]


def _matrix(regs: list[np.ndarray], kind: str, gather: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """[W, rows, cols] f64 matrix of a warp fragment: its elements gathered into place, then widened (gathering the
    2- or 1-byte codes first moves a quarter of the bytes)."""
    bits = np.take(_element_bits(regs, kind), gather, axis=1)
    return _bits_to_f64(bits, kind).reshape(bits.shape[0], *shape)


def mma(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    w = la2.shape[0]
    dt, at, bt, ct = ins.types
    kind = at.name
    gather_a, gather_b, k = ins.aux.gather
    A = _matrix(_regs(st, ins.ops[1], la2), kind, gather_a, (16, k))
    B = _matrix(_regs(st, ins.ops[2], la2), bt.name, gather_b, (k, 8))
    if ct.name == "f32":
        acc = np.take(np.stack(_regs(st, ins.ops[3], la2), axis=-1).reshape(w, -1), _ACC_GATHER, axis=1)
        C = acc.view(np.float32).astype(np.float64).reshape(w, 16, 8)
    else:  # f16 accumulators: two f16x2 registers
        C = _matrix(_regs(st, ins.ops[3], la2), "f16", _ACC_GATHER, (16, 8))
    D = np.matmul(A, B) + C
    vals = np.take(D.reshape(w, -1), _ACC_OUT, axis=1).reshape(w, 32, 4)
    dregs = ins.ops[0].items
    flat = _lane_index(la2)  # all inputs are read: now the outputs may overwrite them
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
    ra, ca, rb, cb, k = _layout(shape[1:], at.name)
    ins.aux.gather = (_gather(ra, ca, k, ra.shape[1]), _gather(rb, cb, 8, rb.shape[1]), k)
    ins.klass = "tensor"


_FRAGS = {".m16n8k16": (4, 2), ".m16n8k8": (2, 1), ".m16n8k32": (4, 2)}  # b32 registers of A, B per thread


def _check_fragments(ins, counts):
    """Each of d, a, b, c must be a vector of `count` 32-bit registers (c may hold immediates)."""
    if len(ins.ops) != 4:
        raise unsupported(ins, f"takes d, a, b, c; got {len(ins.ops)} operand(s)")
    for name, op, n in zip("dabc", ins.ops, (counts[2], counts[0], counts[1], counts[3]), strict=True):
        items = op.items if op.kind == VEC else (op,)
        if len(items) != n:
            raise unsupported(ins, f"fragment {name} needs {n} register(s), got {len(items)}")
        bad = [o for o in items if not (o.kind == REG and o.bits == 32) and not (name == "c" and o.kind == IMM)]
        if bad:
            raise unsupported(ins, f"fragment {name} needs 32-bit registers, got {bad[0]!r}")


# -- ldmatrix / stmatrix ----------------------------------------------------------------------------------------
def _nmat(ins):
    return {".x1": 1, ".x2": 2, ".x4": 4}[ins.aux.x]


def ldmatrix(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    q = _nmat(ins)
    addr = st.address(ins.ops[1], la2.reshape(-1)).reshape(la2.shape)
    rows_from = la2[:, : 8 * q].reshape(-1)  # lanes 8i..8i+7 give the rows of matrix i
    raddr = addr[:, : 8 * q].reshape(-1)
    space = "shared" if ins.space else ""
    flat = _lane_index(la2)
    dregs = ins.ops[0].items if ins.ops[0].kind == VEC else (ins.ops[0],)
    if not ins.aux.trans:
        # NOTE: lane 4g + t gets the b32 pair (row g, columns 2t, 2t + 1) of each matrix: the rows read as four words
        # are every lane's register in lane order (rows are 16-byte aligned, which access.check enforces)
        words = access.load(st, ins, space, raddr, rows_from, np.uint32, 4).reshape(la2.shape[0], q, 32)
        for i, d in enumerate(dregs):
            st.regs[d.idx][flat] = words[:, i].reshape(-1)
        return
    vals = access.load(st, ins, space, raddr, rows_from, np.uint16, 8)
    M = np.swapaxes(vals.reshape(la2.shape[0], q, 8, 8), 2, 3)  # [W, matrix, row, col] of the transposed matrices
    lo = M[:, :, _G, 2 * _T]  # [W, q, 32]
    hi = M[:, :, _G, 2 * _T + 1]
    for i, d in enumerate(dregs):
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
    if ins.aux.trans:
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
    ins.aux.x = x[0]
    ins.aux.trans = ".trans" in ins.mods
    regs = ins.ops[0 if ins.op == "ldmatrix" else 1]
    n = len(regs.items) if regs.kind == VEC else 1
    if n != {".x1": 1, ".x2": 2, ".x4": 4}[x[0]]:
        raise unsupported(ins, f"{x[0]} needs {x[0][2]} register(s), got {n}")
    ins.klass = "ld_shared" if ins.op == "ldmatrix" else "st_shared"


# -- wmma m16n16k16 ----------------------------------------------------------------------------------------------
# NOTE: the PTX ISA leaves which lane holds which element of a wmma fragment unspecified (programs may only pass
# fragments between wmma instructions). ptxsim uses the mapping sm_80+ hardware uses for m16n16k16, two m16n8k16
# mma.sync halves side by side: element i of lane (g = lane / 4, t = lane % 4) is, for A (m, k) and C / D (m, n),
# (g + 8 * (i / 2 % 2), 2t + i % 2 + 8 * (i / 4)); for B (k, n), (2t + i % 2 + 8 * (i / 2 % 2), g + 8 * (i / 4)).
# f16 A / B fragments are 8 registers (16 elements): registers 4-7 repeat 0-3, and mma reads 0-3.
_WI = np.arange(8)
_WMMA_POS = {
    "ac": (_G[:, None] + 8 * ((_WI >> 1) & 1), 2 * _T[:, None] + (_WI & 1) + 8 * (_WI >> 2)),
    "b": (2 * _T[:, None] + (_WI & 1) + 8 * ((_WI >> 1) & 1), _G[:, None] + 8 * (_WI >> 2)),
}
_WMMA_FLAT = {kind: (r * 16 + c).reshape(-1) for kind, (r, c) in _WMMA_POS.items()}
_WMMA_INV = {kind: np.argsort(f) for kind, f in _WMMA_FLAT.items()}
WMMA_ALIGN = 32  # bytes: a fragment's base address is 256-bit aligned
WMMA_STRIDE_BYTES = 16  # the stride (leading dimension) is a multiple of 16 bytes

# (matrix, element type) -> (registers, elements per register) of one m16n16k16 fragment (PTX ISA, wmma.load)
WMMA_FRAGS = {
    ("a", "bf16"): (4, 2), ("b", "bf16"): (4, 2), ("a", "f16"): (8, 2), ("b", "f16"): (8, 2),
    ("c", "f32"): (8, 1), ("c", "f16"): (4, 2), ("d", "f32"): (8, 1), ("d", "f16"): (4, 2),
}


@dataclass(frozen=True)
class WmmaFrag:
    """One m16n16k16 fragment operand: which matrix, its element type, its register count and memory layout."""

    matrix: str  # a, b, c or d
    etype: str  # bf16, f16 or f32
    nregs: int
    per_reg: int  # elements per 32-bit register
    layout: str = "row"  # row or col (how the 16 x 16 tile lies in memory; loads and stores only)

    @property
    def esize(self) -> int:
        return 4 if self.etype == "f32" else 2

    @property
    def positions(self):
        """(rows, cols) [32 lanes, 8 elements] of the matrix elements each lane holds."""
        return _WMMA_POS["b" if self.matrix == "b" else "ac"]

    @property
    def scatter(self) -> np.ndarray:
        """[256]: row-major matrix index of (lane, element) number lane * 8 + element."""
        return _WMMA_FLAT["b" if self.matrix == "b" else "ac"]

    @property
    def gather(self) -> np.ndarray:
        """[256]: (lane, element) number holding each row-major matrix index (the inverse of `scatter`)."""
        return _WMMA_INV["b" if self.matrix == "b" else "ac"]


def _wmma_frag(ins, matrix: str, etype: str, layout: str = "row") -> WmmaFrag:
    if (matrix, etype) not in WMMA_FRAGS:
        raise unsupported(ins, f"wmma fragment {matrix} of type .{etype} (m16n16k16 takes a/b in .bf16 or .f16, "
                               f"c/d in .f32 or .f16)")
    return WmmaFrag(matrix, etype, *WMMA_FRAGS[(matrix, etype)], layout)


def _wmma_bits(regs, frag: WmmaFrag) -> np.ndarray:
    """[.., 32] registers of one fragment -> [.., 32, 8] element bit patterns (uint32)."""
    if frag.per_reg == 1:
        return np.stack(regs[:8], axis=-1)
    halves = [(r >> np.uint32(16 * k)) & np.uint32(0xFFFF) for r in regs[:4] for k in (0, 1)]
    return np.stack(halves, axis=-1)


def _wmma_regs(bits: np.ndarray, frag: WmmaFrag) -> list:
    """[.., 8] element bit patterns -> the fragment's registers (f16 A / B: registers 4-7 repeat 0-3)."""
    if frag.per_reg == 1:
        return [bits[..., i] for i in range(8)]
    regs = [bits[..., 2 * r] | (bits[..., 2 * r + 1] << np.uint32(16)) for r in range(4)]
    return regs + regs if frag.nregs == 8 else regs


def _wmma_values(bits: np.ndarray, etype: str) -> np.ndarray:
    if etype == "f32":
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return nm.half_bits_to_f32(bits, etype).astype(np.float64)


def _wmma_accesses(st, ins, la2, frag: WmmaFrag, addr_op, stride_op) -> list:
    """The memory accesses of one fragment per lane: [(element slice, elements n, byte address [W * 32])], element
    pairs that lie next to each other in memory as one access. Checks the base alignment and the stride."""
    from ptxsim.ops.memory import _addr

    flat = la2.reshape(-1)
    base = _addr(st, ins, flat, addr_op).astype(np.uint64)
    if stride_op is None:
        stride = np.full(flat.size, 16, np.int64)  # default: the tile's own width (16 elements)
    else:
        stride = np.broadcast_to(np.asarray(st.read(stride_op, flat, U32)).astype(np.int64), flat.shape)
    bad = np.flatnonzero((stride * frag.esize) % WMMA_STRIDE_BYTES != 0)
    if bad.size:
        cta, tid = st.where(int(flat[bad[0]]))
        raise PtxSimError(f"wmma stride {int(stride[bad[0]])} at PTX line {ins.line} (`{ins.text}`) in kernel "
                          f"{st.prog.name}, CTA {cta} thread {tid}: expected a multiple of "
                          f"{WMMA_STRIDE_BYTES // frag.esize} .{frag.etype} elements ({WMMA_STRIDE_BYTES} bytes)")
    mis = np.flatnonzero(base % np.uint64(WMMA_ALIGN) != 0)
    if mis.size:
        space = ins.space or "generic"
        cta, tid = st.where(int(flat[mis[0]]))
        raise MemoryFault(f"misaligned wmma.{ins.aux.action}.{frag.matrix} base of a 16x16 .{frag.etype} tile in "
                          f"kernel {st.prog.name} at PTX line {ins.line} (`{ins.text}`), CTA {cta} thread {tid}: "
                          f"{space} address {int(base[mis[0]]):#x}; expected {WMMA_ALIGN}-byte alignment",
                          space=space, addr=int(base[mis[0]]), size=256 * frag.esize, line=ins.line,
                          kernel=st.prog.name)
    rows, cols = frag.positions
    # NOTE: the stride is almost always uniform: element offsets are then one [32, 8] table for every warp
    s = int(stride[0]) if np.all(stride == stride[0]) else stride.reshape(la2.shape)[..., None]
    off = rows * s + cols if frag.layout == "row" else cols * s + rows  # elements, [32, 8] or [W, 32, 8]
    bases = base.reshape(la2.shape)
    if off.ndim == 2:
        off = np.broadcast_to(off, la2.shape + (8,))
    pairs = bool(np.all(off[..., 1::2] == off[..., 0::2] + 1))
    groups = [(slice(2 * p, 2 * p + 2), 2) for p in range(4)] if pairs else [(slice(i, i + 1), 1) for i in range(8)]
    return [(sel, n, (bases + (off[..., sel.start] * frag.esize).astype(np.uint64)).reshape(-1)) for sel, n in groups]


def wmma_load(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    frag: WmmaFrag = ins.aux.frag
    flat = la2.reshape(-1)
    accesses = _wmma_accesses(st, ins, la2, frag, ins.ops[1], ins.ops[2] if len(ins.ops) > 2 else None)
    dtype = np.uint32 if frag.esize == 4 else np.uint16
    bits = np.zeros(la2.shape + (8,), np.uint32)
    for sel, n, addr in accesses:
        vals = access.load(st, ins, ins.space, addr, flat, dtype, n)
        bits[..., sel] = vals.reshape(la2.shape + (n,))
    for d, r in zip(ins.ops[0].items, _wmma_regs(bits, frag), strict=True):
        st.regs[d.idx][flat] = r.reshape(-1)


def wmma_store(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    frag: WmmaFrag = ins.aux.frag
    flat = la2.reshape(-1)
    accesses = _wmma_accesses(st, ins, la2, frag, ins.ops[0], ins.ops[2] if len(ins.ops) > 2 else None)
    bits = _wmma_bits(_regs(st, ins.ops[1], la2), frag)
    dtype = np.uint32 if frag.esize == 4 else np.uint16
    for sel, n, addr in accesses:
        vals = bits[..., sel].astype(dtype).reshape(-1, n)
        access.store(st, ins, ins.space, addr, flat, vals if n > 1 else vals[:, 0], dtype, n)


def _wmma_matrix(st, op, la2, frag: WmmaFrag) -> np.ndarray:
    """The [W, 16, 16] float64 matrix a fragment operand holds."""
    vals = _wmma_values(_wmma_bits(_regs(st, op, la2), frag), frag.etype)  # [W, 32, 8]
    return vals.reshape(-1, 256)[:, frag.gather].reshape(-1, 16, 16)


def wmma_mma(st, ins, lanes):
    la2 = _warps(st, ins, lanes)
    fd, fa, fb, fc = ins.aux.frags
    D = _wmma_matrix(st, ins.ops[1], la2, fa) @ _wmma_matrix(st, ins.ops[2], la2, fb)
    D += _wmma_matrix(st, ins.ops[3], la2, fc)
    vals = D.reshape(-1, 256)[:, fd.scatter].reshape(la2.shape + (8,))  # each lane's elements of D
    if fd.etype == "f32":
        bits = vals.astype(np.float32).view(np.uint32)
    else:
        with np.errstate(all="ignore"):
            h = vals.astype(np.float16)
        if ins.aux.satfinite:
            h = np.where(np.isinf(h), np.copysign(np.float16(65504), h), h).astype(np.float16)
        bits = h.view(np.uint16).astype(np.uint32)
    flat = la2.reshape(-1)  # every input is read: the outputs may overwrite them now
    for d, r in zip(ins.ops[0].items, _wmma_regs(bits, fd), strict=True):
        st.regs[d.idx][flat] = r.reshape(-1)


def _check_fragment(ins, op, frag: WmmaFrag, what: str) -> None:
    items = op.items if op.kind == VEC else (op,)
    if op.kind != VEC or len(items) != frag.nregs:
        raise DecodeError(f"wmma m16n16k16 {what} (matrix {frag.matrix}, .{frag.etype}) is a vector of "
                          f"{frag.nregs} 32-bit registers; got {len(items) if op.kind == VEC else 'a single operand'}")
    for o in items:
        if o.kind != REG or o.bits != 32:
            raise DecodeError(f"wmma m16n16k16 {what}: {o.name or repr(o)} is not a 32-bit register "
                              f"(fragment registers are .b32 / .f32 / .f16x2)")


def _prep_wmma_mem(ins, action: str) -> None:
    matrices = [m[1:] for m in ins.modlist if m in (".a", ".b", ".c", ".d")]
    layouts = [m[1:] for m in ins.modlist if m in (".row", ".col")]
    allowed = ("a", "b", "c") if action == "load" else ("d",)
    if len(matrices) != 1 or matrices[0] not in allowed:
        raise unsupported(ins, f"wmma.{action} names one matrix of {', '.join('.' + m for m in allowed)}")
    if len(layouts) != 1 or len(ins.types) != 1:
        raise unsupported(ins, f"wmma.{action} takes one layout (.row or .col) and one element type")
    frag = _wmma_frag(ins, matrices[0], ins.types[0].name, layouts[0])
    if len(ins.ops) not in (2, 3):
        raise DecodeError(f"wmma.{action} takes 2 or 3 operands (fragment, [address], optional stride); "
                          f"got {len(ins.ops)}")
    regs_op, addr_op = (ins.ops[0], ins.ops[1]) if action == "load" else (ins.ops[1], ins.ops[0])
    if addr_op.kind != ADDR:
        raise DecodeError(f"wmma.{action}: the address operand must be [reg], [reg+imm] or [symbol]")
    if len(ins.ops) == 3 and ins.ops[2].kind not in (REG, IMM):
        raise DecodeError(f"wmma.{action}: the stride must be a register or an immediate")
    _check_fragment(ins, regs_op, frag, "destination" if action == "load" else "source")
    ins.aux.frag = frag
    kind, where = ("ld" if action == "load" else "st"), (ins.space or "global")
    ins.klass = f"{kind}_{where}" if where in ("shared", "global") else "other"


def _prep_wmma_mma(ins) -> None:
    layouts = [m[1:] for m in ins.modlist if m in (".row", ".col")]
    if len(layouts) != 2:
        raise unsupported(ins, "wmma.mma takes two layouts, .alayout.blayout (each .row or .col)")
    names = tuple(t.name for t in ins.types)
    if len(names) == 4:  # .f32.bf16.bf16.f32 (alternate floating point forms name all four types)
        dt, at, bt, ct = names
    elif len(names) == 2:  # .dtype.ctype, A and B are .f16
        (dt, ct), at, bt = names, "f16", "f16"
    else:
        raise unsupported(ins, "wmma.mma names .dtype.ctype (f16 inputs) or .dtype.atype.btype.ctype")
    if at != bt or (at == "bf16" and (dt, ct) != ("f32", "f32")) or (len(names) == 4 and at != "bf16"):
        raise unsupported(ins, f"wmma.mma type combination .{'.'.join(names)} (supported: .f32.bf16.bf16.f32, "
                               f"and .dtype.ctype in .f16 / .f32 for f16 inputs)")
    frags = (_wmma_frag(ins, "d", dt), _wmma_frag(ins, "a", at), _wmma_frag(ins, "b", bt), _wmma_frag(ins, "c", ct))
    if len(ins.ops) != 4:
        raise DecodeError(f"wmma.mma takes 4 operands (d, a, b, c); got {len(ins.ops)}")
    for op, frag, what in zip(ins.ops, frags, ("d", "a", "b", "c"), strict=True):
        _check_fragment(ins, op, frag, f"operand {what}")
    ins.aux.frags = frags
    ins.aux.satfinite = ".satfinite" in ins.mods
    ins.klass = "tensor"
    ins.aux.class_units = 2  # two m16n8k16 MMAs (8192 FLOP): ptxsim__inst_executed_tensor counts those


_WMMA_HANDLERS = {"load": wmma_load, "store": wmma_store, "mma": wmma_mma}


def wmma(st, ins, lanes):
    _WMMA_HANDLERS[ins.aux.action](st, ins, lanes)


def _prep_wmma(ins, dec, ctx):
    actions = [m[1:] for m in ins.modlist if m[1:] in _WMMA_HANDLERS]
    if len(actions) != 1:
        raise unsupported(ins, "wmma needs exactly one of .load, .store, .mma")
    if ".m16n16k16" not in ins.mods or ".sync" not in ins.mods or ".aligned" not in ins.mods:
        raise unsupported(ins, "only wmma.*.sync.aligned m16n16k16 is supported")
    ins.aux.action = actions[0]
    if actions[0] == "mma":
        _prep_wmma_mma(ins)
    else:
        _prep_wmma_mem(ins, actions[0])


_LDM = (".sync", ".aligned", ".m8n8", ".x1", ".x2", ".x4", ".trans", ".shared", ".shared::cta")
_WMMA_MODS = (".load", ".store", ".mma", ".a", ".b", ".c", ".d", ".sync", ".aligned", ".row", ".col", ".m16n16k16",
              ".global", ".shared", ".shared::cta", ".satfinite")
OPS = {
    "mma": spec(mma, "tensor", (".sync", ".aligned", ".m16n8k16", ".m16n8k8", ".m16n8k32", ".row", ".col"),
                _prep_mma),
    "ldmatrix": spec(ldmatrix, "ld_shared", _LDM, _prep_ldm),
    "stmatrix": spec(stmatrix, "st_shared", _LDM, _prep_ldm),
    "wmma": spec(wmma, "tensor", _WMMA_MODS, _prep_wmma),
}
