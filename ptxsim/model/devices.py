"""Device specifications of the modelled Hopper GPUs, as data.

Sources (abbreviations used in the field comments below):
  [WP]   NVIDIA H100 Tensor Core GPU Architecture whitepaper (GH100, H100 SXM5 column of the comparison table).
  [DS]   NVIDIA product datasheets: H100 SXM, H800 SXM and H200 SXM (the sparsity figures halved for dense rates).
  [TG]   NVIDIA Hopper Tuning Guide (CUDA docs): SM resources, 228 KB shared / 227 KB per block, 1 KB reserved.
  [PG]   CUDA C++ Programming Guide: "Technical Specifications per Compute Capability" (limits, cc 9.0) and
         "Arithmetic Instructions" (results per clock cycle per multiprocessor, cc 9.0).
  [OCC]  CUDA occupancy calculator / cuda_occupancy.h for cc 9.0 (allocation granularities).
  [TPU]  TechPowerUp GPU database (third party; used only for base clocks, which NVIDIA's datasheets omit).
  [EST]  an estimate of this project, not published by NVIDIA; see the note on the field. Calibrate on hardware.
  [FM]   deepseek-ai/FlashMLA, docs/20250422-new-kernel-deep-dive.md ("A Deep-Dive Into the New Flash MLA Kernel"),
         section "A Theoretical Analysis of the MLA Algorithm": on an H800 SXM5, "due to throttling (reducing to
         ~1600 MHz in our case), the practical peak FLOPs drops to ~865 TFlops" (from the 990 TFlops datasheet peak).

Devices are built by merging a common Hopper table with per-product overrides (the py-evm "fork" pattern), so
what differs between H800, H100 and H200 is visible in a few lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ptxsim.model.errors import UnknownDeviceError


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU product. Sizes in bytes, rates per second unless the name says per clock ("_per_clk")."""

    name: str
    compute_capability: tuple[int, int]
    # --- SM resources and launch limits --------------------------------------------------------------------------
    sm_count: int                          # [WP] 132 SMs on H100 SXM5 (H800/H200 SXM: same GH100 configuration, [DS])
    sub_partitions_per_sm: int             # [WP] 4 SM sub-partitions (SMSPs), one warp scheduler each
    warp_size: int                         # [PG] 32
    max_threads_per_block: int             # [PG] 1024
    max_threads_per_sm: int                # [PG] 2048
    max_warps_per_sm: int                  # [PG] 64
    max_blocks_per_sm: int                 # [PG] 32
    registers_per_sm: int                  # [PG] 64K 32-bit registers (16K per sub-partition)
    max_registers_per_block: int           # [PG] 64K
    max_registers_per_thread: int          # [PG] 255
    register_alloc_unit: int               # [OCC] registers are allocated per warp in units of 256
    shared_memory_per_sm: int              # [TG] 228 KB (max carveout of the 256 KB L1/shared)
    max_shared_memory_per_block: int       # [TG] 227 KB (opt-in above 48 KB via cudaFuncSetAttribute)
    shared_memory_reserved_per_block: int  # [TG] 1 KB reserved by the system for every resident block
    shared_memory_alloc_unit: int          # [OCC] 128 B allocation granularity
    # --- clocks ------------------------------------------------------------------------------------------------
    boost_clock_hz: float                  # [DS]/[WP] 1980 MHz max SM boost clock (SXM); reporting only
    base_clock_hz: float                   # [TPU]
    under_load_clock_hz: float             # [FM] 1600 MHz: the SM clock under sustained load, the ONE clock every
    #                                        bound of the model uses (timing.estimate's default). Measured on H800
    #                                        SXM5 running tensor-bound FlashMLA; assumed the same on H100 and H200
    #                                        SXM (the same GH100 SM configuration and 700 W board power).
    #                                        `ptxmoe calibrate` measures it on the GPU it runs on (d(clock64) /
    #                                        d(globaltimer) under a sustained wgmma load, harness/calibrate_clock.py);
    #                                        with a profile, DeviceProfile.spec() puts that clock here.
    # --- per-SM execution throughput (results, i.e. lanes, per clock per SM) ------------------------------------
    issue_per_clk_per_sm: int              # [WP] 4 schedulers x 1 warp-instruction per clock
    fp32_lanes_per_sm: float               # [WP]/[PG] 128 FP32 FMA lanes
    fp16_lanes_per_sm: float               # [PG] 256 half results = 128 lanes of half2 (HFMA2) instructions
    int32_lanes_per_sm: float              # [PG] 64 (32-bit integer add/mul/mad/shift/logic, cc 9.0)
    fp64_lanes_per_sm: float               # [WP]/[PG] 64; H800: derived from its 1 TFLOP/s datasheet FP64 rate
    sfu_lanes_per_sm: float                # [PG] 16 (rcp, rsqrt, lg2, ex2, sin, cos: MUFU)
    convert_lanes_per_sm: float            # [PG] 16 ("all other type conversions", cc 9.0)
    lsu_lanes_per_sm: float                # [WP] 32 LD/ST units: one warp-wide memory instruction per clock
    shuffle_lanes_per_sm: float            # [PG] 32 (warp shuffle)
    tensor_bf16_flop_per_clk_per_sm: float  # [WP] dense FP16/BF16: 4 tensor cores x 512 FMA x 2
    tensor_fp8_flop_per_clk_per_sm: float  # [WP] dense FP8: twice BF16
    shared_bytes_per_clk_per_sm: float     # [WP] 128 B/clk: 32 banks x 4 B, one shared "wavefront" per clock
    l2_bytes_per_clk_per_sm: float         # [EST] ~32 B/clk/SM => 8.4 TB/s at 1980 MHz x 132 SMs; NVIDIA publishes
    #                                        no H100 L2 bandwidth; microbenchmarks report roughly 7-9 TB/s.
    l1_fill_bytes_per_clk_per_sm: float    # [EST] 64 B/clk: L2->SM fill path per SM (A100/Hopper microbenchmarks);
    #                                        caps the memory bandwidth a small SM partition can draw.
    # --- memory system -------------------------------------------------------------------------------------------
    memory_type: str                       # [DS]
    memory_bytes: int                      # [DS]
    memory_bandwidth: float                # [DS] bytes/s peak
    l2_bytes: int                          # [WP] 50 MB
    # --- datasheet peaks (reporting and consistency checks; the model works from the per-clock rates) ------------
    fp32_flops: float                      # [WP] 66.9 TFLOP/s (= 132 x 128 x 2 x 1.98 GHz)
    fp64_flops: float                      # [WP] 33.5 TFLOP/s non-tensor; [DS] H800: 1 TFLOP/s
    bf16_dense_flops: float                # [WP] 989.4 TFLOP/s dense (1978.9 with sparsity)
    fp8_dense_flops: float                 # [WP] 1978.9 TFLOP/s dense (3957.8 with sparsity)
    nvlink_bandwidth: float                # [DS] bytes/s total: H100/H200 900 GB/s, H800 400 GB/s

    # NOTE: NVIDIA's tensor peaks are quoted at a lower clock than the 1980 MHz boost: 989.4e12 / (132 SMs x 4096
    # FLOP/clk) = 1830 MHz. `tensor_rate_clock_hz` recovers that clock (reporting: the model charges every bound,
    # tensor included, at `under_load_clock_hz`, so the datasheet peak becomes 4096 x 132 x 1.6 GHz = 865 TFLOP/s,
    # FlashMLA's "practical peak").
    @property
    def tensor_rate_clock_hz(self) -> float:
        """The SM clock at which the datasheet's dense BF16 tensor peak is quoted (reporting only)."""
        return self.bf16_dense_flops / (self.sm_count * self.tensor_bf16_flop_per_clk_per_sm)

    @property
    def registers_per_sub_partition(self) -> int:
        return self.registers_per_sm // self.sub_partitions_per_sm

    @property
    def l2_bandwidth(self) -> float:
        """Peak L2 bandwidth in bytes/s at the under-load clock ([EST], see `l2_bytes_per_clk_per_sm`)."""
        return self.l2_bytes_per_clk_per_sm * self.sm_count * self.under_load_clock_hz

    @property
    def shared_bandwidth(self) -> float:
        """Peak shared-memory bandwidth of the whole chip in bytes/s at the under-load clock."""
        return self.shared_bytes_per_clk_per_sm * self.sm_count * self.under_load_clock_hz


