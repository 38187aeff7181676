"""tensormap.replace, tensormap.cp_fenceproxy and fence.proxy.tensormap::generic: a map copied from the kernel's
parameter into shared memory, its fields replaced, copied to global memory with a release, acquired, then used by a
TMA load, as CUTLASS's pointer-array (grouped) GEMMs do it; asynccheck's tensormap rule for the missing orderings."""
import numpy as np
import pytest

import ptxsim
from ptxsim import tensormap as tmap
from ptxsim.errors import AsynccheckError, PtxSimError, UnsupportedInstruction
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

ROWS, COLS = 8, 16  # u16 tensors; the box is the whole 16 x 8 (256 bytes), read back by 64 threads as u32 words
SRC = """
.shared .align 128 .b8 smap[128];
.shared .align 1024 .b8 sm[4096];
.shared .align 8 .b64 bar;
.visible .entry k(.param .align 64 .b8 tm[128], .param .u64 pws, .param .u64 pnew, .param .u64 pout)
{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<40>;
  ld.param.u64 %rd1, [pws]; ld.param.u64 %rd2, [pnew]; ld.param.u64 %rd3, [pout];
  mov.u32 %r0, %tid.x; mov.u32 %r1, smap; mov.u32 %r2, sm; mov.u32 %r3, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
  @!%p1 bra SYNC;
  LOAD
  REPLACE
SYNC:
  bar.sync 0;
  setp.lt.u32 %p3, %r0, 32;
  @!%p3 bra WAIT;
  COPY
  ACQUIRE
  @!%p1 bra WAIT;
  AFTER
  fence.proxy.async.shared::cta;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 256;
  mov.u32 %r10, 0;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r10, %r10}], [%r3];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
  @!%p2 bra WAIT;
  shl.b32 %r4, %r0, 2; add.u32 %r4, %r4, %r2; ld.shared.u32 %r5, [%r4];
  mul.wide.u32 %rd6, %r0, 4; add.s64 %rd7, %rd3, %rd6; st.global.u32 [%rd7], %r5;
  ret;
}
"""
# thread 0: the parameter's 128 bytes into smap, 16 bytes at a time
LOAD = "\n  ".join(f"ld.param.v2.u64 {{%rd10, %rd11}}, [tm+{k}]; st.shared.v2.u64 [%r1+{k}], {{%rd10, %rd11}};"
                   for k in range(0, 128, 16))
NEW_ADDR = "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r1], %rd2;"
NEW_ROWS = "mov.u32 %r6, 4; tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%r1], 1, %r6;"
COPY = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%r1], 128;"
ACQUIRE = "fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;"


def _run(replace=NEW_ADDR + "\n  " + NEW_ROWS, copy=COPY, acquire=ACQUIRE, after="", load=LOAD, version="8.8",
         **kw):
    a = (np.arange(ROWS * COLS, dtype=np.uint16) + 1).reshape(ROWS, COLS)
    b = (np.arange(ROWS * COLS, dtype=np.uint16) + 1000).reshape(ROWS, COLS)
    dev = ptxsim.Device()
    abuf, bbuf = dev.to_device(a), dev.to_device(b)
    ws = dev.to_device(np.zeros(16, np.uint64))  # the global map the copy uses
    out = np.zeros(64, np.uint32)  # copied back after the launch
    tm = tmap.encode_tiled(1, 2, abuf.addr, (COLS, ROWS), (COLS * 2,), (COLS, ROWS), (1, 1))
    src = (HEADER.replace("8.8", version) + SRC).replace("LOAD", load).replace("REPLACE", replace)
    src = src.replace("COPY", copy).replace("ACQUIRE", acquire).replace("AFTER", after)
    k = ptxsim.load_ptx(src).kernel("k")
    ptxsim.launch(k, 1, 64, [tm, ws, bbuf, out], device=dev, **kw)
    return out.view(np.uint16).reshape(ROWS, COLS), a, b


def test_replaced_address_and_rows_reach_the_tma_through_the_released_copy():
    got, a, b = _run(sanitize="all")
    assert np.array_equal(got[:4], b[:4])  # the new tensor's first 4 rows ...
    assert not got[4:].any()  # ... and zeros past its new row count (the old map would have given a's 8 rows)


def test_the_unmodified_map_reads_the_original_tensor():
    got, a, _ = _run(replace="", sanitize="asynccheck")
    assert np.array_equal(got, a)


