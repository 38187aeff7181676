"""Timing costs as table data, kept apart from the formulas in timing.py.

Two tables:
  CLASS_COSTS      per warp-instruction class (the simulator's `ptxsim__inst_executed_<class>.sum` counters): which
                   execution pipe it occupies and how many lanes per clock per SM that pipe has on Hopper. The
                   cycles one warp-instruction holds its pipe in one SM sub-partition (SMSP) follow as
                       cycles = warp_size x sub_partitions / lanes_per_sm
                   e.g. fp32 (128 lanes): 32 x 4 / 128 = 1 clk; int (64): 2; sfu (16): 8; ld/st (32): 4.
                   Every warp-instruction also takes one dispatch slot (1 clk of its SMSP's scheduler).
  MODEL_CONSTANTS  the model's achievable fractions, latencies, launch overhead, memory-level parallelism.
Both are plain dicts: calibrating against hardware means editing numbers here, or passing a modified copy of
MODEL_CONSTANTS to `estimate(..., constants=...)`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.model.devices import DeviceSpec

# The simulator's instruction classes, in the order of its counters.
INSTRUCTION_CLASSES = (
    "int", "fp32", "fp64", "fp16", "sfu", "tensor", "convert", "ld_global", "st_global", "ld_shared", "st_shared",
    "ld_local", "st_local", "ld_param", "ld_const", "atom", "cp_async", "barrier", "warp", "control", "other",
)

# FLOPs of one warp-level mma.sync.aligned.m16n8k16 (the "tensor" class): 2 x M x N x K = 2 x 16 x 8 x 16.
MMA_M16N8K16_FLOPS = 2 * 16 * 8 * 16   # 4096

# Dense tensor-core FLOP per clock per SM by input width (tensor_counts.py's "16bit" / "8bit"): the DeviceSpec field
# that holds it. Hopper: 4096 (BF16/F16) and 8192 (FP8), [WP]; x 132 SMs x 1830 MHz = the datasheet's 989.4 and
# 1978.9 TFLOP/s dense.
TENSOR_PEAKS: dict[str, str] = {
    "16bit": "tensor_bf16_flop_per_clk_per_sm",
    "8bit": "tensor_fp8_flop_per_clk_per_sm",
}


@dataclass(frozen=True)
class ClassCost:
    """Where one instruction class executes. `lanes` is a number, or the name of a DeviceSpec field (per-device)."""

    pipe: str
    lanes: float | str
    why: str


# Pipes: "fma" (FP32/FP16 FMA units), "alu" (integer/logic), "fp64", "xu" (the multi-function unit: MUFU
# transcendentals and conversions), "tensor", "lsu" (the MIO/LSU path shared by loads, stores, atomics, shuffles),
# "cbu" (branch/barrier), "uniform" (operands the compiler folds into constant-bank reads: no pipe time).
# Sources as in devices.py: [PG] CUDA C++ Programming Guide throughput table for cc 9.0, [WP] H100 whitepaper.
CLASS_COSTS: dict[str, ClassCost] = {
    "fp32":      ClassCost("fma", "fp32_lanes_per_sm", "[PG] 128 FP32 add/mul/fma results per clk per SM -> 1 clk"),
    "fp16":      ClassCost("fma", "fp16_lanes_per_sm", "[PG] 256 half results/clk = 128 half2 lanes -> 1 clk"),
    "int":       ClassCost("alu", "int32_lanes_per_sm", "[PG] 64 int32 add/mul/shift/logic per clk -> 2 clk"),
    "other":     ClassCost("alu", "int32_lanes_per_sm", "unclassified: assumed an integer-pipe op -> 2 clk"),
    "fp64":      ClassCost("fp64", "fp64_lanes_per_sm", "[PG] 64 per clk on H100/H200 -> 2 clk; H800 ~67 clk"),
    "sfu":       ClassCost("xu", "sfu_lanes_per_sm", "[PG] 16 rcp/rsqrt/lg2/ex2/sin/cos per clk -> 8 clk"),
    "convert":   ClassCost("xu", "convert_lanes_per_sm", "[PG] 16 'other conversions' per clk -> 8 clk; "
                           "NOTE: some packs (cvt.rn.bf16x2.f32) may be faster on hardware"),
    "tensor":    ClassCost("tensor", "tensor_lanes", "mma.sync m16n8k16: 4096 FLOP over 4096 FLOP/clk/SM -> 4 clk "
                           "per SMSP at peak; the tensor bound uses FLOPs and MODEL_CONSTANTS instead"),
    "ld_global": ClassCost("lsu", "lsu_lanes_per_sm", "[WP] 32 LD/ST lanes per SM -> 4 clk"),
    "st_global": ClassCost("lsu", "lsu_lanes_per_sm", "[WP] 32 LD/ST lanes per SM -> 4 clk"),
    "ld_shared": ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk; bank conflicts are in the shared bound"),
    "st_shared": ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk"),
    "ld_local":  ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk (local = spills, through L1)"),
    "st_local":  ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk"),
    "atom":      ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk issue; L2 atomic throughput is in the l2 bound"),
    "cp_async":  ClassCost("lsu", "lsu_lanes_per_sm", "[WP] -> 4 clk"),
    "warp":      ClassCost("lsu", "shuffle_lanes_per_sm", "[PG] 32 shuffle lanes per clk -> 4 clk (shfl/vote use MIO)"),
    "ld_param":  ClassCost("uniform", 0.0, "sm_90 folds ld.param into c[0x0][...] operands: dispatch only"),
    "ld_const":  ClassCost("uniform", 0.0, "constant-cache operand: dispatch only"),
    "barrier":   ClassCost("cbu", 128.0, "dispatch-rate 1 clk; the wait itself is not modelled"),
    "control":   ClassCost("cbu", 128.0, "branch/predicate setup: 1 clk"),
}

# Pipes whose busy time counts towards the "issue" bound; the others have bounds of their own.
ISSUE_PIPES = ("fma", "alu", "lsu", "cbu")

MODEL_CONSTANTS: dict[str, float] = {
    # DRAM: STREAM-like kernels on H100 SXM sustain roughly 90% of the 3.35 TB/s datasheet peak (refresh, page
    # misses and read/write turnaround cost the rest); the same fraction is assumed for H800 and H200.
    "dram_achievable_fraction": 0.90,
    # L2: the L2 bandwidth itself is an estimate (devices.py [EST]); a sustained 80% of it is assumed because
    # traffic between the two L2 partitions and hashing imbalance keep real kernels below the slice peak.
    "l2_achievable_fraction": 0.80,
    # Shared memory: one wavefront per clock per SM is achievable by conflict-free code; conflicts already show
    # in the wavefront counter, so no extra derating beyond a little pipeline overhead.
    "shared_achievable_fraction": 0.95,
    # SFU (MUFU): the programming guide's 16 results/clk/SM; S1 measures ~9.1 clk per warp-instruction per
    # sub-partition at ILP 128 against the 8 that rate implies. Left at 1.0 (the vendor rate) by default;
    # `ptxmoe calibrate` fits it from the sfu_sin microbenchmark.
    "sfu_achievable_fraction": 1.0,
    # Issue/pipes: the theoretical rates; stalls are modelled separately (latency hiding below), not as a derating.
    "issue_achievable_fraction": 1.0,
    # mma.sync on Hopper reaches only part of the dense peak: [S6] (docs/model-validation.md) measures FP16
    # m16n8k16 at 494.4 TFLOP/s on an H800 PCIe (65.4% of its 756.5 dense peak; "on average 62.9%" over types) and
    # INT8 m16n8k32 at 977.9 TOP/s (64.6% of 1513), so 8-bit mma.sync runs at twice the 16-bit rate. 0.65 assumed.
    "mma_sync_fraction_of_peak": 0.65,
    # wgmma.mma_async: [S6] measures m64n256k16 FP16 at 729.3 TFLOP/s (96.4% of 756.5) and m64n256k32 FP8 at 1448.4
    # (95.7% of 1513) with zero-filled inputs. NOTE: with random inputs the H800 PCIe hits its 350 W limit and the
    # clock drops ([S6]); the model charges the instruction rate, not a power-limited one (calibrate on the GPU).
    "wgmma_fraction_of_peak": 0.96,
    # wgmma completion latency (issue to result usable) in tensor clocks: [S6] 128 clk for m64n256 (all types) and,
    # in its extended version, 128 for N = 128 too. [S8] reports 32 / 64 / 128 clk for N = 64 / 128 / 256 (the pipe
    # time). A wait_group 0 exposes max(0, latency - pipe time of the last wgmma): tensor_bound.py.
    "wgmma_latency_clk": 128.0,
    # Load-to-use latencies, unloaded (pointer chase), H100 SXM5 at 1.98 GHz, docs/model-validation.md source S1:
    # L1 hit 40.2 clk = 20.3 ns, L2 hit 259.9 clk = 131.3 ns, DRAM 570.5 clk = 288.1 ns (S2 reports 40 / 291 / 700
    # clk with unlocked clocks). Seconds, since DRAM latency does not scale with the SM clock. Loaded latency is
    # higher; the bandwidth bounds cover that regime.
    "l1_latency_s": 20.3e-9,
    "l2_latency_s": 131.3e-9,
    "dram_latency_s": 288.1e-9,
    # Memory-level parallelism: used only when the counters carry no ptxsim__model_mlp.ratio (stream.py measures
    # the loads each warp keeps in flight from the instruction stream). 1 is a dependent loop, 2 a middle value
    # for tuned code.
    "loads_in_flight_per_warp": 2.0,
    # Dependent-instruction latency of the ALU/FMA pipes (~4 clk on Volta..Hopper, [EST]): used only when the
    # counters carry no ptxsim__model_ilp.ratio (stream.py's scoreboard); then one warp issues once per 4 clk.
    "dependent_issue_latency_clk": 4.0,
    # Launch overhead: back-to-back launches from Python/Numba cost ~2-4 us each (driver + launch latency seen by
    # host timers around one launch); 3 us is added to every kernel's wall time and reported as "launch".
    "launch_overhead_s": 3e-6,
}

# Which published validation rows (ptxsim/model/published.py: (bench name, source tag)) each constant was set from.
# Every constant is listed; () means no validation row set it (a vendor figure, an estimate, or a figure outside the
# validation). Those rows are marked role=FIT in published.py and their error is reported apart from the predicted
# rows' (tests/ptxsim/model/test_model_validation.py checks both directions). Add an entry here whenever a constant is
# (re)set from a validation row, and mark that row FIT.
FITTED_FROM: dict[str, tuple[tuple[str, str], ...]] = {
    "dram_achievable_fraction": (),      # the folklore "~90% of peak for STREAM", set before any DRAM row existed
    "l2_achievable_fraction": (),        # an estimate on an estimated L2 peak ([EST])
    "shared_achievable_fraction": (),    # an estimate; no published Hopper shared bandwidth was found
    "sfu_achievable_fraction": (),       # the vendor rate ([PG]); left at 1.0 although S1 measures 9.1-9.6 clk
    "issue_achievable_fraction": (),     # the vendor rate
    "mma_sync_fraction_of_peak": (("mma_bf16", "[S6]"),),
    "wgmma_fraction_of_peak": (("wgmma_bf16", "[S7]"), ("wgmma_fp8", "[S6]")),
    "wgmma_latency_clk": (("wgmma_latency", "[S7]"),),
    "l1_latency_s": (("chase_l1", "[S1]"),),
    "l2_latency_s": (("chase_l2", "[S1]"),),
    "dram_latency_s": (("chase_dram", "[S1]"),),
    "loads_in_flight_per_warp": (),      # a fallback when the stream gives no MLP
    "dependent_issue_latency_clk": (),   # [EST], a fallback when the stream gives no ILP
    "launch_overhead_s": (),             # no published Hopper launch gap was found
}


def class_cycles(spec: DeviceSpec) -> dict[str, tuple[str, float]]:
    """Per class: (pipe, clocks one warp-instruction holds that pipe in one SM sub-partition) on this device.

    "tensor" reports its pipe time at the device's peak; "uniform" classes report 0 (dispatch only).
    """
    lanes_of = {"tensor_lanes": spec.tensor_bf16_flop_per_clk_per_sm * spec.warp_size / MMA_M16N8K16_FLOPS}
    lanes_per_warp_inst = spec.warp_size * spec.sub_partitions_per_sm
    table = {}
    for name, cost in CLASS_COSTS.items():
        lanes = cost.lanes
        if isinstance(lanes, str):
            lanes = lanes_of[lanes] if lanes in lanes_of else getattr(spec, lanes)
        table[name] = (cost.pipe, lanes_per_warp_inst / lanes if lanes else 0.0)
    return table
