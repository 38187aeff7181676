"""Loads and stores in every state space (global, shared, local, param, const, generic) with bounds and alignment
checks; faults name kernel, PTX line, CTA, thread, address and the nearest allocation."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import MemoryFault
from ptxsim.memory import GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE

_GB = np.uint64(GLOBAL_BASE)
_SW = np.uint64(SHARED_WINDOW)
_LW = np.uint64(LOCAL_WINDOW)
_PW = np.uint64(PARAM_WINDOW)
_WS = np.uint64(WINDOW_SIZE)


_WINDOWS = (("shared", _SW), ("local", _LW), ("kparam", _PW))


def _lane_sel(lanes, mask):
    if isinstance(lanes, slice):
        return np.flatnonzero(mask)
    return lanes[mask]


def regions(st, ins, space, addr, lanes):
    """Split an access into (space, buf, phys, sub-lanes, index-into-addr or None, raw address) per state space."""
    if space == "":
        if addr.size:
            lo, hi = addr.min(), addr.max()
            if lo >= _GB and hi < _SW:
                return [_region(st, "global", addr, lanes, ins)]
            for sp, win in _WINDOWS:  # every lane in one window (a generic wmma or ld of shared memory)
                if lo >= win and hi < win + _WS:
                    return [_region(st, sp, addr - win, lanes, ins)]
        in_s = (addr >= _SW) & (addr < _SW + _WS)
        in_l = (addr >= _LW) & (addr < _LW + _WS)
        in_p = (addr >= _PW) & (addr < _PW + _WS)  # kernel parameters (cvta.param), read-only
        out = []
        for sp, mask, win in (("shared", in_s, _SW), ("local", in_l, _LW), ("kparam", in_p, _PW),
                              ("global", ~(in_s | in_l | in_p), None)):
            if mask.any():
                idx = np.flatnonzero(mask)
                sub = addr[idx] - win if win is not None else addr[idx]
                r = _region(st, sp, sub, _lane_sel(lanes, mask), ins)
                out.append(r[:4] + (idx, r[5]))
        return out
    if space == "const":
        space = "global"
    return [_region(st, space, addr, lanes, ins)]


def _region(st, space, addr, lanes, ins=None):
    if space == "global":
        st.launch.gmem.touch(addr - _GB)  # lazy buffers: fill the pages this access lands on
        return ("global", st.launch.gmem.data, addr - _GB, lanes, None, addr)
    if space == "shared":
        if st.cluster is not None:  # shared::cluster addresses may name a peer CTA's shared memory
            return st.cluster.shared_region(st, addr, lanes, ins)
        return ("shared", st.smem, st.smem_base[lanes] + addr, lanes, None, addr)
    if space == "local":
        return ("local", st.lmem, st.lmem_base[lanes] + addr, lanes, None, addr)
    if space == "fparam":
        return ("fparam", st.fmem, st.fmem_base[lanes] + addr, lanes, None, addr)
    if space == "kparam":
        return ("kparam", st.launch.param_buf, addr, lanes, None, addr)
    raise MemoryFault(f"unknown state space {space!r}", space=space)


_LIMITS = {"global": lambda st: st.launch.gmem.top, "shared": lambda st: st.shared_size,
           "local": lambda st: st.local_size, "fparam": lambda st: st.frame_size,
           "kparam": lambda st: st.prog.param_bytes}


def _limit(st, space):
    return _LIMITS[space](st)


def _all_ok(st, space, addr, nbytes, lim) -> bool:
    """The common case in three reductions: every lane aligned and inside its space (for global: all in one live
    allocation). False means: look lane by lane."""
    if lim < nbytes or nbytes & (nbytes - 1) or (addr & np.uint64(nbytes - 1)).any():
        return False
    rel = addr - _GB if space == "global" else addr
    hi = int(rel.max())
    if hi > lim - nbytes:
        return False
    return space != "global" or st.launch.gmem.state.live_span(int(rel.min()), hi + nbytes - 1)


def check(st, ins, space, addr, lanes, nbytes, what):
    """Raise MemoryFault if any lane's [addr, addr+nbytes) is outside its space or misaligned to nbytes."""
    if addr.size == 0:
        return
    if _all_ok(st, space, addr, nbytes, _limit(st, space)):
        return None
    mis = (addr & np.uint64(nbytes - 1)) != 0 if nbytes & (nbytes - 1) == 0 else np.zeros(addr.shape, bool)
    lim = _limit(st, space)
    rel = addr - _GB if space == "global" else addr
    oob = rel > np.uint64(lim - nbytes) if lim >= nbytes else np.ones(addr.shape, bool)
    if space == "global" and not oob.any():  # inside the heap: must also be inside a live allocation
        state = st.launch.gmem.state
        o = rel.astype(np.int64)
        # NOTE: a warp's accesses nearly always fall in one allocation: one lookup instead of one per lane
        if not state.live_span(int(o.min()), int(o.max()) + nbytes - 1):
            oob = (state[o] != 1) | (state[o + (nbytes - 1)] != 1)
    bad = mis | oob
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        lane = int(st.lane_array(lanes)[i])
        a = int(addr[i])
        kind = "misaligned" if mis[i] and not oob[i] else "out-of-bounds"
        if kind != "misaligned" and space == "global":
            o = int(rel[i])
            if 0 <= o < len(st.launch.gmem.state) and st.launch.gmem.state[o] == 2:
                kind = "use-after-free"
        mc = st.launch.memcheck
        if mc is not None:
            mc.on_fault(st, ins, space, addr, lanes, bad, f"{kind} {what}", nbytes)
            return bad  # report mode: the caller skips these lanes
        raise fault(st, ins, space, a, nbytes, lane, f"{kind} {what}", aligned_to=nbytes if kind == "misaligned" else 0)
    return None


