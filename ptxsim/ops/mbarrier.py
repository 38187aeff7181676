"""mbarrier (init, inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait, .parity,
pending_count) on .shared::cta / .shared::cluster / generic b64 objects (setmaxnreg: ops/setmaxnreg.py).

State lives in ptxsim/mbarriers.py. A thread whose test_wait / try_wait finds its phase incomplete blocks until the
phase completes and then gets true. Under strict timing (st.strict) its first try at each wait (pc, phase) whose
phase is incomplete returns false instead (a missing retry loop then shows); the next try completes the barrier's
in-flight bulk copies and, if the phase is still incomplete, blocks.
# NOTE: blocking is one legal schedule of both instructions (a thread may be delayed for any time); it lets a
# consumer loop on try_wait while the producer warp, further down the program, runs under lowest-pc scheduling.
# A phase that can never complete is then a deadlock that names the barrier.
"""
from __future__ import annotations

import numpy as np

from ptxsim import access
from ptxsim.clusters import OFFSET_MASK
from ptxsim.errors import DecodeError, MemoryFault
from ptxsim.mbarriers import MbarrierTable
from ptxsim.memory import SHARED_WINDOW
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import ADDR, IMM, REG, SINK
from ptxsim.ptxtypes import TYPES

U32, U64, PRED = TYPES["u32"], TYPES["u64"], TYPES["pred"]
_SW = np.uint64(SHARED_WINDOW)


def shared_offsets(st, ins, op, lanes, nbytes: int, what: str, generic: bool | None = None) -> tuple:
    """(offset, base) per lane of an address operand in .shared::cta / .shared::cluster or (generic=True, default:
    the instruction names no state space) generic space, checked for bounds and alignment: the byte in the batch's
    shared-memory array is base + offset, base that of the CTA the address names (a peer's with clusters)."""
    addr = st.address(op, lanes)
    if ins.space != "shared" if generic is None else generic:  # must point into the shared window
        outside = (addr < _SW) | (addr >= _SW + np.uint64(st.shared_size))
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            cta, tid = st.where(int(st.lane_array(lanes)[i]))
            raise MemoryFault(f"{what} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} "
                              f"thread {tid}: generic address {int(addr[i]):#x} is not in the CTA's shared window "
                              f"[{SHARED_WINDOW:#x}, {SHARED_WINDOW + st.shared_size:#x})", space="generic",
                              addr=int(addr[i]), size=nbytes, cta=cta, thread=tid, line=ins.line, kernel=st.prog.name)
        addr = addr - _SW
    base = st.smem_base[lanes]
    if st.cluster is not None:
        base = (st.cluster.target_slot(st, addr, lanes, ins) * st.smem_stride).astype(np.uint64)
        addr = addr & np.uint64(OFFSET_MASK)
    access.check(st, ins, "shared", addr, lanes, nbytes, what)
    return addr, base


def _phys(st, ins, lanes, op_index: int):
    off, base = shared_offsets(st, ins, ins.ops[op_index], lanes, 8, "mbarrier object")
    return (base + off).astype(np.int64)


def _u(st, op, lanes, ty=U32) -> np.ndarray:
    return np.broadcast_to(np.asarray(st.read(op, lanes, ty)), (st.count(lanes),)).astype(np.int64)


def m_init(st, ins, lanes):
    MbarrierTable.of(st).init(ins, _phys(st, ins, lanes, 0), st.lane_array(lanes), _u(st, ins.ops[1], lanes))


def m_inval(st, ins, lanes):
    MbarrierTable.of(st).inval(_phys(st, ins, lanes, 0))


def m_arrive(st, ins, lanes):
    n = st.count(lanes)
    a = ins.aux
    count = _u(st, ins.ops[2], lanes) if a.count_op else np.ones(n, np.int64)
    tx = _u(st, ins.ops[2], lanes) if a.expect_tx else np.zeros(n, np.int64)
    if a.expect_tx:
        count = np.ones(n, np.int64)
    state = MbarrierTable.of(st).arrive(ins, _phys(st, ins, lanes, 1), st.lane_array(lanes), count, tx, a.drop,
                                        a.no_complete)
    st.write(ins.ops[0], lanes, state, U64)


def m_tx(st, ins, lanes):
    sign = 1 if ins.aux.action == "expect_tx" else -1
    MbarrierTable.of(st).add_tx(ins, _phys(st, ins, lanes, 0), st.lane_array(lanes),
                                sign * _u(st, ins.ops[1], lanes))


def m_wait(st, ins, lanes):
    la = st.lane_array(lanes)
    phys = _phys(st, ins, lanes, 1)
    tab = MbarrierTable.of(st)
    token = np.broadcast_to(np.asarray(st.read(ins.ops[2], lanes, U64)), (len(la),)).astype(np.uint64)
    if tab.strict:
        result, done, want = _strict_wait(st, ins, tab, la, phys, token)
    else:
        done, want = tab.done(ins, phys, la, token, ins.aux.parity)
        result = np.ones(len(la), np.bool_)  # true now, or when the blocked ones resume
    tab.note_wait(ins.pc, phys, want, result)
    st.write(ins.ops[0], lanes, result, PRED)
    if not done.all():
        tab.block(la[~done], phys[~done], want[~done])


