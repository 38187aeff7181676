"""wmma m16n16k16 (load.a/b/c, mma, store.d) and the cp.async forms of __pipeline_memcpy_async, against NumPy."""
import re

import ml_dtypes
import numpy as np
import pytest

import ptxsim
from ptxsim.ops.tensor import WMMA_FRAGS

pytestmark = pytest.mark.sim

BF16 = np.dtype(ml_dtypes.bfloat16)
_HALF = {"bf16": BF16, "f16": np.dtype(np.float16), "f32": np.dtype(np.float32)}

HEADER = """.version 8.4
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .b32 %a<8>; .reg .b32 %b<8>; .reg .b32 %c<8>; .reg .b32 %d<8>; .reg .b32 %r<8>; .reg .b16 %hs<4>;
  .reg .b64 %rd<12>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; ld.param.u64 %rd4, [pd];
  cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2; cvta.to.global.u64 %rd3, %rd3;
  cvta.to.global.u64 %rd4, %rd4;
"""


def _regs(prefix: str, n: int) -> str:
    return "{" + ", ".join(f"%{prefix}{i}" for i in range(n)) + "}"


def _kernel(body: str):
    return ptxsim.load_ptx(HEADER + body + "\n  ret;\n}\n").kernel("k")


def _gemm_body(al="row", bl="col", cl="row", dl="row", ab="bf16", ct="f32", dt="f32", stride=16, space=".global"):
    na, nc, nd = WMMA_FRAGS[("a", ab)][0], WMMA_FRAGS[("c", ct)][0], WMMA_FRAGS[("d", dt)][0]
    types = f"{dt}.{ab}.{ab}.{ct}" if ab == "bf16" else f"{dt}.{ct}"
    return f"""
  wmma.load.a.sync.aligned.{al}.m16n16k16{space}.{ab} {_regs('a', na)}, [%rd1], {stride};
  wmma.load.b.sync.aligned.{bl}.m16n16k16{space}.{ab} {_regs('b', na)}, [%rd2], {stride};
  wmma.load.c.sync.aligned.{cl}.m16n16k16{space}.{ct} {_regs('c', nc)}, [%rd3], {stride};
  wmma.mma.sync.aligned.{al}.{bl}.m16n16k16.{types} {_regs('d', nd)}, {_regs('a', na)},
    {_regs('b', na)}, {_regs('c', nc)};
  wmma.store.d.sync.aligned.{dl}.m16n16k16{space}.{dt} [%rd4], {_regs('d', nd)}, {stride};"""


def _lay_out(m: np.ndarray, layout: str, stride: int, fill) -> np.ndarray:
    """A 16x16 matrix as it lies in memory with this layout and leading dimension (the padding holds `fill`)."""
    mem = np.full((16, stride), fill, m.dtype)
    mem[:, :16] = m if layout == "row" else m.T
    return mem.reshape(-1)


def _read_back(mem: np.ndarray, layout: str, stride: int) -> np.ndarray:
    tile = mem.reshape(16, stride)[:, :16]
    return tile if layout == "row" else tile.T


def _ints(rng, shape, dtype, lo=-8, hi=9):
    """Small integers: every product and sum is exact, so any element in the wrong place shows."""
    return rng.integers(lo, hi, shape).astype(np.float64).astype(dtype)


# ------------------------------------------------------------------------------------------- a known product, exactly
@pytest.mark.parametrize("al,bl,cl,dl", [("row", "col", "row", "row"), ("col", "row", "col", "col"),
                                         ("row", "row", "col", "row"), ("col", "col", "row", "col")])
@pytest.mark.parametrize("ab", ["bf16", "f16"])
def test_product_element_by_element_every_layout(al, bl, cl, dl, ab, rng):
    A, B = _ints(rng, (16, 16), _HALF[ab]), _ints(rng, (16, 16), _HALF[ab])
    C = _ints(rng, (16, 16), np.float32, -100, 100)
    stride = 24  # a leading dimension wider than the tile: rows of 48 / 96 bytes
    a, b, c = (_lay_out(A, al, stride, np.nan), _lay_out(B, bl, stride, np.nan), _lay_out(C, cl, stride, np.nan))
    d = np.full(16 * stride, -7.0, np.float32)
    ptxsim.launch(_kernel(_gemm_body(al, bl, cl, dl, ab, stride=stride)), 1, 32,
                  [a.view(np.uint16), b.view(np.uint16), c, d])
    want = (A.astype(np.float64) @ B.astype(np.float64) + C).astype(np.float32)
    np.testing.assert_array_equal(_read_back(d, dl, stride), want)
    assert np.all(d.reshape(16, stride)[:, 16:] == -7.0)  # the store leaves the padding columns alone


