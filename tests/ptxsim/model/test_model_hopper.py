"""The timing model's Hopper terms on small synthetic PTX kernels: wgmma FLOPs and waits counted from the stream, FP8
at twice the BF16 rate, a wgmma stream modelled tensor-bound near the peak, warpgroup serialisation at wait_group 0,
TMA / bulk bytes in the L2 and DRAM bounds (stores as writes, a multicast read once)."""
import pytest

import ptxsim
from ptxsim.model import hopper_benches as hb
from ptxsim.model import tensor_counts
from ptxsim.model.costs import MODEL_CONSTANTS
from ptxsim.model.devices import get_device
from ptxsim.model.occupancy import occupancy
from ptxsim.model.timing import estimate, explain
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim
H100 = get_device("H100 SXM")


def _launch(ptx, entry, grid, block, args, **kw):
    dev = ptxsim.Device()
    stats = dev.launch(ptxsim.load_ptx(ptx).kernel(entry), grid, block, args(dev), **kw)
    occ = occupancy(H100, block, 32, int(stats.metrics.get("launch__shared_mem_per_block_static", 0)))
    return stats.metrics, occ


def _bound(est):
    """The largest kernel-time component (the launch gap and tail are reported apart)."""
    return max((name for name in est.components if name not in ("launch", "tail")), key=est.components.get)


def _wgmma(n, kind, per_group, wait, iters, grid=1, block=128, **kw):
    name = f"w_{kind}_{n}_{per_group}_{wait}"
    return _launch(hb._wgmma_kernel(name, n, kind, per_group, wait), name, grid, block, hb.wgmma_args(iters), **kw)


def test_wgmma_work_counted_per_warpgroup_from_the_stream():
    m, _ = _wgmma(64, "bf16", 2, 0, 3, block=256)   # 2 warpgroups x 3 groups of 2 x m64n64k16, wait 0 each time
    groups = 2 * 3
    assert m["ptxsim__wgmma_inst.sum"] == groups * 2
    assert m["ptxsim__wgmma_flops_16bit.sum"] == groups * 2 * (2 * 64 * 64 * 16)
    assert m["ptxsim__wgmma_flops_8bit.sum"] == 0
    assert m["ptxsim__wgmma_commit.sum"] == groups
    assert m["ptxsim__wgmma_drain.sum"] == groups + 2      # the loop's waits and the final one
    assert m["ptxsim__wgmma_wait.sum"] == 0
    assert m["ptxsim__wgmma_shared_bytes.sum"] == groups * 2 * (64 * 32 + 64 * 32)   # A and B from descriptors
    assert m["ptxsim__tensor_warp_inst.sum"] == groups * 2 * 4   # one warp-instruction per warp, not per unit


def test_mma_sync_flops_by_shape_and_width():
    body = """
  .reg .b32 %a<4>; .reg .b32 %b<2>; .reg .f32 %c<4>;
  mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%c0, %c1, %c2, %c3}, {%a0, %a1}, {%b0}, {%c0, %c1, %c2, %c3};
  mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%c0, %c1, %c2, %c3}, {%a0, %a1, %a2, %a3}, {%b0, %b1},
      {%c0, %c1, %c2, %c3};
"""
    src = HEADER + f".visible .entry k()\n{{\n{body}\n  ret;\n}}\n"
    m, _ = _launch(src, "k", 1, 64, lambda dev: [])
    assert m["ptxsim__mma_flops_16bit.sum"] == 2 * 2 * 16 * 8 * 8      # m16n8k8 is 2048 FLOP, not a k16 unit
    assert m["ptxsim__mma_flops_8bit.sum"] == 2 * 2 * 16 * 8 * 32
    assert m["ptxsim__tensor_warp_inst.sum"] == 4


