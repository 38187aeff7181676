"""cp.async.bulk: global -> shared with .mbarrier::complete_tx::bytes, shared -> global with bulk groups
(commit_group / wait_group{.read}), and cp.async.bulk.tensor 1-5D tiles through a tensor map (ptxsim/tensormap.py)
with out-of-bounds fill and swizzle none / 32B / 64B / 128B, loads (.tile) and stores.

Each active thread issues its own copy (kernels elect one). A copy's bytes land when it is issued (one legal
timing); a load's completion is signalled as complete_tx on its mbarrier, and racecheck / initcheck treat the
destination as in flight until that mbarrier's phase completes. Under strict timing (st.strict) the destination holds
poison (POISON bytes) from issue until a thread observes the phase that completed the copy (ptxsim/mbarriers.py), and
a store reads its shared source and writes global memory only when its bulk group is waited for (or at the end of
the batch, if never).
"""
from __future__ import annotations

import numpy as np

from ptxsim import access, tensormap
from ptxsim.errors import DecodeError, MemoryFault, PtxSimError
from ptxsim.mbarriers import MbarrierTable
from ptxsim.memory import GLOBAL_BASE, PARAM_WINDOW, WINDOW_SIZE
from ptxsim.ops.common import unsupported
from ptxsim.ops.mbarrier import shared_offsets
from ptxsim.ops.opspec import Spec
from ptxsim.program import ADDR, IMM, VEC
from ptxsim.ptxtypes import TYPES

U32, S32, U64 = TYPES["u32"], TYPES["s32"], TYPES["u64"]
_GB = np.uint64(GLOBAL_BASE)
BULK_ALIGN = 16  # bytes: addresses and sizes of cp.async.bulk
POISON = 0xFF  # strict timing: the bytes of an async destination in flight (NaN in every float format)


def _lanes(st, lanes):
    return st.lane_array(lanes)


def _in_bounds(*bads) -> np.ndarray | None:
    """Lanes access.check let through: None when every check passed (it returns a mask only in memcheck's report
    mode, where the copy then skips the reported lanes instead of touching memory outside the space)."""
    bad = None
    for b in bads:
        if b is not None:
            bad = b if bad is None else bad | b
    return None if bad is None else ~bad


def _global_range(st, ins, addr: np.ndarray, la: np.ndarray, size: int, what: str) -> tuple:
    """(offsets into the heap, in-bounds mask or None) of checked [addr, addr + size) global ranges (16-byte
    aligned)."""
    first = access.check(st, ins, "global", addr, la, BULK_ALIGN, what)
    last = access.check(st, ins, "global", addr + np.uint64(size - BULK_ALIGN), la, BULK_ALIGN, what)
    return (addr - _GB).astype(np.int64), _in_bounds(first, last)


def _shared_range(st, ins, op, la, size: int, what: str, align: int = BULK_ALIGN, rule: str = "") -> tuple:
    """(offset, base, in-bounds mask or None) per lane of a checked shared [offset, offset + size) range (base: the
    named CTA's); an offset off its `align` boundary is a MemoryFault that names `rule`."""
    off, base = shared_offsets(st, ins, op, la, BULK_ALIGN, what, generic=False)
    bad = off % np.uint64(align) != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        e = access.fault(st, ins, "shared", int(off[i]), size, int(la[i]), f"misaligned {what}", aligned_to=align)
        if rule:
            e.args = (f"{e.args[0]} ({rule})",)
        raise e
    # NOTE: shared_offsets checked the first 16 bytes; a range whose start is outside also ends outside
    last = access.check(st, ins, "shared", off + np.uint64(size - BULK_ALIGN), la, BULK_ALIGN, what)
    return off, base, _in_bounds(last)


def _touch_ranges(st, offsets: np.ndarray, size: int) -> None:
    """Fill the lazy pages under each [offset, offset + size) before a bulk copy reads or writes them (a write into a
    pending page must land on its contents, or the page's later fill would overwrite it)."""
    for off in np.unique(offsets):
        st.launch.gmem.touch_range(int(off), size)


def _hooks_global(st, ins, off: np.ndarray, la: np.ndarray, nbytes: int, is_store: bool) -> None:
    for h in st.hooks:
        h.on_access(st, ins, "global", off.astype(np.uint64) + _GB, la, nbytes, is_store)


