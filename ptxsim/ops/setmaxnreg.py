"""setmaxnreg.{inc,dec}.sync.aligned.u32 n: move registers between the executing warps and their CTA's register pool
(ptxsim/regpool.py); .inc blocks until the pool can supply them. The same instruction must be executed by all warps
of a warpgroup: a partial warpgroup is a synccheck finding (a warning without the sanitizer)."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import DecodeError
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import IMM
from ptxsim.regpool import WG, RegisterPools
from ptxsim.warpsync import gather_warpgroups


def setmaxnreg(st, ins, lanes):
    la = gather_warpgroups(st, ins, st.lane_array(lanes))  # warps arriving apart wait for their warpgroup
    if not la.size:
        return
    _check_warpgroups(st, ins, la)
    RegisterPools.of(st, ins, int(la[0])).execute(st, ins, la, ins.aux.n, ins.aux.inc)


def _check_warpgroups(st, ins, la: np.ndarray) -> None:
    """Every warpgroup the lanes touch must execute the instruction with all its 128 threads."""
    if len(la) % WG == 0 and np.all(st.tlin[la[::WG]] % WG == 0) and np.all(la[WG - 1::WG] - la[::WG] == WG - 1):
        return  # whole warpgroups (lanes are sorted, so each run of 128 from a warpgroup start is one)
    key = st.slot[la].astype(np.int64) * 1024 + st.tlin[la] // WG
    groups, first, present = np.unique(key, return_index=True, return_counts=True)
    bad = np.flatnonzero(present < WG)
    if not bad.size:
        return
    lane, n = int(la[first[bad[0]]]), int(present[bad[0]])
    message = (f"setmaxnreg executed by {n} of the 128 threads of warpgroup {int(groups[bad[0]] % 1024)} (the same "
               "setmaxnreg must be executed by all warps of a warpgroup, converged)")
    hooks = [h for h in st.hooks if getattr(h, "tool", "") == "synccheck"]
    for h in hooks:
        h.on_partial_warpgroup(st, ins, lane, message, len(bad))
    if not hooks and ins.pc not in st.sched.warned:
        import warnings

        from ptxsim.errors import PtxSimWarning

        st.sched.warned.add(ins.pc)
        cta, tid = st.where(lane)
        warnings.warn(PtxSimWarning(f"kernel {st.prog.name}: {message} at PTX line {ins.line} (`{ins.text}`), CTA "
                                    f"{cta} thread {tid}; behaviour on hardware is undefined. sanitize='synccheck' "
                                    "reports every case"), stacklevel=2)


def _prep_setmaxnreg(ins, dec, ctx):
    if len(ins.ops) != 1 or ins.ops[0].kind != IMM:
        raise DecodeError("setmaxnreg takes one immediate register count")
    n = int(ins.ops[0].value)
    if not 24 <= n <= 256 or n % 8:
        raise DecodeError(f"setmaxnreg count {n}; expected a multiple of 8 in 24 .. 256")
    if (".inc" in ins.mods) == (".dec" in ins.mods):
        raise unsupported(ins, "setmaxnreg needs exactly one of .inc, .dec")
    if ".sync" not in ins.mods or ".aligned" not in ins.mods:
        raise unsupported(ins, "setmaxnreg is .sync.aligned")
    ins.aux.update(n=n, inc=".inc" in ins.mods)


OPS = {
    "setmaxnreg": spec(setmaxnreg, "other", (".inc", ".dec", ".sync", ".aligned"), _prep_setmaxnreg, control=True),
}
