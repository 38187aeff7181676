"""Occupancy: hand-computed sm_90 cases, launch failures, and properties against a brute-force reference."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxsim.model import (
    DEVICES,
    ModelArgumentError,
    ModelError,
    ResourceError,
    get_device,
    occupancy,
    occupancy_from_resources,
)

H100 = DEVICES["H100 SXM"]
KB = 1024


@pytest.mark.parametrize("threads, regs, smem, blocks, limiter", [
    (256, 32, 0, 8, "warps"),             # 64 warps / 8 per block; registers also allow 8: the tie names warps
    (256, 128, 0, 2, "registers"),        # 4096 regs/warp -> 4 warps per 16K sub-partition -> 16 warps -> 2 blocks
    (256, 32, 100 * KB, 2, "shared_memory"),  # (102400 + 1024) x 2 <= 233472 < x 3
    (32, 16, 0, 32, "blocks"),            # 1-warp blocks: 32-block cap, 50% occupancy
    (64, 32, 0, 32, "warps"),             # 32 blocks by warps and by the block cap: tie names warps
    (256, 255, 0, 1, "registers"),        # 255 x 32 -> 8192 regs/warp -> 2 warps per sub-partition -> 8 warps
    (256, 72, 0, 3, "registers"),         # 72 x 32 = 2304 -> 7 warps per sub-partition -> 28 warps -> 3 blocks
    (96, 40, 0, 16, "registers"),         # 1280/warp: 12 per sub-partition -> 48 warps -> 16 (SM-wide 51 would give 17)
    (32, 16, 22300, 9, "shared_memory"),  # 22300 rounds to 22400 (+1 KB = 23424) -> 9; unrounded 23324 would give 10
    (128, 32, 114 * KB, 1, "shared_memory"),  # the 1 KB reserve: 2 x (116736 + 1024) > 228 KB
    (128, 32, 113 * KB, 2, "shared_memory"),  # 2 x (115712 + 1024) == 228 KB exactly
    (1024, 64, 0, 1, "registers"),        # 32 warps per block (warps allow 2); 2048 x 32 = all 64K registers
    (1024, 32, 0, 2, "warps"),            # 2 x 32 warps; registers (1024/warp, 16 per sub-partition) allow 2 too
    (1, 0, 0, 32, "blocks"),
])
def test_hand_computed_cases(threads, regs, smem, blocks, limiter):
    occ = occupancy(H100, threads, regs, smem)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.warps_per_sm == blocks * math.ceil(threads / 32)
    assert occ.occupancy == pytest.approx(occ.warps_per_sm / 64)


def test_limits_and_allocation_are_reported():
    occ = occupancy(H100, 256, 128, 1000)
    assert dict(occ.limits) == {"warps": 8, "blocks": 32, "registers": 2, "shared_memory": 233472 // 2048}
    assert occ.shared_alloc_per_block == 1024 + 1024  # 1000 -> 1024 (128 B units) + 1 KB reserved
    assert occ.occupancy == 0.25 and occ.threads_per_sm == 512


@pytest.mark.parametrize("threads, regs, smem", [
    (0, 32, 0), (1025, 32, 0), (256, 256, 0), (256, -1, 0), (256, 32, 227 * KB + 1), (256, 32, -5),
    (1024, 72, 0),   # 2304 regs/warp x 32 warps = 73728 > 64K registers per block
    (800, 80, 0),    # 25 warps of 2560 regs: the sub-partitions hold only 4 x 6 warps
])
def test_configurations_that_cannot_launch_raise(threads, regs, smem):
    with pytest.raises(ResourceError) as info:
        occupancy(H100, threads, regs, smem)
    assert isinstance(info.value, ModelError)
    assert str(threads) in str(info.value) or str(regs) in str(info.value) or str(smem) in str(info.value)


@pytest.mark.parametrize("bad", [256.0, "256", True, None])
def test_non_integer_arguments_raise(bad):
    with pytest.raises(ModelArgumentError, match="threads_per_block"):
        occupancy(H100, bad, 32, 0)


def test_numpy_integers_are_accepted():
    import numpy as np

    occ = occupancy(H100, np.int64(256), np.int32(128), np.int64(0))
    assert occ.blocks_per_sm == 2 and type(occ.threads_per_block) is int
    assert occ.waves(np.int64(264), sm_count=np.int32(132)) == 1.0


def test_waves():
    occ = occupancy(H100, 256, 32, 0)        # 8 blocks/SM -> 1056 blocks per wave on 132 SMs
    assert occ.waves(1056) == 1.0
    assert occ.waves(2000) == pytest.approx(2000 / 1056)
    assert occ.waves(160, sm_count=20) == 1.0
    for bad in (0, 133, -1, 2.5):
        with pytest.raises(ModelArgumentError, match="sm_count"):
            occ.waves(100, sm_count=bad)
    with pytest.raises(ModelArgumentError, match="grid_blocks"):
        occ.waves(0)


def test_from_ptxas_resource_report_adds_dynamic_shared():
    from harness.toolchain import ResourceUsage

    usage = ResourceUsage(entry="k", registers=128, spill_stores_bytes=0, spill_loads_bytes=0, stack_frame_bytes=0,
                          shared_bytes=4096, constant_bytes=0)
    occ = occupancy_from_resources(get_device("h800"), 256, usage, dynamic_shared_bytes=96 * KB)
    assert occ.shared_bytes_per_block == 100 * KB and occ.registers_per_thread == 128
    assert occ.blocks_per_sm == 2 and occ.device == "H800 SXM"
    with pytest.raises(ModelArgumentError, match="registers"):
        occupancy_from_resources(H100, 256, object())


def test_occupancy_of_a_real_ptxas_report():
    """NVRTC -> PTX -> ptxas -v (wheels, no GPU): 16 KB static shared limits 128-thread blocks to 13 per SM."""
    from harness import toolchain

    source = (
        'extern "C" __global__ void stage(const float* x, float* y) {\n'
        "  __shared__ float buf[4096];\n"
        "  for (int i = threadIdx.x; i < 4096; i += blockDim.x) buf[i] = x[blockIdx.x * 4096 + i];\n"
        "  __syncthreads();\n"
        "  y[blockIdx.x * blockDim.x + threadIdx.x] = buf[4095 - threadIdx.x];\n"
        "}\n")
    _, usage = toolchain.assemble(toolchain.compile_cuda_to_ptx(source))
    report = usage["stage"]
    assert report.shared_bytes == 16384 and 0 < report.registers <= 64
    occ = occupancy_from_resources(H100, 128, report)
    assert (occ.blocks_per_sm, occ.limiter) == (233472 // (16384 + 1024), "shared_memory")
    with_dynamic = occupancy_from_resources(H100, 128, report, dynamic_shared_bytes=16384)
    assert with_dynamic.blocks_per_sm == 233472 // (32768 + 1024)


def _reference_blocks(threads, regs, smem):
    """Largest n whose n blocks fit every sm_90 limit, found by search (independent of the closed forms)."""
    warps = -(-threads // 32)
    regs_per_warp = -(-max(regs, 1) * 32 // 256) * 256
    alloc = -(-smem // 128) * 128 + 1024
    best = 0
    for n in range(1, 33):
        warps_fit = n * warps <= 64
        # the n*warps warps spread over 4 sub-partitions of 16K registers: the fullest holds ceil(n*warps/4)
        regs_fit = -(-(n * warps) // 4) * regs_per_warp <= 16384
        smem_fit = n * alloc <= 228 * KB
        if warps_fit and regs_fit and smem_fit:
            best = n
    return best


@settings(max_examples=300, deadline=None)
@given(threads=st.integers(1, 1024), regs=st.integers(0, 255), smem=st.integers(0, 227 * KB))
def test_blocks_match_brute_force_reference(threads, regs, smem):
    expected = _reference_blocks(threads, regs, smem)
    try:
        occ = occupancy(H100, threads, regs, smem)
    except ResourceError:
        assert expected == 0
        return
    assert occ.blocks_per_sm == expected
    assert occ.blocks_per_sm == min(value for _, value in occ.limits)
    assert occ.limiter == next(name for name, value in occ.limits if value == occ.blocks_per_sm)


@settings(max_examples=200, deadline=None)
@given(threads=st.integers(1, 1024), regs=st.integers(0, 254), smem=st.integers(0, 227 * KB - 200))
def test_more_resources_never_raise_occupancy(threads, regs, smem):
    try:
        base = occupancy(H100, threads, regs, smem).blocks_per_sm
    except ResourceError:
        return
    for more in ((threads, regs + 1, smem), (threads, regs, smem + 200)):
        try:
            assert occupancy(H100, *more).blocks_per_sm <= base
        except ResourceError:
            pass
