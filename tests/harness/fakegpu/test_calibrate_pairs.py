"""`ptxmoe calibrate`'s paired variants on the fake driver: both sides of every pair launched on grids sized by the
device (not 132), the wgmma pair as an sm_90a module with its JIT target, the ratios written into the device
profile and the measurement file, and read back from a measurement file (issue 25, "make the scarce run count")."""
import json

import pytest

from harness.calibrate_pairs import FEW_SMS, PAIRS, measure_pairs
from harness.cli import main
from ptxsim.model.profile import load_profile
from tests.harness.fakegpu.fakes import CUjit_target


def test_every_pair_launches_both_sides_on_device_sized_grids(fake_gpu):
    from harness.backends.gpu import GpuBackend

    fake_gpu.sm_count = 100
    ratios = measure_pairs(GpuBackend(), repeat=2)
    assert set(ratios) == set(PAIRS) and fake_gpu.errors == []
    assert all(r["ratio"] > 0 and r["sms"] == 100 for r in ratios.values())
    grids = {}
    for launch in fake_gpu.launches:
        grids.setdefault(launch["name"], set()).add(launch["grid"][0])
    assert grids["pair_copy_v4"] == {FEW_SMS, 100} and grids["pair_copy_u32"] == {100}
    assert grids["pair_transpose_conflict"] == grids["pair_transpose_padded"] == {100}
    assert grids["pair_wgmma_wait0"] == grids["pair_wgmma_wait1"] == {200}
    assert sum(1 for x in fake_gpu.module_loads if x["target"] == CUjit_target.CU_TARGET_COMPUTE_90A) == 2
    per_side = {name: sum(1 for x in fake_gpu.launches if x["name"] == name) for name in grids}
    assert per_side["pair_transpose_conflict"] == 2 + 2  # two warm-ups, two timed
    assert any(e[0] == "alloc" and e[2] == 4 * 32 * 100 for e in fake_gpu.timeline)  # a word per thread of 100 CTAs


MEASURED = {"dram_read": 4300.0, "chase_l2": 140.0}


def test_calibrate_writes_the_ratios_into_the_profile_and_reads_them_back(fake_gpu, monkeypatch, tmp_path, capsys):
    from harness.commands import calibrate_cmd

    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", lambda repeat, backend=None: dict(MEASURED))
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    out, saved = tmp_path / "h200.json", tmp_path / "measured.json"
    assert main(["calibrate", "--out", str(out), "--repeat", "1", "--save-measurements", str(saved), "--no-clock"]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["ratios"]) == set(PAIRS) and doc["ratios"]["copy_20_vs_all_sms"]["sms"] == 132
    assert load_profile(out).constants["dram_achievable_fraction"] > 0  # still a profile load_profile takes
    assert json.loads(saved.read_text())["ratios"] == doc["ratios"]
    assert "ratio transpose_conflict_vs_padded" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert main(["calibrate", "--out", str(again), "--measurements", str(saved)]) == 0
    assert json.loads(again.read_text())["ratios"] == doc["ratios"]
    launches = len(fake_gpu.launches)
    assert main(["calibrate", "--out", str(tmp_path / "none.json"), "--repeat", "1", "--no-pairs", "--no-clock"]) == 0
    assert len(fake_gpu.launches) == launches and "ratios" not in json.loads((tmp_path / "none.json").read_text())


@pytest.mark.parametrize("ratios, message", [
    ({"warp_drive": {"ratio": 2.0}}, "unknown pair 'warp_drive'"),
    ({"wgmma_wait0_vs_wait1": {"ratio": -1}}, "has ratio -1"), ([1], "'ratios' must be an object"),
])
def test_bad_ratios_in_a_measurement_file_are_usage_errors(tmp_path, capsys, ratios, message):
    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"device": "H200 SXM", "measured": MEASURED, "ratios": ratios}))
    assert main(["calibrate", "--out", str(tmp_path / "p.json"), "--measurements", str(meas)]) == 2
    assert message in capsys.readouterr().err


def test_every_paired_rows_variant_launches_as_its_bench_and_lands_in_the_profile(fake_gpu, monkeypatch, tmp_path):
    import io

    from harness.backends.gpu import GpuBackend
    from harness.calibrate_variants import measure_variant_pairs
    from harness.commands import calibrate_cmd
    from ptxsim.model.paired import GPU_PAIRS, variant_bench

    pairs, skipped = measure_variant_pairs(GpuBackend(), 2, 1.6e9, progress=io.StringIO())
    assert fake_gpu.errors == []  # every launch matched its .entry's parameters (count and sizes)
    variants = {v for pair in GPU_PAIRS.values() for v in pair}
    shapes = {(x["name"], x["grid"][0]) for x in fake_gpu.launches}
    for variant in variants:
        bench = variant_bench(variant)
        assert all((bench.entry, launch.grid) in shapes for launch in bench.launches), variant
    # the fake's event times count queued commands, not work: every copy and STREAM pair is measured (ratios of
    # equal times: the work ratio), the ILP sweeps' two step counts take the same time and are not measured
    assert set(pairs) | set(skipped) == set(GPU_PAIRS) and set(skipped) == {n for n in GPU_PAIRS if "ilp" in n}
    assert pairs["stream_add_vs_copy"].ratio == pytest.approx(1.5)  # three arrays' bytes over two in equal times
    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", lambda repeat, backend=None: dict(MEASURED))
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    out = tmp_path / "p.json"
    assert main(["calibrate", "--out", str(out), "--repeat", "2", "--no-clock"]) == 0
    assert set(load_profile(out).pairs) == set(pairs)
