"""Each term of the timing model moves the estimate the way the hardware does, on kernels run through ptxsim:
more ILP -> faster, more L1 hits -> faster, cache hints that bypass L1 -> slower, more bank conflicts -> slower,
more loads in flight -> faster, dependent mma -> slower, fewer warps than sub-partitions -> slower per warp."""
import numpy as np
import pytest

import ptxsim
from ptxsim.counters import l1_allocates
from ptxsim.model import estimate, get_device, occupancy
from ptxsim.model.microbench import BENCHES, CHASE_CA, CHASE_CG, _alu_kernel, _chase, _chase_args, run_on_sim
from ptxsim.model.stream import stream_metrics

H100 = get_device("H100 SXM")


def _run(ptx, entry, grid, block, args, sample_ctas=None):
    kernel = ptxsim.load_ptx(ptx).kernel(entry)
    dev = ptxsim.Device()
    stats = dev.launch(kernel, grid, block, args(dev), sample_ctas=sample_ctas)
    occ = occupancy(H100, block, 32, int(stats.metrics.get("launch__shared_mem_per_block_static", 0)))
    return stats, estimate(stats.metrics, H100, occ)


def _kernel_bound(est) -> str:
    """The largest component of the kernel time (the launch overhead apart)."""
    return max((c for c in est.components if c not in ("tail", "launch")), key=est.components.get)


def _fma(chains: int, per_iter: int = 16):
    """A kernel with `per_iter` FMAs per loop iteration spread over `chains` independent accumulators."""
    ptx = _alu_kernel("k", "f32", "%f", "mov.f32 {d}, 0f3F800000;", "fma.rn.f32 {d}, {d}, 0f3F7FFFFF, 0f33800000;",
                      n=chains, unroll=per_iter // chains)
    return _run(ptx, "k", 132, 32, lambda dev: [dev.alloc(4), np.uint32(32)])


def test_more_ilp_is_faster():
    (s1, serial), (s16, parallel) = _fma(1), _fma(16)
    # the same 16 FMAs per iteration (the 16-chain kernel adds 15 final adds)
    assert s1.metrics["ptxsim__inst_executed_fp32.sum"] == pytest.approx(s16.metrics["ptxsim__inst_executed_fp32.sum"],
                                                                       rel=0.05)
    ilp1, ilp16 = s1.metrics["ptxsim__model_ilp.ratio"], s16.metrics["ptxsim__model_ilp.ratio"]
    assert ilp1 < 0.35 and ilp16 > 0.6     # a dependent chain issues once per ~4 clk; 16 chains nearly every clock
    assert _kernel_bound(serial) == _kernel_bound(parallel) == "issue"
    assert serial.kernel_seconds > 2.5 * parallel.kernel_seconds


def test_stream_metrics_of_a_dependent_chain_and_of_independent_loads():
    chase = ptxsim.load_ptx(CHASE_CG).kernel("chase_cg").program
    counts = np.ones(len(chase.instrs), np.int64)
    assert stream_metrics(chase.instrs, counts)["ptxsim__model_mlp.ratio"] == 1.0
    read = ptxsim.load_ptx(BENCHES["dram_read"].ptx).kernel("dram_read").program
    assert stream_metrics(read.instrs, np.ones(len(read.instrs), np.int64))["ptxsim__model_mlp.ratio"] == 4.0


def test_more_loads_in_flight_is_faster():
    """The same loads, latency-bound (one warp per SM): four in flight per warp take a quarter of the time."""
    read = BENCHES["dram_read"]
    stats, est = _run(read.ptx, "dram_read", 132, 32, lambda dev: [dev.alloc(132 * 32 * 64), dev.alloc(4)])
    assert est.details["loads_in_flight_per_warp"] == 4.0 and _kernel_bound(est) == "latency"
    one = estimate({**stats.metrics, "ptxsim__model_mlp.ratio": 1.0}, H100, occupancy(H100, 32, 32, 0))
    assert one.components["latency"] == pytest.approx(4 * est.components["latency"], rel=1e-9)


@pytest.mark.parametrize("hint, hits", [(".ca", True), ("", True), (".nc", True), (".cg", False),
                                        (".L1::no_allocate", False), (".cv", False)])
def test_cache_hints_decide_l1_allocation(hint, hits):
    assert l1_allocates((hint,) if hint else ()) is hits
    ptx = _chase("chase", hint)
    stats, _ = _run(ptx, "chase", 1, 1, _chase_args(16, 160))
    l1 = stats.metrics["ptxsim__l1_hit_sectors_global_op_ld.sum"]
    assert (l1 == 160 - 16) if hits else (l1 == 0)


def test_more_l1_hits_is_faster():
    _, l1 = _run(CHASE_CA, "chase_ca", 1, 1, _chase_args(16, 640))
    _, l2 = _run(CHASE_CG, "chase_cg", 1, 1, _chase_args(16, 640))
    assert l1.details["l1_hit_sectors"] == 640 - 16 and l2.details["l1_hit_sectors"] == 0
    assert _kernel_bound(l1) == _kernel_bound(l2) == "latency"
    assert l1.kernel_seconds < l2.kernel_seconds / 4        # 20.3 ns vs 131.3 ns per dependent load
    assert l1.components["l2"] < l2.components["l2"]        # L1 hits do not reach L2


def test_more_bank_conflicts_is_slower():
    free, conflict = run_on_sim(BENCHES["shared_bw"]), run_on_sim(BENCHES["shared_conflict"])
    assert free.limiters == conflict.limiters == ("shared",)
    assert conflict.quantity == pytest.approx(free.quantity / 32, rel=0.02)   # 32-way: 1/32 of the bandwidth


def _mma(accumulators: int):
    """16 mma.sync per iteration over `accumulators` independent accumulators, one warp per SM."""
    ptx = BENCHES["mma_bf16"].ptx
    if accumulators == 1:  # every mma accumulates into c0..c3: a dependent chain
        for regs in ("%c4, %c5, %c6, %c7", "%c8, %c9, %c10, %c11", "%c12, %c13, %c14, %c15"):
            ptx = ptx.replace("{" + regs + "}", "{%c0, %c1, %c2, %c3}")
    return _run(ptx, "mma_bf16", 132, 32, lambda dev: [dev.alloc(4), np.uint32(16)])


def test_dependent_mma_is_slower_than_independent():
    (_, chain), (_, free) = _mma(1), _mma(4)
    assert chain.details["ilp"] < free.details["ilp"]
    assert chain.kernel_seconds > 2 * free.kernel_seconds


def test_fewer_warps_than_sub_partitions_use_fewer_pipes():
    """One warp per SM runs on one sub-partition: its SFU work takes 4x the time it would spread over four."""
    sfu = BENCHES["sfu_sin"]
    kernel = ptxsim.load_ptx(sfu.ptx).kernel("sfu_sin")
    dev = ptxsim.Device()
    stats = dev.launch(kernel, 1, 32, [dev.alloc(4), np.uint32(8)])
    one = estimate(stats.metrics, H100, occupancy(H100, 32, 32, 0))
    four = estimate({**stats.metrics, "launch__block_size": 128, "launch__thread_count": 128}, H100,
                    occupancy(H100, 128, 32, 0))
    assert one.details["sub_partitions_used"] == 1 and four.details["sub_partitions_used"] == 4
    assert one.components["sfu"] == pytest.approx(4 * four.components["sfu"], rel=1e-9)