def _targets(st, ins, la, dst_off, dbase, mbar_op, mask_op):
    """(lane, shared byte of the destination, shared byte of its mbarrier) per landing copy: one per lane, or with
    .multicast::cluster one per CTA in the lane's ctaMask, at the same CTA-relative offsets."""
    boff, bbase = shared_offsets(st, ins, mbar_op, la, 8, "mbarrier object", generic=False)
    if mask_op is None:
        return [(int(lane), int(dbase[i] + dst_off[i]), int(bbase[i] + boff[i])) for i, lane in enumerate(la)]
    masks = np.broadcast_to(np.asarray(st.read(mask_op, la, TYPES["u16"])), (len(la),)).astype(np.int64)
    size = 1 if st.cluster is None else st.cluster.size
    out = []
    for i, lane in enumerate(la):
        m = int(masks[i])
        if m == 0 or m >> size:
            cta, tid = st.where(int(lane))
            raise PtxSimError(f"{ins.op} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} "
                              f"thread {tid}: ctaMask {m:#x}; expected a non-empty subset of the cluster's {size} "
                              "CTA rank(s)")
        first = int(st.slot[lane]) - (0 if st.cluster is None else int(st.cluster.rank[st.slot[lane]]))
        for r in range(size):
            if m >> r & 1:
                if st.cluster is not None:
                    st.cluster.check_alive(st, ins, np.array([first + r]), np.array([lane]), dst_off[i])
                base = (first + r) * st.smem_stride
                out.append((int(lane), base + int(dst_off[i]), base + int(boff[i])))
    return out


def _land(st, ins, la, dst_off, dbase, data: np.ndarray, mbar_op, mask_op=None, ok=None) -> None:
    """Write data [n, size] (row i from lane la[i]) to its destination(s) and complete_tx their mbarriers.
    ok: lanes whose destination passed memcheck (None: all); in report mode a reported copy writes nothing but
    still completes its bytes, so the run goes on to later findings instead of a deadlock."""
    st.mem_writes += 1
    tab = MbarrierTable.of(st)
    row = {int(lane): i for i, lane in enumerate(la)}
    skip = set() if ok is None else {int(lane) for lane in la[~ok]}
    for lane, phys, bar in _targets(st, ins, la, dst_off, dbase, mbar_op, mask_op):
        d = data[row[lane]][None, :]
        if lane in skip:
            tab.complete_copy(ins, bar, lane, d.shape[1], None)
            continue
        rec = {"lanes": np.array([lane]), "phys": np.array([phys], np.int64), "data": d, "group": np.zeros(1),
               "ins": ins}
        for h in st.hooks:
            h.on_async_issue(st, rec)
        if st.strict:
            st.smem[phys + np.arange(d.shape[1])] = POISON
            tab.start_copy(ins, bar, lane, d.shape[1], rec)
            continue
        st.smem[phys + np.arange(d.shape[1])] = d[0]
        tab.complete_copy(ins, bar, lane, d.shape[1], rec if st.hooks else None)


# -- cp.async.bulk (contiguous) ---------------------------------------------------------------------------------
def bulk_load(st, ins, lanes):
    la = _lanes(st, lanes)
    size = int(np.asarray(st.read(ins.ops[2], lanes, U32)).reshape(-1)[0])
    if size <= 0 or size % BULK_ALIGN:
        raise unsupported(ins, f"size {size}; expected a positive multiple of {BULK_ALIGN} bytes")
    dst, dbase, ok = _shared_range(st, ins, ins.ops[0], la, size, "cp.async.bulk destination")
    if ins.aux.src_space == "shared":
        src, sbase, src_ok = _shared_range(st, ins, ins.ops[1], la, size, "cp.async.bulk source")
        sp = (sbase + src).astype(np.int64)
        read = _bulk_read(st.smem, sp, size, src_ok)
    else:
        g, src_ok = _global_range(st, ins, st.address(ins.ops[1], lanes), la, size, "cp.async.bulk source")
        keep = slice(None) if src_ok is None else src_ok
        _hooks_global(st, ins, g[keep], la[keep], size, False)
        _touch_ranges(st, g[keep], size)
        read = _bulk_read(st.launch.gmem.data, g, size, src_ok)
    _land(st, ins, la, dst, dbase, read, ins.ops[3], ins.ops[4] if ins.aux.multicast else None, ok)


