"""Modelled rows: kernel time and launch gap apart, a 95% prediction interval from the predicted absolute validation
rows, and a device profile (--device-profile, passed as a value) that changes the constants."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

import ptxsim
from harness.timing.sim import model_launch, model_row
from ptxsim.model.interval_table import TABLE
from ptxsim.model.intervals import t_quantile
from ptxsim.model.microbench import BENCHES
from ptxsim.model.profile import fit, save_profile


def _record(name="dram_read", grid=132 * 8, block=256):
    bench = BENCHES[name]
    dev = ptxsim.Device()
    stats = dev.launch(ptxsim.load_ptx(bench.ptx).kernel(bench.entry), grid, block,
                       [dev.alloc(grid * block * 64), dev.alloc(4)], sample_ctas=8)
    rec = SimpleNamespace(name=name, grid=(grid, 1, 1), block=(block, 1, 1), shared_bytes=0, host_seconds=0.1,
                          stats=stats)
    return rec, {name: (bench.ptx, bench.entry)}


def test_launch_carries_kernel_time_launch_gap_and_an_interval():
    rec, sources = _record()
    launch = model_launch(rec, sources["dram_read"], "H100 SXM")
    assert launch["error"] is None
    est = launch["estimate"]
    assert launch["modelled_s"] == pytest.approx(est["kernel (us)"] * 1e-6)        # kernel time, launch apart
    assert launch["launch_s"] == pytest.approx(est["launch (us)"] * 1e-6) and launch["launch_s"] > 0
    lo, hi = launch["interval_s"]
    # the 95% prediction interval of the predicted absolute rows' time errors, computed here from the table's rows
    rows = json.loads(TABLE.read_text())["models"]["v1"]["absolute"]["rows"]
    logs = np.log([r["time_error"] for r in rows])
    n, b, s = len(logs), logs.mean(), logs.std(ddof=1)
    h = t_quantile(0.975, n - 1) * s * math.sqrt(1 + 1 / n)
    modelled = launch["modelled_s"]
    assert (lo, hi) == pytest.approx((modelled * math.exp(-b - h), modelled * math.exp(-b + h)), rel=1e-9)
    assert lo < modelled < hi and n >= 10
    error = launch["model_error"]
    assert error["limiter"] == "dram" and error["relative"] == pytest.approx(hi / modelled - 1)
    assert error["basis"].startswith(f"95% prediction interval of the {n} predicted absolute")


def test_row_sums_kernel_launch_and_interval():
    rec, sources = _record()
    row = model_row([rec, rec], sources, "H100 SXM")
    one = row["launches"][0]
    assert row["modelled_us"] == pytest.approx(2 * one["modelled_s"] * 1e6)
    assert row["launch_us"] == pytest.approx(2 * one["launch_s"] * 1e6)
    assert row["interval_us"] == pytest.approx([2 * x * 1e6 for x in one["interval_s"]])
    assert row["model_error"]["relative"] == pytest.approx(one["model_error"]["relative"])


def test_device_profile_changes_the_model(tmp_path):
    rec, sources = _record()
    base = model_launch(rec, sources["dram_read"], "H100 SXM")["modelled_s"]
    path = tmp_path / "profile.json"
    save_profile(fit("H100 SXM", {"dram_read": 1500.0}), path)     # a GPU that reads at half the default
    slow = model_launch(rec, sources["dram_read"], "H100 SXM", profile=str(path))["modelled_s"]
    assert slow == pytest.approx(base * 3015.0 / 1500.0, rel=1e-3)
    assert model_row([rec], sources, "H100 SXM", str(path))["modelled_us"] == pytest.approx(slow * 1e6)
    failed = model_launch(rec, sources["dram_read"], "H100 SXM", profile=str(tmp_path / "missing.json"))
    assert failed["modelled_s"] is None and "cannot read" in failed["error"]
    assert np.isfinite(base)


def test_sum_metrics_averages_ratios_by_warp_instructions():
    from harness.timing.sim import sum_metrics

    total = sum_metrics([{"smsp__inst_executed.sum": 100, "ptxsim__model_ilp.ratio": 1.0, "dram__bytes_read.sum": 5},
                         {"smsp__inst_executed.sum": 300, "ptxsim__model_ilp.ratio": 0.2, "dram__bytes_read.sum": 7}])
    assert total["dram__bytes_read.sum"] == 12 and total["smsp__inst_executed.sum"] == 400
    assert total["ptxsim__model_ilp.ratio"] == pytest.approx((100 * 1.0 + 300 * 0.2) / 400)


def test_row_says_what_fraction_was_simulated():
    rec, sources = _record(grid=132 * 8)  # sample_ctas=8: one wave of ptxsim's default 132 CTAs out of 8
    launch = model_launch(rec, sources["dram_read"], "H100 SXM")
    assert launch["simulated_fraction"] == pytest.approx(1 / 8)
    assert launch["waves"] == {"wave_ctas": 132, "total_waves": 8, "simulated_waves": 1}
    assert model_row([rec], sources, "H100 SXM")["simulated_fraction"] == pytest.approx(1 / 8)


def test_timing_model_version_is_v1_unless_v2_is_asked_for():
    bench = BENCHES["fp32_fma"]
    dev = ptxsim.Device()
    stats = dev.launch(ptxsim.load_ptx(bench.ptx).kernel(bench.entry), 132 * 8, 256, [dev.alloc(4), np.uint32(8)],
                       sample_ctas=8)
    rec = SimpleNamespace(name="fp32_fma", grid=(132 * 8, 1, 1), block=(256, 1, 1), shared_bytes=0,
                          host_seconds=0.1, stats=stats)
    sources = {"fp32_fma": (bench.ptx, bench.entry)}
    v1 = model_launch(rec, sources["fp32_fma"], "H100 SXM")
    v2 = model_launch(rec, sources["fp32_fma"], "H100 SXM", model="v2")
    assert v1["model_version"] == "v1" and v2["model_version"] == "v2" and v2["error"] is None
    assert v2["modelled_s"] > 0 and v2["modelled_s"] != v1["modelled_s"]
    assert "timing model 'v3'" in model_launch(rec, sources["fp32_fma"], "H100 SXM", model="v3")["error"]


def test_a_profiles_measured_clock_is_the_clock_of_every_bound(tmp_path):
    """An FMA-bound kernel's modelled time scales as 1 / clock; a DRAM-bound one's does not (bytes/s)."""
    bench = BENCHES["fp32_fma"]
    launch = bench.launches[0]
    dev = ptxsim.Device()
    stats = dev.launch(ptxsim.load_ptx(bench.ptx).kernel(bench.entry), launch.grid, launch.block, launch.args(dev),
                       sample_ctas=8)
    fma = SimpleNamespace(name="fp32_fma", grid=(launch.grid, 1, 1), block=(launch.block, 1, 1), shared_bytes=0,
                          host_seconds=0.1, stats=stats)
    dram, sources = _record()
    path = tmp_path / "clocked.json"
    save_profile(fit("H100 SXM", {}, {"under_load_hz": 1.2e9, "method": "fake", "samples": 3}), path)
    for rec, source, scale in ((fma, (bench.ptx, bench.entry), 1.6 / 1.2), (dram, sources["dram_read"], 1.0)):
        base = model_launch(rec, source, "H100 SXM")
        clocked = model_launch(rec, source, "H100 SXM", profile=str(path))
        assert clocked["error"] is None and base["model_error"]["limiter"] == clocked["model_error"]["limiter"]
        assert clocked["modelled_s"] == pytest.approx(base["modelled_s"] * scale, rel=1e-6), rec.name