def test_fp8_wgmma_runs_at_twice_the_bf16_rate():
    kw = dict(grid=132, block=256, sample_ctas=2, wave_ctas=2)
    bf16, occ = _wgmma(256, "bf16", 4, 1, 4, **kw)
    fp8, _ = _wgmma(256, "e4m3", 4, 1, 4, **kw)
    assert fp8["ptxsim__wgmma_flops_8bit.sum"] == 2 * bf16["ptxsim__wgmma_flops_16bit.sum"]   # k32 vs k16
    t16, t8 = estimate(bf16, H100, occ), estimate(fp8, H100, occ)
    assert _bound(t16) == _bound(t8) == "tensor"
    assert t8.components["tensor"] == pytest.approx(t16.components["tensor"], rel=1e-9)   # 2x the FLOPs, same time
    assert t8.details["tensor_rate"] == pytest.approx(2 * t16.details["tensor_rate"], rel=1e-9)
    # the FP8 peak from the device spec (8192 FLOP/clk/SM) at the model's one clock (the under-load 1.6 GHz, not the
    # 1.83 GHz the datasheet's 1978.9 TFLOP/s is quoted at)
    peak = H100.tensor_fp8_flop_per_clk_per_sm * H100.sm_count * H100.under_load_clock_hz
    assert t8.details["tensor_rate"] == pytest.approx(peak * MODEL_CONSTANTS["wgmma_fraction_of_peak"], rel=1e-9)


def _check_wgmma_stream_is_tensor_bound_near_peak(m, occ):
    est = estimate(m, H100, occ)
    assert est.limiter == "tensor"
    # the peak at the model's one clock (the under-load 1.6 GHz): 4096 FLOP/clk/SM x 132 SMs x 1.6 GHz = 865 TFLOP/s
    at_peak = m["ptxsim__wgmma_flops_16bit.sum"] / (H100.tensor_bf16_flop_per_clk_per_sm * H100.sm_count
                                                    * H100.under_load_clock_hz)
    assert 0.85 < at_peak / est.kernel_seconds < 1.0          # a plausible fraction of that peak
    assert est.achieved["tensor"] == pytest.approx(at_peak / est.kernel_seconds)
    return est


def test_a_wgmma_stream_is_tensor_bound_at_a_plausible_fraction_of_peak():
    m, occ = _wgmma(256, "bf16", 4, 1, 4, grid=264, block=256, sample_ctas=2, wave_ctas=2)
    est = _check_wgmma_stream_is_tensor_bound_near_peak(m, occ)
    assert est.components["shared"] < est.components["tensor"]   # operand reads (10 KB per 128 clk) fit in shared


def test_a_planted_regression_charging_wgmma_as_one_cheap_instruction_fails(monkeypatch):
    # the pre-Hopper accounting: no wgmma FLOPs, a wgmma is one tensor-class instruction like any other
    monkeypatch.setattr(tensor_counts, "_wgmma", lambda ins: {})
    m, occ = _wgmma(256, "bf16", 4, 1, 4, grid=264, block=256, sample_ctas=2, wave_ctas=2)
    with pytest.raises(AssertionError):
        _check_wgmma_stream_is_tensor_bound_near_peak(m, occ)


def test_small_n_wgmma_is_limited_by_its_shared_operand_reads():
    # m64n32k16 SS: 2 KB of A + 1 KB of B per 16 tensor clocks exceeds 128 B/clk of shared bandwidth
    m, occ = _wgmma(32, "bf16", 4, 1, 4, grid=264, block=256, sample_ctas=2, wave_ctas=2)
    est = estimate(m, H100, occ)
    assert _bound(est) == "shared"
    assert est.details["wgmma_shared_wavefronts"] == m["ptxsim__wgmma_shared_bytes.sum"] / 128


