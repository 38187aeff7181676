"""Rules the hardware enforces that ptxsim used to forgive (issue 26): wgmma scale-d = 0 ignores D, bar.warp.sync
reconverges its members, an out-of-bounds TMA destination is a memcheck report, swizzle alignment."""
import ml_dtypes
import numpy as np
import pytest

import ptxsim
from ptxsim import tensormap as tmap
from ptxsim.errors import MemcheckError, MemoryFault
from ptxsim.ptxas import find_ptxas
from tests.ptxsim.ptxkit import HEADER
from tests.ptxsim.test_hopper_bulk import SRC, _launch
from tests.ptxsim.test_hopper_wgmma import _a_registers, _d_matrix, _desc, _kernel, _place, _run

pytestmark = pytest.mark.sim

_POISON = ("0f7FC00000", "0f7F800000", "0fFF800000")  # NaN, +Inf, -Inf


def _poisoned(src: str, nd: int) -> str:
    """The kernel with its accumulators started at NaN / +Inf / -Inf instead of 1.0."""
    for i in range(nd):
        src = src.replace(f"mov.b32 %d{i}, 0f3F800000;", f"mov.b32 %d{i}, {_POISON[i % 3]};")
    assert "0f3F800000" not in src
    return src


@pytest.mark.parametrize("scale_d", ["predicate", "immediate"])
def test_wgmma_scale_d_zero_ignores_nan_and_inf_in_the_old_accumulator(scale_d):
    rng = np.random.default_rng(11)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    ib = _place(B.view(np.uint8).reshape(n, 32), 0, 128, 256)
    src = _poisoned(_kernel(n, 1, 0, a_regs=True), n // 2)
    if scale_d == "immediate":
        assert src.count("%p1, 1, 1") == 1
        src = src.replace("%p1, 1, 1", "0, 1, 1")
    D = _run(src, ib, 0, _desc(0, 128, 256, 0), n, areg=_a_registers(A.view(np.uint16), 2), scd=0)
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    assert np.isfinite(D).all()  # before: NaN * 0 = NaN and Inf * 0 = NaN leaked into every element
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


def test_wgmma_scale_d_one_still_adds_the_old_accumulator():
    # the same kernel with scale-d 1: the poisoned accumulators propagate as IEEE addition says
    rng = np.random.default_rng(12)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    ib = _place(B.view(np.uint8).reshape(n, 32), 0, 128, 256)
    src = _poisoned(_kernel(n, 1, 0, a_regs=True), n // 2)
    D = _run(src, ib, 0, _desc(0, 128, 256, 0), n, areg=_a_registers(A.view(np.uint16), 2), scd=1)
    start = np.array([np.nan, np.inf, -np.inf], np.float32)
    init = _d_matrix(np.tile(start[np.arange(n // 2) % 3], (128, 1)), n)  # each element's starting value
    np.testing.assert_array_equal(D, init)  # finite products plus NaN / +-Inf stay NaN / +-Inf


# -- out-of-bounds bulk / TMA destinations under memcheck ------------------------------------------------------------
_TMA = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [tm, {%r10, %r10}], "
        "[%r2];")
_BULK = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 256, [%r2];"
_EXPECT = "mov.u32 %r10, 0;\n  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;"


def _copy_to(offset: int, copy: str, swizzle: int = 0, box=(16, 8), **kw):
    """Thread 0 copies 256 bytes (a bulk copy, or a 16 x 8 u16 box) to sm + offset; returns (stats, out)."""
    g = (np.arange(8 * 64, dtype=np.uint16) + 1).reshape(8, 64)
    out = np.zeros(64, np.uint32)
    dev = ptxsim.Device()
    gbuf = dev.to_device(g)
    tm = tmap.encode_tiled(1, 2, gbuf.addr, (64, 8), (128,), box, (1, 1), swizzle=swizzle)
    stats = _launch(f"add.u32 %r3, %r1, {offset};\n  " + copy, _EXPECT.replace("256", str(box[0] * box[1] * 2)),
                    [gbuf, out, np.zeros(1, np.uint32), tm], device=dev, **kw)
    return stats, out


@pytest.mark.parametrize("copy", [_TMA, _BULK], ids=["tensor", "bulk"])
@pytest.mark.parametrize("offset", [65536, 8192 - 128], ids=["outside", "straddling"])
def test_out_of_bounds_async_destination_is_a_memcheck_report_not_a_crash(copy, offset):
    # before: racecheck's on_async_issue indexed its shadow with the landing words -> bare IndexError
    stats, _ = _copy_to(offset, copy, sanitize="all", sanitize_report=True)
    mem = [r for r in stats.sanitizer_reports if r.tool == "memcheck"]
    assert mem, stats.sanitizer_reports
    r = mem[0]
    assert "out-of-bounds" in r.message and "destination" in r.message
    text = SRC.replace("EXPECT", _EXPECT).replace("COPY", "add\n  " + copy)  # as _launch builds it
    line = 1 + next(i for i, t in enumerate(text.splitlines()) if copy in t)
    assert r.line == line and r.instruction.startswith(copy.split()[0]) and r.space == "shared"
    assert r.cta == (0, 0, 0) and r.thread == (0, 0, 0)
    assert offset <= r.address < offset + 256
    assert {x.tool for x in stats.sanitizer_reports} <= {"memcheck", "initcheck"}  # no other fallout


@pytest.mark.parametrize("copy", [_TMA, _BULK], ids=["tensor", "bulk"])
def test_out_of_bounds_async_destination_raises_memcheck_error_when_not_reporting(copy):
    with pytest.raises(MemcheckError, match="out-of-bounds .*destination.* shared address 0x10000"):
        _copy_to(65536, copy, sanitize="memcheck")
    with pytest.raises(MemoryFault, match="destination"):
        _copy_to(65536, copy)


# -- swizzle alignment ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("swizzle,span,repeat", [(1, 32, 256), (2, 64, 512), (3, 128, 1024)])
def test_swizzled_tma_box_must_start_where_its_pattern_repeats(swizzle, span, repeat):
    box = (span // 2, 8)
    stats, out = _copy_to(repeat, _TMA, swizzle=swizzle, box=box)  # on the boundary: lands
    assert stats.sanitizer_reports == []
    with pytest.raises(MemoryFault, match=rf"misaligned cp.async.bulk.tensor destination .* shared address "
                                          rf"{repeat + 128:#x}.*{span}B-swizzled box must start on a {repeat}-byte"):
        _copy_to(repeat + 128, _TMA, swizzle=swizzle, box=box)


def test_unswizzled_tma_box_needs_128_bytes():
    _copy_to(128, _TMA)
    with pytest.raises(MemoryFault, match="shared address 0x40.*128-byte aligned"):
        _copy_to(64, _TMA)


def _wgmma_at(a_at: int, span: int):
    """(D, reference) of a bf16 wgmma chain over one swizzle row of K: A at shared offset a_at, B at 12288, each
    k-step advancing both descriptor starts by 32 bytes."""
    rng = np.random.default_rng(span + a_at)
    n, kb = 16, span
    A = rng.standard_normal((64, kb // 2)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, kb // 2)).astype(ml_dtypes.bfloat16)
    lbo, sbo = 0, 8 * span
    ia = _place(A.view(np.uint8).reshape(64, kb), span, lbo, sbo)
    ib = _place(B.view(np.uint8).reshape(n, kb), span, lbo, sbo)
    img = np.zeros(12288 + ib.size, np.uint8)
    img[a_at:a_at + ia.size], img[12288:] = ia, ib
    src = _kernel(n, kb // 32, 32)  # each k-step advances both starts by 32 bytes inside the swizzle row
    D = _run(src, img, _desc(a_at, lbo, sbo, span), _desc(12288, lbo, sbo, span), n)
    return D, A.astype(np.float64) @ B.astype(np.float64).T + 1.0


@pytest.mark.parametrize("span,repeat", [(32, 256), (64, 512), (128, 1024)])
def test_wgmma_swizzled_descriptor_start_must_be_in_the_first_row_of_its_pattern(span, repeat):
    D, ref = _wgmma_at(repeat, span)  # on the boundary, K-steps +32 inside the row: legal
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)
    with pytest.raises(MemoryFault, match=rf"misaligned wgmma .bf16 matrix-descriptor start .*line \d+.*CTA \(0, 0, 0\)"
                                          rf".*shared address {repeat + 128:#x}.*{span}B swizzle.*{repeat}-byte"):
        _wgmma_at(repeat + 128, span)


@pytest.mark.parametrize("align,used", [(1024, True), (1024, False), (256, True)])
def test_dynamic_shared_memory_starts_at_the_extern_alignment_as_ptxas_lays_it_out(align, used):
    # 8 static bytes and `.extern .shared .align 1024`: ptxas reports "1024 bytes smem" (the dynamic base is padded
    # to the extern's alignment, used or not); before, ptxsim put the dynamic base at 16 and a 1024-aligned
    # swizzled stage there was off its boundary
    src = HEADER.replace("sm_90", "sm_90a") + f"""
.shared .align 8 .b64 bar;
.extern .shared .align {align} .b8 dyn[];
.visible .entry k(.param .u64 p)
{{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, {'dyn' if used else '5'}; mov.u32 %r2, bar;
  st.shared.u32 [%r2], %r1;
  st.global.u32 [%rd1], %r1;
  ret;
}}
"""
    k = ptxsim.load_ptx(src).kernel("k")
    assert k.program.shared_dyn_offset == align
    out = np.zeros(1, np.uint32)
    ptxsim.launch(k, 1, 1, [out])
    assert out[0] == (align if used else 5)
    exe = find_ptxas()
    if exe is not None:  # ptxas's own layout agrees
        import subprocess
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
            f.write(src)
            f.flush()
            info = subprocess.run([str(exe), "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"], capture_output=True,
                                  text=True, timeout=60).stderr
        assert f"{align} bytes smem" in info, info


def test_out_of_bounds_bulk_store_destination_is_a_memcheck_report_and_writes_nothing():
    src = np.arange(64, dtype=np.uint32)
    dev = ptxsim.Device()
    dst = dev.to_device(np.zeros(16, np.uint32))  # 64 bytes: the store's [dst + 64, dst + 192) is past its end
    stats = _launch(_BULK.replace("%r3", "%r1"), _EXPECT, [src, np.zeros(64, np.uint32), dst, bytes(128)],
                    store="cp.async.bulk.global.shared::cta.bulk_group [%rd9+64], [%r1], 128;", device=dev,
                    sanitize="memcheck", sanitize_report=True)
    r = stats.sanitizer_reports[0]  # the range's first and last 16 bytes are both outside
    assert {x.tool for x in stats.sanitizer_reports} == {"memcheck"}
    assert "cp.async.bulk destination" in r.message and r.space == "global" and r.address == dst.addr + 64
    assert not dev.read(dst, np.uint32, (16,)).any()
