"""ld / st / ldu / prefetch / cvta / isspacep / cp.async (+ commit / wait groups)."""
from __future__ import annotations

import numpy as np

from ptxsim import access
from ptxsim.memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from ptxsim.ops.common import need, unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import ADDR, IMM, REG, SINK, VEC
from ptxsim.ptxtypes import TYPES

_VEC = (".v2", ".v4", ".v8")
_SPACES = (".global", ".shared", ".shared::cta", ".shared::cluster", ".local", ".param", ".param::entry",
           ".param::func", ".const")


def _space(ins, addr_op):
    sp = ins.space
    if sp == "param":
        return "fparam" if addr_op.name == "fparam" else "kparam"
    return sp


def _addr(st, ins, lanes, op):
    a = st.address(op, lanes)
    if ins.space == "" and op.base is None and op.name in ("shared", "local"):  # generic use of a symbol
        a = a + np.uint64(SHARED_WINDOW if op.name == "shared" else LOCAL_WINDOW)
    return a


def _dst_list(op):
    return list(op.items) if op.kind == VEC else [op]


def ld(st, ins, lanes):
    t = ins.types[0]
    dsts = ins.aux.regs
    if ins.aux.uniform:  # a kernel param: load once per launch, broadcast
        cached = ins.aux.kparam_value
        if cached is not None and cached[0] == st.launch.serial:
            v = cached[1]
        else:
            one = np.zeros(1, np.int64)
            addr = _addr(st, ins, one, ins.ops[1])
            v = access.load(st, ins, ins.aux.space, addr, one, t.dtype, len(dsts))
            ins.aux.kparam_value = (st.launch.serial, v)
        for k, d in enumerate(dsts):
            if d.kind != SINK:
                st.write(d, lanes, v.reshape(-1)[k], t)
        return
    addr = _addr(st, ins, lanes, ins.ops[1])
    vals = access.load(st, ins, ins.aux.space, addr, lanes, t.dtype if t.bits <= 64 else np.uint64,
                       len(dsts) * (2 if t.bits == 128 else 1))
    if len(dsts) == 1 and t.bits <= 64:
        st.write(dsts[0], lanes, vals, t)
        return
    if t.bits == 128:
        raise unsupported(ins, ".b128 loads are not supported")
    for k, d in enumerate(dsts):
        if d.kind != SINK:  # a register as wide as the type takes the strided column as it is
            st.write(d, lanes, vals[:, k] if d.bits == t.bits else np.ascontiguousarray(vals[:, k]), t)


def st_(st, ins, lanes):
    t = ins.types[0]
    srcs = ins.aux.regs
    addr = _addr(st, ins, lanes, ins.ops[0])
    n = st.count(lanes)
    if len(srcs) == 1:
        v = np.broadcast_to(np.asarray(st.read(srcs[0], lanes, t)), (n,))
        access.store(st, ins, ins.aux.space, addr, lanes, v, t.dtype)
        return
    v = np.empty((n, len(srcs)), t.dtype)
    for k, s in enumerate(srcs):
        v[:, k] = st.read(s, lanes, t)
    access.store(st, ins, ins.aux.space, addr, lanes, v, t.dtype, len(srcs))


def _prep_ld(ins, dec, ctx):
    need(ins, (2, 3), 1)
    a = ins.ops[1] if ins.op in ("ld", "ldu") else ins.ops[0]
    v = ins.ops[0] if ins.op in ("ld", "ldu") else ins.ops[1]
    if a.kind != ADDR:
        raise unsupported(ins, "the address operand must be [reg], [reg+imm], [symbol] or [imm]")
    regs = _dst_list(v)
    nvec = next((int(m[2:]) for m in ins.modlist if m in _VEC), 1)
    if nvec != len(regs):
        raise unsupported(ins, f"vector width {nvec} but {len(regs)} register(s) given")
    ins.aux.regs = regs
    sp = _space(ins, a)
    ins.aux.space = sp
    ins.aux.nc = ".nc" in ins.mods
    base = {"kparam": "param", "fparam": "param", "": "global", "const": "const"}.get(sp, sp)
    kind = "ld" if ins.op in ("ld", "ldu") else "st"
    if kind == "ld" and base == "param":
        ins.klass = "ld_param"
    elif base == "const":
        ins.klass = "ld_const"
    elif base == "param":
        ins.klass = "other"
    else:
        ins.klass = f"{kind}_{base}"
    ins.aux.generic = sp == ""
    ins.aux.uniform = ins.op != "st" and sp == "kparam" and a.base is None and t_bits(ins) <= 64


def t_bits(ins):
    return ins.types[0].bits if ins.types else 0


def createpolicy(st, ins, lanes):
    """createpolicy: an opaque L2 cache-policy value (a hint for loads/stores): zero here."""
    t = ins.types[0] if ins.types else TYPES["b64"]
    st.write(ins.ops[0], lanes, np.zeros(st.count(lanes), t.dtype), t)


def prefetch(st, ins, lanes):
    """A cache hint: no architectural effect (the address is not even required to be valid)."""


