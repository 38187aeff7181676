"""`ptxmoe calibrate` on the CPU: fit a device profile from a synthetic measurement file, load it back, and use it
with `--device-profile` (the GPU path needs a GPU and is exercised by gpu_check runs)."""
import json
import re

import pytest

from harness.cli import main
from harness.static import analyse_ptx
from ptxsim.model.costs import MODEL_CONSTANTS
from ptxsim.model.devices import get_device
from ptxsim.model.profile import ProfileError, load_profile

H200 = get_device("H200 SXM")
# what an H200 might measure (synthetic): GB/s, TB/s, TFLOP/s, ns, clk, us as the benches' units
MEASURED = {"dram_read": 4300.0, "l2_copy": 5000.0, "shared_bw": 30.0, "mma_bf16": 600.0, "chase_l1": 21.0,
            "chase_l2": 140.0, "chase_dram": 300.0, "launch_gap": 4.5, "sfu_sin": 9.1, "fp32_fma": 62.0}


def test_calibrate_round_trips_a_profile(tmp_path, capsys):
    meas = tmp_path / "measured.json"
    meas.write_text(json.dumps({"device": "H200 SXM", "measured": MEASURED}))
    out = tmp_path / "h200.json"
    assert main(["calibrate", "--out", str(out), "--measurements", str(meas)]) == 0
    profile = load_profile(out)
    assert profile.device == "H200 SXM" and dict(profile.measured) == MEASURED
    c = profile.constants
    assert c["dram_achievable_fraction"] == pytest.approx(4300e9 / H200.memory_bandwidth)
    assert c["l2_achievable_fraction"] == pytest.approx(5000e9 / H200.l2_bandwidth)
    assert c["shared_achievable_fraction"] == pytest.approx(30e12 / H200.shared_bandwidth)
    # of the tensor peak at the model's one clock (4096 FLOP/clk/SM x 132 x the under-load 1.6 GHz = 865 TFLOP/s)
    tensor_peak = H200.tensor_bf16_flop_per_clk_per_sm * H200.sm_count * H200.under_load_clock_hz
    assert c["mma_sync_fraction_of_peak"] == pytest.approx(600e12 / tensor_peak)
    assert (c["l1_latency_s"], c["l2_latency_s"], c["dram_latency_s"]) == pytest.approx((21e-9, 140e-9, 300e-9))
    assert c["launch_overhead_s"] == pytest.approx(4.5e-6) and c["sfu_achievable_fraction"] == pytest.approx(8 / 9.1)
    assert set(c) <= set(MODEL_CONSTANTS) and profile.fitted_from["dram_latency_s"] == "chase_dram"
    text = capsys.readouterr().out
    assert "device profile for H200 SXM" in text and "not measured (defaults kept)" in text and "atomic_add" in text


def test_a_profile_changes_the_validated_model(tmp_path):
    from ptxsim.model.validation import validate

    out = tmp_path / "p.json"
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"chase_l2": 200.0}))
    assert main(["calibrate", "--out", str(out), "--measurements", str(meas), "--device", "H100 SXM"]) == 0
    row = validate(load_profile(out).constants, names=["chase_l2"], static_facts=analyse_ptx)[0]
    assert row.modelled == pytest.approx(200.0, rel=1e-6)        # the modelled chase now is the measured one


@pytest.mark.parametrize("doc, message", [
    ({"chase_l9": 1.0}, "not a microbenchmark"), ({"chase_l1": -3}, "positive number"), ([1, 2], "expected an object"),
])
def test_bad_measurement_files_are_usage_errors(tmp_path, capsys, doc, message):
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps(doc))
    assert main(["calibrate", "--out", str(tmp_path / "p.json"), "--measurements", str(meas)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "p.json").exists()


def test_bad_profiles_are_refused(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "ptxmoe-device-profile/1", "device": "H100 SXM",
                               "constants": {"warp_speed": 9}}))
    with pytest.raises(ProfileError, match="unknown constant 'warp_speed'"):
        load_profile(bad)
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "none.json")
    assert main(["compare", "--backend", "sim", "--device-profile", str(bad), "--kernels", "gate",
                 "--preset", "tiny", "--out", str(tmp_path / "runs")]) == 2
    assert "unknown constant" in capsys.readouterr().err


