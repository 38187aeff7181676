"""wgmma per warpgroup (4 converged warps): wgmma.mma_async m64nNk16 (.bf16 / .f16) and m64nNk32 (.e4m3 / .e5m2)
with .f32 accumulators (.f16 for .f16 / fp8 inputs), A from registers or a shared-memory matrix descriptor, B from a
descriptor (start address, leading / stride byte offsets, swizzle none / 32B / 64B / 128B), scale-d, imm-scale-a /
-b; wgmma.fence, wgmma.commit_group and wgmma.wait_group.

Asynchronous semantics: mma_async computes its result at issue but writes the accumulator registers only when a
wgmma.wait_group retires its group; a later mma_async on the same registers chains on the pending value (as the
hardware's in-order pipeline does). With sanitize="asynccheck", any other instruction naming a pending accumulator
register before the wait is reported.

Strict timing (st.strict): the hardware may read the shared-memory operands at any time until the wait that retires
the instruction, so the bytes read at issue are read again at that wait; if they changed (a stage released before
wgmma.wait_group and refilled, say) the retiring accumulators become NaN and asynccheck reports both PTX lines.

Descriptor layouts: the PTX ISA's canonical K-major and (imm-trans = 1, 16-bit types) MN-major layouts, see
`_offsets`; swizzled addresses then XOR bits 4.. with bits 7.. (ptxsim/tensormap.swizzle_offsets), the pattern
cp.async.bulk.tensor writes.
"""
from __future__ import annotations

import numpy as np

from ptxsim import access, tensormap
from ptxsim import numerics as nm
from ptxsim.errors import DecodeError, MemoryFault, PtxSimError
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.ops.tensor import _elems, _layout
from ptxsim.program import ADDR, IMM, LIST, NOT, PAIR, REG, VEC
from ptxsim.ptxtypes import TYPES
from ptxsim.warpsync import gather_warpgroups

U64, PRED = TYPES["u64"], TYPES["pred"]
WG = 128  # threads of a warpgroup
K_BYTES = 32  # every wgmma shape reads 32 bytes of K per row (k16 x 2 bytes, k32 x 1 byte)
SWIZZLE_OF_DESC = {0: 0, 1: 128, 2: 64, 3: 32}  # descriptor bits 62-63 -> swizzle span in bytes
_L = np.arange(32)
_G, _T = _L >> 2, _L & 3


class WgmmaQueue:
    """wgmma.mma_async results not yet retired by wgmma.wait_group, per batch."""

    def __init__(self, st):
        self.pending = []  # dicts: la [n], dregs (reg indices), values [len(dregs), n] uint32, group [n], pc
        self.committed = np.zeros(st.nlanes, np.int64)

    @staticmethod
    def of(st) -> WgmmaQueue:
        if st.wgmma is None:
            st.wgmma = WgmmaQueue(st)
        return st.wgmma

    def current(self, st, idxs: list[int], la: np.ndarray) -> np.ndarray:
        """Accumulator registers idxs [len(idxs), len(la)] of lanes la as the async pipeline sees them (the newest
        pending value). NOTE: one lane lookup per pending record for all the registers (a record's lanes are sorted
        and unique): looking lanes up per register was half of a CUTLASS GEMM's simulation time."""
        if self.pending:  # the newest record on exactly these lanes and registers (a k loop's chain) is the value
            rec = self.pending[-1]
            if len(rec["la"]) == len(la) and all(i in rec["pos"] for i in idxs) and np.array_equal(rec["la"], la):
                return rec["values"][[rec["pos"][i] for i in idxs]]
        v = np.stack([st.regs[i][la] for i in idxs]).astype(np.uint32)
        for rec in self.pending:
            where = [(j, rec["pos"][i]) for j, i in enumerate(idxs) if i in rec["pos"]]
            if not where:
                continue
            at = np.minimum(np.searchsorted(rec["la"], la), len(rec["la"]) - 1)
            hit = rec["la"][at] == la
            if hit.any():
                rows, cols = np.array([j for j, _ in where]), np.flatnonzero(hit)
                v[rows[:, None], cols[None, :]] = rec["values"][np.array([i for _, i in where])[:, None],
                                                                at[hit][None, :]]
        return v


