"""tensor_bound.py's formulas on hand-made counters: peaks read from the device spec per input width, the serial
term of wait_group 0 against pipelined waits, and the pre-Hopper accounting of counters without tensor keys."""
import dataclasses

import pytest

from ptxsim.model.costs import MODEL_CONSTANTS
from ptxsim.model.devices import get_device
from ptxsim.model.tensor_bound import tensor_bound

H100 = get_device("H100 SXM")
K = dict(MODEL_CONSTANTS)
F_T = H100.tensor_rate_clock_hz
GEOM = dict(active=132, sms=132, smsps=4.0, warps=4.0, dispatch=0.0, ilp=1.0, clock=H100.boost_clock_hz,
            tensor_clock=F_T)
M64N256K16 = 2 * 64 * 256 * 16


def _wgmma_counters(n_wgmma, flops_per, width="16bit", drains=0.0, commits=0.0):
    return {f"ptxsim__wgmma_flops_{width}.sum": n_wgmma * flops_per, "ptxsim__wgmma_inst.sum": float(n_wgmma),
            "ptxsim__wgmma_drain.sum": drains, "ptxsim__wgmma_commit.sum": commits,
            "ptxsim__tensor_warp_inst.sum": 4.0 * n_wgmma}


def test_the_fp8_rate_is_read_from_the_device_spec():
    m = _wgmma_counters(132 * 64, 2 * M64N256K16, "8bit")
    fast = tensor_bound(m, H100, K, legacy_units=None, **GEOM)
    half = dataclasses.replace(H100, tensor_fp8_flop_per_clk_per_sm=H100.tensor_bf16_flop_per_clk_per_sm)
    slow = tensor_bound(m, half, K, legacy_units=None, **GEOM)
    assert slow.throughput_s == pytest.approx(2 * fast.throughput_s)
    # 64 m64n256k32 per SM at 8192 FLOP/clk: 64 x 128 tensor clocks at the measured fraction of peak
    assert fast.throughput_s == pytest.approx(64 * 128 / (F_T * K["wgmma_fraction_of_peak"]))
    assert fast.peak_seconds == pytest.approx(64 * 128 / F_T)


def test_drains_serialise_and_pipelined_waits_overlap():
    n = 132 * 64                                     # 64 m64n256k16 per SM, one warpgroup per SM
    other = 132 * 64 * 4 * 100.0                     # 100 issue clocks per wgmma per warpgroup (4 warps)
    drained = tensor_bound(_wgmma_counters(n, M64N256K16, drains=n, commits=n), H100, K, legacy_units=None,
                           **{**GEOM, "dispatch": other})
    piped = tensor_bound(_wgmma_counters(n, M64N256K16, drains=1 * 132, commits=n), H100, K, legacy_units=None,
                         **{**GEOM, "dispatch": other})
    pipe = 128 / K["wgmma_fraction_of_peak"] / F_T   # seconds of one wgmma
    issue = 100 / H100.boost_clock_hz
    assert drained.overlap == 0 and piped.overlap == pytest.approx(1 - 1 / 64)
    assert drained.serial_s == pytest.approx(64 * (pipe + issue))              # L = 128 < pipe: no exposed latency
    assert piped.serial_s == pytest.approx((1 / 64) * 64 * (pipe + issue) + (63 / 64) * 64 * max(pipe, issue))
    assert drained.seconds == drained.serial_s > piped.seconds
    two = tensor_bound(_wgmma_counters(n, M64N256K16, drains=n, commits=n), H100, K, legacy_units=None,
                       **{**GEOM, "dispatch": other, "warps": 8.0})
    assert two.warpgroups == 2 and two.serial_s == pytest.approx(drained.serial_s / 2)


def test_a_drain_exposes_the_latency_beyond_a_small_wgmmas_pipe_time():
    n = 132 * 10
    small = 2 * 64 * 64 * 16                          # m64n64k16: 32 tensor clocks at the peak
    tb = tensor_bound(_wgmma_counters(n, small, drains=n, commits=n), H100, K, legacy_units=None, **GEOM)
    pipe_clk = 32 / K["wgmma_fraction_of_peak"]
    assert tb.serial_s == pytest.approx(10 * K["wgmma_latency_clk"] / F_T)   # pipe + (latency - pipe) per wgmma
    assert tb.throughput_s == pytest.approx(10 * pipe_clk / F_T)


def test_counters_without_tensor_keys_are_charged_as_16bit_mma_sync():
    tb = tensor_bound({}, H100, K, legacy_units=132 * 1000.0, **GEOM)
    assert tb.flops == 132 * 1000 * 4096 and tb.wgmma_flops == 0
    assert tb.throughput_s == pytest.approx(1000 * 4096 / (4096 * F_T * K["mma_sync_fraction_of_peak"]))
