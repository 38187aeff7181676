"""A sampled fp8 layer checked stage by stage (harness.verify.check_layer_stages, FP8_LAYER_STAGES; issue #13): the
runner runs it where its GEMMs are sampled instead of skipping it, every stage's contract check passes on what ran,
and a planted error in a sampled GEMM's rows, in the re-quantised rows or in a stage before the GEMMs fails the check,
while rows computed from poison do not."""
import numpy as np
import pytest

from contract.coverage import POISON_BYTE, written
from contract.kernels import get_kernel
from contract.presets import get_preset
from harness import runner
from harness.nvtx_ranges import RangeRecorder
from harness.verify import FP8_LAYER_STAGES, check_layer_stages

pytestmark = pytest.mark.sim

FP8_STAGE_NAMES = ["gate", "align", "act_quant", "permute", "permute_scales", "grouped_gemm_fp8.up", "swiglu",
                   "act_quant.down", "grouped_gemm_fp8.down", "combine"]


def _sampled_cell(preset: str, sample: str):
    """The cpp fp8 layer's row from runner.run_cell (the sweep's own path, with its skip rules) on the simulator,
    every GEMM launch sampled (AUTO_MIN_CTAS 0: small's grids too), and the workspace the stage check was given."""
    import harness.sampling
    from harness.backends.sim import SimBackend

    class Keep(SimBackend):  # keep the workspace the runner hands to the stage check
        kept: dict = {}

        def done_with_workspace(self, arrays):
            super().done_with_workspace(arrays)
            Keep.kept = dict(self.captured_workspace or {})

    settings = runner.CompareSettings(backend="sim", presets=(preset,), skews=("balanced",), kernels=("layer",),
                                      seed=7, impls=("cpp",), static=False, sample=sample)
    item = runner.Item("layer", "fp8", preset, "balanced")
    saved, harness.sampling.AUTO_MIN_CTAS = harness.sampling.AUTO_MIN_CTAS, 0
    try:
        ((impl, row),) = runner.run_cell(Keep(), settings, item, ("cpp",), None, RangeRecorder())
    finally:
        harness.sampling.AUTO_MIN_CTAS = saved
    return row, Keep.kept


@pytest.fixture(scope="module")
def small_fp8():
    """small (8 scale groups per row of x, 2 of swiglu's), two waves of each GEMM simulated: (row, workspace, the
    layer's inputs and outputs for check_layer_stages)."""
    row, kept = _sampled_cell("small", "2")
    preset = get_preset("small")
    inputs = get_kernel("layer").make_inputs(preset, "balanced", row["seed"], variant="fp8")
    # q and scale are act_quant(x) exactly (the run's passed their bitwise check); out unwritten (combine covers no
    # token at small with two waves)
    quant = get_kernel("act_quant").reference({"a": inputs["x"]}, preset)
    out = np.empty((preset.T, preset.H), kept["y"].dtype)
    out.view(np.uint8).fill(POISON_BYTE)
    return row, kept, inputs, {"out": out, "q": quant["q"], "scale": quant["scale"]}


def _check(cell, corrupt=lambda kept: None):
    """check_layer_stages on the run's intermediates after `corrupt(kept)`."""
    row, kept, inputs, outputs = cell
    kept = {k: v.copy() for k, v in kept.items()}
    corrupt(kept)
    return check_layer_stages(outputs, inputs, kept, get_preset(row["preset"]))


def _rows(kept):
    """(rows the sampled up GEMM wrote, rows < total_padded computed from poison)."""
    total = int(kept["total_padded"][0])
    sampled = written(kept["h"][:total]).all(axis=1)
    return np.flatnonzero(sampled), np.flatnonzero(~sampled)


def _failed(result):
    return [name for name, s in result.errors["stages"].items() if not s["ok"]]


def test_the_runner_runs_a_sampled_fp8_layer_and_it_passes_stage_by_stage(small_fp8):
    """No longer skipped where its GEMMs are sampled: checked stage by stage, coverage per stage in run.json."""
    row, kept, _, _ = small_fp8
    assert row["status"] == "ok", row.get("reason") or row["correctness"]["message"]
    assert row["sampling"]["sampled"] and 0 < row["sampling"]["simulated_fraction"] < 0.2
    stages = row["correctness"]["errors"]["stages"]
    assert list(stages) == FP8_STAGE_NAMES == [s.name for s in FP8_LAYER_STAGES]
    assert "stage by stage" in row["correctness"]["message"]
    for name in FP8_STAGE_NAMES[:5]:  # ran whole: checked whole
        assert stages[name]["checked"] and stages[name]["coverage"] == 1.0, name
    for name in FP8_STAGE_NAMES[5:9]:  # the sampled routing blocks, all the way down to y
        assert stages[name]["checked"] and 0 < stages[name]["coverage"] < 0.2, (name, stages[name])
    # the same rows all the way down, each share counted among the rows below total_padded
    assert len({stages[name]["coverage"] for name in FP8_STAGE_NAMES[5:9]}) == 1, stages
    assert not stages["combine"]["checked"] and stages["combine"]["ok"]  # no token has all 8 rows sampled
    assert row["sampling"]["coverage"] == 0.0  # the least any stage covered: said, not hidden
    assert set(kept) >= {"xq", "xs", "h", "a", "aq", "as", "y"}