def test_copy_without_acquire_is_an_asynccheck_finding():
    with pytest.raises(AsynccheckError, match="tensormap proxy rule: .*no fence.proxy.tensormap::generic.acquire"):
        _run(acquire="", sanitize="asynccheck")
    got, _, b = _run(acquire="")  # without asynccheck the simulation runs it (one legal outcome)
    assert np.array_equal(got[:4], b[:4])


def test_replace_in_global_memory_needs_a_release():
    # the copied map is changed again in global memory by thread 0; the copy then reads it with no release between
    more = "mov.u32 %r7, 2; tensormap.replace.tile.global_dim.global.b1024.b32 [%rd1], 1, %r7;"
    with pytest.raises(AsynccheckError, match="changed by tensormap.replace at PTX line .* no fence.proxy.tensormap"):
        _run(after=more, sanitize="asynccheck")
    # released and acquired again by the copying thread: clean, and the copy sees the 2 rows
    got, _, b = _run(after=more + "\n  fence.proxy.tensormap::generic.release.gpu;\n  " + ACQUIRE,
                     sanitize="asynccheck")
    assert np.array_equal(got[:2], b[:2]) and not got[2:].any()
    # released but not acquired after that release: the earlier acquire does not cover it
    with pytest.raises(AsynccheckError, match="no fence.proxy.tensormap::generic.acquire"):
        _run(after=more + "\n  fence.proxy.tensormap::generic.release.gpu;", sanitize="asynccheck")


def test_a_plain_store_into_a_released_map_is_a_finding():
    # st.global into the map's first row count (offset 32: global_dim[1]) after the release
    with pytest.raises(AsynccheckError, match="changed after its last release"):
        _run(after="mov.u32 %r7, 3; st.global.u32 [%rd1+32], %r7;", sanitize="asynccheck")


def test_rank_is_replaced_as_rank_minus_one():
    got, _, b = _run(replace=NEW_ADDR + "\n  mov.u32 %r6, 1; tensormap.replace.tile.rank.shared::cta.b1024.b32 "
                     "[%r1], %r6;")
    assert np.array_equal(got, b)  # rank 1 + 1 = 2: the 2d copy takes it
    with pytest.raises(UnsupportedInstruction, match="the tensor map has rank 1; the instruction is .2d"):
        _run(replace="mov.u32 %r6, 0; tensormap.replace.tile.rank.shared::cta.b1024.b32 [%r1], %r6;")


def test_a_replaced_value_the_driver_would_refuse_fails_at_the_copy_naming_it():
    with pytest.raises(tmap.TensorMapError, match=r"PTX line \d+.*globalDim\[1\] = 0; expected 1 .. 2\^32"):
        _run(replace="mov.u32 %r6, 0; tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%r1], 1, %r6;")
    with pytest.raises(tmap.TensorMapError, match=r"globalStrides\[0\] = 40; expected a positive multiple of 16"):
        _run(replace="mov.b64 %rd8, 40; tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%r1], 0, %rd8;")
    with pytest.raises(tmap.TensorMapError, match="globalAddress = '0x"):
        _run(replace="add.s64 %rd8, %rd2, 2; tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r1], "
                     "%rd8;")


def test_unsupported_fields_and_values_name_the_instruction():
    with pytest.raises(UnsupportedInstruction, match=r"line \d+: .swizzle_atomicity is not simulated"):
        _run(replace="mov.u32 %r6, 0; tensormap.replace.tile.swizzle_atomicity.shared::cta.b1024.b32 [%r1], %r6;")
    with pytest.raises(UnsupportedInstruction, match="new value 9 of .elemtype"):
        _run(replace="mov.u32 %r6, 9; tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%r1], %r6;")
    with pytest.raises(UnsupportedInstruction, match="global_stride counts 16-byte units"):
        _run(replace="mov.b64 %rd8, 32; tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%r1], 0, %rd8;",
             version="8.3")
    with pytest.raises(UnsupportedInstruction, match="ordinal of .global_stride must be an integer constant 0 .. 3"):
        _run(replace="mov.b64 %rd8, 32; tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%r1], 4, %rd8;")


def test_replace_on_bytes_that_are_not_a_map_is_an_error():
    with pytest.raises(PtxSimError, match="are not a tensor map"):
        _run(load="")
