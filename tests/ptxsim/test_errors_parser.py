"""Parsing, decoding and the errors users see: each names what was wrong and where."""
import numpy as np
import pytest
from ptxkit import HEADER, TEMPLATE, kernel, run

import ptxsim


def test_syntax_error_has_line_column_and_text():
    src = HEADER + ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n  add.s32 %r1, %r2 %r3;\n  ret;\n}\n"
    with pytest.raises(ptxsim.PtxSyntaxError) as e:
        ptxsim.load_ptx(src)
    assert e.value.line == 7 and e.value.col > 1
    assert "add.s32 %r1, %r2 %r3;" in str(e.value) and "line 7:" in str(e.value)


def test_new_modifiers_are_not_lexer_errors_but_are_validated():
    src = TEMPLATE.replace("BODY", "add.frobnicate.s32 %r1, %r2, %r3;")
    mod = ptxsim.load_ptx(src)  # parses fine
    with pytest.raises(ptxsim.UnsupportedInstruction) as e:
        mod.kernel("k")
    msg = str(e.value)
    assert "add.frobnicate.s32" in msg and ".frobnicate" in msg and "line 13" in msg


def test_unknown_opcode_names_opcode_and_line():
    with pytest.raises(ptxsim.UnsupportedInstruction, match=r"tcgen05\.wait::ld.*line 13"):
        kernel("tcgen05.wait::ld.sync.aligned;")


def test_unknown_kernel_lists_entries():
    mod = ptxsim.load_ptx(TEMPLATE.replace("BODY", ""))
    with pytest.raises(ptxsim.KernelNotFound, match=r"no \.entry named 'kk'.*entries: k"):
        mod.kernel("kk")


def test_directives_ranges_immediates_initialisers_and_common_globals():
    src = HEADER + """
.common .global .align 8 .u64 env;
.global .align 4 .u32 tbl[4] = {1, 0x10, 0b11, 017};
.const .align 4 .f32 cf[2] = {0f3F800000, 0f40000000};
.global .align 8 .f64 dd = 0d4000000000000000;
.visible .entry k(.param .u64 out) .maxntid 64, 1, 1 .minnctapersm 1
{
  .reg .b32 %r<6>; .reg .b64 %rd<6>; .reg .f32 %f<4>; .reg .f64 %fd<2>; .reg .pred %p<2>;
  .loc 1 10 0
  .pragma "nounroll";
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, tbl; ld.global.u32 %r1, [%rd2+12]; ld.global.u32 %r2, [tbl+4];
  ld.const.f32 %f1, [cf+4]; mov.f32 %f2, 0f3F000000; mul.rn.f32 %f3, %f1, %f2;
  mov.b32 %r3, %f3; add.s32 %r4, %r1, -3; ld.global.f64 %fd1, [dd]; cvt.rzi.s32.f64 %r5, %fd1;
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4}; st.global.u32 [%rd1+16], %r5;
  ret;
}
"""
    mod = ptxsim.load_ptx(src)
    out = np.zeros(5, np.uint32)
    ptxsim.launch(mod.kernel("k"), 1, 1, [out])
    assert list(out) == [15, 16, int(np.float32(1.0).view(np.uint32)), 12, 2]


def test_out_of_bounds_names_kernel_line_cta_thread_address_allocation():
    x = np.zeros(64, np.float32)
    with pytest.raises(ptxsim.MemoryFault) as e:
        run("add.s64 %rd15, %rd7, 248; ld.global.f32 %f1, [%rd15];", x, threads=64)
    msg = str(e.value)
    for part in ("kernel k", "PTX line 13", "CTA (0, 0, 0)", "thread (2, 0, 0)", "0 bytes after the end of allocation",
                 "of 256 bytes"):
        assert part in msg, (part, msg)
    assert e.value.addr % 4 == 0 and e.value.line == 13


def test_misaligned_access_is_an_error():
    x = np.zeros(64, np.float32)
    with pytest.raises(ptxsim.MemoryFault, match="misaligned.*4-byte aligned"):
        run("add.s64 %rd15, %rd7, 2; ld.global.f32 %f1, [%rd15];", x, threads=8)


def test_shared_out_of_bounds():
    src = TEMPLATE.replace(".visible", ".shared .align 4 .b32 s[8];\n.visible").replace(
        "BODY", "mul.lo.u32 %r1, %r0, 4; mov.u32 %r2, s; add.u32 %r2, %r2, %r1; st.shared.u32 [%r2], 1;")
    k = ptxsim.load_ptx(src).kernel("k")
    z = np.zeros(1, np.uint32)
    with pytest.raises(ptxsim.MemoryFault, match=r"thread \(8, 0, 0\): shared address 0x20"):
        ptxsim.launch(k, 1, 16, [z, z, z, z])


def test_deadlock_lists_waiting_groups():
    z = np.zeros(64, np.uint32)
    with pytest.raises(ptxsim.DeadlockError) as e:
        run("setp.lt.u32 %p1, %r0, 32; @%p1 bra A; bar.sync 1; bra B;\nA:\n bar.sync 2;\nB:", z, threads=64)
    msg = str(e.value)
    assert "barrier 1" in msg and "barrier 2" in msg and "pc " in msg and "PTX line" in msg


