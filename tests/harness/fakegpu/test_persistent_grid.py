"""Rungs 4 to 11 size their persistent grids by the device (fake driver): rung 4 one CTA per SM of the device's
count, rungs 5 to 11 cuOccupancyMaxActiveClusters x 2 (clusters must fit in a GPC), not 132 hard-coded (issue 25)."""
import pytest

from harness.verify import run_kernel
from ptx_impl import (
    gemm_fp8_r4,
    gemm_fp8_r5,
    gemm_fp8_r6,
    gemm_fp8_r7,
    gemm_fp8_r8,
    gemm_fp8_r9,
    gemm_fp8_r10,
    gemm_fp8_r11,
)


@pytest.mark.parametrize("rung,run", [(4, gemm_fp8_r4.run), (5, gemm_fp8_r5.run),
                                      (6, gemm_fp8_r6.run), (7, gemm_fp8_r7.run),
                                      (8, gemm_fp8_r8.run), (9, gemm_fp8_r9.run),
                                      (10, gemm_fp8_r10.run), (11, gemm_fp8_r11.run)])
def test_persistent_grid_comes_from_the_device(fake_gpu, rung, run):
    from harness.backends.gpu import GpuBackend

    # "small" has 380 rung-4 items, 192 rung-5 pairs, 190 rung-6-9 (block, N-tile pair) items
    fake_gpu.sm_count, fake_gpu.max_active_clusters = 100, 45
    run_kernel(run, GpuBackend(), "grouped_gemm_fp8", "small", "balanced", 1, variant="up")
    (launch,) = [x for x in fake_gpu.launches if x["name"].startswith("grouped_gemm_fp8")]
    assert fake_gpu.errors == []
    assert launch["grid"] == ((100, 1, 1) if rung == 4 else (90, 1, 1))
    if rung >= 5:
        (query,) = fake_gpu.occupancy_queries
        # a cluster of 2 with the kernel's dynamic shared memory (rungs 6-10: a ring filling the 227 KB opt-in)
        assert query[0] == 2 and query[2] > (190 * 1024 if rung >= 6 else 48 * 1024)


def test_an_explicit_sms_still_wins(fake_gpu):
    from harness.backends.gpu import GpuBackend

    run_kernel(gemm_fp8_r5.run, GpuBackend(), "grouped_gemm_fp8", "small", "balanced", 1, variant="up", sms=6)
    assert [x["grid"] for x in fake_gpu.launches if x["name"].startswith("grouped")] == [(6, 1, 1)]
    assert fake_gpu.occupancy_queries == []
