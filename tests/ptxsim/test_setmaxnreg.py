"""setmaxnreg (issue 26): a per-CTA register pool from .maxnreg, .inc blocking until .dec refills it, whole
warpgroups with the same value, counts in 24..256 and multiples of 8."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import DeadlockError, DecodeError, PtxSimWarning, RegisterPoolError, SynccheckError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# 384 threads as in a warp-specialised GEMM: warpgroup 0 the producer (PRODUCER), 1 and 2 the consumers (CONSUMER).
# The consumers' code comes first, so under lowest-pc scheduling their .inc runs before the producer's .dec.
_SRC = HEADER.replace("sm_90", "sm_90a") + """
.visible .entry k(.param .u64 pout)
.maxntid 384, 1, 1
MAXNREG
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  setp.lt.u32 %p1, %r0, 128;
  @%p1 bra PROD_ROLE;
  CONSUMER
  mov.u32 %r1, 2;
  bra DONE;
PROD_ROLE:
  PRODUCER
  mov.u32 %r1, 1;
DONE:
  st.global.u32 [%rd3], %r1;
  ret;
}
"""
_DEC = "setmaxnreg.dec.sync.aligned.u32 40;"
_INC = "setmaxnreg.inc.sync.aligned.u32 232;"


def _src(producer=_DEC, consumer=_INC, maxnreg=".maxnreg 168"):
    return _SRC.replace("MAXNREG", maxnreg).replace("PRODUCER", producer).replace("CONSUMER", consumer)


def _run(src, **kw):
    out = np.zeros(384, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 384, [out], **kw)
    return out, stats


def _line(src, text):
    return 1 + next(i for i, t in enumerate(src.splitlines()) if text in t)


def test_consumers_inc_waits_for_the_producers_dec_and_the_budget_adds_up():
    # pool 168 x 384; the producer's .dec 40 frees 128 x 128 = 16384, exactly the consumers' 2 x 64 x 128
    out, stats = _run(_src(), sanitize="all")
    assert stats.sanitizer_reports == []
    assert out.tolist() == [1] * 128 + [2] * 256


def test_inc_beyond_the_pool_is_a_deadlock_naming_the_instruction():
    src = _src(consumer="setmaxnreg.inc.sync.aligned.u32 240;")  # 2 x 72 x 128 = 18432 > 16384
    line = _line(src, "inc.sync.aligned.u32 240")
    want = (rf"128 thread\(s\) of warpgroup 2 blocked at PTX line {line} \(`setmaxnreg.inc.sync.aligned.u32 240`\)"
            r".*its 4 warp\(s\) ask 9216 more registers \(168 -> 240 per thread\) but the CTA's pool has 7168 free")
    with pytest.raises(DeadlockError, match=want):
        _run(src)


def test_without_maxnreg_the_pool_is_undefined():
    src = _src(maxnreg="")
    with pytest.raises(RegisterPoolError, match=rf"setmaxnreg at PTX line {_line(src, _INC)} .*no \.maxnreg"):
        _run(src)


def test_maxntid_and_minnctapersm_set_the_pool_as_ptxas_does():
    """CUTLASS's warp-specialised kernels declare no .maxnreg but `.maxntid 384` and `.minnctapersm 1`: ptxas gives
    them 65536 / 384 -> 168 registers at entry (what setmaxnreg then moves), so the same budget adds up."""
    out, stats = _run(_src(maxnreg=".minnctapersm 1"), sanitize="all")
    assert stats.sanitizer_reports == [] and out.tolist() == [1] * 128 + [2] * 256
    # two CTAs per SM halve it: 80 at entry; the consumers' .inc 232 can never be granted
    with pytest.raises(DeadlockError, match=r"80 -> 232 per thread"):
        _run(_src(maxnreg=".minnctapersm 2"))


def test_dec_in_two_of_four_warps_is_a_synccheck_finding():
    # the producer's .dec guarded to warps 0 and 1 only
    partial = "setp.lt.u32 %p2, %r0, 64;\n  @%p2 " + _DEC
    src = _src(producer=partial)
    with pytest.raises(SynccheckError, match=r"setmaxnreg executed by 64 of the 128 threads of warpgroup 0"):
        _run(src, sanitize="synccheck")
    # without the sanitizer: a warning, and the half-released pool cannot feed both consumers
    with pytest.warns(PtxSimWarning, match="64 of the 128 threads"), pytest.raises(DeadlockError, match="pool"):
        _run(src)


def test_different_values_in_one_warpgroup_are_a_synccheck_finding():
    split = ("setp.lt.u32 %p2, %r0, 64;\n  @%p2 bra HALF;\n  setmaxnreg.dec.sync.aligned.u32 40;\n  bra JOINED;\n"
             "HALF:\n  setmaxnreg.dec.sync.aligned.u32 48;\nJOINED:")
    with pytest.raises(SynccheckError, match="setmaxnreg executed by 64 of the 128 threads"):
        _run(_src(producer=split), sanitize="synccheck")


@pytest.mark.parametrize("producer,consumer,what", [
    ("setmaxnreg.inc.sync.aligned.u32 40;", _INC, r"holds 168 registers per thread; \.inc 40 would lower it"),
    (_DEC, "setmaxnreg.dec.sync.aligned.u32 200;", r"holds 168 registers per thread; \.dec 200 would raise it"),
])
def test_inc_must_not_lower_and_dec_must_not_raise_the_count(producer, consumer, what):
    with pytest.raises(RegisterPoolError, match=what):
        _run(_src(producer=producer, consumer=consumer))


@pytest.mark.parametrize("count", [20, 36, 260])
def test_counts_outside_24_to_256_or_not_multiples_of_8_are_refused(count):
    with pytest.raises(DecodeError, match=f"setmaxnreg count {count}; expected a multiple of 8 in 24 .. 256"):
        ptxsim.load_ptx(_src(consumer=f"setmaxnreg.inc.sync.aligned.u32 {count};")).kernel("k")
