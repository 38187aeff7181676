"""Table data of model v2 (cycle.py): per-class issue latency and pipe of one warp-instruction in one SM
sub-partition (SMSP). Pipe occupancy (clocks one warp-instruction holds its pipe) is costs.class_cycles (lanes per SM
from the programming guide / whitepaper); this table adds the dependent-issue latency, what a consumer waits after
its producer issues.

Sources (docs/model-validation.md, section "Model v2"):
  [AS]  Accel-Sim's Hopper configuration, accel-sim/gpgpu-sim_distribution `configs/tested-cfgs/SM90_H100/
        gpgpusim.config`: `-ptx_opcode_latency_int 4,...`, `_fp 4`, `_dp 8`, `_sfu 23`, `_tesnor 24`,
        `-gpgpu_smem_latency 29`, `-gpgpu_l1_latency 41` (themselves from Jia et al.-style microbenchmarks).
  [S1], [S6]  as in costs.py (H100 SXM5 shared load latency 28.6 clk; H800 mma.sync m16n8k16 24.1 clk).
  [EST] this project's estimate.
No value here was set from a validation row (published.py); the v2 rows are predicted (FITTED_FROM below is empty).
"""
from __future__ import annotations

# Dependent-issue latency in SM clocks, by the simulator's instruction class.
LATENCY_CLK: dict[str, float] = {
    "int": 4.0,        # [AS] int add/mul/mad latency 4
    "fp32": 4.0,       # [AS] fp latency 4
    "fp16": 4.0,       # [AS] as fp
    "other": 4.0,      # [EST] unclassified: as int
    "control": 4.0,    # [EST] setp/selp/predicate producers: as int
    "convert": 23.0,   # [EST] conversions run on the XU pipe with the MUFU ops: the SFU latency [AS] assumed
    "sfu": 23.0,       # [AS] sfu latency 23
    "fp64": 8.0,       # [AS] dp latency 8
    "tensor": 24.0,    # [AS] tensor latency 24 ([S6] 24.1 clk for mma.sync m16n8k16 on H800)
    "ld_shared": 29.0,  # [AS] smem latency 29 ([S1] 28.6 clk)
    "warp": 29.0,      # [EST] shuffle/vote go through the shared-memory (MIO) path: its latency assumed
    "ld_local": 41.0,  # [AS] L1 latency 41 (local memory hits L1)
    "ld_param": 0.0,   # folded into constant-bank operands
    "ld_const": 0.0,
}

# Memory classes the v2 model routes through the per-SM memory servers (their latency is the level mix's).
GLOBAL_LOADS = ("ld_global",)
GLOBAL_STORES = ("st_global", "atom")

# Loop iterations simulated before the steady state is multiplied out: LOOP_WARMUP (cold) iterations, then a window
# of STEADY_WINDOW iterations whose mean time stands for every remaining one. Chosen against the full replay of the
# same schedule (not against any published row): with 2 + 2 the mma.sync throughput kernel's 64 iterations came out
# 13% short of replaying all of them (warps drift out of step over many iterations), with 3 + 8 within 3%; the FP32
# and L2-copy loops are within 1% either way (tests/ptxsim/model/test_model_cycle.py checks one).
LOOP_WARMUP = 3
STEADY_WINDOW = 8

# A resource busier than this fraction of the kernel time names the limiter; below it the kernel is "latency" bound
# (the schedule waits on dependences, not on a unit). [EST]
BUSY_LIMITER_FRACTION = 0.6

# A taken branch redirects the warp's instruction fetch: GPUs do not predict branches, so after a taken BRA the warp
# has nothing to issue until the target's instructions are fetched and decoded. [S1] README section 2 (its FADD/FMUL
# rows at ILP 64-128, not validation rows): "~13 cycles per iteration from 3 loop-control instructions + branch
# penalty", i.e. 13 - 3 issue slots = 10 clocks during which the warp cannot issue after its loop's back edge.
# NOTE: the FMA/IADD/IMUL ILP pairs are from the same table (other rows); the held-out figures may share its source.
BRANCH_REDIRECT_CLK = 10.0

# Where ptxas's loop is known (sass.loop_issue: its stall counts, Jia et al. 2018 section 2.1), the branch's own wait
# is its stall count (5 on every back edge of the ILP and copy loops here), already spread over the loop's issue gaps;
# what remains after a taken back edge is the refetch at the target: [S1] README section 2, its FADD and FMUL rows
# at ILP 1 and 2 (29.0 and 14.5 clk per warp-instruction, i.e. 29.0 clk per iteration; not validation rows) against
# the 24 clocks of stall counts ptxas puts in that loop (UIADD3 1, FADD 5, ISETP 13, BRA 5 at ILP 1; the same 24 at
# ILP 2): 29 - 24 = 5 clocks. The ILP 4-128 FADD rows give 3-7 (their figures are rounded to 0.1 clk per instruction).
# NOTE: the held-out FMA/IADD/__sinf ILP=1 figures are in the same table and equal the FADD one (29.0), so the pairs
# with an ILP=1 side are not independent of this constant; the ILP 4-128 sides are.
SASS_BRANCH_REFETCH_CLK = 5.0

# Classes whose SASS instructions have a fixed latency: ptxas covers their consumers' waits with the stall counts
# (Jia et al. 2018, section 2.1: fixed-latency instructions are not tracked by the scoreboard, variable-latency ones
# (memory, MUFU, conversions, tensor) set a scoreboard their consumers wait on). In a loop whose stall counts are
# known (sass.loop_issue), such a result is ready when the warp may issue again, not LATENCY_CLK after.
FIXED_LATENCY_CLASSES = frozenset({"int", "fp32", "fp16", "other", "control"})

FITTED_FROM: dict[str, tuple] = {"LATENCY_CLK": (), "LOOP_WARMUP": (), "STEADY_WINDOW": (),
                                 "BUSY_LIMITER_FRACTION": (), "BRANCH_REDIRECT_CLK": (),
                                 "SASS_BRANCH_REFETCH_CLK": (), "FIXED_LATENCY_CLASSES": ()}