def test_calibrate_without_a_gpu_says_what_to_do(tmp_path, capsys, monkeypatch):
    from harness import toolchain

    monkeypatch.setattr(toolchain, "gpu_visible", lambda: (False, "no CUDA driver"))
    assert main(["calibrate", "--out", str(tmp_path / "p.json")]) == 2
    assert "--measurements" in capsys.readouterr().err


def test_device_profile_is_a_value_recorded_in_run_json_and_used_by_the_model(tmp_path, monkeypatch):
    """--device-profile reaches the timing model as a value (no environment variable), is recorded in run.json's
    settings (schema 3), and a slower GPU's profile makes the same row's modelled time longer."""
    import os

    # slow latencies: the tiny gate row is issue-bound at the model's under-load clock unless latency passes it
    slow = {"dram_read": 1000.0, "l2_copy": 1200.0, "shared_bw": 5.0, "mma_bf16": 100.0, "chase_l1": 80.0,
            "chase_l2": 2400.0, "chase_dram": 6000.0, "fp32_fma": 10.0}
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"device": "H200 SXM", "measured": slow}))
    profile = tmp_path / "slow.json"
    assert main(["calibrate", "--out", str(profile), "--measurements", str(meas)]) == 0
    environ = dict(os.environ)
    times = {}
    for name, extra in (("plain", []), ("profiled", ["--device-profile", str(profile)])):
        out = tmp_path / name
        assert main(["compare", "--backend", "sim", "--kernels", "gate", "--preset", "tiny", "--impls", "ptx",
                     "--no-static", "--no-dashboard", "--out", str(out), *extra]) == 0
        (run_dir,) = out.iterdir()
        doc = json.loads((run_dir / "run.json").read_text())
        assert doc["schema_version"] == 3
        assert doc["settings"]["device_profile"] == (str(profile.resolve()) if extra else None)
        times[name] = doc["rows"][0]["timing"]["modelled_us"]
    assert dict(os.environ) == environ  # nothing handed over through the environment
    assert times["profiled"] > times["plain"] > 0


def test_timing_model_is_a_value_recorded_in_run_json_and_kept_on_resume(tmp_path, capsys):
    """--timing-model v2 reaches every launch of the sim rows (model_version), is recorded in run.json's settings,
    and a --resume that asks for another version is refused naming both."""
    out = tmp_path / "runs"
    assert main(["compare", "--backend", "sim", "--kernels", "gate", "--preset", "tiny", "--impls", "ptx",
                 "--no-static", "--no-dashboard", "--timing-model", "v2", "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["settings"]["timing_model"] == "v2"
    assert {launch["model_version"] for launch in doc["rows"][0]["timing"]["launches"]} == {"v2"}
    capsys.readouterr()
    assert main(["compare", "--resume", str(run_dir), "--timing-model", "v1", "--no-dashboard"]) == 2
    assert "--timing-model v1 (the run has v2)" in capsys.readouterr().err


def test_intervals_from_a_measurement_files_pairs_are_printed(tmp_path, capsys):
    """--intervals: the measured pairs (fake readings) beside the model's ratios, and the fits they give."""
    from ptxsim.model.devices import get_device
    from ptxsim.model.paired import measured_pair_rows

    names, errors = ("ilp_fma_1_vs_4", "ilp_iadd_1_vs_8", "stream_add_vs_copy"), (1.25, 0.8, 1.0)
    modelled = {r.name: r.modelled for r in measured_pair_rows(get_device("H200 SXM"), dict.fromkeys(names, 1.0),
                                                                static_facts=analyse_ptx)}
    pairs = {n: {"ratio": modelled[n] / e, "ci95": [modelled[n] / e / 1.01, modelled[n] / e * 1.01], "samples": 5}
             for n, e in zip(names, errors, strict=True)}
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"device": "H200 SXM", "measured": {"dram_read": 4300.0}, "pairs": pairs}))
    assert main(["calibrate", "--out", str(tmp_path / "p.json"), "--measurements", str(meas), "--intervals"]) == 0
    out = capsys.readouterr().out
    assert "error  1.250" in out and "error  0.800" in out and "error  1.000" in out
    # ln 1.25 + ln 0.8 + ln 1 = 0 (to rounding: either sign)
    assert re.search(r"95% prediction interval, all \(fitted on all, n = 3\): bias [+-]0\.0%", out)
    assert load_profile(tmp_path / "p.json").measured_ratios() == pytest.approx(
        {n: p["ratio"] for n, p in pairs.items()})
