"""Theoretical occupancy for sm_90, following the CUDA occupancy calculator (cuda_occupancy.h) rules.

Per block, four limits on how many blocks one SM can hold:
  warps          floor(max_warps_per_sm / warps_per_block), warps_per_block = ceil(threads / 32)
                 (and floor(max_threads_per_sm / (warps_per_block * 32)), the same number on Hopper)
  blocks         max_blocks_per_sm (32)
  registers      registers are allocated per warp, rounded up to 256, inside each of the 4 sub-partitions
                 (16K registers each): warps_per_smsp = floor(16384 / regs_per_warp);
                 blocks = floor(warps_per_smsp * 4 / warps_per_block); a block needing over 64K registers
                 (warps rounded up to a multiple of 4 for that check) cannot launch at all
  shared_memory  per block: round_up(static + dynamic, 128) + 1 KB reserved; blocks = floor(228 KB / that)
The smallest wins; ties name the first in the order above (so 256 threads x 32 registers is "warps"-limited).

NOTE: the shared-memory limit assumes the driver picks the largest carveout (228 KB), which it does when a kernel
needs it (cudaFuncAttributePreferredSharedMemoryCarveout left at its default of -1 lets it choose). A kernel that
needs under 228 KB per SM may in practice run with a smaller carveout; that does not change the block count here.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ptxsim.model.devices import DeviceSpec
from ptxsim.model.errors import ModelArgumentError, ResourceError

LIMITERS = ("warps", "blocks", "registers", "shared_memory")


@dataclass(frozen=True)
class Occupancy:
    """How many blocks/warps of one kernel fit on one SM, and which resource stops more."""

    device: str
    sm_count: int
    threads_per_block: int
    warps_per_block: int
    registers_per_thread: int
    shared_bytes_per_block: int       # as requested (static + dynamic), before rounding
    shared_alloc_per_block: int       # rounded to the allocation unit, plus the 1 KB reserved per block
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str                      # one of LIMITERS
    limits: tuple[tuple[str, int], ...]  # (resource, blocks it allows), in LIMITERS order

    @property
    def occupancy(self) -> float:
        """Theoretical occupancy: resident warps over the SM's maximum (0..1)."""
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def threads_per_sm(self) -> int:
        return self.blocks_per_sm * self.threads_per_block

    def waves(self, grid_blocks: int, sm_count: int | None = None) -> float:
        """Grid size in units of one full wave (blocks_per_sm x SMs); 1.5 means one full wave plus a half.

        Args:
            grid_blocks: number of blocks in the launch (>= 1).
            sm_count: SMs the kernel may use (an SM partition); defaults to the device's.
        Raises:
            ModelArgumentError: grid_blocks < 1 or sm_count outside 1..device SMs.
        """
        sms = check_sm_count(sm_count, self.sm_count)
        if not _is_int(grid_blocks) or grid_blocks < 1:
            raise ModelArgumentError(f"waves: grid_blocks must be an integer >= 1, got {grid_blocks!r}")
        return int(grid_blocks) / (self.blocks_per_sm * sms)


def _is_int(value) -> bool:
    """An integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_sm_count(sm_count: int | None, device_sms: int) -> int:
    """The SM count to use: `sm_count` if given (1..device_sms), else the device's."""
    if sm_count is None:
        return device_sms
    if not _is_int(sm_count) or not 1 <= sm_count <= device_sms:
        raise ModelArgumentError(f"sm_count must be an integer in 1..{device_sms} (the device's SMs), got {sm_count!r}")
    return int(sm_count)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _check_int(name: str, value, low: int, high: int) -> int:
    if not _is_int(value):
        raise ModelArgumentError(f"occupancy: {name} must be an integer, got {value!r} ({type(value).__name__})")
    if not low <= value <= high:
        raise ResourceError(f"occupancy: {name}={value} is outside {low}..{high}, the sm_90 limit; "
                            "the launch would fail (cudaErrorInvalidValue / too many resources requested)")
    return int(value)