_KB, _MB, _GIB = 1024, 1024 * 1024, 1024**3

# Everything the three SXM Hopper parts share (GH100 with 132 SMs enabled).
_HOPPER_SXM = dict(
    compute_capability=(9, 0),
    sm_count=132,
    sub_partitions_per_sm=4,
    warp_size=32,
    max_threads_per_block=1024,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    registers_per_sm=64 * _KB,
    max_registers_per_block=64 * _KB,
    max_registers_per_thread=255,
    register_alloc_unit=256,
    shared_memory_per_sm=228 * _KB,
    max_shared_memory_per_block=227 * _KB,
    shared_memory_reserved_per_block=1 * _KB,
    shared_memory_alloc_unit=128,
    boost_clock_hz=1980e6,
    base_clock_hz=1590e6,
    under_load_clock_hz=1600e6,
    issue_per_clk_per_sm=4,
    fp32_lanes_per_sm=128,
    fp16_lanes_per_sm=128,
    int32_lanes_per_sm=64,
    fp64_lanes_per_sm=64,
    sfu_lanes_per_sm=16,
    convert_lanes_per_sm=16,
    lsu_lanes_per_sm=32,
    shuffle_lanes_per_sm=32,
    # 4 tensor cores per SM x 512 dense FP16 FMA per clock x 2 FLOP; 4096 x 132 x 1.83 GHz = 989.4 TFLOP/s.
    tensor_bf16_flop_per_clk_per_sm=4096,
    tensor_fp8_flop_per_clk_per_sm=8192,
    shared_bytes_per_clk_per_sm=128,
    l2_bytes_per_clk_per_sm=32,
    l1_fill_bytes_per_clk_per_sm=64,
    memory_type="HBM3",
    memory_bytes=80 * _GIB,            # [DS] "80GB": 5 HBM3 stacks of 16 GiB
    memory_bandwidth=3.35e12,          # [DS] 3.35 TB/s
    l2_bytes=50 * _MB,
    fp32_flops=66.9e12,
    fp64_flops=33.5e12,
    bf16_dense_flops=989.4e12,
    fp8_dense_flops=1978.9e12,
    nvlink_bandwidth=900e9,
)