def _bulk_read(mem: np.ndarray, offsets: np.ndarray, size: int, ok) -> np.ndarray:
    """[n, size] bytes from mem at each offset; zeros for lanes memcheck reported (ok False)."""
    if ok is None:
        return mem[offsets[:, None] + np.arange(size)]
    data = np.zeros((len(offsets), size), np.uint8)
    data[ok] = mem[offsets[ok][:, None] + np.arange(size)]
    return data


def bulk_store(st, ins, lanes):
    la = _lanes(st, lanes)
    size = int(np.asarray(st.read(ins.ops[2], lanes, U32)).reshape(-1)[0])
    if size <= 0 or size % BULK_ALIGN:
        raise unsupported(ins, f"size {size}; expected a positive multiple of {BULK_ALIGN} bytes")
    src, sbase, src_ok = _shared_range(st, ins, ins.ops[1], la, size, "cp.async.bulk source")
    g, dst_ok = _global_range(st, ins, st.address(ins.ops[0], lanes), la, size, "cp.async.bulk destination")
    ok = _in_bounds(None if src_ok is None else ~src_ok, None if dst_ok is None else ~dst_ok)
    if ok is not None:  # memcheck's report mode: the reported copies write nothing
        la, src, sbase, g = la[ok], src[ok], sbase[ok], g[ok]
        if not la.size:
            return
    _hooks_global(st, ins, g, la, size, True)
    _touch_ranges(st, g, size)
    sp = (sbase + src).astype(np.int64)
    idx = g[:, None] + np.arange(size)
    _store(st, ins, la, idx, sp[:, None] + np.arange(size))
    for i, lane in enumerate(la):
        _source_read(st, ins, int(lane), sp[i] + np.arange(0, size, 4))


def _store(st, ins, la, gidx: np.ndarray, sidx: np.ndarray) -> None:
    """Global bytes gidx [rows, n] take shared bytes sidx (row i stored by lane la[i], or one lane for all): now, or
    under strict timing when the lane's bulk group is waited for."""
    if st.strict:
        la = np.asarray(la, np.int64)
        lanes = la if len(la) == len(gidx) else np.full(len(gidx), la[0])
        for lane in np.unique(lanes):
            m = lanes == lane
            st.bulk_stores.append({"lane": int(lane), "gidx": gidx[m], "sidx": sidx[m], "group": -1})
        return
    _write_global(st, gidx, sidx)


def _write_global(st, gidx, sidx) -> None:
    st.mem_writes += 1
    st.launch.gmem.data[gidx] = st.smem[sidx]
    if st.launch.track_written:
        st.launch.gmem.written[gidx] = True


def retire_stores(st, lanes, keep_n: int | None) -> None:
    """Strict: the bulk stores of `lanes` whose groups a wait_group keep_n retires read shared memory and land now
    (keep_n None: every pending store, at the end of the batch)."""
    if not st.bulk_stores:
        return
    mine = set(np.asarray(lanes).tolist()) if keep_n is not None else None
    left = []
    for s in st.bulk_stores:
        if mine is None or (s["lane"] in mine and 0 <= s["group"] < st.bulk_committed[s["lane"]] - keep_n):
            _write_global(st, s["gidx"], s["sidx"])
        else:
            left.append(s)
    st.bulk_stores = left


def _source_read(st, ins, lane: int, phys: np.ndarray) -> None:
    """Tell the sanitizers which shared words a bulk store reads until cp.async.bulk.wait_group.read."""
    for h in st.hooks:
        h.on_bulk(st, ins, "read", np.array([lane]), np.unique(np.asarray(phys, np.int64) >> 2))


def bulk_group(st, ins, lanes):
    """commit_group / wait_group{.read}: the stores completed when they were issued; the sanitizers retire the
    groups' source reads."""
    la = st.lane_array(lanes)
    if st.strict:
        if ins.aux.group_op == "commit":
            mine = set(la.tolist())
            for s in st.bulk_stores:
                if s["group"] < 0 and s["lane"] in mine:
                    s["group"] = int(st.bulk_committed[s["lane"]])
            st.bulk_committed[la] += 1
        else:
            retire_stores(st, la, ins.aux.n or 0)
    for h in st.hooks:
        h.on_bulk(st, ins, ins.aux.group_op, la, ins.aux.n or 0)