@pytest.mark.parametrize("ct,dt", [("f16", "f16"), ("f16", "f32"), ("f32", "f16")])
def test_f16_accumulators(ct, dt, rng):
    A, B = _ints(rng, (16, 16), np.float16), _ints(rng, (16, 16), np.float16)
    C = _ints(rng, (16, 16), _HALF[ct], -100, 100)
    d = np.zeros(256, _HALF[dt])
    ptxsim.launch(_kernel(_gemm_body(ab="f16", ct=ct, dt=dt)), 1, 32,
                  [A.view(np.uint16).ravel(), B.T.copy().view(np.uint16).ravel(), C.ravel(), d])
    want = (A.astype(np.float64) @ B.astype(np.float64) + C.astype(np.float64)).astype(_HALF[dt])
    np.testing.assert_array_equal(d.reshape(16, 16), want)


def test_rounding_of_a_real_product_matches_float64_then_f32(rng):
    """Non-integer bf16 data: the float64 product (exact for 16 bf16 terms) rounded once to f32, as NumPy does."""
    A = rng.standard_normal((16, 16)).astype(BF16)
    B = rng.standard_normal((16, 16)).astype(BF16)
    C = rng.standard_normal((16, 16)).astype(np.float32)
    d = np.zeros(256, np.float32)
    ptxsim.launch(_kernel(_gemm_body()), 1, 32,
                  [A.view(np.uint16).ravel(), B.T.copy().view(np.uint16).ravel(), C.ravel(), d])
    exact = A.astype(np.float64) @ B.astype(np.float64) + C
    np.testing.assert_array_equal(d.reshape(16, 16), exact.astype(np.float32))


LANE_MAP_BODY = """
  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1];
  wmma.load.b.sync.aligned.col.m16n16k16.global.bf16 {%b0, %b1, %b2, %b3}, [%rd2];
  mov.u32 %r0, %tid.x; mul.wide.u32 %rd5, %r0, 32; add.s64 %rd6, %rd3, %rd5;
  st.global.v4.b32 [%rd6], {%a0, %a1, %a2, %a3}; st.global.v4.b32 [%rd6+16], {%b0, %b1, %b2, %b3};"""


def _lane_map_args() -> list:
    """A and B with element (r, c) = r * 16 + c (B stored column-major), and room for each lane's 8 registers."""
    idx = np.arange(256, dtype=np.uint16).reshape(16, 16)
    return [idx.ravel(), idx.T.copy().ravel(), np.zeros(32 * 8, np.uint32), np.zeros(1, np.uint32)]


