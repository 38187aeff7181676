"""wgmma.mma_async against NumPy products: every descriptor swizzle mode, A from shared memory and from registers,
bf16 and e4m3 inputs, chained k-steps, scale-d / imm-scale, asynchronous retirement and the asynccheck sanitizer."""
import ml_dtypes
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import AsynccheckError, UnsupportedInstruction
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim
SWIZZLE_CODE = {0: 0, 128: 1, 64: 2, 32: 3}  # span -> descriptor bits 62-63


def _desc(start, lbo, sbo, span):
    return (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_CODE[span] << 62)


def _place(mat_bytes: np.ndarray, span: int, lbo: int, sbo: int) -> np.ndarray:
    """Hand-written K-major smem image of a [rows, kbytes] byte matrix (rows a multiple of 8)."""
    rows, kb = mat_bytes.shape
    pitch = span or 16
    size = (rows // 8) * sbo if span else (rows // 8 - 1) * sbo + (kb // 16 - 1) * lbo + 128
    img = np.zeros(max(size, rows * pitch), np.uint8)
    for r in range(rows):
        for b in range(kb):
            o = (r // 8) * sbo + (r % 8) * pitch + (b // pitch) * lbo + b % pitch
            if span:  # 16-byte chunk XOR 128-byte line, modulo span / 16
                line, chunk = o // 128, (o % 128) // 16
                o = line * 128 + ((chunk ^ (line % (span // 16))) * 16) + o % 16
            img[o] = mat_bytes[r, b]
    return img


def _kernel(n, steps, k_bytes_step, a_regs=False, types="bf16.bf16", k=16, extra="", scale_a=1, scale_b=1,
            acc="f32"):
    nd = n // 2 if acc == "f32" else n // 4
    one = "0f3F800000" if acc == "f32" else "0x3C003C00"  # 1.0 (f16: in both halves)
    dregs = ", ".join(f"%d{i}" for i in range(nd))
    lines = []
    for s in range(steps):
        a = "{%a0, %a1, %a2, %a3}" if a_regs else f"%rd{20 + s}"
        tr = "" if k == 32 else (", 0" if a_regs else ", 0, 0")
        lines.append(f"  add.s64 %rd{20 + s}, %rd5, {s * k_bytes_step >> 4}; add.s64 %rd{30 + s}, %rd6, "
                     f"{s * k_bytes_step >> 4};")
        lines.append(f"  wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{types} {{{dregs}}}, {a}, %rd{30 + s}, "
                     f"{'%p1' if s == 0 else 1}, {scale_a}, {scale_b}{tr};")
    stores = "\n".join(f"  st.global.b32 [%rd9+{4 * i}], %d{i};" for i in range(nd))
    return HEADER + f"""
.shared .align 1024 .b8 sm[16384];
.visible .entry k(.param .u64 pimg, .param .u32 nimg, .param .u64 pout, .param .u64 pda, .param .u64 pdb,
                  .param .u64 pareg, .param .u32 scd)
{{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<48>; .reg .b32 %d<{nd}>; .reg .b32 %a<4>;
  ld.param.u64 %rd1, [pimg]; ld.param.u32 %r1, [nimg]; ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd5, [pda]; ld.param.u64 %rd6, [pdb]; ld.param.u64 %rd7, [pareg]; ld.param.u32 %r9, [scd];
  setp.ne.u32 %p1, %r9, 0;
  mov.u32 %r0, %tid.x; mov.u32 %r2, %r0;
COPY:
  setp.ge.u32 %p2, %r2, %r1; @%p2 bra COPIED;
  cvt.u64.u32 %rd3, %r2; add.s64 %rd4, %rd1, %rd3; ld.global.u8 %r3, [%rd4]; st.shared.u8 [%r2], %r3;
  add.u32 %r2, %r2, 128; bra COPY;
COPIED:
  fence.proxy.async.shared::cta;  // the generic-proxy stores above, before the async proxy (wgmma) reads them
  bar.sync 0;
  mul.wide.u32 %rd8, %r0, 16; add.s64 %rd8, %rd7, %rd8;
  ld.global.v4.b32 {{%a0, %a1, %a2, %a3}}, [%rd8];
{''.join(f"  mov.b32 %d{i}, {one};" + chr(10) for i in range(nd))}
  wgmma.fence.sync.aligned;
{chr(10).join(lines)}
  wgmma.commit_group.sync.aligned;
{extra}
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd9, %r0, {4 * nd}; add.s64 %rd9, %rd2, %rd9;
{stores}
  ret;
}}
"""


def _d_matrix(out: np.ndarray, n: int) -> np.ndarray:
    """Hand-written wgmma D fragment layout: thread (warp w, lane g*4+t), register i."""
    D = np.zeros((64, n), np.float32)
    for tid in range(128):
        w, g, t = tid // 32, (tid % 32) // 4, tid % 4
        for i in range(n // 2):
            D[16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)] = out[tid, i]
    return D


def _a_registers(A_bits: np.ndarray, per: int) -> np.ndarray:
    """Hand-written mma.sync A fragment (m16n8k16 for per=2, m16n8k32 for per=4) per warp of 16 rows."""
    regs = np.zeros((128, 4), np.uint32)
    width = 8 if per == 2 else 16  # column offset of registers 2 and 3
    for tid in range(128):
        w, g, t = tid // 32, (tid % 32) // 4, tid % 4
        for j in range(4):
            row = 16 * w + g + 8 * (j & 1)
            for e in range(per):
                col = per * t + e + width * (j >> 1)
                regs[tid, j] |= np.uint32(int(A_bits[row, col]) << (32 // per * e))
    return regs


def _run(src, img, da, db, n, areg=None, scd=1, **kw):
    out = np.zeros((128, n // 2), np.float32)
    areg = np.zeros((128, 4), np.uint32) if areg is None else areg
    k = ptxsim.load_ptx(src).kernel("k")
    ptxsim.launch(k, 1, 128, [img, np.uint32(img.size), out, np.uint64(da), np.uint64(db), areg, np.uint32(scd)],
                  **kw)
    return _d_matrix(out, n)


@pytest.mark.parametrize("span", [0, 32, 64, 128])
def test_bf16_descriptors_every_swizzle_mode_chained_k_steps(span):
    rng = np.random.default_rng(span)
    n, kb = 16, max(span, 32)  # K bytes in the tile: one swizzle row (or two core matrices)
    kk = kb // 2
    A = rng.standard_normal((64, kk)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, kk)).astype(ml_dtypes.bfloat16)
    lbo, sbo = (128, 256) if not span else (0, 8 * span)
    ia = _place(A.view(np.uint8).reshape(64, kb), span, lbo, sbo)
    ib = _place(B.view(np.uint8).reshape(n, kb), span, lbo, sbo)
    ib_at = 8192
    img = np.zeros(ib_at + ib.size, np.uint8)
    img[:ia.size], img[ib_at:] = ia, ib
    steps = kb // 32
    src = _kernel(n, steps, 32 if span else 2 * lbo)
    D = _run(src, img, _desc(0, lbo, sbo, span), _desc(ib_at, lbo, sbo, span), n)
    ref = A.astype(np.float64) @ B.astype(np.float64).T + 1.0  # accumulators started at 1.0, scale-d 1
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


def test_a_from_registers_scale_d_zero_and_negated_b():
    rng = np.random.default_rng(7)
    n = 24
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    ib = _place(B.view(np.uint8).reshape(n, 32), 0, 128, 256)
    src = _kernel(n, 1, 0, a_regs=True, scale_b=-1)
    D = _run(src, ib, 0, _desc(0, 128, 256, 0), n, areg=_a_registers(A.view(np.uint16), 2), scd=0)
    ref = -(A.astype(np.float64) @ B.astype(np.float64).T)  # scale-d 0: the initial 1.0 is ignored
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("a_regs", [False, True])
def test_e4m3_k32_both_a_sources(a_regs):
    rng = np.random.default_rng(3)
    n = 8
    A = rng.standard_normal((64, 32)).astype(ml_dtypes.float8_e4m3fn)
    B = rng.standard_normal((n, 32)).astype(ml_dtypes.float8_e5m2)
    ia = _place(A.view(np.uint8), 128, 0, 1024)
    ib = _place(B.view(np.uint8), 128, 0, 1024)
    img = np.zeros(8192 + ib.size, np.uint8)
    img[:ia.size], img[8192:] = ia, ib
    src = _kernel(n, 1, 0, a_regs=a_regs, types="e4m3.e5m2", k=32)
    areg = _a_registers(A.view(np.uint8), 4) if a_regs else None
    D = _run(src, img, _desc(0, 0, 1024, 128), _desc(8192, 0, 1024, 128), n, areg=areg)
    ref = A.astype(np.float64) @ B.astype(np.float64).T + 1.0
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


def _early_read_kernel():
    return _kernel(8, 1, 0, extra="  mov.b32 %r5, %d3;")


def test_accumulators_hold_old_values_until_wait_group():
    # a store before the wait sees the accumulator's old value (1.0); the result lands at wgmma.wait_group
    src = _kernel(8, 1, 0).replace("  wgmma.wait_group.sync.aligned 0;",
                                   "  mov.b32 %r5, %d0; st.global.u32 [%rd2+2048], %r5;\n"
                                   "  wgmma.wait_group.sync.aligned 0;")
    ones = np.ones((8, 16), ml_dtypes.bfloat16)  # A and B descriptors both name this image: rows 8.. of A are 0
    img = _place(ones.view(np.uint8).reshape(8, 32), 0, 128, 256)
    out = np.zeros((128 + 16, 4), np.float32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 128,
                  [img, np.uint32(img.size), out, np.uint64(_desc(0, 128, 256, 0)),
                   np.uint64(_desc(0, 128, 256, 0)), np.zeros((128, 4), np.uint32), np.uint32(1)])
    assert out.reshape(-1)[512] == 1.0  # thread 0's early read: the old accumulator
    assert out[0, 0] == 1.0 + 16.0  # after the wait: 1 + A[0, :] . B[0, :]


def test_asynccheck_catches_an_early_accumulator_read():
    img = np.zeros(512, np.uint8)
    with pytest.raises(AsynccheckError, match=r"wgmma accumulator %d3 used before wgmma.wait_group"):
        _run(_early_read_kernel(), img, 0, _desc(0, 128, 256, 0), 8, sanitize="asynccheck")
    _run(_early_read_kernel(), img, 0, _desc(0, 128, 256, 0), 8)  # undefined on hardware, silent without it


def test_partial_warpgroup_and_fp8_transpose_are_rejected():
    src = _kernel(8, 1, 0, types="e4m3.e4m3", k=32)
    with pytest.raises(ptxsim.PtxSimError, match="takes 6 operands; got 8"):
        ptxsim.load_ptx(src.replace("1, 1;", "1, 1, 1, 0;")).kernel("k")
    k = ptxsim.load_ptx(_kernel(8, 1, 0)).kernel("k")
    with pytest.raises(ptxsim.PtxSimError, match="128 threads of each warpgroup"):
        ptxsim.launch(k, 1, 96, [np.zeros(64, np.uint8), np.uint32(64), np.zeros(4096, np.float32), np.uint64(0),
                                 np.uint64(0), np.zeros((128, 4), np.uint32), np.uint32(1)])


def _place_mn(mat: np.ndarray, span: int, lbo: int, sbo: int) -> np.ndarray:
    """Hand-written MN-major image of a [mn, k] u16 matrix from the PTX ISA's canonical layouts (bytes):
    no swizzle ((8,1,m),(8,k)) : ((2,16,SBO),(16,LBO)); swizzled ((8,S/16,m),(8,k)) : ((2,16,LBO),(S,SBO))."""
    mn, kk = mat.shape
    img = np.zeros(65536, np.uint8)
    for i in range(mn):
        for k in range(kk):
            if span:
                o = (i % (span // 2)) * 2 + (i // (span // 2)) * lbo + (k % 8) * span + (k // 8) * sbo
                line, chunk = o // 128, (o % 128) // 16
                o = line * 128 + ((chunk ^ (line % (span // 16))) * 16) + o % 16
            else:
                o = (i % 8) * 2 + (i // 8) * sbo + (k % 8) * 16 + (k // 8) * lbo
            img[o:o + 2] = np.frombuffer(mat[i, k].tobytes(), np.uint8)
    return img


@pytest.mark.parametrize("span", [0, 32, 64, 128])
def test_mn_major_transposed_a_and_b_every_swizzle_mode(span):
    rng = np.random.default_rng(100 + span)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    # no swizzle: 8 x 8 core matrices (128 bytes), SBO along MN, LBO along K; swizzled: span bytes of MN contiguous,
    # 8 K rows of span bytes per atom, LBO to the next atom along MN, SBO to the next 8 K rows
    lbo, sbo = (1024, 128) if not span else (8 * span, 2048)
    ia = _place_mn(A.view(np.uint16), span, lbo, sbo)
    ib = _place_mn(B.view(np.uint16), span, lbo, sbo)
    img = np.zeros(32768, np.uint8)
    img[:16384], img[16384:] = ia[:16384], ib[:16384]
    src = _kernel(n, 1, 0).replace("1, 1, 0, 0;", "1, 1, 1, 1;").replace("[16384]", "[32768]")
    src = src.replace(".b8 sm[16384]", ".b8 sm[32768]")
    D = _run(src, img, _desc(0, lbo, sbo, span), _desc(16384, lbo, sbo, span), n)
    ref = A.astype(np.float64) @ B.astype(np.float64).T + 1.0
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


def test_racecheck_sees_descriptor_reads_of_shared_memory_written_by_another_warp_without_a_barrier():
    # warp 3 writes B's image after the bar.sync; the wgmma of warp 0..3 then reads it with no barrier between
    src = _kernel(8, 1, 0).replace("  wgmma.fence.sync.aligned;", "  setp.eq.u32 %p3, %r0, 96;\n"
                                   "  @%p3 st.shared.u32 [0], %r0;\n  wgmma.fence.sync.aligned;")
    img = np.zeros(512, np.uint8)
    with pytest.raises(ptxsim.RacecheckError, match="read-after-write hazard with warp 3"):
        _run(src, img, 0, _desc(0, 128, 256, 0), 8, sanitize="racecheck")
    _run(src.replace("  wgmma.fence.sync.aligned;", "  bar.sync 0;\n  wgmma.fence.sync.aligned;"), img, 0,
         _desc(0, 128, 256, 0), 8, sanitize="racecheck")  # a barrier between: no finding


def test_racecheck_takes_no_wgmma_wait_as_ordering_another_warps_plain_write():
    """A warp's st.shared before the warpgroup's wgmma, another warp's ld.shared after the wgmma.wait_group: the
    wait is a warpgroup rendezvous, no release / acquire in the PTX memory model, so nothing orders the store before
    the load on hardware (rung 7's weight scales without the named barrier after their copy, a mutant racecheck
    certified after 7e130ff counted the wait's warpgroup join as a release chain). A bar.sync between: clean."""
    write = ("  setp.eq.u32 %p3, %r0, 96;\n  @%p3 st.shared.u32 [8192], %r0;\n  wgmma.fence.sync.aligned;")
    read = ("  wgmma.wait_group.sync.aligned 0;\n  setp.eq.u32 %p3, %r0, 0;\n  @%p3 ld.shared.u32 %r5, [8192];\n"
            "  @%p3 st.global.u32 [%rd2], %r5;")
    src = _kernel(8, 1, 0).replace("  wgmma.fence.sync.aligned;", write, 1)
    src = src.replace("  wgmma.wait_group.sync.aligned 0;", read)
    img = np.zeros(512, np.uint8)
    with pytest.raises(ptxsim.RacecheckError, match="hazard with warp [03]"):
        _run(src, img, 0, _desc(0, 128, 256, 0), 8, sanitize="racecheck")
    fenced = src.replace("  setp.eq.u32 %p3, %r0, 0;", "  bar.sync 0;\n  setp.eq.u32 %p3, %r0, 0;")
    _run(fenced, img, 0, _desc(0, 128, 256, 0), 8, sanitize="racecheck")


def test_f16_inputs_with_f16_accumulators():
    rng = np.random.default_rng(11)
    n = 16
    A = rng.standard_normal((64, 16)).astype(np.float16)
    B = rng.standard_normal((n, 16)).astype(np.float16)
    img = np.zeros(8192 + 512, np.uint8)
    ia, ib = _place(A.view(np.uint8).reshape(64, 32), 0, 128, 256), _place(B.view(np.uint8).reshape(n, 32), 0, 128,
                                                                            256)
    img[:ia.size], img[8192:8192 + ib.size] = ia, ib
    src = _kernel(n, 1, 0, types="f16.f16", acc="f16")
    out = np.zeros((128, n // 4), np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 128,
                  [img, np.uint32(img.size), out, np.uint64(_desc(0, 128, 256, 0)), np.uint64(_desc(8192, 128, 256, 0)),
                   np.zeros((128, 4), np.uint32), np.uint32(1)])
    halves = out.view(np.float16).reshape(128, n // 2)  # element i of register i // 2, low half first
    D = _d_matrix(halves.astype(np.float32), n)
    ref = (A.astype(np.float64) @ B.astype(np.float64).T + 1.0).astype(np.float16)
    np.testing.assert_allclose(D, ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    with pytest.raises(UnsupportedInstruction, match="accumulator type .f16 for .bf16"):
        ptxsim.load_ptx(_kernel(n, 1, 0, acc="f16")).kernel("k")


def test_tensor_class_counts_m16n8_mma_units_per_warp():
    img = np.zeros(512, np.uint8)
    src = _kernel(24, 1, 0)
    out = np.zeros((128, 12), np.float32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 128,
                          [img, np.uint32(img.size), out, np.uint64(0), np.uint64(_desc(0, 128, 256, 0)),
                           np.zeros((128, 4), np.uint32), np.uint32(1)])
    # one m64n24k16 per warpgroup = 4 warps x 3 m16n8k16 MMAs (the same FLOPs as 12 mma.sync m16n8k16)
    assert stats.metrics["ptxsim__inst_executed_tensor.sum"] == 12


def test_a_from_registers_with_an_mn_major_b():
    rng = np.random.default_rng(5)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    img = _place_mn(B.view(np.uint16), 128, 1024, 2048)[:4096]
    src = _kernel(n, 1, 0, a_regs=True).replace("1, 1, 0;", "1, 1, 1;")
    D = _run(src, img, 0, _desc(0, 1024, 2048, 128), n, areg=_a_registers(A.view(np.uint16), 2))
    np.testing.assert_allclose(D, A.astype(np.float64) @ B.astype(np.float64).T + 1.0, rtol=1e-6, atol=1e-5)
