"""Counters against hand counts, sanitizers catching planted bugs, sampled launches."""
import numpy as np
import pytest
from ptxkit import TEMPLATE, kernel

import ptxsim

pytestmark = pytest.mark.sim


def _launch(body, arrays, block=32, grid=1, **kw):
    arrays = list(arrays) + [np.zeros(1, np.uint32) for _ in range(4 - len(arrays))]
    return ptxsim.launch(kernel(body), grid, block, arrays, **kw)


def test_unit_stride_loads_touch_4_sectors_per_request():
    x = np.zeros(256, np.float32)
    s = _launch("ld.global.f32 %f1, [%rd7];", [x], block=256)
    m = s.metrics
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 8
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 32
    assert m["dram__bytes_read.sum"] == 1024 and m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] == 0


def test_128_byte_stride_touches_32_sectors_and_l2_hits_on_reuse():
    x = np.zeros(32 * 32 * 2, np.float32)
    body = "mul.wide.u32 %rd15, %r0, 128; add.s64 %rd16, %rd1, %rd15; ld.global.f32 %f1, [%rd16];\n" \
           "ld.global.f32 %f2, [%rd16];"
    s = _launch(body, [x], block=64)
    m = s.metrics
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 4
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 4 * 32
    assert m["dram__bytes_read.sum"] == 64 * 32  # first touch of each sector
    assert m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] == 64  # the second load hits
    line = [d for d in s.per_line.values() if d["text"].startswith("ld.global.f32 %f2")]
    assert line and line[0]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 64


def test_vector_and_store_sectors_and_dram_writes():
    y = np.zeros(4 * 64, np.uint32)
    body = "mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; st.global.v4.u32 [%rd16], {%r0, %r0, %r0, %r0};"
    m = _launch(body, [y], block=64).metrics
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 2
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 32  # 512 bytes per warp = 16 sectors
    assert m["dram__bytes_write.sum"] == 1024


def _transpose_tile(pad):
    cols = 32 + pad
    return TEMPLATE.replace(".visible", f".shared .align 4 .b32 tile[{32 * cols}];\n.visible").replace("BODY", f"""
  mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; mov.u32 %r3, tile;
  mad.lo.u32 %r4, %r2, {cols}, %r1; shl.b32 %r4, %r4, 2; add.u32 %r4, %r3, %r4;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  mad.lo.u32 %r5, %r1, {cols}, %r2; shl.b32 %r5, %r5, 2; add.u32 %r5, %r3, %r5;
  ld.shared.u32 %r6, [%r5];""")


@pytest.mark.parametrize("pad,ways", [(1, 1), (0, 32)])
def test_transpose_tile_bank_conflicts(pad, ways):
    k = ptxsim.load_ptx(_transpose_tile(pad)).kernel("k")
    z = np.zeros(1, np.uint32)
    m = ptxsim.launch(k, 1, (32, 8), [z, z, z, z]).metrics
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] == 8  # row writes: conflict-free
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 0
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 8 * ways  # column reads
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 8 * (ways - 1)
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] == 8 * (ways - 1)


