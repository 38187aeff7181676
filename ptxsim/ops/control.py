"""Control flow: bra, call, ret, exit, trap and hint no-ops. Handlers set the pc of their (active) lanes."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import CallDepthExceeded, PtxSimError
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import FUNC, IMM, LABEL, LIST, REG
from ptxsim.ptxtypes import TYPES


def bra(st, ins, lanes):
    st.pc[lanes] = ins.target


def exit_(st, ins, lanes):
    st.sched.exit(lanes, ins)


def _copy_frame(st, lanes, src_off, dst_off, nbytes):
    base = st.fmem_base[lanes].astype(np.int64)
    k = np.arange(nbytes)
    st.fmem[(base + dst_off)[:, None] + k] = st.fmem[(base + src_off)[:, None] + k]


def call(st, ins, lanes):
    la = st.lane_array(lanes)
    _push(st, ins, la)
    frame = ins.aux.save
    if frame is not None:  # a recursive callee: this activation's registers and frame are saved until it returns
        _save(st, frame, la)
    for kind, src, dst, nbytes in ins.aux.args:
        if kind == "param":
            _copy_frame(st, la, src, dst, nbytes)
        else:  # register or immediate argument: store its value into the callee's param slot
            t = TYPES[f"b{nbytes * 8}"]
            v = np.broadcast_to(np.asarray(st.read(src, la, t)), (len(la),)).astype(t.dtype)
            base = st.fmem_base[la].astype(np.int64) + dst
            st.fmem.view(np.uint8)[base[:, None] + np.arange(nbytes)] = v.view(np.uint8).reshape(-1, nbytes)
    st.pc[la] = ins.target


def _push(st, ins, la):
    """Record the call site per lane (growing the stack up to the call-depth limit)."""
    limit = st.prog_max_depth
    if st.call_stack is None or len(st.call_stack) == 0:
        st.call_stack = np.full((min(limit, 8), st.nlanes), -1, np.int32)
    d = st.depth[la]
    deepest = int(d.max()) if d.size else 0
    if deepest >= st.call_stack.shape[0]:
        if deepest >= limit:
            lane = int(la[int(np.argmax(d))])
            cta, tid = st.where(lane)
            raise CallDepthExceeded(
                f"kernel {st.prog.name}: `{ins.text}` at PTX line {ins.line} (CTA {cta}, thread {tid}) would nest "
                f"{deepest + 1} calls deep; the call-depth limit is {limit} (recursion without a base case? raise it "
                "with PTXSIM_MAX_CALL_DEPTH)")
        grown = np.full((min(limit, 2 * st.call_stack.shape[0]), st.nlanes), -1, np.int32)
        grown[: st.call_stack.shape[0]] = st.call_stack
        st.call_stack = grown
    st.call_stack[d, la] = ins.pc
    st.depth[la] += 1


def _bytes(base, ranges):
    """Byte indices [lanes, n] of the (offset, nbytes) ranges above each lane's base."""
    idx = np.concatenate([np.arange(off, off + n) for off, n in ranges]) if ranges else np.zeros(0, np.int64)
    return base.astype(np.int64)[:, None] + idx


def _key(st, lanes):
    return lanes.astype(np.int64) * (1 << 20) + st.depth[lanes]  # (lane, depth of the activation)


def _save(st, frame, la):
    rec = {"key": _key(st, la), "regs": [st.regs[r][la].copy() for r in frame.regs],
           "fparam": st.fmem[_bytes(st.fmem_base[la], frame.fparam)],
           "local": st.lmem[_bytes(st.lmem_base[la], frame.local)]}
    st.saved.setdefault(frame.name, []).append(rec)


def _restore(st, frame, sub):
    """Put back what _save kept for lanes `sub` returning from an activation of `frame`."""
    want = _key(st, sub)
    keep = []
    for rec in st.saved.get(frame.name, ()):
        m = np.isin(rec["key"], want)
        if m.any():
            lanes = rec["key"][m] >> 20
            for r, vals in zip(frame.regs, rec["regs"], strict=True):
                st.regs[r][lanes] = vals[m]
            st.fmem[_bytes(st.fmem_base[lanes], frame.fparam)] = rec["fparam"][m]
            st.lmem[_bytes(st.lmem_base[lanes], frame.local)] = rec["local"][m]
        if not m.all():
            keep.append({"key": rec["key"][~m], "regs": [v[~m] for v in rec["regs"]], "fparam": rec["fparam"][~m],
                         "local": rec["local"][~m]})
    st.saved[frame.name] = keep