def test_instruction_budget_stops_runaway_loops():
    z = np.zeros(32, np.uint32)
    with pytest.raises(ptxsim.InstructionBudgetExceeded, match="runaway"):
        run("LOOP:\n add.u32 %r1, %r1, 1; bra LOOP;", z, budget=10_000)


def test_spin_wait_on_a_flag_nobody_can_set_is_reported_quickly():
    flag = np.zeros(1, np.uint32)
    body = "setp.eq.u32 %p2, %r0, 40; @%p2 bra SET;\n" \
           "SPIN:\n ld.volatile.global.u32 %r1, [%rd1]; setp.eq.u32 %p1, %r1, 0; @%p1 bra SPIN; bra OUT;\n" \
           "SET:\n st.volatile.global.u32 [%rd1], 1;\nOUT:"
    with pytest.raises(ptxsim.DeadlockError, match="spins forever at PTX line 15"):
        run(body, flag, threads=64)  # thread 40 would set the flag, but it waits at a higher pc
    ok = "LOOP:\n add.u32 %r1, %r1, 1; setp.lt.u32 %p1, %r1, 5000; @%p1 bra LOOP;"  # registers change: no report
    run(ok, np.zeros(32, np.uint32))


def test_param_type_mismatch_names_the_param():
    src = HEADER + """.visible .entry k(.param .u64 p, .param .f32 alpha, .param .u32 n)
{ ret; }"""
    k = ptxsim.load_ptx(src).kernel("k")
    x = np.zeros(4, np.float32)
    ptxsim.launch(k, 1, 1, [x, np.float32(1), np.int32(3)])  # an int32 matches a .u32 (same width)
    with pytest.raises(ptxsim.ParamTypeError, match=r"param alpha \(\.f32\).*float64"):
        ptxsim.launch(k, 1, 1, [x, np.float64(1), np.uint32(3)])
    with pytest.raises(ptxsim.ParamTypeError, match=r"param n \(\.u32\).*int64"):
        ptxsim.launch(k, 1, 1, [x, np.float32(1), np.int64(3)])
    with pytest.raises(ptxsim.ParamTypeError, match="takes 3 params, got 2"):
        ptxsim.launch(k, 1, 1, [x, np.float32(1)])


def test_device_buffers_persist_across_launches(rng):
    dev = ptxsim.Device()
    x = rng.integers(0, 100, 64).astype(np.uint32)
    bx = dev.to_device(x)
    by = dev.alloc(64 * 4)
    assert isinstance(bx, ptxsim.DeviceBuffer) and bx.nbytes == 256
    k = kernel("ld.global.u32 %r1, [%rd7]; add.u32 %r1, %r1, 1; st.global.u32 [%rd8], %r1;")
    z = dev.alloc(16)
    dev.launch(k, 1, 64, [bx, by, z, z])
    ptxsim.launch(k, 1, 64, [by, bx, z, z], device=dev)
    np.testing.assert_array_equal(dev.read(bx, np.uint32, (64,)), x + 2)
    out = np.zeros(64, np.uint32)
    dev.copy_out(by, out)
    np.testing.assert_array_equal(out, x + 1)
    dev.copy_in(by, np.zeros(64, np.uint32))
    assert dev.read(by, np.uint32, 64).sum() == 0
    dev.free(by)
    with pytest.raises(ptxsim.MemoryFault, match="not a live allocation"):
        dev.read(by, np.uint32, 64)
    with pytest.raises(ptxsim.MemoryFault, match="use-after-free.*freed allocation"):
        dev.launch(k, 1, 64, [bx, by, z, z])


def test_the_same_array_passed_twice_aliases(rng):
    x = rng.integers(0, 100, 32).astype(np.uint32)
    want = x + 1
    run("ld.global.u32 %r1, [%rd7]; add.u32 %r1, %r1, 1; st.global.u32 [%rd8], %r1;", x, x)
    np.testing.assert_array_equal(x, want)  # one device buffer: the store lands in x
    y = np.zeros(33, np.uint32)
    with pytest.warns(ptxsim.PtxSimWarning, match="overlapping"):
        run("ld.global.u32 %r1, [%rd7]; st.global.u32 [%rd8], %r1;", y[1:], y[:-1], threads=32)


def test_stats_counts():
    z = np.zeros(48, np.uint32)
    s = run("setp.lt.u32 %p1, %r0, 8; @%p1 bra A; add.u32 %r1, %r1, 1;\nA:", z, threads=48)
    assert isinstance(s, list)
    k = kernel("setp.lt.u32 %p1, %r0, 8; @%p1 bra A; add.u32 %r1, %r1, 1;\nA:")
    st = ptxsim.launch(k, 1, 48, [z, z, z, z])
    # 2 warps; 21 straight-line instructions, then the branch splits warp 0; the add runs for 40 threads in 2 warps
    n_pre = len(k.program.instrs) - 2  # everything but add and ret
    assert st.warp_instructions == 2 * n_pre + 2 + 2
    assert st.thread_instructions == 48 * n_pre + 40 + 48
    assert st.metrics["smsp__inst_executed.sum"] == st.warp_instructions
    assert st.metrics["launch__thread_count"] == 48 and st.wall_seconds > 0