def test_wait_group_0_serialises_one_warpgroup_and_a_second_warpgroup_hides_it():
    one_drain, occ1 = _wgmma(128, "bf16", 1, 0, 48)
    one_pipe, _ = _wgmma(128, "bf16", 1, 1, 48)
    e_drain, e_pipe = estimate(one_drain, H100, occ1), estimate(one_pipe, H100, occ1)
    assert e_drain.details["wgmma_serial_s"] > e_drain.details["tensor_throughput_s"]
    assert e_drain.components["tensor"] > 1.5 * e_pipe.components["tensor"]
    assert "wgmma.wait_group serialises 1 warpgroup(s)/SM" in explain(e_drain)
    assert "serialises" not in explain(e_pipe)
    # per wgmma: the completion latency (the tensor clock's wgmma_latency_clk) plus the loop's issue time
    per = e_drain.components["tensor"] * H100.under_load_clock_hz / 48
    assert MODEL_CONSTANTS["wgmma_latency_clk"] < per < MODEL_CONSTANTS["wgmma_latency_clk"] + 30
    two, occ2 = _wgmma(128, "bf16", 1, 0, 48, block=256)
    e_two = estimate(two, H100, occ2)
    assert e_two.details["wgmma_warpgroups"] == 2
    assert e_two.components["tensor"] < 1.3 * e_drain.components["tensor"]   # twice the work, latency overlapped


def test_tma_loads_reach_the_l2_and_dram_bounds():
    ctas, stages = 8, 2
    m, occ = _launch(hb.TMA_READ, "tma_read", ctas, 32, hb.tma_args(ctas, stages))
    loaded = ctas * stages * hb.TMA_STAGE_BYTES
    assert m["dram__bytes_read.sum"] == loaded
    assert m["ptxsim__cp_async_global_sectors.sum"] == loaded / 32
    est = estimate(m, H100, occ)
    assert est.details["dram_bytes"] == loaded and est.details["l2_bytes"] == loaded
    assert est.components["dram"] == pytest.approx(loaded / est.details["dram_bandwidth"])


_BULK = HEADER + """
.shared .align 128 .b8 sm[4096];
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 psrc, .param .u64 pdst)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .b16 %rs<2>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd2, [pdst];
  mov.u32 %r0, %tid.x; mov.u32 %r1, sm; mov.u32 %r2, bar; mov.u32 %r4, %cluster_ctarank;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 4096;
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  COPY
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  STORE
END:
  ret;
}
"""
_MULTICAST = """setp.eq.u32 %p3, %r4, 0; mov.u16 %rs1, 3;
  @%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1], 4096,
      [%r2], %rs1;"""
_UNICAST = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 4096, [%r2];"
_STORE = """mul.wide.u32 %rd3, %r4, 4096; add.s64 %rd4, %rd2, %rd3;
  cp.async.bulk.global.shared::cta.bulk_group [%rd4], [%r1], 4096;
  cp.async.bulk.commit_group; cp.async.bulk.wait_group 0;"""


def _bulk(copy, store=""):
    src = _BULK.replace("COPY", copy).replace("STORE", store)
    m, _ = _launch(src, "k", 2, 32, lambda dev: [dev.alloc(4096), dev.alloc(8192)], cluster=2)
    return m


def test_a_multicast_copy_reads_l2_once_for_the_cluster():
    multicast, unicast = _bulk(_MULTICAST), _bulk(_UNICAST)
    assert multicast["ptxsim__cp_async_global_sectors.sum"] == 4096 / 32           # one read lands in both CTAs
    assert unicast["ptxsim__cp_async_global_sectors.sum"] == 2 * 4096 / 32
    assert multicast["dram__bytes_read.sum"] == unicast["dram__bytes_read.sum"] == 4096


def test_bulk_stores_are_dram_writes_not_reads():
    m = _bulk(_UNICAST, _STORE)
    assert m["dram__bytes_write.sum"] == 2 * 4096
    assert m["dram__bytes_read.sum"] == 4096                  # the load only: the stores read no DRAM
    assert m["ptxsim__cp_async_global_sectors.sum"] == 4 * 4096 / 32   # loads and stores both cross L2