def test_shared_broadcast_and_64_bit_half_warps():
    src = TEMPLATE.replace(".visible", ".shared .align 8 .b64 s[64];\n.visible").replace("BODY", """
  mov.u32 %r3, s; shl.b32 %r4, %r0, 3; add.u32 %r4, %r3, %r4; shl.b32 %r5, %r0, 4; add.u32 %r5, %r3, %r5;
  ld.shared.u32 %r1, [%r3];
  ld.shared.u64 %rd15, [%r4];
  ld.shared.u64 %rd16, [%r5];""")
    z = np.zeros(1, np.uint32)
    s = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [z, z, z, z])
    w = {d["text"].split(",")[0]: d["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
         for d in s.per_line.values() if "ld.shared" in d["text"]}
    assert w["ld.shared.u32 %r1"] == 1  # all lanes read one word: broadcast
    assert w["ld.shared.u64 %rd15"] == 2  # 256 contiguous bytes: one wavefront per half-warp
    assert w["ld.shared.u64 %rd16"] == 4  # 16-byte stride: 2-way within each half-warp


def test_instruction_classes_and_divergence_ratio():
    x = np.zeros(64, np.float32)
    s = _launch("setp.lt.u32 %p1, %r0, 8; @%p1 bra A; ld.global.f32 %f1, [%rd7]; add.f32 %f2, %f1, %f1;\nA:",
                [x], block=64)
    m = s.metrics
    assert m["ptxsim__inst_executed_ld_global.sum"] == 2 and m["ptxsim__thread_inst_executed_ld_global.sum"] == 56
    assert m["ptxsim__inst_executed_fp32.sum"] == 2 and m["ptxsim__inst_executed_ld_param.sum"] == 8
    assert m["smsp__thread_inst_executed_per_inst_executed.ratio"] < 32
    for c in ("int", "fp64", "sfu", "tensor", "warp", "barrier", "atom", "cp_async", "other"):
        assert f"ptxsim__inst_executed_{c}.sum" in m


# -- sanitizers ----------------------------------------------------------------------------------------------------
def test_memcheck_reports_out_of_bounds_and_keeps_running():
    x = np.zeros(32, np.float32)
    y = np.zeros(32, np.float32)
    body = "add.s64 %rd15, %rd7, 64; ld.global.f32 %f1, [%rd15]; st.global.f32 [%rd8], %f1;"
    with pytest.raises(ptxsim.MemcheckError, match=r"\[memcheck\].*out-of-bounds load.*PTX line 13.*thread \(16"):
        _launch(body, [x, y], sanitize={"memcheck"})
    s = _launch(body, [x, y], sanitize="memcheck", sanitize_report=True)
    assert len(s.sanitizer_reports) == 1 and s.sanitizer_reports[0].count == 16
    r = s.sanitizer_reports[0]
    assert r.line == 13 and r.cta == (0, 0, 0) and r.thread == (16, 0, 0) and r.address % 4 == 0


def test_racecheck_finds_a_missing_barrier():
    def src(barrier):
        return TEMPLATE.replace(".visible", ".shared .align 4 .b32 s[64];\n.visible").replace("BODY", f"""
  mov.u32 %r7, %tid.x; mov.u32 %r3, s; shl.b32 %r4, %r7, 2; add.u32 %r4, %r3, %r4; st.shared.u32 [%r4], %r7;
  {barrier}
  xor.b32 %r5, %r7, 32; shl.b32 %r5, %r5, 2; add.u32 %r5, %r3, %r5; ld.shared.u32 %r6, [%r5];""")
    z = np.zeros(1, np.uint32)
    ok = ptxsim.launch(ptxsim.load_ptx(src("bar.sync 0;")).kernel("k"), 2, 64, [z, z, z, z], sanitize="racecheck")
    assert ok.sanitizer_reports == []
    with pytest.raises(ptxsim.RacecheckError, match="read-after-write.*warp 1"):
        ptxsim.launch(ptxsim.load_ptx(src("")).kernel("k"), 2, 64, [z, z, z, z], sanitize="racecheck")


def test_racecheck_finds_a_read_of_an_unwaited_cp_async_destination():
    def src(wait):
        return TEMPLATE.replace(".visible", ".shared .align 16 .b32 s[32];\n.visible").replace("BODY", f"""
  mov.u32 %r3, s; shl.b32 %r4, %r0, 2; add.u32 %r4, %r3, %r4;
  cp.async.ca.shared.global [%r4], [%rd7], 4; cp.async.commit_group;
  {wait}
  ld.shared.u32 %r5, [%r4]; st.global.u32 [%rd8], %r5;""")
    x, y, z = np.arange(32, dtype=np.uint32), np.zeros(32, np.uint32), np.zeros(1, np.uint32)
    ok = ptxsim.launch(ptxsim.load_ptx(src("cp.async.wait_group 0;")).kernel("k"), 1, 32, [x, y, z, z.copy()],
                       sanitize="racecheck")
    assert ok.sanitizer_reports == [] and np.array_equal(y, x)
    with pytest.raises(ptxsim.RacecheckError,
                       match="destination of the asynchronous copy issued at PTX line [0-9]+ before a waiter observed"):
        ptxsim.launch(ptxsim.load_ptx(src("")).kernel("k"), 1, 32, [x, y, z, z.copy()], sanitize="racecheck")


def test_racecheck_finds_another_warps_read_of_a_waited_cp_async_destination_without_a_barrier():
    """A landed cp.async is its issuing thread's write: warp 1 reading what warp 0 copied needs a barrier between
    (cp.async.wait_group only orders the issuing thread)."""
    def src(barrier):
        return TEMPLATE.replace(".visible", ".shared .align 16 .b32 s[64];\n.visible").replace("BODY", f"""
  mov.u32 %r7, %tid.x; mov.u32 %r3, s; shl.b32 %r4, %r7, 2; add.u32 %r4, %r3, %r4;
  cp.async.ca.shared.global [%r4], [%rd7], 4; cp.async.commit_group; cp.async.wait_group 0;
  {barrier}
  xor.b32 %r5, %r7, 32; shl.b32 %r5, %r5, 2; add.u32 %r5, %r3, %r5; ld.shared.u32 %r6, [%r5];""")
    x, z = np.arange(64, dtype=np.uint32), np.zeros(1, np.uint32)
    ok = ptxsim.launch(ptxsim.load_ptx(src("bar.sync 0;")).kernel("k"), 1, 64, [x, z, z, z], sanitize="racecheck")
    assert ok.sanitizer_reports == []
    with pytest.raises(ptxsim.RacecheckError, match="read-after-write.*warp 1"):
        ptxsim.launch(ptxsim.load_ptx(src("")).kernel("k"), 1, 64, [x, z, z, z], sanitize="racecheck")


def test_racecheck_takes_an_mbarrier_release_acquire_as_ordering_a_plain_write():
    """A producer warp's st.shared, then its mbarrier.arrive (release), then the consumer's wait observing that phase
    (acquire): the read is ordered, as in CUTLASS's grouped GEMM, whose scheduler warp hands tile coordinates over
    this way. Arriving before the write orders nothing: still a read-after-write hazard."""
    def src(produce):
        decls = ".shared .align 16 .b32 s[4];\n.shared .align 8 .b64 bar;\n.visible"
        return TEMPLATE.replace(".visible", decls).replace("BODY", f"""
  mov.u32 %r7, %tid.x; mov.u32 %r3, s; mov.u32 %r4, bar; setp.eq.u32 %p1, %r7, 0; setp.eq.u32 %p2, %r7, 32;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  bar.sync 0;
  @!%p2 bra CONSUME;
  mov.u32 %r5, 7;
  {produce}
CONSUME:
  setp.ge.u32 %p3, %r7, 32;
  @%p3 bra END;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  ld.shared.u32 %r6, [%r3]; st.global.u32 [%rd7], %r6;
END:""")
    write, arrive = "st.shared.u32 [%r3], %r5;", "mbarrier.arrive.shared::cta.b64 %rd15, [%r4];"
    out, z = np.zeros(64, np.uint32), np.zeros(1, np.uint32)
    ok = ptxsim.launch(ptxsim.load_ptx(src(write + " " + arrive)).kernel("k"), 1, 64, [out, z, z, z],
                       sanitize="racecheck")
    assert ok.sanitizer_reports == [] and (out[:32] == 7).all()
    with pytest.raises(ptxsim.RacecheckError, match="read-after-write.*warp 1"):
        ptxsim.launch(ptxsim.load_ptx(src(arrive + " " + write)).kernel("k"), 1, 64, [out, z, z, z],
                      sanitize="racecheck")


def test_initcheck_finds_unwritten_global_and_shared():
    dev = ptxsim.Device()
    buf = dev.alloc(128)
    out = dev.to_device(np.zeros(32, np.uint32))
    body = "ld.global.u32 %r1, [%rd7]; st.global.u32 [%rd8], %r1;"
    with pytest.raises(ptxsim.InitcheckError, match="uninitialised global"):
        dev.launch(kernel(body), 1, 32, [buf, out, out, out], sanitize="initcheck")
    dev.copy_in(buf, np.ones(32, np.uint32))
    assert dev.launch(kernel(body), 1, 32, [buf, out, out, out], sanitize="initcheck").sanitizer_reports == []
    src = TEMPLATE.replace(".visible", ".shared .align 4 .b32 s[32];\n.visible").replace(
        "BODY", "mov.u32 %r3, s; ld.shared.u32 %r1, [%r3+8];")
    s = dev.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [out, out, out, out], sanitize="initcheck",
                   sanitize_report=True)
    assert s.sanitizer_reports and "shared" in s.sanitizer_reports[0].message