def _strict_wait(st, ins, tab, la, phys, token) -> tuple:
    """Strict: (result, done, phase waited for) per lane. A lane's first try at this (pc, phase) returns false
    whether or not the phase is complete (a try_wait may time out, and a phase completed by other threads' arrivals
    may not be seen yet), so a missing retry loop shows; the thread has then observed nothing. At a retry the
    barrier's in-flight copies complete; lanes whose phase is still incomplete block (true when they resume)."""
    want = tab.wanted(ins, phys, la, token, ins.aux.parity)
    first = (tab.false_pc[la] != ins.pc) | (tab.false_want[la] != want)
    tab.false_pc[la[first]] = ins.pc
    tab.false_want[la[first]] = want[first]
    done = first.copy()  # lanes returning false are not blocked
    retry = ~first
    if retry.any():
        for p, _ in tab.groups(phys[retry]):
            tab.flush(tab.bars[p])
        now, _ = tab.done(ins, phys[retry], la[retry], token[retry], ins.aux.parity)
        done[retry] = now
    return ~first, done, want


def m_pending(st, ins, lanes):
    state = np.asarray(st.read(ins.ops[1], lanes, U64)).astype(np.uint64)
    st.write(ins.ops[0], lanes, np.broadcast_to(state & np.uint64(0xFFFFFFFF), (st.count(lanes),)).astype(np.uint32),
             U32)


# action -> (handler, operand count(s), index of the [mbarrier] operand, blocks)
_ACTIONS = {
    "init": (m_init, (2,), 0, False),
    "inval": (m_inval, (1,), 0, False),
    "arrive": (m_arrive, (2, 3), 1, False),
    "arrive_drop": (m_arrive, (2, 3), 1, False),
    "expect_tx": (m_tx, (2,), 0, False),
    "complete_tx": (m_tx, (2,), 0, False),
    "test_wait": (m_wait, (3,), 1, True),
    "try_wait": (m_wait, (3, 4), 1, True),
    "pending_count": (m_pending, (2,), -1, False),
}


def _prep_mbarrier(ins, dec, ctx):
    acts = [m[1:] for m in ins.modlist if m[1:] in _ACTIONS]
    expect = ".expect_tx" in ins.mods
    if acts and acts[0] in ("arrive", "arrive_drop") and expect:
        acts = [a for a in acts if a != "expect_tx"]
    if len(acts) != 1:
        raise unsupported(ins, f"mbarrier needs one of {', '.join('.' + a for a in _ACTIONS)}")
    action = acts[0]
    handler, nops, addr_at, blocks = _ACTIONS[action]
    if len(ins.ops) not in nops:
        raise DecodeError(f"mbarrier.{action} takes {' or '.join(map(str, nops))} operands, got {len(ins.ops)}")
    if expect and action in ("arrive", "arrive_drop") and len(ins.ops) != 3:
        raise DecodeError(f"mbarrier.{action}.expect_tx takes state, [address], txCount; got {len(ins.ops)} operands")
    if [t.name for t in ins.types] != ["b64"]:
        raise unsupported(ins, "mbarrier objects are .b64")
    if addr_at >= 0 and ins.ops[addr_at].kind != ADDR:
        raise DecodeError(f"mbarrier.{action}: operand {addr_at + 1} must be the [address] of the mbarrier object")
    dst = ins.ops[0]
    if action in ("test_wait", "try_wait") and (dst.kind != REG or dst.bits != 1):
        raise DecodeError(f"mbarrier.{action}: the first operand must be a predicate register")
    if action in ("arrive", "arrive_drop") and dst.kind not in (REG, SINK):
        raise DecodeError(f"mbarrier.{action}: the first operand must be a .b64 register or _")
    if action == "init" and ins.ops[1].kind == IMM and not 1 <= int(ins.ops[1].value) < 1 << 20:
        raise DecodeError(f"mbarrier.init count {ins.ops[1].value}; expected 1 .. {(1 << 20) - 1}")
    if ".shared::cluster" in ins.mods and action not in ("arrive", "arrive_drop", "expect_tx", "complete_tx"):
        raise unsupported(ins, f"mbarrier.{action} on a .shared::cluster address")
    ins.handler = handler
    # NOTE: an arrival may complete a phase and release waiters at a lower pc; ending the straight-line run there lets
    # the lowest-pc-first schedule run them next (a producer refilling a stage released early must get to run)
    ins.control = blocks or action in ("arrive", "arrive_drop", "expect_tx", "complete_tx")
    ins.aux.update(action=action, parity=".parity" in ins.mods, expect_tx=expect and action != "expect_tx",
                   count_op=len(ins.ops) == 3 and not expect and action in ("arrive", "arrive_drop"),
                   drop=action == "arrive_drop", no_complete=".noComplete" in ins.mods)
    ins.klass = "other"


_MBAR_MODS = tuple("." + a for a in _ACTIONS) + (
    ".parity", ".shared", ".shared::cta", ".shared::cluster", ".release", ".acquire", ".relaxed", ".cta", ".cluster",
    ".noComplete")
OPS = {
    "mbarrier": spec(m_arrive, "other", _MBAR_MODS, _prep_mbarrier, control=True),
}
