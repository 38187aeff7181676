"""The runner on the simulator with sampling and lazy inputs (issue #13): big GEMM launches simulate a few waves,
their checks cover exactly what ran, a sampled layer is checked stage by stage, and run.json says how much ran."""
import numpy as np
import pytest

from contract.generators import KeyedNormal
from harness import runner
from harness.cell import find_run
from harness.contract_row import ContractRow, draw_inputs
from harness.nvtx_ranges import RangeRecorder
from harness.results import typed_row
from harness.row_report import _row_status, _sampling_text, sampling_summary
from harness.row_run import run_row
from harness.run_records import Sampling

pytestmark = pytest.mark.sim


def _row(kernel, preset, sample, impl="ptx", variant=None, backend=None):
    from harness.backends.sim import SimBackend

    settings = runner.CompareSettings(backend="sim", presets=(preset,), skews=("balanced",), kernels=(kernel,),
                                      seed=7, impls=(impl,), static=False, sample=sample)
    item = runner.Item(kernel, variant, preset, "balanced")
    run, why = find_run(impl, kernel)
    assert run is not None, why
    backend = backend or SimBackend()
    seed = runner.item_seed(7, item)
    job = ContractRow(settings, item, impl, run, seed, settings.model_device)
    return run_row(backend, job, draw_inputs(backend, item, seed), settings.row_settings(), RangeRecorder(), None)


@pytest.fixture
def sample_small_grids(monkeypatch):
    """Sample GEMM launches of any size (auto leaves tiny's and small's whole)."""
    import harness.sampling

    monkeypatch.setattr(harness.sampling, "AUTO_MIN_CTAS", 0)


def test_tiny_and_small_rows_run_every_cta_under_auto():
    row = _row("grouped_gemm", "tiny", "auto", variant="down")
    assert row["status"] == "ok" and row["sampling"] == {"policy": "auto", "sampled": False,
                                                          "simulated_fraction": 1.0, "coverage": 1.0}
    assert row["correctness"]["errors"]["sampled"] is False


def test_a_sampled_gemm_row_is_checked_on_what_ran_and_says_so(sample_small_grids):
    row = _row("grouped_gemm", "tiny", "1", variant="up")
    s = row["sampling"]
    assert row["status"] == "ok" and s["sampled"] and s["policy"] == "1"
    assert 0 < s["simulated_fraction"] < 0.2 and 0 < s["coverage"] < 0.3
    assert row["correctness"]["errors"]["sampled"] is True and row["correctness"]["errors"]["blocks_checked"] >= 1
    assert row["timing"]["simulated_fraction"] == pytest.approx(s["simulated_fraction"])
    status = _row_status(typed_row(row))
    assert f"sampled: {s['simulated_fraction']:.2%} of CTAs" in status and "check covers" in status


def test_sampled_and_full_small_gemm_agree_on_modelled_time_and_dram(sample_small_grids):
    """Issue #13: at small, the sampled run's modelled time within 10 % of the full run's, its extrapolated DRAM
    bytes within 1.5x of the kernel's minimum bytes (the full run's are the reference)."""
    full, sampled = _row("grouped_gemm", "small", "off", variant="down"), _row("grouped_gemm", "small", "auto",
                                                                                 variant="down")
    assert not full["sampling"]["sampled"] and sampled["sampling"]["simulated_fraction"] < 0.25
    assert sampled["timing"]["modelled_us"] == pytest.approx(full["timing"]["modelled_us"], rel=0.10)
    dram = sampled["sim_counters"]["total"]["dram__bytes_read.sum"] + \
        sampled["sim_counters"]["total"]["dram__bytes_write.sum"]
    assert 1 / 1.5 <= dram / sampled["min_bytes"] <= 1.5


@pytest.fixture(scope="module")
def sampled_layer():
    """A ptx layer at tiny whose GEMMs simulated two waves each, with its captured intermediates."""
    import harness.sampling
    from harness.backends.sim import SimBackend

    class Keep(SimBackend):  # keep the workspace the runner hands to the stage check
        kept = None

        def done_with_workspace(self, arrays):
            super().done_with_workspace(arrays)
            Keep.kept = dict(self.captured_workspace or {})

    saved, harness.sampling.AUTO_MIN_CTAS = harness.sampling.AUTO_MIN_CTAS, 0
    try:
        row = _row("layer", "tiny", "2", backend=Keep())
    finally:
        harness.sampling.AUTO_MIN_CTAS = saved
    return row, Keep.kept


def test_a_sampled_layer_passes_stage_by_stage(sampled_layer):
    row, kept = sampled_layer
    errors = row["correctness"]["errors"]
    assert row["status"] == "ok", row["correctness"]["message"]
    assert row["sampling"]["sampled"] and "stage by stage" in row["correctness"]["message"]
    stages = errors["stages"]
    assert list(stages) == ["act_quant", "gate", "align", "permute", "grouped_gemm.up", "swiglu",
                            "grouped_gemm.down", "combine"]
    for name in ("act_quant", "gate", "align", "permute"):  # ran whole: checked whole
        assert stages[name]["checked"] and stages[name]["coverage"] == 1.0, name
    for name in ("grouped_gemm.up", "swiglu", "grouped_gemm.down"):  # the same routing blocks all the way down
        assert stages[name]["checked"] and 0 < stages[name]["coverage"] < 1, name
    assert set(kept) >= {"h", "a", "y", "xp", "block_expert"}


