"""Thread-block cluster instructions: barrier.cluster.arrive / .wait and mapa (state in ptxsim/clusters.py).
ld / st / atom .shared::cluster reach peer CTAs through access.regions; without a cluster launch the CTA is a
cluster of one."""
from __future__ import annotations

import numpy as np

from ptxsim.clusters import OFFSET_MASK, RANK_SHIFT
from ptxsim.errors import DecodeError, PtxSimError
from ptxsim.memory import SHARED_WINDOW
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import Spec, spec
from ptxsim.program import REG
from ptxsim.ptxtypes import TYPES

U32 = TYPES["u32"]
_SW = np.uint64(SHARED_WINDOW)


def _size(st) -> int:
    return 1 if st.cluster is None else st.cluster.size


def cluster_arrive(st, ins, lanes):
    if st.cluster is not None:
        st.cluster.arrive(st, st.lane_array(lanes), ins)


def cluster_wait(st, ins, lanes):
    if st.cluster is not None:
        st.cluster.wait(st, st.lane_array(lanes))


def mapa(st, ins, lanes):
    t = ins.types[0]
    n = st.count(lanes)
    a = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, TYPES["u64"])), (n,)).astype(np.uint64)
    rank = np.broadcast_to(np.asarray(st.read(ins.ops[2], lanes, U32)), (n,)).astype(np.uint64)
    bad = rank >= np.uint64(_size(st))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        cta, tid = st.where(int(st.lane_array(lanes)[i]))
        raise PtxSimError(f"mapa at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} "
                          f"thread {tid}: target rank {int(rank[i])}; the cluster has {_size(st)} CTA(s)")
    generic = ins.space != "shared"
    off = ((a - _SW) if generic else a) & np.uint64(OFFSET_MASK)
    # a cluster of one (no cluster launch): the CTA's own address, which every shared access understands
    out = off if st.cluster is None else ((rank + np.uint64(1)) << np.uint64(RANK_SHIFT)) | off
    if generic:
        out = out + _SW
    st.write(ins.ops[0], lanes, out.astype(t.dtype), t)


def _prep_mapa(ins, dec, ctx):
    if len(ins.ops) != 3 or ins.ops[0].kind != REG:
        raise DecodeError("mapa takes d, a, b (destination register, address, target CTA rank)")
    if len(ins.types) != 1 or ins.types[0].name not in ("u32", "u64"):
        raise unsupported(ins, "mapa is .u32 or .u64")
    if ins.space not in ("", "shared"):
        raise unsupported(ins, "mapa maps generic or .shared::cluster addresses")
    ins.klass = "int"


def _prep_cluster_barrier(ins):
    if (".arrive" in ins.mods) == (".wait" in ins.mods):
        raise unsupported(ins, "barrier.cluster needs exactly one of .arrive, .wait")
    if ins.ops:
        raise DecodeError(f"barrier.cluster takes no operands; got {len(ins.ops)}")
    ins.handler = cluster_arrive if ".arrive" in ins.mods else cluster_wait
    ins.control = ".wait" in ins.mods
    ins.klass = "barrier"


_CLUSTER_BAR_MODS = (".cluster", ".arrive", ".wait", ".aligned", ".release", ".relaxed", ".acquire")


def with_cluster_barrier(barrier: Spec) -> Spec:
    """The `barrier` table entry extended with barrier.cluster.arrive / .wait (bar.sync forms keep their decoder)."""

    def prepare(ins, dec, ctx):
        if ".cluster" in ins.mods:
            _prep_cluster_barrier(ins)
            return
        bad = [m for m in ins.modlist if m not in barrier.mods]
        if bad:
            raise unsupported(ins, f"modifier(s) {' '.join(bad)} not supported for barrier")
        if barrier.prepare is not None:
            barrier.prepare(ins, dec, ctx)

    return Spec(barrier.handler, barrier.klass, barrier.mods | frozenset(_CLUSTER_BAR_MODS), prepare, barrier.control,
                barrier.hints)


OPS = {
    "mapa": spec(mapa, "int", (".shared::cluster",), _prep_mapa),
}