# H800's FP64 is cut to 1 TFLOP/s ([DS]); NVIDIA publishes no lane count, so it is derived from that rate:
# 1e12 / (2 FLOP x 132 SMs x 1.98 GHz) = 1.91 FP64 lanes per SM (~67 clocks per FP64 warp-instruction per SMSP).
_H800_FP64_FLOPS = 1.0e12
_H800_FP64_LANES = _H800_FP64_FLOPS / (2 * 132 * 1980e6)

DEVICES: dict[str, DeviceSpec] = {
    "H100 SXM": DeviceSpec(name="H100 SXM", **_HOPPER_SXM),
    "H800 SXM": DeviceSpec(name="H800 SXM", **{
        **_HOPPER_SXM,
        "fp64_flops": _H800_FP64_FLOPS,          # [DS] FP64 1 TFLOP/s (FP64 tensor also 1)
        "fp64_lanes_per_sm": _H800_FP64_LANES,
        "nvlink_bandwidth": 400e9,               # [DS] 400 GB/s
    }),
    "H200 SXM": DeviceSpec(name="H200 SXM", **{
        **_HOPPER_SXM,
        "memory_type": "HBM3e",                  # [DS]
        "memory_bytes": 141 * 10**9,             # [DS] 141 GB (decimal, as NVIDIA states it)
        "memory_bandwidth": 4.8e12,              # [DS] 4.8 TB/s
    }),
}

# Normalised spellings -> canonical key. Normalising lower-cases, drops "nvidia", every non-alphanumeric character
# and a trailing form-factor/memory suffix ("sxm", "sxm5", "80gb", "141gb", "hbm3", "hbm3e"), so "h800",
# "H100 SXM", "NVIDIA H100 80GB HBM3" (what the driver reports) and "NVIDIA H200" all resolve.
_CANONICAL = {"h100": "H100 SXM", "h800": "H800 SXM", "h200": "H200 SXM"}
_SUFFIX_RE = re.compile(r"^(h\d00)(sxm5?)?(\d+gb)?(hbm3e?)?$")


def _normalise(name: str) -> str:
    text = re.sub(r"[^a-z0-9]", "", name.lower())
    return text[len("nvidia"):] if text.startswith("nvidia") else text


def get_device(name: str | DeviceSpec) -> DeviceSpec:
    """Look a device up by a forgiving name.

    Args:
        name: "h800", "H100 SXM", "NVIDIA H200", "NVIDIA H100 80GB HBM3"...; a DeviceSpec is returned unchanged.
    Returns:
        The DeviceSpec.
    Raises:
        UnknownDeviceError: the name matches no modelled device (PCIe and NVL parts are not modelled); the message
            lists the valid names.
    """
    if isinstance(name, DeviceSpec):
        return name
    if not isinstance(name, str):
        raise UnknownDeviceError(name, DEVICES)
    match = _SUFFIX_RE.match(_normalise(name))
    key = _CANONICAL.get(match.group(1)) if match else None
    if key is None:
        raise UnknownDeviceError(name, DEVICES)
    return DEVICES[key]