# -- cp.async.bulk.tensor -----------------------------------------------------------------------------------------
def _tmap(st, ins, op, lane) -> tensormap.TensorMap:
    where = f"cp.async.bulk.tensor at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}"
    if op.base is None and op.name == "kparam":  # [param] of a __grid_constant__ CUtensorMap
        raw = st.launch.param_buf[op.offset: op.offset + tensormap.SIZE]
    elif PARAM_WINDOW <= (a := int(st.address(op, np.array([lane]))[0])) < PARAM_WINDOW + WINDOW_SIZE:
        off = a - PARAM_WINDOW  # the generic address of a kernel parameter (cvta.param, as nvcc emits for &tmap)
        if off % 64 or off + tensormap.SIZE > st.prog.param_bytes:
            raise MemoryFault(f"{where}: tensor map at parameter offset {off} is not a 64-byte aligned map inside "
                              f"the {st.prog.param_bytes} bytes of kernel parameters", space="kparam", addr=a,
                              size=tensormap.SIZE, line=ins.line, kernel=st.prog.name)
        raw = st.launch.param_buf[off: off + tensormap.SIZE]
    else:
        if not GLOBAL_BASE <= a < st.launch.gmem.limit - tensormap.SIZE + 1 or a % 64:
            raise MemoryFault(f"{where}: tensor map address {a:#x} is not a 64-byte aligned map in global memory",
                              space="global", addr=a, size=tensormap.SIZE, line=ins.line, kernel=st.prog.name)
        raw = st.launch.gmem.read_bytes(a, tensormap.SIZE)
        if st.rules is not None:  # asynccheck: a map changed on the device needs tensormap-proxy ordering
            st.rules.tensormap_use(st, ins, lane, a, raw)
    tm = tensormap.decode(raw, where)
    if tm.rank != ins.aux.rank:
        raise unsupported(ins, f"the tensor map has rank {tm.rank}; the instruction is .{ins.aux.rank}d")
    if tm.swizzle and tm.box[0] * tm.esize != tm.swizzle_bytes:
        raise unsupported(ins, f"a swizzled box row of {tm.box[0] * tm.esize} bytes (ptxsim needs the row to fill "
                               f"the {tm.swizzle_bytes}-byte swizzle span)")
    return tm


def _coords(st, ins, lanes) -> np.ndarray:
    items = ins.aux.coords
    n = st.count(lanes)
    return np.stack([np.broadcast_to(np.asarray(st.read(c, lanes, S32)), (n,)).astype(np.int64) for c in items], 1)


def _box_layout(tm, base_off: int) -> np.ndarray:
    """Shared-memory byte offsets (absolute, swizzled) of each element of the box, row-major [.., count0]."""
    dense = base_off + np.arange(int(np.prod(tm.counts)), dtype=np.int64).reshape(tm.counts[::-1]) * tm.esize
    return tensormap.swizzle_offsets(dense, tm.swizzle_bytes)


def tensor_load(st, ins, lanes):
    la = _lanes(st, lanes)
    coords = _coords(st, ins, lanes)
    for i, lane in enumerate(la):
        sub = la[i:i + 1]
        tm = _tmap(st, ins, ins.aux.tmap, int(lane))
        dsts, dbase, ok = _shared_range(st, ins, ins.ops[0], sub, tm.box_bytes, "cp.async.bulk.tensor destination",
                                        *_box_alignment(tm))
        dst = int(dsts[0])
        gaddr, inb = tensormap.box_elements(tm, coords[i])
        vals = np.zeros(gaddr.shape + (tm.esize,), np.uint8)
        if tm.oob_fill == tensormap.OOB_FILL_NAN:
            vals[:] = np.frombuffer(int(tensormap.NAN_BITS[tm.esize]).to_bytes(tm.esize, "little"), np.uint8)
        rows, inb = _box_rows(st, ins, int(lane), tm, gaddr, inb, "cp.async.bulk.tensor source")
        if rows.size:
            _hooks_global(st, ins, rows, np.full(rows.size, lane), tm.esize, False)
            st.launch.gmem.touch(rows.astype(np.uint64))  # lazy pages (an element never spans two)
            vals[inb] = st.launch.gmem.data[rows[:, None] + np.arange(tm.esize)]
        # scatter the box into shared memory through the swizzle, as one landed copy
        offs = _box_layout(tm, dst)
        image = np.zeros(tm.box_bytes, np.uint8)
        image[(offs.reshape(-1) - dst)[:, None] + np.arange(tm.esize)] = vals.reshape(-1, tm.esize)
        _land(st, ins, sub, dsts, dbase, image[None, :], ins.ops[2], ins.ops[3] if ins.aux.multicast else None,
              ok)


