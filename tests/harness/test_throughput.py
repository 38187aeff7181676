"""harness.throughput: achieved GB/s and TFLOP/s, and the share of the peak each kernel is measured against."""
import pytest

from harness.throughput import throughput


def test_throughput_math():
    from ptxsim.model import get_device

    spec = get_device("h200")
    t = throughput("grouped_gemm", 4_800_000_000, 10**12, 1000.0, spec)  # 4.8 GB and 1 TFLOP in 1 ms
    assert t["achieved_gbps"] == pytest.approx(4800.0) and t["achieved_tflops"] == pytest.approx(1000.0)
    assert t["pct_peak_bandwidth"] == pytest.approx(100 * 4.8e12 / spec.memory_bandwidth)
    assert t["pct_peak_flops"] == pytest.approx(100 * 1e15 / spec.bf16_dense_flops)
    assert throughput("gate", 10, 10, 1.0, spec)["peak_flops_kind"] == "fp32"
    fp8 = throughput("grouped_gemm_fp8", 10, 10**12, 1000.0, spec)  # FP8 tensor cores: twice the bf16 peak
    assert fp8["peak_flops_kind"] == "fp8_dense" and fp8["pct_peak_flops"] == pytest.approx(1e17 / spec.fp8_dense_flops)
    assert throughput("gate", 10, 10, None, spec)["achieved_gbps"] is None
    # the layer's FLOPs run on the tensor cores of its variant's input type
    assert throughput("layer", 10, 10, 1.0, spec, "fp8")["peak_flops_kind"] == "fp8_dense"
    assert throughput("layer", 10, 10, 1.0, spec, "bf16")["peak_flops_kind"] == "bf16_dense"


def test_a_time_faster_than_the_devices_peaks_is_flagged_on_the_row():
    """The physical invariant: minimum bytes (or FLOPs) over the time above the device's peak is recorded as a
    warning naming the rate and the peak; a time under the peaks has none."""
    from ptxsim.model import get_device

    spec = get_device("h200")
    fine = throughput("grouped_gemm_fp8", int(spec.memory_bandwidth * 1e-3), 10**9, 1000.0, spec)
    assert fine["warnings"] == []
    # dsv3-decode's up GEMM as once modelled: ~4.5 GB of minimum bytes in 177 us
    fast = throughput("grouped_gemm_fp8", 4_536_832_708, 10**9, 177.0, spec)
    assert len(fast["warnings"]) == 1 and "DRAM bandwidth" in fast["warnings"][0]
    assert "not physical" in fast["warnings"][0]
    assert fast["pct_peak_bandwidth"] > 100
    flops = throughput("grouped_gemm_fp8", 10, int(spec.fp8_dense_flops * 2e-3), 1000.0, spec)
    assert len(flops["warnings"]) == 1 and "fp8_dense" in flops["warnings"][0]
    assert throughput("gate", 10, 10, None, spec)["warnings"] == []