def occupancy(spec: DeviceSpec, threads_per_block: int, registers_per_thread: int,
              shared_bytes_per_block: int = 0) -> Occupancy:
    """Theoretical occupancy of one kernel launch configuration.

    Args:
        spec: the device.
        threads_per_block: block size (1..1024).
        registers_per_thread: from ptxas's report (harness.toolchain.ResourceUsage.registers), 0..255; 0 (a kernel
            that needs none) is treated like the minimum allocation.
        shared_bytes_per_block: static shared bytes (ResourceUsage.shared_bytes) plus dynamic shared bytes.
    Returns:
        An Occupancy.
    Raises:
        ModelArgumentError: a non-integer argument.
        ResourceError: a value no sm_90 launch accepts (the message names it and the limit).
    """
    threads = _check_int("threads_per_block", threads_per_block, 1, spec.max_threads_per_block)
    regs = _check_int("registers_per_thread", registers_per_thread, 0, spec.max_registers_per_thread)
    smem = _check_int("shared_bytes_per_block", shared_bytes_per_block, 0, spec.max_shared_memory_per_block)

    warps_per_block = math.ceil(threads / spec.warp_size)
    by_warps = min(spec.max_warps_per_sm // warps_per_block,
                   spec.max_threads_per_sm // (warps_per_block * spec.warp_size))

    regs_per_warp = _round_up(max(regs, 1) * spec.warp_size, spec.register_alloc_unit)
    # NOTE: like cuda_occupancy.h, the per-block register check rounds the block's warps up to a multiple of the
    # sub-partition count (the hardware check assumes allocation in all partitions at once).
    checked_warps = _round_up(warps_per_block, spec.sub_partitions_per_sm)
    if regs_per_warp * checked_warps > spec.max_registers_per_block:
        raise ResourceError(
            f"occupancy: {threads} threads x {regs} registers needs {regs_per_warp * checked_warps} registers per "
            f"block ({regs_per_warp} per warp x {checked_warps} warps, rounded to the {spec.sub_partitions_per_sm} "
            f"sub-partitions), over the {spec.max_registers_per_block} limit; the launch would fail with too many "
            "resources requested")
    warps_per_smsp = spec.registers_per_sub_partition // regs_per_warp
    by_registers = (warps_per_smsp * spec.sub_partitions_per_sm) // warps_per_block

    shared_alloc = _round_up(smem, spec.shared_memory_alloc_unit) + spec.shared_memory_reserved_per_block
    by_shared = spec.shared_memory_per_sm // shared_alloc

    limits = (("warps", by_warps), ("blocks", spec.max_blocks_per_sm),
              ("registers", by_registers), ("shared_memory", by_shared))
    limiter, blocks = min(limits, key=lambda item: item[1])   # min() keeps the first of equal values
    if blocks < 1:   # e.g. 800 threads x 80 registers: 25 warps, but the sub-partitions hold only 4 x 6 of them
        raise ResourceError(
            f"occupancy: no block of {threads} threads x {regs} registers x {smem} shared bytes fits on an SM "
            f"(blocks allowed by each limit: {dict(limits)}); the launch would fail with too many resources requested")
    return Occupancy(
        device=spec.name, sm_count=spec.sm_count, threads_per_block=threads, warps_per_block=warps_per_block,
        registers_per_thread=regs, shared_bytes_per_block=smem, shared_alloc_per_block=shared_alloc,
        blocks_per_sm=blocks, warps_per_sm=blocks * warps_per_block, max_warps_per_sm=spec.max_warps_per_sm,
        limiter=limiter, limits=limits,
    )


def occupancy_from_resources(spec: DeviceSpec, threads_per_block: int, resources, dynamic_shared_bytes: int = 0
                             ) -> Occupancy:
    """Occupancy from a ptxas resource report (anything with `.registers` and `.shared_bytes`, such as
    harness.toolchain.ResourceUsage) plus the launch's dynamic shared memory."""
    for attr in ("registers", "shared_bytes"):
        if not hasattr(resources, attr):
            raise ModelArgumentError(f"occupancy_from_resources: {type(resources).__name__} has no .{attr}; "
                                     "expected a ResourceUsage from harness.toolchain.assemble")
    if not _is_int(dynamic_shared_bytes) or dynamic_shared_bytes < 0:
        raise ModelArgumentError(f"dynamic_shared_bytes must be an integer >= 0, got {dynamic_shared_bytes!r}")
    return occupancy(spec, threads_per_block, resources.registers, resources.shared_bytes + dynamic_shared_bytes)
