"""cp.async.bulk and cp.async.bulk.tensor corner cases, and the tensor-map helper (ptxsim/tensormap.py)."""
import numpy as np
import pytest

import ptxsim
from ptxsim import tensormap as tmap
from ptxsim.errors import AsynccheckError, MemoryFault, RacecheckError, UnsupportedInstruction
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# thread 0 issues COPY (into sm, completing on bar), every thread waits on phase 0, then copies the first
# 4 * ntid bytes of sm to out (as u32 words); STORE runs afterwards (thread 0) for the shared -> global direction
SRC = HEADER + """
.shared .align 1024 .b8 sm[8192];
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 psrc, .param .u64 pout, .param .u64 pdst, .param .align 64 .b8 tm[128])
{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd2, [pout]; ld.param.u64 %rd9, [pdst];
  mov.u32 %r0, %tid.x; mul.wide.u32 %rd3, %r0, 4; add.s64 %rd4, %rd2, %rd3;
  mov.u32 %r1, sm; mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  @!%p1 bra WAIT;
  fence.proxy.async.shared::cta;
  EXPECT
  COPY
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  READ
  st.global.u32 [%rd4], %r5;
  bar.sync 0;
  @!%p1 bra END;
  STORE
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
END:
  ret;
}
"""
READ = "shl.b32 %r4, %r0, 2; add.u32 %r4, %r4, %r1; ld.shared.u32 %r5, [%r4];"


def _launch(copy, expect, args, threads=64, read=READ, store="", **kw):
    src = SRC.replace("COPY", copy).replace("EXPECT", expect).replace("READ", read).replace("STORE", store)
    k = ptxsim.load_ptx(src).kernel("k")
    return ptxsim.launch(k, 1, threads, args, **kw)


def test_bulk_copy_global_to_shared_and_back_through_a_bulk_group():
    src = np.arange(64, dtype=np.uint32) * 3 + 1
    out = np.zeros(64, np.uint32)
    dst = np.zeros(64, np.uint32)
    _launch("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];",
            "mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;",
            [src, out, dst, bytes(128)],
            store="cp.async.bulk.global.shared::cta.bulk_group [%rd9+64], [%r1], 128;")
    assert np.array_equal(out, src)
    assert np.array_equal(dst[16:48], src[:32]) and not dst[:16].any() and not dst[48:].any()


def test_copy_issued_before_the_expect_tx_still_completes_the_phase():
    # DeepGEMM issues the TMA first and arrives with expect_tx afterwards: tx-count is briefly negative
    src = np.arange(64, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    _launch("mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];",
            [src, out, np.zeros(1, np.uint32), bytes(128)], sanitize="asynccheck")
    assert np.array_equal(out, src)


def test_reading_the_destination_before_the_phase_completes_is_a_race():
    # 32 bytes expected but only 16 copied... the reader skips the wait: racecheck sees the in-flight destination
    src = np.arange(64, dtype=np.uint32)
    body = ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];\n"
            "  ld.shared.u32 %r9, [%r1];")
    with pytest.raises(RacecheckError,
                       match=r"copy issued at PTX line 19 before a waiter observed its completion.* at PTX line 20 "):
        _launch(body, "", [src, np.zeros(64, np.uint32), np.zeros(1, np.uint32), bytes(128)], threads=32,
                sanitize="racecheck")


def test_bulk_size_must_be_a_multiple_of_16():
    with pytest.raises(UnsupportedInstruction, match="size 24"):
        _launch("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 24, [%r2];",
                "", [np.zeros(64, np.uint32), np.zeros(64, np.uint32), np.zeros(1, np.uint32), bytes(128)])