def test_fragment_layout_is_two_m16n8k16_halves():
    """The documented lane mapping (the one sm_80+ hardware uses): lane l = 4g + t holds A[g][2t], A[g][2t+1] in
    register 0, A[g+8][2t..] in 1, A[g][2t+8..] in 2, A[g+8][2t+8..] in 3; B[k][n] with k = 2t.., n = g (0, 1) and
    n = g + 8 (2, 3); C/D elements in A's order."""
    words = _lane_map_args()
    ptxsim.launch(_kernel(LANE_MAP_BODY), 1, 32, words)
    words = words[2].reshape(32, 8)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    for r, (row, col) in enumerate([(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]):
        np.testing.assert_array_equal(words[:, r], (row * 16 + col) | ((row * 16 + col + 1) << 16))
    for r, (k, n) in enumerate([(2 * t, g), (2 * t + 8, g), (2 * t, g + 8), (2 * t + 8, g + 8)]):
        np.testing.assert_array_equal(words[:, 4 + r], (k * 16 + n) | ((k * 16 + 16 + n) << 16))


def test_shared_memory_and_generic_addresses_and_default_stride(rng):
    """Stage A and B through shared memory with ordinary stores, load them with .shared and with generic addresses
    (cvta), stride omitted (16): both give the same product; shared-memory counters see the fragment loads."""
    A, B = _ints(rng, (16, 16), BF16), _ints(rng, (16, 16), BF16)
    body = """
  .shared .align 32 .b8 sa[512];
  .shared .align 32 .b8 sb[512];
  mov.u32 %r0, %tid.x; mul.wide.u32 %rd5, %r0, 16; cvt.u32.u64 %r1, %rd5;
  add.s64 %rd6, %rd1, %rd5; ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd6]; mov.u32 %r2, sa; add.u32 %r2, %r2, %r1;
  st.shared.v4.b32 [%r2], {%r4, %r5, %r6, %r7};
  add.s64 %rd6, %rd2, %rd5; ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd6]; mov.u32 %r2, sb; add.u32 %r2, %r2, %r1;
  st.shared.v4.b32 [%r2], {%r4, %r5, %r6, %r7};
  bar.sync 0;
  mov.u32 %r3, sa;
  wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%a0, %a1, %a2, %a3}, [%r3];
  mov.u64 %rd7, sb; cvta.shared.u64 %rd7, %rd7;
  wmma.load.b.sync.aligned.col.m16n16k16.bf16 {%b0, %b1, %b2, %b3}, [%rd7];
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7}, [%rd3];
  wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7},
    {%a0, %a1, %a2, %a3}, {%b0, %b1, %b2, %b3}, {%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7};
  wmma.store.d.sync.aligned.row.m16n16k16.f32 [%rd4], {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7};"""
    d = np.zeros(256, np.float32)
    stats = ptxsim.launch(_kernel(body), 1, 32, [A.view(np.uint16).ravel(), B.T.copy().view(np.uint16).ravel(),
                                                 np.zeros(256, np.float32), d])
    np.testing.assert_array_equal(d.reshape(16, 16), A.astype(np.float64) @ B.astype(np.float64))
    m = stats.metrics
    assert m["ptxsim__inst_executed_tensor.sum"] == 2  # one wmma.mma = two m16n8k16 MMAs (8192 FLOP)
    assert m["smsp__inst_executed.sum"] == stats.warp_instructions  # the total still counts PTX instructions
    # the .shared and the generic wmma loads: 4 word-pair requests each; the two st.shared.v4 one each
    assert m["ptxsim__shared_requests_op_ld.sum"] == 2 * 4 and m["ptxsim__shared_requests_op_st.sum"] == 2


def test_two_warps_and_several_ctas_are_independent(rng):
    """Each warp multiplies its own tile (a per-warp offset into A): fragments never mix across warps or CTAs."""
    n = 6  # 3 CTAs x 2 warps
    A = _ints(rng, (n, 16, 16), BF16)
    B = _ints(rng, (16, 16), BF16)
    body = """
  mov.u32 %r0, %tid.x; shr.u32 %r0, %r0, 5; mov.u32 %r1, %ctaid.x; shl.b32 %r1, %r1, 1; add.u32 %r0, %r0, %r1;
  mul.wide.u32 %rd5, %r0, 512; add.s64 %rd1, %rd1, %rd5; mul.wide.u32 %rd5, %r0, 1024; add.s64 %rd4, %rd4, %rd5;
""" + _gemm_body().replace("[%rd3], 16", "[%rd3]")
    d = np.zeros((n, 16, 16), np.float32)
    ptxsim.launch(_kernel(body), 3, 64, [A.view(np.uint16), B.T.copy().view(np.uint16),
                                         np.zeros((16, 16), np.float32), d])
    np.testing.assert_array_equal(d, A.astype(np.float64) @ B.astype(np.float64))


# ------------------------------------------------------------------------------------------------ ptxsim's own errors
@pytest.mark.parametrize("line,match", [
    ("wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %a2}, [%rd1];",
     r"\(matrix a, \.bf16\) is a vector of 4 32-bit registers; got 3"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%a0, %a1, %a2, %a3}, [%rd1];",
     r"\(matrix a, \.f16\) is a vector of 8 32-bit registers; got 4"),
    ("wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%c0, %c1, %c2, %c3}, [%rd1];",
     r"\(matrix c, \.f32\) is a vector of 8 32-bit registers; got 4"),
    ("wmma.store.d.sync.aligned.row.m16n16k16.global.f16 [%rd1], {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7};",
     r"\(matrix d, \.f16\) is a vector of 4 32-bit registers; got 8"),
    (("wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, "
      "{%a0, %a1, %a2, %a3}, {%b0, %b1, %b2, %b3}, {%c0, %c1, %c2, %c3};"),
     r"operand c \(matrix c, \.f32\) is a vector of 8 32-bit registers; got 4"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %hs0, %a3}, [%rd1];",
     r"%hs0 is not a 32-bit register"),
])
def test_wrong_fragments_are_decode_errors(line, match):
    with pytest.raises(ptxsim.DecodeError, match=match):
        _kernel("  " + line)