def ret(st, ins, lanes):
    la = st.lane_array(lanes)
    d = st.depth[la]
    top = d == 0
    if top.any():
        st.sched.exit(la[top], ins)
    la = la[~top]
    if la.size == 0:
        return
    sites = st.call_stack[st.depth[la] - 1, la]
    for site in np.unique(sites):
        sub = la[sites == site]
        cins = st.prog.instrs[site]
        results = []  # read every return value before a recursive callee's frame is restored over it
        for kind, src, dst, nbytes in cins.aux.rets:
            if kind == "param":
                base = st.fmem_base[sub].astype(np.int64)
                results.append((kind, dst, st.fmem[(base + src)[:, None] + np.arange(nbytes)], nbytes))
            else:
                base = st.fmem_base[sub].astype(np.int64) + src
                results.append((kind, dst, st.fmem[base[:, None] + np.arange(nbytes)], nbytes))
        frame = cins.aux.save
        if frame is not None:
            _restore(st, frame, sub)
        for kind, dst, raw, nbytes in results:
            if kind == "param":
                base = st.fmem_base[sub].astype(np.int64)
                st.fmem[(base + dst)[:, None] + np.arange(nbytes)] = raw
            else:
                t = TYPES[f"b{nbytes * 8}"] if dst.bits != 1 else TYPES["pred"]
                st.write(dst, sub, np.ascontiguousarray(raw).view(TYPES[f"b{nbytes * 8}"].dtype).reshape(-1), t)
        st.depth[sub] -= 1
        st.pc[sub] = site + 1


def trap(st, ins, lanes):
    la = st.lane_array(lanes)
    cta, tid = st.where(int(la[0]))
    raise PtxSimError(f"trap executed in kernel {st.prog.name} at PTX line {ins.line}, CTA {cta}, thread {tid}")


def nop(st, ins, lanes):
    """Hints with no architectural effect (nanosleep, pmevent)."""


def _prep_bra(ins, dec, ctx):
    if len(ins.ops) != 1 or ins.ops[0].kind != LABEL:
        raise unsupported(ins, "bra needs one label operand (indirect branches are not supported)")
    ins.target = ins.ops[0].value


def _prep_call(ins, dec, ctx):
    ops = list(ins.ops)
    rets_l, args_l = [], []
    if ops and ops[0].kind == LIST:
        rets_l = list(ops.pop(0).items)
    if not ops or ops[0].kind != FUNC:
        raise unsupported(ins, "indirect calls (through a register) are not supported")
    callee = ops.pop(0).name
    if ops and ops[0].kind == LIST:
        args_l = list(ops.pop(0).items)
    pslots, rslots = dec.func_frames[callee]
    if len(args_l) != len(pslots) or len(rets_l) != len(rslots):
        raise unsupported(ins, f"{callee} takes {len(pslots)} argument(s) and {len(rslots)} return value(s); the "
                          f"call passes {len(args_l)} and {len(rets_l)}")

    def conv(items, slots, is_ret):
        out = []
        for o, s in zip(items, slots, strict=True):
            if o.kind == IMM and o.name not in ("int", "f32", "f64"):  # a .param variable (frame offset)
                out.append(("param", s.offset, o.value, s.nbytes) if is_ret else ("param", o.value, s.offset, s.nbytes))
            elif o.kind in (REG, IMM):
                out.append(("reg", s.offset, o, s.nbytes) if is_ret else ("reg", o, s.offset, s.nbytes))
            else:
                raise unsupported(ins, f"call operand {o!r} is not a .param variable, register or immediate")
        return out

    ins.aux.args = conv(args_l, pslots, False)
    ins.aux.rets = conv(rets_l, rslots, True)
    ins.aux.callee = callee
    dec.pending_calls.append(ins)


OPS = {
    "bra": spec(bra, "control", (".uni",), _prep_bra, control=True),
    "exit": spec(exit_, "control", (), None, control=True),
    "ret": spec(ret, "control", (".uni",), None, control=True),
    "call": spec(call, "control", (".uni",), _prep_call, control=True),
    "trap": spec(trap, "control", (), None, control=True),
    "brkpt": spec(nop, "control", (), None),
    "nanosleep": spec(nop, "other", (), None),
    "pmevent": spec(nop, "other", (".mask",), None),
}