def cvta(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(st.read(ins.ops[1], lanes, t)).astype(np.uint64)
    sp, to = ins.aux.space, ins.aux.to
    win = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}.get(sp, 0)
    r = a - np.uint64(win) if to else a + np.uint64(win)
    n = st.count(lanes)
    st.write(ins.ops[0], lanes, np.broadcast_to(r.astype(t.uint).view(t.dtype), (n,)), t)


def _prep_cvta(ins, dec, ctx):
    need(ins, 2, 1)
    ins.aux.to = ".to" in ins.mods
    if ins.space not in ("shared", "local", "global", "const", "param"):
        raise unsupported(ins, f"cvta for state space {ins.space or '(none)'} is not supported")
    ins.aux.space = ins.space


def isspacep(st, ins, lanes):
    a = np.asarray(st.read(ins.ops[1], lanes, TYPES["u64"]))
    win = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}.get(ins.space)
    if win is None:
        r = (a >= np.uint64(1 << 40)) & (a < np.uint64(SHARED_WINDOW))
    else:
        r = (a >= np.uint64(win)) & (a < np.uint64(win + WINDOW_SIZE))
    st.write(ins.ops[0], lanes, np.broadcast_to(r, (st.count(lanes),)), TYPES["pred"])


# -- cp.async ---------------------------------------------------------------------------------------------------
def cp_async(st, ins, lanes):
    n = st.count(lanes)
    size = ins.aux.size
    dst = st.address(ins.ops[0], lanes)
    src = st.address(ins.ops[1], lanes)
    srcsize = np.full(n, size, np.int64)
    if len(ins.ops) >= 4:
        o = ins.ops[3]
        if o.kind == REG and o.bits == 1:  # ignore-src predicate
            srcsize = np.where(np.broadcast_to(st.read(o, lanes, TYPES["pred"]), (n,)), 0, size)
        else:
            srcsize = np.broadcast_to(np.asarray(st.read(o, lanes, TYPES["u32"])).astype(np.int64), (n,))
    if np.any(srcsize > size):
        raise unsupported(ins, f"src-size {int(srcsize.max())} larger than cp-size {size}")
    access.check(st, ins, "shared", dst, lanes, size, "cp.async destination")
    data = np.zeros((n, size), np.uint8)
    la = st.lane_array(lanes)
    for s_ in np.unique(srcsize):  # usually one value: the full cp-size
        s_ = int(s_)
        if s_ == 0:
            continue  # zero fill only: the source is not read (and may be out of bounds)
        sub = np.flatnonzero(srcsize == s_)
        chunk = access.load(st, ins, "global", src[sub], la[sub], np.uint8, s_)
        data[sub, :s_] = chunk.reshape(len(sub), s_)
    phys = st.smem_base[lanes] + dst
    if st.strict:  # the destination holds poison until cp.async.wait_group / wait_all lands the copy
        access.copy_rows(st.smem, phys.astype(np.int64), np.full((n, size), 0xFF, np.uint8))
    rec = {"lanes": st.lane_array(lanes).copy(), "phys": phys.astype(np.int64), "data": data,
           "group": np.full(n, -1, np.int64), "ins": ins, "dst": dst}
    st.async_pending.append(rec)
    for h in st.hooks:
        h.on_async_issue(st, rec)


def _mine(rec, lanes, la):
    """Which of a pending copy's lanes are among `lanes` (all of them when every lane of the batch runs)."""
    return True if isinstance(lanes, slice) else np.isin(rec["lanes"], la)


def cp_async_commit(st, ins, lanes):
    la = st.lane_array(lanes)
    for rec in st.async_pending:
        m = (rec["group"] < 0) & _mine(rec, lanes, la)
        rec["group"][m] = st.async_committed[rec["lanes"][m]]
    st.async_committed[lanes] += 1


def cp_async_wait(st, ins, lanes):
    la = st.lane_array(lanes)
    if ins.aux.wait_all:
        cp_async_commit(st, ins, lanes)
    keep_n = ins.aux.n
    keep = []
    for rec in st.async_pending:
        done = (rec["group"] >= 0) & (rec["group"] < st.async_committed[rec["lanes"]] - keep_n)
        done &= _mine(rec, lanes, la)
        if done.any():
            st.mem_writes += 1
            sel = np.flatnonzero(done)
            access.copy_rows(st.smem, rec["phys"][sel], rec["data"][sel])
            for h in st.hooks:
                h.on_async_complete(st, rec, sel)
        if not done.all():
            left = ~done
            keep.append({k: (v[left] if isinstance(v, np.ndarray) else v) for k, v in rec.items()})
    st.async_pending = keep