@pytest.mark.parametrize("line,match", [
    ("wmma.load.a.sync.aligned.row.m32n8k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1];", r"\.m32n8k16 not supported"),
    (("wmma.mma.sync.aligned.row.col.m16n16k16.f16.bf16.bf16.f16 {%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, "
      "{%b0, %b1, %b2, %b3}, {%c0, %c1, %c2, %c3};"), r"type combination \.f16\.bf16\.bf16\.f16"),
    ("wmma.load.d.sync.aligned.row.m16n16k16.global.f32 {%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7}, [%rd1];",
     r"wmma\.load names one matrix of \.a, \.b, \.c"),
    ("wmma.load.a.row.m16n16k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1];", r"sync\.aligned m16n16k16"),
    ("wmma.load.b.sync.aligned.m16n16k16.global.bf16 {%b0, %b1, %b2, %b3}, [%rd1];", r"one layout"),
])
def test_unsupported_forms_are_named(line, match):
    with pytest.raises(ptxsim.UnsupportedInstruction, match=match):
        _kernel("  " + line)


def test_misaligned_base_is_a_memory_fault():
    body = "  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1+16];"
    with pytest.raises(ptxsim.MemoryFault, match=r"misaligned wmma\.load\.a .*expected 32-byte alignment"):
        ptxsim.launch(_kernel(body), 1, 32, [np.zeros(512, np.uint16)] + [np.zeros(4, np.uint32)] * 3)


def test_stride_must_be_a_multiple_of_16_bytes():
    body = "  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1], 20;"
    with pytest.raises(ptxsim.PtxSimError, match=r"wmma stride 20 .*expected a multiple of 8 \.bf16 elements"):
        ptxsim.launch(_kernel(body), 1, 32, [np.zeros(512, np.uint16)] + [np.zeros(4, np.uint32)] * 3)


def test_out_of_bounds_tile_is_a_memory_fault():
    """The last row of a 16-row tile lies past a 15-row allocation: the element loads fault like ld does."""
    body = "  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%a0, %a1, %a2, %a3}, [%rd1];"
    with pytest.raises(ptxsim.MemoryFault, match=r"out-of-bounds load"):
        ptxsim.launch(_kernel(body), 1, 32, [np.zeros(15 * 16, np.uint16)] + [np.zeros(4, np.uint32)] * 3)


def test_needs_a_converged_warp():
    body = _gemm_body()
    with pytest.raises(ptxsim.PtxSimError, match="needs all 32 lanes"):
        ptxsim.launch(_kernel(body), 1, 16, [np.zeros(256, np.uint16)] * 2 + [np.zeros(256, np.float32)] * 2)


# ------------------------------------------------------------------------- what NVRTC emits for the C++ intrinsics
PIPELINE_SRC = r"""
#include <cuda_pipeline_primitives.h>
// 4-, 8- and 16-byte __pipeline_memcpy_async (cp.async.ca 4/8, .cg 16), zero fill via src-size, two commit groups
extern "C" __global__ void stage(const float* __restrict__ x, float* __restrict__ out, int zfill) {
  __shared__ __align__(16) float s[3][128];
  int t = threadIdx.x;  // 32 threads
  __pipeline_memcpy_async(&s[0][t], x + t, 4);
  __pipeline_memcpy_async(&s[1][2 * t], x + 128 + 2 * t, 8, zfill >= 8 ? 4 : 0);
  __pipeline_commit();
  __pipeline_memcpy_async(&s[2][4 * t], x + 256 + 4 * t, 16, zfill);
  __pipeline_commit();
  __pipeline_wait_prior(1);  // the first group has landed
  __syncthreads();
  out[t] = s[0][(t + 1) % 32];
  __pipeline_wait_prior(0);
  __syncthreads();
  for (int i = 0; i < 2; i++) out[32 + 2 * t + i] = s[1][2 * t + i];
  for (int i = 0; i < 4; i++) out[96 + 4 * t + i] = s[2][4 * t + i];
}
"""


@pytest.mark.parametrize("zfill", [0, 8])
def test_pipeline_memcpy_async_forms_from_nvrtc(cuda_ptx, zfill, rng):
    ptx = cuda_ptx(PIPELINE_SRC)
    for form in (r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, 4;",
                 r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 8, [48];",
                 r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, (\d+|%r\d+);",
                 r"cp\.async\.commit_group;", r"cp\.async\.wait_group 1;", r"cp\.async\.wait_group 0;"):
        assert re.search(form, ptx), form
    x = rng.standard_normal(384).astype(np.float32)
    out = np.zeros(224, np.float32)
    stats = ptxsim.launch(ptxsim.load_ptx(ptx).kernel("stage"), 1, 32, [x, out, np.int32(zfill)])
    np.testing.assert_array_equal(out[:32], np.roll(x[:32], -1))
    s1 = x[128:192].reshape(32, 2).copy()
    s2 = x[256:384].reshape(32, 4).copy()
    if zfill:
        s1[:, 1] = 0  # 8-byte copy with 4 bytes of zero fill
        s2[:, 2:] = 0  # 16-byte copy with 8 bytes of zero fill
    np.testing.assert_array_equal(out[32:96], s1.ravel())
    np.testing.assert_array_equal(out[96:], s2.ravel())
    assert stats.metrics["ptxsim__inst_executed_cp_async.sum"] >= 3