def _box_rows(st, ins, lane: int, tm, gaddr: np.ndarray, inb: np.ndarray, what: str) -> tuple:
    """(heap offsets, mask) of the box elements inside the tensor, checked by memcheck; in its report mode the
    reported elements are dropped from both (a load reads them as zero, a store skips them)."""
    rows = gaddr[inb] - GLOBAL_BASE
    if rows.size:
        bad = access.check(st, ins, "global", rows.astype(np.uint64) + _GB, np.full(rows.size, lane), tm.esize, what)
        if bad is not None:
            inb = inb.copy()
            inb[inb] = ~bad
            rows = rows[~bad]
    return rows, inb


def _box_alignment(tm) -> tuple:
    """(alignment, rule) of a tensor copy's shared-memory box: the swizzle pattern's repeat, 128 bytes unswizzled."""
    align = tensormap.SWIZZLE_REPEAT[tm.swizzle_bytes]
    if not tm.swizzle_bytes:
        return align, "a tensor copy's shared-memory box is 128-byte aligned"
    return align, (f"a {tm.swizzle_bytes}B-swizzled box must start on a {align}-byte boundary, where the swizzle "
                   "pattern repeats")


def tensor_store(st, ins, lanes):
    la = _lanes(st, lanes)
    coords = _coords(st, ins, lanes)
    for i, lane in enumerate(la):
        sub = la[i:i + 1]
        tm = _tmap(st, ins, ins.aux.tmap, int(lane))
        srcs, sbase, ok = _shared_range(st, ins, ins.ops[1], sub, tm.box_bytes, "cp.async.bulk.tensor source",
                                        *_box_alignment(tm))
        if ok is not None and not ok[0]:
            continue  # memcheck's report mode: the reported copy reads and writes nothing
        src = int(srcs[0])
        gaddr, inb = tensormap.box_elements(tm, coords[i])
        offs = _box_layout(tm, src) + int(sbase[0])
        rows, inb = _box_rows(st, ins, int(lane), tm, gaddr, inb, "cp.async.bulk.tensor destination")
        if rows.size:  # out-of-bounds elements are not written
            _hooks_global(st, ins, rows, np.full(rows.size, lane), tm.esize, True)
            st.launch.gmem.touch(rows.astype(np.uint64))
            idx = rows[:, None] + np.arange(tm.esize)
            _store(st, ins, np.array([lane]), idx, offs[inb][:, None] + np.arange(tm.esize))
            _source_read(st, ins, int(lane), offs[inb])


# -- decode --------------------------------------------------------------------------------------------------------
_SPACE = {".global": "global", ".shared::cluster": "shared", ".shared::cta": "shared", ".shared": "shared"}