def fault(st, ins, space, addr, nbytes, lane, what, aligned_to=0):
    cta, tid = st.where(lane)
    if space == "global":
        near = st.launch.gmem.describe(addr)
        loc = f"global address {addr:#x} ({near})"
    else:
        loc = f"{space} address {addr:#x} (the {space} window holds {_limit(st, space)} bytes)"
    extra = f"; a {nbytes}-byte access must be {aligned_to}-byte aligned" if aligned_to else ""
    msg = (f"{what} of {nbytes} bytes in kernel {st.prog.name} at PTX line {ins.line} (`{ins.text}`), "
           f"CTA {cta}, thread {tid}: {loc}{extra}")
    return MemoryFault(msg, space=space, addr=addr, size=nbytes, cta=cta, thread=tid, line=ins.line,
                       kernel=st.prog.name)


def load(st, ins, space, addr, lanes, dtype, n=1):
    """Values at addr (vector of n elements of dtype, contiguous). Returns [count] or [count, n]."""
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    parts = regions(st, ins, space, addr, lanes)
    out = None
    for sp, buf, phys, sub, idx, raw in parts:
        bad = check(st, ins, sp, raw, sub, size * n, "load")
        if bad is not None:
            okl = ~bad
        if bad is not None:
            phys = np.where(bad, np.uint64(0), phys)
        vals = _gather(buf, phys, dtype, n)
        if bad is not None:
            vals[bad] = 0
            raw_h, sub_h = raw[okl], st.lane_array(sub)[okl]
        else:
            raw_h, sub_h = raw, sub
        for h in st.hooks:
            h.on_access(st, ins, sp, raw_h, sub_h, size * n, False)
        if len(parts) == 1:
            return vals
        if out is None:
            out = np.zeros((len(addr), n) if n > 1 else len(addr), dtype)
        out[idx] = vals
    return out


# widths a vector access is moved as one unit of (a 4-, 8- or 16-byte row instead of n fancy-indexed elements:
# 20x faster for ld.shared.v4 and cp.async 16)
_WIDE = {4: np.dtype(np.uint32), 8: np.dtype(np.uint64), 16: np.dtype("V16")}


def _shift(size: int) -> np.uint64:
    return np.uint64(size.bit_length() - 1)


def _rows(buf, phys, width: int):
    """(buf viewed as width-byte units, unit index per lane), or None when the buffer or an address is not aligned to
    width (every vector access is checked aligned to its size; the buffers' bases are 16-byte aligned)."""
    wide = _WIDE.get(width)
    if wide is None or buf.nbytes % width or (phys & np.uint64(width - 1)).any():
        return None
    return buf.view(wide), (phys >> _shift(width)).view(np.int64)  # offsets < 2^63: the same values


def _gather(buf, phys, dtype, n):
    size = dtype.itemsize
    phys = phys.astype(np.uint64, copy=False)
    view = buf.view(dtype)
    if n == 1:
        return view[(phys >> _shift(size)).view(np.int64)]
    rows = _rows(buf, phys, size * n)
    if rows is not None:
        return rows[0][rows[1]].view(dtype).reshape(-1, n)
    base = (phys >> _shift(size)).astype(np.int64)
    return view[base[:, None] + np.arange(n)]


def copy_rows(buf, phys, data) -> None:
    """buf[phys[i] : phys[i] + w] = data[i] for uint8 data [count, w] (cp.async completing): whole aligned units
    when it can (colliding rows: the last wins, as byte by byte)."""
    rows = _rows(buf, phys.astype(np.uint64), data.shape[1])
    if rows is not None:
        rows[0][rows[1]] = np.ascontiguousarray(data).view(rows[0].dtype).reshape(-1)
        return
    buf[phys[:, None] + np.arange(data.shape[1])] = data


def store(st, ins, space, addr, lanes, vals, dtype, n=1):
    """Store vals ([count] or [count, n] of dtype) at addr. Colliding lanes: the highest lane wins."""
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    parts = regions(st, ins, space, addr, lanes)
    st.mem_writes += 1
    for sp, buf, phys, sub, idx, raw in parts:
        if sp == "kparam":  # a generic store into the kernel parameters (ptxas refuses st.param in a kernel)
            raise fault(st, ins, sp, int(raw[0]), size * n, int(st.lane_array(sub)[0]), "read-only store")
        bad = check(st, ins, sp, raw, sub, size * n, "store")
        v = vals if idx is None else vals[idx]
        if bad is not None:
            keep = ~bad
            raw, phys, v = raw[keep], phys[keep], np.asarray(v)[keep]
            sub = st.lane_array(sub)[keep]
        for h in st.hooks:
            h.on_access(st, ins, sp, raw, sub, size * n, True)
        view = buf.view(dtype)
        phys = phys.astype(np.uint64, copy=False)
        rows = _rows(buf, phys, size * n) if n > 1 and np.shape(v) == (len(phys), n) else None
        if rows is not None:  # whole rows; colliding lanes: the highest still wins (NumPy assigns in order)
            rows[0][rows[1]] = np.ascontiguousarray(v, dtype).view(rows[0].dtype).reshape(-1)
        elif n == 1:
            view[(phys >> _shift(size)).astype(np.int64)] = v
        else:
            view[(phys >> _shift(size)).astype(np.int64)[:, None] + np.arange(n)] = v
        if sp == "global" and st.launch.track_written:
            w = st.launch.gmem.written
            for k in range(size * n):
                w[(phys + np.uint64(k)).astype(np.int64)] = True