def _warpgroups(st, ins, lanes) -> np.ndarray:
    la = st.lane_array(lanes)
    ok = len(la) % WG == 0
    if ok:
        la2 = la.reshape(-1, WG)
        ok = bool(np.all(la2 == la2[:, :1] + np.arange(WG)) and np.all(st.tlin[la2[:, 0]] % WG == 0))
    if not ok:
        cta, tid = st.where(int(la[0]))
        raise PtxSimError(f"{ins.op} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name} needs the 128 "
                          f"threads of each warpgroup converged; CTA {cta} thread {tid} runs it with "
                          f"{len(la)} thread(s) active")
    return la2


def _offsets(rows: int, esize: int, span: int, lbo: int, sbo: int, mn_major: bool) -> np.ndarray:
    """Byte offsets [rows, k] (before the swizzle) of the PTX ISA's canonical layouts (9.7.15.5.1.2.1.3), in bytes:
    K-major     ((8,m),(T,2k)) : ((P,SBO),(1,LBO)), P = 16 (no swizzle, LBO between 16-byte core-matrix columns)
                or the swizzle span S (LBO unused: the instruction's 32 bytes of K lie inside one row);
    MN-major    no swizzle ((T,1,m),(8,k)) : ((1,T,SBO),(16,LBO)); swizzled ((T,S/16,m),(8,k)) : ((1,T,LBO),(S,SBO)).
    """
    r = np.arange(rows)[:, None]
    k = np.arange(K_BYTES // esize)[None, :]
    if not mn_major:
        kb, p = k * esize, span or 16
        return (r // 8) * sbo + (r % 8) * p + (kb // p) * lbo + kb % p
    mb = r * esize
    if not span:
        return mb % 16 + (mb // 16) * sbo + (k % 8) * 16 + (k // 8) * lbo
    return mb % span + (mb // span) * lbo + (k % 8) * span + (k // 8) * sbo


def _descriptor_matrix(st, ins, la2, desc: np.ndarray, rows: int, kind: str, mn_major: bool = False,
                       reads: list | None = None) -> np.ndarray:
    """[G, rows, k] float64 matrix each warpgroup's descriptor names (rows: M of A or N of B). With `reads` (strict
    timing), appends (first lane of the warpgroup, shared byte indices, their bytes) per warpgroup."""
    esize = 2 if kind in ("bf16", "f16") else 1
    start = ((desc & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    lbo = (((desc >> np.uint64(16)) & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    sbo = (((desc >> np.uint64(32)) & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    base_off = ((desc >> np.uint64(49)) & np.uint64(7)).astype(np.int64)
    mode = (desc >> np.uint64(62)).astype(np.int64)
    if np.any(base_off):
        raise unsupported(ins, f"matrix-descriptor base offset {int(base_off.max())} (ptxsim reads base offset 0: "
                               "swizzled matrices starting on a pattern boundary)")
    out = np.zeros((len(la2), rows, K_BYTES // esize))
    spans = np.array([SWIZZLE_OF_DESC[int(m)] for m in mode], np.int64)
    bad = np.flatnonzero((spans > 0) & (((start >> 7) & np.maximum(spans // 16 - 1, 0)) != 0))
    if bad.size:
        g = int(bad[0])
        _misaligned_start(st, ins, int(la2[g, 0]), int(start[g]), int(spans[g]), kind)
    # NOTE: warpgroups whose descriptors share a layout (span, LBO, SBO: all of them, in a GEMM) are read together:
    # one warpgroup at a time was a fifth of a CUTLASS GEMM's simulation time
    layouts = np.stack([spans, lbo, sbo], axis=1)
    for key in np.unique(layouts, axis=0):
        gs = np.flatnonzero((layouts == key).all(axis=1))
        span = int(key[0])
        off = tensormap.swizzle_offsets(start[gs][:, None, None] + _offsets(rows, esize, span, int(key[1]),
                                                                            int(key[2]), mn_major), span)
        leads = la2[gs, 0]
        lo, hi = off.reshape(len(gs), -1).min(axis=1), off.reshape(len(gs), -1).max(axis=1)
        access.check(st, ins, "shared", np.stack([lo, hi], axis=1).reshape(-1).astype(np.uint64),
                     np.repeat(leads, 2), esize, "wgmma matrix-descriptor operand")
        phys = st.smem_base[leads].astype(np.int64)[:, None, None] + off
        for n, g in enumerate(gs):  # what the sanitizers and the async rules see, per warpgroup (off when unused)
            _sanitize_reads(st, ins, off[n], int(leads[n]), esize)
            if st.rules is not None:
                words = np.unique(phys[n].reshape(-1) >> 2)
                st.rules.async_read(st, ins, words, la2[g], "wgmma.mma_async (matrix descriptor)")
        raw = st.smem[phys[..., None] + np.arange(esize)]
        if reads is not None:
            for n in range(len(gs)):
                reads.append((int(leads[n]), (phys[n][..., None] + np.arange(esize)).reshape(-1),
                              raw[n].reshape(-1).copy()))
        bits = raw[..., 0].astype(np.uint16) | (raw[..., 1].astype(np.uint16) << 8) if esize == 2 else raw[..., 0]
        out[gs] = (nm.half_bits_to_f32(bits, kind) if esize == 2 else nm.fp8_bits_to_f32(bits, kind))
    return out


def _misaligned_start(st, ins, lane: int, start: int, span: int, kind: str) -> None:
    """A swizzled operand whose descriptor (base offset 0) starts past the first 128-byte row of its pattern: the
    hardware anchors the XOR pattern at the pattern's repeat boundary, so the tile would be read with the wrong
    pattern. Advancing the start along K inside a row (+32 bytes a k-step, as CUTLASS and DeepGEMM do) is legal."""
    repeat = tensormap.SWIZZLE_REPEAT[span]
    e = access.fault(st, ins, "shared", start, K_BYTES, lane, f"misaligned wgmma .{kind} matrix-descriptor start")
    raise MemoryFault(f"{e.args[0]}: with {span}B swizzle and base offset 0 the matrix must start in the first "
                      f"128-byte row of a {repeat}-byte swizzle pattern (address % {repeat} < 128; this one is "
                      f"{start % repeat} bytes past the boundary)", space="shared", addr=start, size=K_BYTES,
                      cta=e.cta, thread=e.thread, line=ins.line, kernel=st.prog.name)


def _sanitize_reads(st, ins, off: np.ndarray, lane: int, esize: int) -> None:
    """Show the sanitizers (not the memory counters: the async proxy's reads are no LSU traffic) the shared bytes a
    descriptor operand reads, as 4-byte words read by the warpgroup's first warp: racecheck then reports operands
    whose cp.async.bulk has not completed, or written by another warp with no barrier between."""
    sans = [h for h in st.hooks if getattr(h, "tool", "")]
    if not sans:  # NOTE: no sanitizer: the unique words were a tenth of a CUTLASS GEMM's simulation time
        return
    words = np.unique(off.reshape(-1) & ~np.int64(3)).astype(np.uint64)
    for h in sans:
        h.on_access(st, ins, "shared", words, np.full(words.size, lane), 4, False)


def _register_a(st, ins, la2, kind: str) -> np.ndarray:
    """[G, 64, k] A from each warp's 4 registers (the mma.sync m16n8k16 / m16n8k32 A layout, warp w rows 16w..)."""
    per = 2 if kind in ("bf16", "f16") else 4
    ra, ca, *_ = ins.aux.a_layout
    items = ins.ops[1].items
    la3 = la2.reshape(-1, 32)  # [G * 4 warps, 32]
    regs = [st.regs[o.idx][la3].astype(np.uint32) for o in items]
    e = _elems(regs, kind, per)  # [G*4, 32, 4 * per]
    out = np.zeros((len(la3), 16, K_BYTES // (2 if per == 2 else 1)))
    wi = np.arange(len(la3))[:, None, None]
    out[wi, ra[None], ca[None]] = e
    return out.reshape(len(la2), 64, -1)


def _unpack_acc(regs: np.ndarray, f16: bool) -> np.ndarray:
    """Accumulator registers [r, ...] -> elements [n/2, ...] float64 (.f16: two per register, low half first)."""
    if not f16:
        return regs.view(np.float32).astype(np.float64)
    lo = (regs & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    hi = (regs >> np.uint32(16)).astype(np.uint16).view(np.float16)
    return np.stack([lo, hi], axis=1).reshape((-1,) + regs.shape[1:]).astype(np.float64)


def _pack_acc(vals: np.ndarray, f16: bool) -> np.ndarray:
    if not f16:
        return vals.astype(np.float32).view(np.uint32)
    with np.errstate(all="ignore"):
        h = vals.astype(np.float16).view(np.uint16).astype(np.uint32)
    return h[0::2] | (h[1::2] << np.uint32(16))


def _uniform(st, op, la2, ty):
    v = np.asarray(st.read(op, la2[:, 0], ty))
    return np.broadcast_to(v, (len(la2),))


def mma_async(st, ins, lanes):
    la = gather_warpgroups(st, ins, st.lane_array(lanes))  # warps arriving apart wait for their warpgroup
    if not la.size:
        return
    la2 = _warpgroups(st, ins, la)
    a = ins.aux
    n, kind_a, kind_b = a.n, a.atype, a.btype
    reads = [] if st.strict else None
    if st.rules is not None:
        st.rules.wgmma_issue(st, ins, la2)
    A = _register_a(st, ins, la2, kind_a) if a.a_regs else \
        _descriptor_matrix(st, ins, la2, _uniform(st, ins.ops[1], la2, U64).astype(np.uint64), 64, kind_a, a.trans_a,
                           reads)
    B = _descriptor_matrix(st, ins, la2, _uniform(st, ins.ops[2], la2, U64).astype(np.uint64), n, kind_b, a.trans_b,
                           reads)
    # NOTE: B contiguous first: matmul on the transposed view falls back to NumPy's non-BLAS loop (~100x slower)
    D = np.matmul(A * a.scale_a, np.ascontiguousarray(np.swapaxes(B * a.scale_b, 1, 2)))  # [G, 64, n]
    scale_d = _uniform(st, ins.ops[3], la2, PRED).astype(bool)
    q = WgmmaQueue.of(st)
    flat = la2.reshape(-1)
    dregs = [o.idx for o in ins.ops[0].items]
    rows, cols = a.d_rows, a.d_cols  # [128, n/2]: element of D each (thread, register) holds
    # NOTE: gathered straight into [n/2, G, 128], contiguous (a moved axis made every later reshape a copy)
    vals = D[np.arange(len(la2))[None, :, None], rows.T[:, None, :], cols.T[:, None, :]]  # [n/2, G, 128]
    if scale_d.any():
        cur = q.current(st, dregs, flat).reshape(len(dregs), len(la2), WG)
        # NOTE: scale-d = 0 ignores D (D = A*B), it does not multiply it by 0: NaN / Inf in an uninitialised
        # accumulator must not reach the result
        c = _unpack_acc(cur, a.f16_acc)
        with np.errstate(invalid="ignore", over="ignore"):
            if scale_d.all():  # a k loop's chained accumulation: in place (the gather above made vals a copy)
                vals += c
            else:
                vals = np.where(scale_d[None, :, None], vals + c, vals)
    res = _pack_acc(vals, a.f16_acc).reshape(len(dregs), -1)
    if len(flat) < 2 or bool((flat[1:] > flat[:-1]).all()):  # lanes already ascending (warpgroups in lane order)
        sorted_la, values = flat, res
    else:
        order = np.argsort(flat)
        sorted_la, values = flat[order], res[:, order]
    q.pending.append({"la": sorted_la, "pos": {r: i for i, r in enumerate(dregs)}, "values": values,
                      "group": np.full(len(flat), -1, np.int64), "pc": ins.pc, "line": ins.line, "reads": reads,
                      "nan": np.uint32(0x7E007E00 if a.f16_acc else 0x7FC00000)})
    if st.reg_watch is not None:
        st.reg_watch.append(q.pending[-1])


def commit_group(st, ins, lanes):
    la = st.lane_array(lanes)
    q = WgmmaQueue.of(st)
    for rec in q.pending:
        m = (rec["group"] < 0) & np.isin(rec["la"], la)
        rec["group"][m] = q.committed[rec["la"][m]]
    q.committed[la] += 1


def wait_group(st, ins, lanes):
    la = st.lane_array(lanes)
    if st.hooks and len(la) % WG == 0:  # a warpgroup-collective wait: its four warps synchronise (racecheck)
        groups = np.unique(la >> 5).reshape(-1, 4) if (len(la) // 32) % 4 == 0 else None
        if groups is not None:
            for h in st.hooks:
                h.on_sync_groups(st, groups, memory_order=False)
    q = WgmmaQueue.of(st)
    keep_n = ins.aux.n
    left = []
    for rec in q.pending:
        done = np.isin(rec["la"], la) & (rec["group"] >= 0) & (rec["group"] < q.committed[rec["la"]] - keep_n)
        if done.any():
            every = bool(done.all())
            sel = rec["la"] if every else rec["la"][done]
            if rec["reads"]:
                _reread(st, ins, rec, sel, done)
            values = rec["values"] if every else rec["values"][:, done]  # one gather, not one a register
            for r, i in rec["pos"].items():
                st.regs[r][sel] = values[i]
        if not done.all():
            keep = ~done
            left.append(dict(rec, la=rec["la"][keep], values=rec["values"][:, keep], group=rec["group"][keep]))
    q.pending = left
    if st.reg_watch is not None:
        st.reg_watch[:] = left


def _reread(st, ins, rec, sel: np.ndarray, done: np.ndarray) -> None:
    """Strict: read the retiring warpgroups' shared operands again; where a byte changed since issue, report it and
    make those warpgroups' results NaN (the hardware may have read either value)."""
    for lead, phys, raw in rec["reads"]:
        if lead not in sel:
            continue
        for h in st.hooks:
            h.on_wgmma_retire(st, rec["line"], lead, phys)
        changed = st.smem[phys] != raw
        if not changed.any():
            continue
        i = int(np.flatnonzero(changed)[0])
        off = int(phys[i]) % st.smem_stride
        for h in st.hooks:
            h.on_async_hazard(st, ins, lead, off, "shared",
                              f"shared-memory operand of the wgmma.mma_async at PTX line {rec['line']} changed before "
                              f"this wgmma.wait_group retired it ({int(np.count_nonzero(changed))} byte(s), the first "
                              f"at shared address {off:#x}: {int(raw[i]):#04x} at issue, {int(st.smem[phys[i]]):#04x} "
                              "now); was its stage released (mbarrier.arrive on the empty barrier) before the wait?")
        wg = done & (rec["la"] >= lead) & (rec["la"] < lead + WG)
        rec["values"][:, wg] = rec["nan"]


def _registers(ops):
    for op in ops:
        if op.kind == REG:
            yield op.idx
        elif op.kind in (VEC, LIST, PAIR, NOT):
            yield from _registers(op.items)
        elif op.kind == ADDR and op.base is not None:
            yield op.base.idx


def check_accumulator_use(st, ins, lanes) -> None:
    """asynccheck: report an instruction naming an accumulator register a pending mma_async has yet to write."""
    used = ins.aux.regs_named
    if used is None:
        used = ins.aux.regs_named = frozenset(_registers(ins.ops))
    la = None
    for rec in st.reg_watch:
        common = used & rec["pos"].keys()
        if not common:
            continue
        la = st.lane_array(lanes) if la is None else la
        hit = np.isin(la, rec["la"])
        if hit.any():
            reg = st.prog.reg_names[min(common)]
            for h in st.hooks:
                h.on_async_hazard(st, ins, int(la[hit][0]), 0, "register",
                                  f"wgmma accumulator {reg} used before wgmma.wait_group retired the "
                                  f"wgmma.mma_async of PTX line {rec['line']} (its value is undefined until then)")


def fence(st, ins, lanes):
    """wgmma.fence: orders register accesses before the next mma_async; sequential here (asynccheck notes it)."""
    if st.rules is not None:
        st.rules.wgmma_fence(st, lanes)


# -- decode --------------------------------------------------------------------------------------------------------
_KINDS = {"bf16": 16, "f16": 16, "e4m3": 32, "e5m2": 32}  # input type -> k


def _d_layout(n: int):
    """(rows, cols) [128, n/2] of the D element held by (thread, accumulator register)."""
    i = np.arange(n // 2)
    tid = np.arange(WG)[:, None]
    w, g, t = tid >> 5, (tid & 31) >> 2, tid & 3
    rows = 16 * w + g + 8 * ((i >> 1) & 1)
    cols = 8 * (i >> 2) + 2 * t + (i & 1)
    return rows, cols


def _imm(ins, op, what, allowed):
    if op.kind != IMM or int(op.value) not in allowed:
        raise DecodeError(f"wgmma.mma_async {what} must be an immediate in {allowed}; got {op.name or op.value!r}")
    return int(op.value)


def _prep_mma(ins):
    shape = next((m for m in ins.modlist if m.startswith(".m64n")), "")
    if len(ins.types) != 3:
        raise unsupported(ins, "wgmma.mma_async names .dtype.atype.btype")
    dt, at, bt = (t.name for t in ins.types)
    if dt not in ("f32", "f16") or (dt == "f16" and at == "bf16"):
        raise unsupported(ins, f"accumulator type .{dt} for .{at} inputs (.f32, or .f16 for .f16 / fp8 inputs)")
    if at not in _KINDS or bt not in _KINDS or _KINDS[at] != _KINDS[bt] or (_KINDS[at] == 16 and at != bt):
        raise unsupported(ins, f"input types .{at}.{bt} (supported: .bf16.bf16, .f16.f16, .e4m3/.e5m2 pairs)")
    k = _KINDS[at]
    try:
        n = int(shape[len(".m64n"):shape.index("k")])
        shape_k = int(shape[shape.index("k") + 1:])
    except ValueError:
        n, shape_k = 0, 0
    if shape_k != k or n % 8 or not 8 <= n <= 256:
        raise unsupported(ins, f"shape {shape[1:] or '(none)'} for .{at} (expected m64nNk{k}, N = 8, 16, .., 256)")
    a_regs = ins.ops[1].kind == VEC if len(ins.ops) > 1 else False
    nops = 6 if k == 32 else (7 if a_regs else 8)  # imm-trans-a / -b exist for 16-bit types only
    if len(ins.ops) != nops:
        raise DecodeError(f"wgmma.mma_async .{at} with A from {'registers' if a_regs else 'a descriptor'} takes "
                          f"{nops} operands; got {len(ins.ops)}")
    d = ins.ops[0]
    nd = n // 2 if dt == "f32" else n // 4
    if d.kind != VEC or len(d.items) != nd or any(o.kind != REG or o.bits != 32 for o in d.items):
        raise DecodeError(f"wgmma.mma_async m64n{n} .{dt} accumulates in a vector of {nd} 32-bit registers")
    if a_regs and (len(ins.ops[1].items) != 4 or any(o.kind != REG or o.bits != 32 for o in ins.ops[1].items)):
        raise DecodeError("wgmma.mma_async A from registers is a vector of 4 32-bit registers")
    if ins.ops[3].kind not in (REG, IMM):
        raise DecodeError("wgmma.mma_async scale-d must be a predicate or an immediate")
    scale_a = _imm(ins, ins.ops[4], "imm-scale-a", (1, -1))
    scale_b = _imm(ins, ins.ops[5], "imm-scale-b", (1, -1))
    trans = [_imm(ins, op, "imm-trans", (0, 1)) for op in ins.ops[6:]]  # 16-bit types: [trans-a,] trans-b
    trans_a, trans_b = (0, trans[0]) if a_regs and trans else (trans + [0, 0])[:2]
    rows, cols = _d_layout(n)
    layout = _layout("m16n8k16" if k == 16 else "m16n8k32", at)
    ins.aux.update(n=n, atype=at, btype=bt, f16_acc=dt == "f16", trans_a=bool(trans_a), trans_b=bool(trans_b),
                   a_regs=a_regs, scale_a=scale_a, scale_b=scale_b, d_rows=rows, d_cols=cols, a_layout=layout)
    ins.handler = mma_async
    ins.control = True  # it may hold early warps until their warpgroup is complete (ptxsim/warpsync.py)
    ins.klass = "tensor"
    ins.aux.class_units = n // 8  # per warp (each of the 4 is counted): n/8 m16n8k16 / m16n8k32 MMAs, as mma.sync


def _prep_wgmma(ins, dec, ctx):
    if ".sync" not in ins.mods or ".aligned" not in ins.mods:
        raise unsupported(ins, "wgmma instructions are .sync.aligned")
    ins.klass = "other"
    if ".mma_async" in ins.mods:
        _prep_mma(ins)
    elif ".fence" in ins.mods:
        ins.handler = fence
    elif ".commit_group" in ins.mods:
        ins.handler = commit_group
    elif ".wait_group" in ins.mods:
        if len(ins.ops) != 1 or ins.ops[0].kind != IMM:
            raise DecodeError("wgmma.wait_group takes one immediate group count")
        ins.aux.n = int(ins.ops[0].value)
        ins.handler = wait_group
    else:
        raise unsupported(ins, "wgmma needs one of .mma_async, .fence, .commit_group, .wait_group")


def _wgmma_mods():
    shapes = [f".m64n{n}k{k}" for n in range(8, 257, 8) for k in (16, 32)]
    return (".mma_async", ".fence", ".commit_group", ".wait_group", ".sync", ".aligned", *shapes)


OPS = {
    "wgmma": spec(fence, "tensor", _wgmma_mods(), _prep_wgmma),
}