def _prep_bulk(ins, dec, ctx):
    mods = ins.mods
    if ".commit_group" in mods or ".wait_group" in mods:
        if ".wait_group" in mods and (len(ins.ops) != 1 or ins.ops[0].kind != IMM):
            raise DecodeError("cp.async.bulk.wait_group takes one immediate group count")
        ins.handler, ins.klass = bulk_group, "cp_async"
        ins.aux.group_op = "commit" if ".commit_group" in mods else "wait"
        ins.aux.n = int(ins.ops[0].value) if ins.ops else 0
        return
    spaces = [_SPACE[m] for m in ins.modlist if m in _SPACE]
    if len(spaces) != 2:
        raise unsupported(ins, "cp.async.bulk names .dst then .src state spaces")
    dst, src = spaces
    ins.aux.multicast = ".multicast::cluster" in mods
    if any(m.startswith((".im2col", ".tile::")) for m in ins.modlist):
        raise unsupported(ins, "im2col / gather tensor load modes (only .tile)")
    ins.aux.src_space = src
    ins.klass = "cp_async"
    to_shared = dst == "shared"
    if to_shared and ".mbarrier::complete_tx::bytes" not in mods:
        raise unsupported(ins, "a copy into shared memory completes through .mbarrier::complete_tx::bytes")
    if not to_shared and (src != "shared" or ".bulk_group" not in mods):
        raise unsupported(ins, "a copy to global memory reads .shared::cta and completes through .bulk_group")
    if ins.aux.multicast and (not to_shared or len(ins.ops) < (4 if ".tensor" in mods else 5)):
        raise DecodeError(".multicast::cluster copies into shared memory and takes a ctaMask operand after [mbar]")
    if ".tensor" in mods:
        _prep_tensor(ins, to_shared)
        return
    need_ops = 4 if to_shared else 3
    if len(ins.ops) < need_ops or ins.ops[0].kind != ADDR or ins.ops[1].kind != ADDR:
        raise DecodeError(f"cp.async.bulk takes [dst], [src], size{', [mbar]' if to_shared else ''}; "
                          f"got {len(ins.ops)} operand(s)")
    ins.handler = bulk_load if to_shared else bulk_store
    ins.space = "shared" if to_shared else "global"


def _prep_tensor(ins, to_shared: bool):
    dims = [m for m in ins.modlist if len(m) == 3 and m[1] in "12345" and m[2] == "d"]
    if len(dims) != 1:
        raise unsupported(ins, "cp.async.bulk.tensor needs one of .1d .. .5d")
    rank = int(dims[0][1])
    t_at = 1 if to_shared else 0
    top = ins.ops[t_at] if len(ins.ops) > t_at else None
    if top is None or top.kind != VEC or len(top.items) != 2 or top.items[0].kind != ADDR:
        raise DecodeError("cp.async.bulk.tensor's tensor operand is [tensorMap, {coordinates}]")
    coords = top.items[1].items if top.items[1].kind == VEC else (top.items[1],)
    if len(coords) != rank:
        raise DecodeError(f"a .{rank}d tensor copy takes {rank} coordinates, got {len(coords)}")
    if to_shared and (len(ins.ops) < 3 or ins.ops[0].kind != ADDR or ins.ops[2].kind != ADDR):
        raise DecodeError("cp.async.bulk.tensor into shared memory takes [dst], [tensorMap, {..}], [mbar]")
    if not to_shared and (len(ins.ops) != 2 or ins.ops[1].kind != ADDR):
        raise DecodeError("cp.async.bulk.tensor to global memory takes [tensorMap, {..}], [src]")
    ins.aux.update(rank=rank, tmap=top.items[0], coords=tuple(coords))
    ins.handler = tensor_load if to_shared else tensor_store
    ins.space = "shared" if to_shared else "global"


_BULK_MODS = (".bulk", ".tensor", ".1d", ".2d", ".3d", ".4d", ".5d", ".tile", ".shared::cluster", ".shared::cta",
              ".global", ".mbarrier::complete_tx::bytes", ".bulk_group", ".commit_group", ".wait_group", ".read",
              ".multicast::cluster", ".L2::cache_hint", ".async", ".im2col")


def with_bulk(cp: Spec) -> Spec:
    """The `cp` table entry extended with cp.async.bulk{.tensor} (cp.async and the rest keep their decoder)."""

    def prepare(ins, dec, ctx):
        if ".bulk" in ins.mods:
            _prep_bulk(ins, dec, ctx)
            return
        bad = [m for m in ins.modlist if m not in cp.mods and not m.startswith((".L1::", ".L2::"))]
        if bad:
            raise unsupported(ins, f"modifier(s) {' '.join(bad)} not supported for cp.async")
        if cp.prepare is not None:
            cp.prepare(ins, dec, ctx)

    return Spec(cp.handler, cp.klass, cp.mods | frozenset(_BULK_MODS), prepare, cp.control, cp.hints)