def test_shared_fill_is_what_unwritten_shared_memory_reads_as():
    """shared_fill: the byte each CTA's shared memory starts as (0 unless given; hardware leaves whatever was
    there), so a run with 0xFF shows whether reads of unwritten shared memory reach a kernel's stores."""
    src = TEMPLATE.replace(".visible", ".shared .align 4 .b32 s[64];\n.visible").replace(
        "BODY", "mov.u32 %r3, s; mov.u32 %r5, %tid.x; shl.b32 %r4, %r5, 2; add.u32 %r3, %r3, %r4;\n"
                "  st.shared.u32 [%r3], %r0;\n"
                "  ld.shared.u32 %r1, [%r3+128]; mul.wide.u32 %rd15, %r0, 4; add.s64 %rd16, %rd1, %rd15;\n"
                "  st.global.u32 [%rd16], %r1;")
    k = ptxsim.load_ptx(src).kernel("k")
    for fill, want in ((None, 0), (0xFF, 0xFFFFFFFF), (0x3C, 0x3C3C3C3C)):
        out = np.full(64, 7, np.uint32)
        ptxsim.launch(k, 2, 32, [out, out, out, out], **({} if fill is None else {"shared_fill": fill}))
        assert (out == want).all(), (fill, out[::16])  # both CTAs: each its own shared memory
    with pytest.raises(ptxsim.LaunchError, match="shared_fill must be a byte value 0..255, got 256"):
        ptxsim.launch(k, 1, 32, [out, out, out, out], shared_fill=256)