def cp_async_mbarrier_arrive(st, ins, lanes):
    """cp.async.mbarrier.arrive{.noinc}: an arrive-on the mbarrier, triggered when every cp.async the thread issued
    before it has completed. Model: those copies land now (a legal schedule: a copy may complete any time after it
    is issued) and are published by the mbarrier, as bulk copies are: they count as complete (for the sanitizers)
    when its current phase completes. Without .noinc the pending count is first raised by one, so the two cancel and
    only the tracking remains; with .noinc the arrive counts against the phase's expected arrivals (as CUTLASS's
    FP8 blockwise mainloop uses it for its scale copies)."""
    from ptxsim.mbarriers import MbarrierTable
    from ptxsim.ops.mbarrier import shared_offsets

    la = st.lane_array(lanes)
    off, base = shared_offsets(st, ins, ins.ops[0], lanes, 8, "mbarrier object")
    phys = (base + off).astype(np.int64)
    bar_of = dict(zip(la.tolist(), phys.tolist(), strict=True))
    table = MbarrierTable.of(st)
    keep = []
    for rec in st.async_pending:
        done = np.ones(len(rec["lanes"]), np.bool_) & _mine(rec, lanes, la)
        if done.any():
            st.mem_writes += 1
            sel = np.flatnonzero(done)
            access.copy_rows(st.smem, rec["phys"][sel], rec["data"][sel])
            bars = np.array([bar_of[int(x)] for x in rec["lanes"][sel]], np.int64)
            for p in np.unique(bars):
                rows = sel[bars == p]
                part = {k: (v[rows] if isinstance(v, np.ndarray) else v) for k, v in rec.items()}
                part["via_mbarrier"] = True
                table.get(ins, int(p), int(part["lanes"][0])).copies.append(part)
        if not done.all():
            left = ~done
            keep.append({k: (v[left] if isinstance(v, np.ndarray) else v) for k, v in rec.items()})
    st.async_pending = keep
    if ins.aux.noinc:
        n = len(la)
        table.arrive(ins, phys, la, np.ones(n, np.int64), np.zeros(n, np.int64), False, False)


def _prep_cp(ins, dec, ctx):
    need(ins, (3, 4, 5), 0)
    if ins.ops[2].kind != IMM:
        raise unsupported(ins, "cp-size must be an immediate (4, 8 or 16)")
    size = int(ins.ops[2].value)
    if size not in (4, 8, 16) or (".cg" in ins.mods and size != 16):
        raise unsupported(ins, f"cp-size {size} (expected 4, 8 or 16; .cg needs 16)")
    if ".bulk" in ins.mods or ".tensor" in ins.mods:
        raise unsupported(ins, "bulk / tensor copies are not supported")
    ins.aux.size = size
    ins.klass = "cp_async"


def _prep_wait(ins, dec, ctx):
    ins.aux.wait_all = ins.op == "cp.async.wait_all" or ".wait_all" in ins.mods
    ins.aux.n = int(ins.ops[0].value) if ins.ops else 0
    ins.klass = "cp_async"


def cp_dispatch(st, ins, lanes):
    ins.aux.fn(st, ins, lanes)


def _prep_cp_any(ins, dec, ctx):
    if ".mbarrier" in ins.mods and ".arrive" in ins.mods:
        need(ins, 1, 1)
        if [t.name for t in ins.types] != ["b64"]:
            raise unsupported(ins, "cp.async.mbarrier.arrive takes a .b64 mbarrier")
        ins.aux.fn = cp_async_mbarrier_arrive
        ins.aux.noinc = ".noinc" in ins.mods
        ins.klass = "cp_async"
    elif ".commit_group" in ins.mods:
        ins.aux.fn = cp_async_commit
        ins.klass = "cp_async"
    elif ".wait_group" in ins.mods or ".wait_all" in ins.mods:
        ins.aux.fn = cp_async_wait
        _prep_wait(ins, dec, ctx)
    else:
        ins.aux.fn = cp_async
        _prep_cp(ins, dec, ctx)


_LDMODS = _VEC + _SPACES + (".nc", ".ca", ".cg", ".cs", ".lu", ".cv")
_CPMODS = (".ca", ".cg", ".shared", ".shared::cta", ".global", ".commit_group", ".wait_group", ".wait_all",
           ".async", ".L2::64B", ".L2::128B", ".L2::256B", ".L2::cache_hint", ".mbarrier", ".arrive", ".noinc")
OPS = {
    "ld": spec(ld, "ld_global", _LDMODS, _prep_ld, hints=True),
    "ldu": spec(ld, "ld_global", _LDMODS, _prep_ld, hints=True),
    "st": spec(st_, "st_global", _LDMODS + (".wb", ".cs", ".wt"), _prep_ld, hints=True),
    "prefetch": spec(prefetch, "other", _SPACES + (".L1", ".L2", ".L2::evict_last", ".L2::evict_normal",
                                                    ".tensormap"), None, hints=True),
    "prefetchu": spec(prefetch, "other", (".L1",), None),
    "createpolicy": spec(createpolicy, "other", (".fractional", ".range", ".cvt", ".L2::evict_last",
                                                 ".L2::evict_normal", ".L2::evict_first", ".L2::evict_unchanged"),
                         None),
    "cvta": spec(cvta, "int", _SPACES + (".to",), _prep_cvta),
    "isspacep": spec(isspacep, "int", _SPACES, lambda i, d, c: need(i, 2, 0)),
    "cp": spec(cp_dispatch, "cp_async", _CPMODS, _prep_cp_any, hints=True),
}
