"""CUTLASS as ptxsim's test of real production code (issue 28 item 3): CUTLASS 3.x's sm90 TMA warp-specialised
cooperative bf16 GEMM, compiled by NVRTC from the nvidia-cutlass wheel's headers and run unmodified on ptxsim with
the Params CUTLASS's own host code builds, against NumPy, under every sanitizer."""
from __future__ import annotations

import importlib.util
import json
import shutil

import numpy as np
import pytest

from cutlass_impl import build

pytestmark = pytest.mark.sim
needs_host = pytest.mark.skipif(
    shutil.which("g++") is None or importlib.util.find_spec("cutlass_library") is None,
    reason="needs g++ and the nvidia-cutlass wheel (make install) to build CUTLASS's host shim")


def test_committed_ptx_is_the_current_sources_and_cutlass_code():
    record = json.loads(build.record_path("gemm_bf16_sm90").read_text())
    assert record["source_sha256"] == build.source_digest("gemm_bf16_sm90") and record["arch"] == "sm_90a"
    ptx = build.load_ptx("gemm_bf16_sm90")
    assert len(ptx) == record["ptx_chars"] and ".target sm_90a" in ptx
    entry = ptx[ptx.index(".entry "):ptx.index("(", ptx.index(".entry "))]
    assert "cutlass13device_kernel" in entry and "KernelTmaWarpSpecializedCooperative" in entry
    for feature in ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "cp.async.bulk.tensor",
                    "mbarrier.try_wait", "setmaxnreg.inc.sync.aligned.u32 232", "fence.proxy.async"):
        assert feature in ptx, feature


@needs_host
@pytest.mark.parametrize("M, N, K", [(256, 256, 256), (128, 256, 192)])
def test_cutlass_bf16_gemm_runs_unmodified_on_ptxsim(M, N, K):  # noqa: N803
    import ml_dtypes

    from harness.backends.sim import SimBackend
    from tests.cutlass_impl.cutlass_sim import run_gemm_bf16

    rng = np.random.default_rng(M + N + K)
    bf16 = ml_dtypes.bfloat16
    a = rng.standard_normal((M, K)).astype(bf16)
    b = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(bf16)
    d, stats = run_gemm_bf16(SimBackend(), a, b, sanitize="all")
    assert stats.sanitizer_reports == []
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.linalg.norm(d.astype(np.float64) - ref) / np.linalg.norm(ref)
    assert err < 4e-3, err  # bf16 output rounding (2^-9) over fp32 accumulation
    # every element written (the output was poisoned with 0xFF bytes: NaN in bf16)
    assert not np.isnan(d.astype(np.float32)).any()


@needs_host
def test_a_misplaced_tensor_map_is_caught_by_the_comparison():
    """The check can fail: with A's and B's tensor maps swapped, CUTLASS computes a different product."""
    import ml_dtypes

    from harness.backends.sim import SimBackend
    from tests.cutlass_impl import cutlass_sim as gemm_sim

    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    d, _ = gemm_sim.run_gemm_bf16(SimBackend(), a, b, transform=gemm_sim.swap_first_two_maps)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.linalg.norm(d.astype(np.float64) - ref) / np.linalg.norm(ref) > 0.1


def _fp8_case(M, N, K, seed):  # noqa: N803
    import ml_dtypes

    rng = np.random.default_rng(seed)
    e4m3 = ml_dtypes.float8_e4m3fn
    a = (rng.standard_normal((M, K)) * 8).astype(e4m3)
    b = (rng.standard_normal((N, K)) * 8).astype(e4m3)
    sfa = (2.0 ** rng.integers(-6, -2, (M, K // 128))).astype(np.float32)  # 1 x 128 per row of A
    sfb = (2.0 ** rng.integers(-8, -4, (N // 128, K // 128))).astype(np.float32)  # 128 x 128 blocks of B
    af, bf = a.astype(np.float64), b.astype(np.float64)
    ref = sum((af[:, k * 128:(k + 1) * 128] @ bf[:, k * 128:(k + 1) * 128].T) * sfa[:, k:k + 1]
              * np.repeat(sfb[:, k], 128)[None, :] for k in range(K // 128))
    return a, b, sfa, sfb, ref


def test_committed_fp8_ptx_is_the_blockwise_kernel():
    record = json.loads(build.record_path("gemm_fp8_blockwise_sm90").read_text())
    assert record["source_sha256"] == build.source_digest("gemm_fp8_blockwise_sm90")
    ptx = build.load_ptx("gemm_fp8_blockwise_sm90")
    entry = ptx[ptx.index(".entry "):ptx.index("(", ptx.index(".entry "))]
    assert "KernelTmaWarpSpecializedCooperativeFP8Blockwise" in entry
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx


@needs_host
@pytest.mark.parametrize("M, N, K", [(128, 128, 128), (256, 256, 384)])  # one k tile: the try_wait cycle
def test_cutlass_fp8_blockwise_gemm_runs_unmodified_on_ptxsim(M, N, K):  # noqa: N803
    from harness.backends.sim import SimBackend
    from tests.cutlass_impl.cutlass_sim import run_gemm_fp8_blockwise

    a, b, sfa, sfb, ref = _fp8_case(M, N, K, M + K)
    d, stats = run_gemm_fp8_blockwise(SimBackend(), a, b, sfa, sfb, sanitize="all")
    assert stats.sanitizer_reports == []
    err = np.linalg.norm(d.astype(np.float64) - ref) / np.linalg.norm(ref)
    assert err < 4e-3, err
    # the scales matter: without them the product is far off (guards a kernel that ignored SFA / SFB)
    unscaled = sum(a.astype(np.float64)[:, k * 128:(k + 1) * 128] @ b.astype(np.float64)[:, k * 128:(k + 1) * 128].T
                   for k in range(K // 128))
    assert np.linalg.norm(d.astype(np.float64) - unscaled) / np.linalg.norm(unscaled) > 0.5