def test_mark_uninitialised_keeps_contents_but_initcheck_reports_reads(rng):
    dev = ptxsim.Device()
    poison = rng.integers(0, 2**32, 32, dtype=np.uint32)
    buf, out = dev.to_device(poison), dev.to_device(np.zeros(32, np.uint32))
    body = "ld.global.u32 %r1, [%rd7]; st.global.u32 [%rd8], %r1;"
    assert dev.launch(kernel(body), 1, 32, [buf, out, out, out], sanitize="initcheck").sanitizer_reports == []
    dev.mark_uninitialised(buf)
    np.testing.assert_array_equal(dev.read(buf, np.uint32, 32), poison)  # the bytes stay
    with pytest.raises(ptxsim.InitcheckError, match="uninitialised global"):
        dev.launch(kernel(body), 1, 32, [buf, out, out, out], sanitize="initcheck")
    dev.free(buf)
    with pytest.raises(ptxsim.MemoryFault, match="not a live allocation"):
        dev.mark_uninitialised(buf)


def test_synccheck_flags_a_barrier_in_divergent_code():
    body = "setp.lt.u32 %p1, %r0, 16; @%p1 bra A; bar.sync 0; bra B;\nA:\n bar.sync 0;\nB:"
    z = np.zeros(1, np.uint32)
    with pytest.raises(ptxsim.SynccheckError, match="divergent"):
        _launch(body, [z], block=32, sanitize="synccheck")
    with pytest.warns(ptxsim.PtxSimWarning, match="divergent code"):  # without the sanitizer: a warning
        _launch(body, [z], block=32)
    assert _launch("bar.sync 0;", [z], block=64, sanitize="synccheck").sanitizer_reports == []


def test_synccheck_flags_shfl_from_an_inactive_lane():
    z = np.zeros(32, np.uint32)
    body = "setp.lt.u32 %p1, %r0, 16; @!%p1 bra A; shfl.sync.down.b32 %r1, %r0, 8, 0x1f, 0xffff;\nA:"
    with pytest.raises(ptxsim.SynccheckError, match="not active"):
        _launch(body, [z], sanitize="synccheck")
    ok = "setp.lt.u32 %p1, %r0, 16; @!%p1 bra A; shfl.sync.down.b32 %r1, %r0, 8, 0x0f, 0xffff;\nA:"
    assert _launch(ok, [z], sanitize="synccheck").sanitizer_reports == []


def test_nc_hazard_write_to_memory_read_through_nc():
    x = np.zeros(32, np.uint32)
    body = "ld.global.nc.u32 %r1, [%rd7]; add.u32 %r1, %r1, 1; xor.b32 %r2, %r0, 1; mul.wide.u32 %rd15, %r2, 4; " \
           "add.s64 %rd16, %rd1, %rd15; st.global.u32 [%rd16], %r1;"
    with pytest.raises(ptxsim.NcHazardError, match="ld.global.nc"):
        _launch(body, [x], sanitize={"nc"})
    clean = "ld.global.nc.u32 %r1, [%rd7]; st.global.u32 [%rd8], %r1;"
    assert _launch(clean, [x, np.zeros(32, np.uint32)], sanitize="all").sanitizer_reports == []


def test_unknown_sanitizer_is_an_error():
    with pytest.raises(ptxsim.LaunchError, match="racecheck"):
        _launch("", [np.zeros(1, np.uint32)], sanitize={"bogus"})


def test_sampled_launch_extrapolates_and_writes_only_sampled_ctas():
    y = np.zeros(64 * 32, np.uint32)
    body = "add.u32 %r1, %r0, 1; st.global.u32 [%rd7], %r1;"
    full = _launch(body, [y.copy()], block=32, grid=64)
    s = _launch(body, [y], block=32, grid=64, sample_ctas=8, wave_ctas=1)  # waves of one CTA: 8 spread CTAs
    assert s.sample_fraction == 8 / 64 and s.simulated_ctas == 8
    assert s.simulated_metrics["smsp__inst_executed.sum"] * 8 == s.metrics["smsp__inst_executed.sum"]
    assert s.metrics["smsp__inst_executed.sum"] == full.metrics["smsp__inst_executed.sum"]
    assert s.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 64 * 4
    written = np.flatnonzero(y.reshape(64, 32).any(axis=1))
    assert written.tolist() == list(range(4, 64, 8))  # the middle CTA of each of 8 equal strata
    np.testing.assert_array_equal(y.reshape(64, 32)[written], np.arange(1, 33) + 32 * written[:, None])