def _stage_check(row_and_kept, corrupt):
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.verify import check_layer_stages

    row, kept = row_and_kept
    preset = get_preset("tiny")
    inputs = get_kernel("layer").make_inputs(preset, "balanced", row["seed"])
    kept = {k: v.copy() for k, v in kept.items()}
    corrupt(kept)
    outputs = {"out": np.full((preset.T, preset.H), np.nan, np.float32)}  # only the layer's outputs matter below
    outputs["out"] = outputs["out"].astype(kept["y"].dtype)
    outputs["out"].view(np.uint8).fill(0xFF)
    q, scale = _act_quant(inputs, preset)
    return check_layer_stages({"out": outputs["out"], "q": q, "scale": scale}, inputs, kept, preset)


def _act_quant(inputs, preset):
    from contract.kernels import get_kernel

    ref = get_kernel("act_quant").reference({"a": inputs["x"]}, preset)
    return ref["q"], ref["scale"]


def _first_sampled_row(kept, name):
    from contract.coverage import written

    mask = written(kept[name])
    return int(np.flatnonzero(mask.all(axis=1))[0])


def test_the_stage_check_fails_a_wrong_up_gemm_row(sampled_layer):
    def corrupt(kept):
        r = _first_sampled_row(kept, "h")
        kept["h"][r] = (kept["h"][r].astype(np.float32) * 2).astype(kept["h"].dtype)

    result = _stage_check(sampled_layer, corrupt)
    assert not result.ok and "grouped_gemm.up" in result.message
    assert result.errors["stages"]["grouped_gemm.up"]["ok"] is False


def test_the_stage_check_fails_a_wrong_down_gemm_row(sampled_layer):
    def corrupt(kept):
        r = _first_sampled_row(kept, "y")
        kept["y"][r] = (kept["y"][r].astype(np.float32) + 1).astype(kept["y"].dtype)

    result = _stage_check(sampled_layer, corrupt)
    assert not result.ok and "grouped_gemm.down" in result.message and "grouped_gemm.up" not in result.message


def test_lazy_inputs_give_the_rows_of_materialised_ones(monkeypatch):
    """The runner draws keyed lazy tensors for big inputs (here: every input, by lowering the threshold); the row's
    check and every counter equal those of materialised inputs."""
    import contract.footprint
    from harness.backends.sim import SimBackend

    eager = _row("swiglu", "tiny", "auto")
    monkeypatch.setattr(contract.footprint, "LAZY_MIN_BYTES", 0)
    item = runner.Item("swiglu", None, "tiny", "balanced")
    assert isinstance(draw_inputs(SimBackend(), item, 7)["h"], KeyedNormal)
    lazy = _row("swiglu", "tiny", "auto")
    assert lazy["status"] == eager["status"] == "ok"
    assert lazy["sim_counters"] == eager["sim_counters"] and lazy["correctness"] == eager["correctness"]


def test_a_sampled_dsv3_gemm_row_runs_lazy_within_its_memory_estimate():
    """The cheap dsv3 row: 14 GiB of up-projection weights, lazy; one live wave of one routing block simulated, and
    one block of the tail past total_padded (its CTAs exit at once)."""
    from harness.backends.sim import SimBackend
    from harness.row_memory import estimate_row_memory

    backend = SimBackend()
    row = _row("grouped_gemm", "dsv3-decode", "1", variant="up", backend=backend)
    assert row["status"] == "ok", row["correctness"]["message"]
    assert row["sampling"]["sampled"] and row["sampling"]["simulated_fraction"] == pytest.approx(2 / 304)
    estimate = estimate_row_memory("grouped_gemm", "dsv3-decode", "up", "sim", lazy=True, sample_blocks=1)
    assert estimate.lazy and estimate.total_bytes < 2 << 30


def test_the_numba_layers_own_name_for_the_swiglu_output_is_understood(sampled_layer):
    def rename(kept):
        kept["act"] = kept.pop("a")

    result = _stage_check(sampled_layer, rename)
    assert result.ok and result.errors["stages"]["grouped_gemm.down"]["checked"]

    def drop(kept):
        del kept["a"]

    result = _stage_check(sampled_layer, drop)
    assert not result.ok and "kept no a among its intermediates" in result.message


def test_a_sampled_layer_reports_its_stages_not_a_zero_coverage():
    """A layer's coverage is its least covered stage's: 0 when combine had no token with all its rows simulated
    (dsv3-decode). The progress line and run.json say which stages were checked and on how much instead."""
    stages = {"gate": {"ok": True, "checked": True, "coverage": 1.0},
              "grouped_gemm.up": {"ok": True, "checked": True, "coverage": 0.0173},
              "combine": {"ok": True, "checked": False, "coverage": 0.0}}
    sampling = sampling_summary([], {"coverage": 0.0, "stages": stages}, None)
    assert sampling["stages"] == {"checked": ["gate", "grouped_gemm.up"], "not_covered": ["combine"],
                                  "least_checked_coverage": 0.0173}
    sampling["sampled"], sampling["simulated_fraction"] = True, 0.0197
    text = _sampling_text(Sampling.from_json(sampling))
    assert "2 of 3 stages" in text and "1.73%" in text and "not covered: combine" in text and "0.00%" not in text
    plain = sampling_summary([], {"coverage": 0.25}, None)
    assert "stages" not in plain and plain["coverage"] == 0.25
