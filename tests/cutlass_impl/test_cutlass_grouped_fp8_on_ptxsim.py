"""CUTLASS's grouped (pointer-array) FP8 blockwise GEMM (KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise,
example 68) run unmodified on ptxsim against NumPy, its groups in one launch (docs/cutlass.md "FP8")."""
from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pytest

from tests.cutlass_impl.test_cutlass_gemm_on_ptxsim import _fp8_case

pytestmark = [pytest.mark.sim, pytest.mark.skipif(
    shutil.which("g++") is None or importlib.util.find_spec("cutlass_library") is None,
    reason="needs g++ and the nvidia-cutlass wheel (make install) to build CUTLASS's host shim")]


def _groups(ms, N, K, seed):  # noqa: N803
    cases = [_fp8_case(m, N, K, seed + i) for i, m in enumerate(ms)]
    return [list(x) for x in zip(*cases, strict=True)]  # a, b, sfa, sfb, ref lists


def _errors(ds, refs):
    return [float(np.linalg.norm(d.astype(np.float64) - r) / np.linalg.norm(r)) for d, r in zip(ds, refs, strict=True)]


def test_whole_128_row_groups_match_numpy_sanitizer_clean():
    """Groups of whole 128-row tiles (one and two), K 256: every scale word a consumer reads was loaded."""
    from harness.backends.sim import SimBackend
    from tests.cutlass_impl.cutlass_sim import run_grouped_gemm_fp8

    a, b, sfa, sfb, ref = _groups((128, 256), 128, 256, 3)
    ds, stats = run_grouped_gemm_fp8(SimBackend(), a, b, sfa, sfb, sanitize="all")
    assert stats.sanitizer_reports == []
    assert max(_errors(ds, ref)) < 4e-3, _errors(ds, ref)
    # the per-group scales matter: group 1's rows with group 0's SFA pattern would be far off
    swapped, _ = run_grouped_gemm_fp8(SimBackend(), a, b, [sfa[1][:128], sfa[0].repeat(2, 0)], sfb)
    assert max(_errors(swapped, ref)) > 0.3


def test_partial_tile_groups_match_numpy_and_unwritten_scale_rows_never_reach_d():
    """Groups of 16, 48 and 160 rows (partial 128-row tiles, as every expert run of the contract's layouts is):
    CUTLASS loads a group's SFA by cp.async predicated on the group's M, so the shared-memory scale words of tile
    rows past M are never written, and its consumers read them (initcheck's only findings: those f32 loads), into
    accumulator rows the epilogue never stores. With shared memory starting as 0xFF bytes (NaN) instead of zeros the
    output is bit-identical and matches NumPy: the unwritten words reach nothing stored."""
    from harness.backends.sim import SimBackend
    from tests.cutlass_impl.cutlass_sim import run_grouped_gemm_fp8

    a, b, sfa, sfb, ref = _groups((16, 48, 160), 256, 256, 5)
    zero, stats = run_grouped_gemm_fp8(SimBackend(), a, b, sfa, sfb, sanitize="all", sanitize_report=True)
    assert max(_errors(zero, ref)) < 4e-3, _errors(zero, ref)
    reports = stats.sanitizer_reports
    assert reports and {(r.tool, r.space) for r in reports} == {("initcheck", "shared")}, reports[:3]
    assert all(r.instruction.startswith("ld.shared.f32 ") for r in reports), {r.instruction for r in reports}
    nan, _ = run_grouped_gemm_fp8(SimBackend(), a, b, sfa, sfb, shared_fill=0xFF)
    for z, n in zip(zero, nan, strict=True):
        np.testing.assert_array_equal(z.view(np.uint16), n.view(np.uint16))


@pytest.mark.parametrize(("name", "strict"), [("gemm_fp8_blockwise_grouped_sm90_pingpong_64x128", False),
                                              ("gemm_fp8_blockwise_grouped_sm90_pingpong_64x128", True),
                                              ("gemm_fp8_blockwise_grouped_sm90", True)])
def test_several_tiles_a_cta_with_a_k_loop_longer_than_the_stages_match_numpy(name, strict):
    """One group of 256 rows, N 128, K 1024 (8 k blocks: the producer blocks on a full pipeline inside a tile's load
    loop) on ONE CTA, so it runs every tile (4 of the ping-pong 64x128 tile, 2 of the cooperative 128x128). Before
    ptxsim held lanes at elect.sync until their whole mask arrived, the producer warp's lanes 1-31 went round the
    tile loop while lane 0 was blocked and elected lane 1, a second producer issuing TMA loads without the leader's
    arrive.expect_tx: the ping-pong kernel's tiles 1-3 read other tiles' rows (normwise error ~1.4; deadlock under
    strict async timing), the cooperative kernel's second tile was never correctly stored under strict timing (NaN)
    (docs/cutlass.md, "elect.sync")."""
    from harness.backends.sim import SimBackend
    from tests.cutlass_impl.cutlass_sim import run_grouped_gemm_fp8

    a, b, sfa, sfb, ref = _groups((256,), 128, 1024, 11)
    ds, _ = run_grouped_gemm_fp8(SimBackend(), a, b, sfa, sfb, name=name, grid=(1, 1, 1), strict_async=strict)
    tile = 64 if "pingpong" in name else 128
    errors = [_errors([ds[0][r:r + tile]], [ref[0][r:r + tile]])[0] for r in range(0, 256, tile)]
    assert np.all(np.array(errors) < 4e-3), errors  # a NaN (a tile never stored: its poison) fails too
