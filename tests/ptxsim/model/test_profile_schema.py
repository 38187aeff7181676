"""Device profile schema 2 (ptxsim/model/profile_schema.py): a measured under-load clock and measured paired variants,
round-tripped, version 1 still read, and every malformed field refused with the file, the field and what was
expected. All of it plumbing with fake readings: measuring needs a GPU (docs/calibrate.md)."""
import json

import pytest

from ptxsim.model.devices import get_device
from ptxsim.model.paired import GPU_PAIRS, PAIRS
from ptxsim.model.profile import SCHEMA, MeasuredPair, ProfileError, fit, load_profile, save_profile

CLOCK = {"under_load_hz": 1.62e9, "method": "fake counters", "samples": 3}
PAIR = MeasuredPair("ilp_fma_1_vs_4", 3.9, (3.7, 4.1), 10)


def _doc(**changes):
    doc = fit("H200 SXM", {"dram_read": 4300.0, "wgmma_bf16": 700.0}, CLOCK, {PAIR.name: PAIR}).to_json()
    doc.update(changes)
    return doc


def test_a_profile_with_clock_and_pairs_round_trips(tmp_path):
    path = tmp_path / "p.json"
    save_profile(fit("H200 SXM", {"dram_read": 4300.0}, CLOCK, {PAIR.name: PAIR}), path)
    doc = json.loads(path.read_text())
    assert doc["schema"] == SCHEMA == "ptxmoe-device-profile/2"
    assert doc["clock"]["under_load_hz"] == 1.62e9 and doc["clock"]["method"] == "fake counters"
    assert doc["pairs"]["ilp_fma_1_vs_4"] == {"ratio": 3.9, "ci95": [3.7, 4.1], "samples": 10,
                                              "numerator": "ilp_fma_1", "denominator": "ilp_fma_4"}
    profile = load_profile(path)
    assert profile.under_load_clock_hz == 1.62e9 and profile.pairs == {PAIR.name: PAIR}
    assert profile.measured_ratios() == {"ilp_fma_1_vs_4": 3.9}
    spec = profile.spec()
    assert spec.under_load_clock_hz == 1.62e9 and spec.name == "H200 SXM"
    assert spec.l2_bandwidth == pytest.approx(get_device("H200 SXM").l2_bandwidth * 1.62 / 1.6)  # follows the clock


def test_without_a_measured_clock_the_documented_default_stays(tmp_path):
    path = tmp_path / "p.json"
    save_profile(fit("H200 SXM", {"dram_read": 4300.0}), path)
    profile = load_profile(path)
    assert profile.under_load_clock_hz is None and profile.pairs == {}
    assert profile.spec() is get_device("H200 SXM") and profile.spec().under_load_clock_hz == 1.6e9


def test_a_version_1_profile_is_still_read(tmp_path):
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({"schema": "ptxmoe-device-profile/1", "device": "H100 SXM",
                                "constants": {"l2_latency_s": 2.6e-7}, "measured": {"chase_l2": 260.0},
                                "fitted_from": {"l2_latency_s": "chase_l2"}}))
    profile = load_profile(path)
    assert profile.constants == {"l2_latency_s": 2.6e-7} and profile.under_load_clock_hz is None


def test_tensor_fractions_are_fitted_against_the_peak_at_the_measured_clock():
    measured = {"wgmma_bf16": 700.0, "dram_read": 4300.0}
    default = fit("H200 SXM", measured).constants
    clocked = fit("H200 SXM", measured, {**CLOCK, "under_load_hz": 1.4e9}).constants
    # the same measured TFLOP/s is a larger fraction of a lower peak; DRAM's peak is no clock's
    assert clocked["wgmma_fraction_of_peak"] == pytest.approx(default["wgmma_fraction_of_peak"] * 1.6 / 1.4)
    assert clocked["dram_achievable_fraction"] == default["dram_achievable_fraction"]