def _swizzle_ref(image: np.ndarray, span: int) -> np.ndarray:
    """Hand-written reference: byte b of 16-byte chunk c of 128-byte line L moves to chunk c ^ (L mod span/16)."""
    out = np.zeros_like(image)
    for o in range(image.size):
        line, chunk, byte = o // 128, (o % 128) // 16, o % 16
        new = line * 128 + ((chunk ^ (line % (span // 16))) if span else chunk) * 16 + byte
        out[new] = image[o]
    return out


@pytest.mark.parametrize("swizzle,span", [(0, 0), (1, 32), (2, 64), (3, 128)])
def test_tensor_2d_tile_with_out_of_bounds_fill_and_swizzle(swizzle, span):
    rows, cols = 10, 80  # u16 matrix, row stride 160 bytes
    g = (np.arange(rows * cols, dtype=np.uint16) + 1).reshape(rows, cols)
    inner = max(span // 2, 16)  # box row = the swizzle span (or 32 bytes)
    box = (inner, 8)
    c0, r0 = cols - inner // 2, 5  # right half and rows 10..12 out of bounds
    threads = inner * 8 * 2 // 4
    out = np.zeros(threads, np.uint32)
    dev = ptxsim.Device()
    gbuf = dev.to_device(g)
    tm = tmap.encode_tiled(1, 2, gbuf.addr, (cols, rows), (cols * 2,), box, (1, 1), swizzle=swizzle)
    _launch("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], "
            "[tm, {%r10, %r11}], [%r2];", f"mov.u32 %r10, {c0}; mov.u32 %r11, {r0};\n"
            f"  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], {inner * 16};",
            [gbuf, out, np.zeros(1, np.uint32), tm], threads=threads, device=dev)
    want = np.zeros((8, inner), np.uint16)  # box [row, col], zeros outside the tensor
    for r in range(8):
        for c in range(inner):
            if r0 + r < rows and c0 + c < cols:
                want[r, c] = g[r0 + r, c0 + c]
    ref = _swizzle_ref(want.reshape(-1).view(np.uint8), span)
    assert np.array_equal(out.view(np.uint8), ref)


def test_tensor_store_skips_out_of_bounds_and_negative_coordinates():
    rows, cols = 4, 16
    dst = np.zeros((rows, cols), np.uint16)
    src = np.arange(64, dtype=np.uint32)  # bytes 0..255 of sm after the bulk load
    dev = ptxsim.Device()
    dbuf = dev.to_device(dst)
    tm = tmap.encode_tiled(1, 2, dbuf.addr, (cols, rows), (cols * 2,), (16, 8), (1, 1))
    _launch("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];",
            "mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;",
            [src, np.zeros(64, np.uint32), np.zeros(1, np.uint32), tm], device=dev,
            store="mov.u32 %r12, -2; cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tm, {%r12, %r12}], [%r1];")
    got = np.zeros_like(dst)
    dev.copy_out(dbuf, got)
    box = src.view(np.uint16).reshape(8, 16)
    want = np.zeros((rows, cols), np.uint16)
    want[0:rows, 0:14] = box[2:2 + rows, 2:16]  # box element (r, c) lands at (r - 2, c - 2)
    assert np.array_equal(got, want)


def test_tensor_map_helper_checks_parameters_like_the_driver():
    with pytest.raises(tmap.TensorMapError, match=r"globalStrides\[0\] = 24; expected a positive multiple of 16"):
        tmap.encode_tiled(1, 2, 1 << 40, (12, 4), (24,), (8, 4), (1, 1))
    with pytest.raises(tmap.TensorMapError, match=r"boxDim\[1\] = 300"):
        tmap.encode_tiled(1, 2, 1 << 40, (16, 4), (32,), (8, 300), (1, 1))
    with pytest.raises(tmap.TensorMapError, match="at most the swizzle span 32 bytes"):
        tmap.encode_tiled(9, 2, 1 << 40, (64, 4), (128,), (32, 4), (1, 1), swizzle=1)
    with pytest.raises(tmap.TensorMapError, match="NaN fill needs a float type"):
        tmap.encode_tiled(0, 1, 1 << 40, (64,), (), (16,), (1,), oob_fill=1)
    # stride 0 only where no address uses it: a size-1 dimension (CUTLASS's batch mode of an L = 1 GEMM)
    assert tmap.decode(tmap.encode_tiled(9, 3, 1 << 40, (64, 4, 1), (128, 0), (64, 4, 1), (1, 1, 1))).strides[1] == 0
    # a size-2 dimension of stride 0 encodes (the driver asks only a multiple of 16: CUTLASS's grouped GEMMs encode
    # such placeholders and replace them on the device) but no copy may use it
    aliased = tmap.encode_tiled(9, 3, 1 << 40, (64, 4, 2), (128, 0), (64, 4, 1), (1, 1, 1))
    with pytest.raises(tmap.TensorMapError, match=r"copy at line 7: .*globalStrides\[1\] = 0; expected .*0 only for "
                       "a dimension of size 1 when a copy uses the map"):
        tmap.decode(aliased, "copy at line 7")
    m = tmap.decode(tmap.encode_tiled(9, 3, 1 << 40, (64, 5, 3), (128, 640), (64, 2, 2), (1, 1, 2), swizzle=3))
    assert (m.dims, m.strides, m.box, m.elem_strides, m.swizzle_bytes, m.counts) == (
        (64, 5, 3), (128, 640), (64, 2, 2), (1, 1, 2), 128, (64, 2, 1))


def test_box_elements_hand_computed_with_element_strides_and_nan_fill():
    m = tmap.decode(tmap.encode_tiled(7, 2, 1 << 40, (5, 3), (32,), (4, 2), (2, 1), oob_fill=1))
    addr, inb = tmap.box_elements(m, (2, 1))
    # box columns 2, 4 (stride 2) and rows 1, 2; column 6 would be element 3 of 2 -> counts (2, 2)
    assert addr.shape == (2, 2)
    assert inb.tolist() == [[True, True], [True, True]]
    assert (addr - (1 << 40)).tolist() == [[1 * 32 + 2 * 4, 1 * 32 + 4 * 4], [2 * 32 + 8, 2 * 32 + 16]]
    addr, inb = tmap.box_elements(m, (4, 2))
    assert inb.tolist() == [[True, False], [False, False]]


def test_asynccheck_reports_a_bulk_store_source_rewritten_before_wait_group_read():
    src = np.arange(64, dtype=np.uint32)
    copy = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];"
    expect = "mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;"
    store = ("cp.async.bulk.global.shared::cta.bulk_group [%rd9], [%r1], 128;\n  cp.async.bulk.commit_group;\n"
             "  WAIT\n  st.shared.u32 [%r1+64], %r0;")
    args = [src, np.zeros(64, np.uint32), np.zeros(64, np.uint32), bytes(128)]
    with pytest.raises(AsynccheckError, match="a cp.async.bulk store still reads"):
        _launch(copy, expect, args, store=store.replace("WAIT", ""), sanitize="asynccheck")
    _launch(copy, expect, args, store=store.replace("WAIT", "cp.async.bulk.wait_group.read 0;"), sanitize="asynccheck")
    _launch(copy, expect, args, store=store.replace("WAIT", "").replace("[%r1+64]", "[%r1+128]"),
            sanitize="asynccheck")  # a word the store does not read


def _tensor_copy_through(operand_setup: str, operand: str, **kw):
    g = (np.arange(8 * 64, dtype=np.uint16) + 1).reshape(8, 64)
    out = np.zeros(64, np.uint32)
    dev = ptxsim.Device()
    gbuf = dev.to_device(g)
    tm = tmap.encode_tiled(1, 2, gbuf.addr, (64, 8), (128,), (16, 8), (1, 1))
    _launch(operand_setup + "\n  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            f"[%r1], [{operand}, {{%r10, %r10}}], [%r2];", "mov.u32 %r10, 0;\n"
            "  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;",
            [gbuf, out, np.zeros(1, np.uint32), tm], device=dev, **kw)
    return out, g


def test_tensor_map_through_its_cvta_param_generic_address():
    """nvcc takes a __grid_constant__ CUtensorMap's address as mov.b64 + cvta.param.u64 (ptxas refuses the bare
    param name in cp.async.bulk.tensor); the generic address names the same 128 bytes as [tm]."""
    out, g = _tensor_copy_through("mov.b64 %rd10, tm; cvta.param.u64 %rd11, %rd10;", "%rd11")
    assert np.array_equal(out.view(np.uint16).reshape(8, 16), g[:, :16])
    with pytest.raises(ptxsim.MemoryFault, match="parameter offset 72 is not a 64-byte aligned map"):
        _tensor_copy_through("mov.b64 %rd10, tm; cvta.param.u64 %rd11, %rd10; add.s64 %rd11, %rd11, 8;", "%rd11")


def test_generic_loads_read_kernel_parameters_and_stores_fault():
    src = HEADER + """
.visible .entry k(.param .u64 pout, .param .u64 pval)
{
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout]; mov.b64 %rd2, pval; cvta.param.u64 %rd3, %rd2; ld.u64 %rd4, [%rd3];
  cvta.to.param.u64 %rd5, %rd3; st.global.u64 [%rd1], %rd4; st.global.u64 [%rd1+8], %rd5;
  STORE
  ret;
}
"""
    out = np.zeros(2, np.uint64)
    ptxsim.launch(ptxsim.load_ptx(src.replace("STORE", "")).kernel("k"), 1, 1, [out, np.uint64(0xDEADBEEF12345678)])
    assert out[0] == 0xDEADBEEF12345678 and out[1] == 8  # the parameter's value; back to its param offset
    with pytest.raises(ptxsim.MemoryFault, match="read-only store"):
        ptxsim.launch(ptxsim.load_ptx(src.replace("STORE", "st.u64 [%rd3], %rd4;")).kernel("k"), 1, 1,
                      [np.zeros(2, np.uint64), np.uint64(1)])


def test_tensor_map_by_its_generic_param_address_as_nvcc_emits_it():
    # mov.b64 of the .param symbol, cvta.param, then the register as the map operand (a __grid_constant__ CUtensorMap
    # in nvcc's output); the same box as through [tm]; a misaligned param address is not a map
    rows, cols = 8, 16
    g = (np.arange(rows * cols, dtype=np.uint16) + 1).reshape(rows, cols)
    dev = ptxsim.Device()
    gbuf = dev.to_device(g)
    tm = tmap.encode_tiled(1, 2, gbuf.addr, (cols, rows), (cols * 2,), (16, 8), (1, 1))
    setup = "mov.b64 %rd10, tm; cvta.param.u64 %rd11, %rd10; cvta.to.param.u64 %rd12, %rd11;\n  {}\n"
    copy = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], "
            "[%rd11, {%r10, %r10}], [%r2];")
    expect = "mov.u32 %r10, 0; mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;"
    out = np.zeros(64, np.uint32)
    _launch(setup.format("") + "  " + copy, expect, [gbuf, out, np.zeros(1, np.uint32), tm], device=dev)
    assert np.array_equal(out.view(np.uint16).reshape(rows, cols), g)
    with pytest.raises(MemoryFault, match="not a 64-byte aligned map"):
        _launch(setup.format("add.s64 %rd11, %rd11, 16;") + "  " + copy, expect,
                [gbuf, np.zeros(64, np.uint32), np.zeros(1, np.uint32), tm], device=dev)


def test_bulk_and_tensor_copies_fill_lazy_pages_and_store_into_them():
    """cp.async.bulk(.tensor) reads a lazy buffer's generated bytes (not the zeros under a pending page), and a bulk
    store into a pending page survives the page's fill (a TMA-fed GEMM on lazy weights read zeros before)."""
    rows, cols = 8, 16
    fill = np.arange(rows * cols * 2 * 4, dtype=np.uint64).astype(np.uint8) * 7 + 3  # 4 u16 matrices of bytes
    dev = ptxsim.Device()
    gbuf = dev.alloc_lazy(fill.nbytes, lambda lo, hi: fill[lo:hi])
    dbuf = dev.alloc_lazy(4096, 0xEE)
    want = fill[:rows * cols * 2].view(np.uint16).reshape(rows, cols)
    tm = tmap.encode_tiled(1, 2, gbuf.addr, (cols, rows * 4), (cols * 2,), (16, 8), (1, 1))
    out = np.zeros(64, np.uint32)
    copy = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], "
            "[tm, {%r10, %r10}], [%r2];")
    _launch(copy, "mov.u32 %r10, 0; mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;",
            [gbuf, out, dbuf, tm], store="cp.async.bulk.global.shared::cta.bulk_group [%rd9+64], [%r1], 128;",
            device=dev)
    assert np.array_equal(out.view(np.uint16).reshape(rows, cols), want)
    stored = dev.gmem.read_bytes(dbuf.addr, 256)
    assert np.array_equal(stored[64:192], want.reshape(-1).view(np.uint8)[:128]) and (stored[:64] == 0xEE).all()
    out = np.zeros(64, np.uint32)
    _launch("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];",
            "mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;", [gbuf, out, dbuf, tm], device=dev)
    assert np.array_equal(out.view(np.uint8), fill[:256])