def test_the_check_fails_a_wrong_value_in_a_sampled_up_gemm_row(small_fp8):
    def corrupt(kept):
        r = _rows(kept)[0][0]
        kept["h"][r, 3] = 64.0  # h is ~N(0, 1)

    result = _check(small_fp8, corrupt)
    assert not result.ok and "grouped_gemm_fp8.up" in _failed(result)
    assert not {"act_quant", "permute", "permute_scales"} & set(_failed(result))


@pytest.mark.parametrize("what", ["code", "scale"])
def test_the_check_fails_a_wrong_requantised_row(small_fp8, what):
    def corrupt(kept):
        r = _rows(kept)[0][-1]
        if what == "code":
            kept["aq"].view(np.uint8)[r, 7] ^= 0x08  # another e4m3 exponent
        else:
            kept["as"][r, 1] *= 2

    result = _check(small_fp8, corrupt)
    assert not result.ok and "act_quant.down" in _failed(result), result.message
    assert not {"grouped_gemm_fp8.up", "swiglu"} & set(_failed(result))


@pytest.mark.parametrize("name,stage", [("xq", "permute"), ("xs", "permute_scales")])
def test_the_check_fails_a_wrong_stage_before_the_gemms(small_fp8, name, stage):
    def corrupt(kept):
        r = _rows(kept)[1][0]  # a row no simulated CTA read: checked all the same, the stage ran whole
        kept[name].view(np.uint8)[r, 0] ^= 0x40

    result = _check(small_fp8, corrupt)
    assert not result.ok and _failed(result) == [stage], result.message


def test_rows_computed_from_poison_do_not_fail_the_check(small_fp8):
    """swiglu and act_quant run whole on h rows no simulated CTA wrote: what they write there (garbage from poison,
    here a plausible but wrong value) is set back to unwritten, not checked."""
    def corrupt(kept):
        poison_rows = _rows(kept)[1]
        assert written(kept["aq"][poison_rows]).any()  # the run did write them, from poison
        kept["a"][poison_rows] = 1.0
        kept["aq"][poison_rows] = 2.0
        kept["as"][poison_rows] = 0.5

    assert _check(small_fp8).ok
    result = _check(small_fp8, corrupt)
    assert result.ok, result.message


def test_the_check_fails_a_requantised_row_past_total_padded(small_fp8):
    def corrupt(kept):
        kept["aq"][int(kept["total_padded"][0])] = 0.0

    result = _check(small_fp8, corrupt)
    assert not result.ok and _failed(result) == ["act_quant.down"] and "total_padded" in result.message


def test_a_missing_fp8_intermediate_is_named(small_fp8):
    result = _check(small_fp8, lambda kept: kept.pop("as"))
    assert not result.ok and "kept no as among its intermediates" in result.message


def test_combine_is_checked_on_the_tokens_whose_rows_all_ran():
    """tiny with ten waves (K = 4): some tokens have all their rows in sampled blocks; combine checks just those."""
    row, _ = _sampled_cell("tiny", "10")
    stages = row["correctness"]["errors"]["stages"]
    assert row["status"] == "ok", row["correctness"]["message"]
    assert all(s["checked"] for s in stages.values()) and 0 < stages["combine"]["coverage"] < 1


def test_the_stage_check_never_materialises_the_lazy_weights(small_fp8, monkeypatch):
    """At dsv3 the weights are lazy (11 GB of e4m3): the checks produce only the experts they use, never the whole
    tensor (a whole-array np.asarray of W1 took the dsv3 run to 24 GB and the OOM killer)."""
    from contract.generators import KeyedNormal

    row, kept, _, outputs = small_fp8
    preset = get_preset("small")
    inputs = get_kernel("layer").make_inputs(preset, "balanced", row["seed"], variant="fp8", lazy=True)
    assert isinstance(inputs["W1"], KeyedNormal) and isinstance(inputs["W2"], KeyedNormal)

    def whole(self, dtype=None, copy=None):
        raise AssertionError(f"a whole lazy tensor {self.shape} was materialised")

    monkeypatch.setattr(KeyedNormal, "__array__", whole)
    result = check_layer_stages(outputs, inputs, {k: v.copy() for k, v in kept.items()}, preset)
    assert result.ok, result.message