@pytest.mark.parametrize("changes, field, expected", [
    ({"clock": {**CLOCK, "under_load_hz": 1620.0}}, "clock.under_load_hz", "hertz between"),    # MHz, not Hz
    ({"clock": {**CLOCK, "under_load_hz": "fast"}}, "clock.under_load_hz", "hertz between"),
    ({"clock": {**CLOCK, "method": ""}}, "clock.method", "a non-empty string"),
    ({"clock": {**CLOCK, "samples": 0}}, "clock.samples", "an integer >= 1"),
    ({"clock": 1.6e9}, "clock", "an object {under_load_hz"),
    ({"pairs": []}, "pairs", "an object of paired variant"),
    ({"pairs": {"warp_drive": {"ratio": 1.0}}}, "pairs.warp_drive", "expected one of hbm_copy_32_vs_132_blocks"),
    ({"pairs": {"ilp_fma_1_vs_4": 3.9}}, "pairs.ilp_fma_1_vs_4", "an object {ratio, ci95"),
    ({"pairs": {"ilp_fma_1_vs_4": {"ratio": -2.0, "ci95": [1, 2], "samples": 3}}}, "pairs.ilp_fma_1_vs_4.ratio",
     "a finite number > 0"),
    ({"pairs": {"ilp_fma_1_vs_4": {"ratio": 3.0, "ci95": [3.5, 4.0], "samples": 3}}}, "pairs.ilp_fma_1_vs_4.ci95",
     "0 < lo <= ratio (3.0) <= hi"),
    ({"pairs": {"ilp_fma_1_vs_4": {"ratio": 3.0, "ci95": [2.5], "samples": 3}}}, "pairs.ilp_fma_1_vs_4.ci95",
     "[lo, hi]"),
    ({"pairs": {"ilp_fma_1_vs_4": {"ratio": 3.0, "ci95": [2.5, 3.5], "samples": 2.5}}},
     "pairs.ilp_fma_1_vs_4.samples", "an integer >= 1"),
    ({"pairs": {"ilp_fma_1_vs_4": {"ratio": 3.0, "ci95": [2.5, 3.5], "samples": 4, "numerator": "ilp_fma_16"}}},
     "pairs.ilp_fma_1_vs_4.numerator", "'ilp_fma_1' (the variant this pair runs)"),
    ({"constants": {"dram_achievable_fraction": 0}}, "constants.dram_achievable_fraction", "a finite number > 0"),
    ({"constants": {"warp_speed": 9.0}}, "constants.warp_speed", "unknown constant 'warp_speed'"),
    ({"device": "H20"}, "device", "valid devices"),
    ({"measured": [1]}, "measured", "an object"),
])
def test_a_malformed_profile_names_file_field_and_expected(tmp_path, changes, field, expected):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc(**changes)))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    message = str(info.value)
    assert str(path) in message and f"field {field!r}" in message and expected in message


def test_another_schema_is_refused_naming_the_expected_one(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc(schema="ptxmoe-device-profile/9")))
    with pytest.raises(ProfileError, match="schema 'ptxmoe-device-profile/9'; expected 'ptxmoe-device-profile/2'"):
        load_profile(path)


def test_fit_refuses_a_bad_clock_or_pair_before_writing_anything():
    with pytest.raises(ProfileError, match="clock.under_load_hz"):
        fit("H200 SXM", {}, {**CLOCK, "under_load_hz": 0.0})
    with pytest.raises(ProfileError, match="pairs.nope"):
        fit("H200 SXM", {}, None, {"nope": MeasuredPair("nope", 1.0, (1.0, 1.0), 2)})


def test_gpu_pairs_are_the_published_pairs_once_per_pair_of_variants():
    variants = {(p.numerator, p.denominator) for p in PAIRS}
    assert set(GPU_PAIRS.values()) == variants and len(GPU_PAIRS) == len(variants)
    assert GPU_PAIRS["stream_add_vs_copy"] == ("stream_add", "stream_copy")  # the H100 and H200 rows: one GPU pair
    assert not any(name.endswith(("_h100", "_h200")) for name in GPU_PAIRS)