WMMA_SRC = r"""
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;
// what load_matrix_sync / mma_sync / store_matrix_sync compile to: generic addresses, a runtime leading dimension
extern "C" __global__ void gemm16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d, unsigned ld) {
  __shared__ __align__(32) float stage[16 * 24];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  for (int k = 0; k < 32; k += 16) {
    wmma::load_matrix_sync(fa, a + k, ld);
    wmma::load_matrix_sync(fb, b + k, ld);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(stage, acc, 24, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 256; i += 32) d[i] = stage[(i / 16) * 24 + i % 16];
}
"""


def test_nvrtc_wmma_intrinsics_run(rng):
    from cpp_impl.nvrtc import compile_source

    ptx = compile_source(WMMA_SRC, "wmma16.cu")
    assert "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32" in ptx
    A = _ints(rng, (16, 40), BF16)  # K = 32 inside a leading dimension of 40
    Bt = _ints(rng, (16, 40), BF16)  # B^T: column n of B is row n here (col_major B)
    d = np.zeros(256, np.float32)
    ptxsim.launch(ptxsim.load_ptx(ptx).kernel("gemm16"), 1, 32,
                  [A.view(np.uint16), Bt.view(np.uint16), d, np.uint32(40)])
    want = A[:, :32].astype(np.float64) @ Bt[:, :32].astype(np.float64).T + 1.0
    np.testing.assert_array_equal(d.reshape(16, 16), want.astype(np.float32))


# ------------------------------------------------------------------------------------------------------------ on a GPU
def _on_gpu(body: str, arrays: list) -> list:
    """Run the one-warp kernel HEADER + body on the GPU; returns the arrays as the kernel left them."""
    from harness.backends.gpu import GpuBackend

    backend = GpuBackend()
    dev = [backend.to_device(np.ascontiguousarray(a)) for a in arrays]
    try:
        backend.launch_ptx(HEADER + body + "\n  ret;\n}\n", "k", (1, 1, 1), (32, 1, 1), dev)
        backend.synchronize()
        return [backend.to_host(d) for d in dev]
    finally:
        for d in dev:
            backend.free(d)


@pytest.mark.gpu
def test_fragment_lane_map_matches_the_gpu():
    """ptxsim's wmma lane map is a documented choice (the ISA leaves it opaque): the hardware must agree."""
    sim = _lane_map_args()
    ptxsim.launch(_kernel(LANE_MAP_BODY), 1, 32, sim)
    gpu = _on_gpu(LANE_MAP_BODY, _lane_map_args())
    np.testing.assert_array_equal(gpu[2].reshape(32, 8), sim[2].reshape(32, 8))


@pytest.mark.gpu
@pytest.mark.parametrize("al,bl,cl,dl,ab,ct,dt", [("row", "col", "row", "row", "bf16", "f32", "f32"),
                                                  ("col", "row", "col", "col", "bf16", "f32", "f32"),
                                                  ("row", "col", "row", "row", "f16", "f16", "f16"),
                                                  ("col", "col", "row", "col", "f16", "f32", "f16")])
def test_products_match_the_gpu(al, bl, cl, dl, ab, ct, dt, rng):
    A, B = _ints(rng, (16, 16), _HALF[ab]), _ints(rng, (16, 16), _HALF[ab])
    C = _ints(rng, (16, 16), _HALF[ct], -100, 100)
    stride = 24
    args = [_lay_out(A, al, stride, 0).view(np.uint16), _lay_out(B, bl, stride, 0).view(np.uint16),
            _lay_out(C, cl, stride, 0), np.zeros(16 * stride, _HALF[dt])]
    body = _gemm_body(al, bl, cl, dl, ab, ct, dt, stride=stride)
    gpu = _on_gpu(body, [a.copy() for a in args])
    ptxsim.launch(_kernel(body), 1, 32, args)
    np.testing.assert_array_equal(gpu[3], args[3])
    want = (A.astype(np.float64) @ B.astype(np.float64) + C.astype(np.float64)).astype(_HALF[dt])
    np.testing.assert_array_equal(_read_back(args[3], dl, stride), want)
