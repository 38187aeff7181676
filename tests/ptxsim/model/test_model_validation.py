"""The validation against published figures: every bench has a sourced figure or says none was found, the error
figure is the geometric RMS of the ratios, the record in the repository matches the model as it stands, and
per-limiter errors come from the right benches."""
import json

import pytest

from harness.static import analyse_ptx
from ptxsim.model import costs, microbench
from ptxsim.model.microbench import BENCHES
from ptxsim.model.paired import PAIRS
from ptxsim.model.published import FIT, PREDICTED, PUBLISHED, entries, role_problems
from ptxsim.model.validation import (
    RECORD,
    Row,
    error_figure,
    limiter_error,
    recorded_error,
    table,
    validate,
    write_record,
)


def _row(name, ratio, gap=""):
    return Row(name, name, "GB/s", 1.0, None if ratio is None else 1.0 / ratio, ratio, "H100 SXM", "[S9] x", "c",
               "dram", gap)


def test_every_bench_has_a_sourced_figure_or_says_none():
    assert set(PUBLISHED) == set(BENCHES)
    for name in BENCHES:
        for pub in entries(name):
            if pub.value is None:
                assert pub.source == "none found" and pub.conditions
            else:
                assert pub.value > 0 and pub.source.startswith("[S") and pub.conditions


def test_error_figure_is_the_geometric_rms():
    rows = [_row("a", 1.2), _row("b", 1 / 1.2), _row("c", None)]
    assert error_figure(rows) == pytest.approx(0.2)
    assert error_figure([_row("a", 1.0)]) == 0.0 and error_figure([_row("c", None)]) == 0.0


def test_table_flags_out_of_band_rows_with_their_explanation():
    text = table([_row("a", 1.0), _row("b", 2.0, "S1 disagrees with S5"), _row("c", None)])
    lines = text.splitlines()
    assert "OUT OF BAND" not in lines[1] and "OUT OF BAND: S1 disagrees with S5" in lines[2]
    assert "n/a" in lines[3] and lines[-1].startswith("summary: 2 of 3 quantities have a published figure; 1 of them")


def test_limiter_error_uses_the_limiters_benches(tmp_path):
    path = tmp_path / "v.json"
    rows = [_row("dram_read", 1.1), _row("dram_copy", 1 / 1.1), _row("fp32_fma", 1.5)]
    write_record(rows, path)
    assert limiter_error("dram", path)[0] == pytest.approx(0.1)
    assert limiter_error("issue", path)[0] == pytest.approx(0.5)
    overall = error_figure(rows)
    e, basis = limiter_error("fp64", path)                     # no bench: the overall figure, and it says so
    assert e == pytest.approx(overall) and "no published figure" in basis
    assert recorded_error(tmp_path / "missing.json")[0] == 0.5


def test_the_recorded_validation_matches_the_model():
    """benchmarks/model_validation.py must be re-run (and its record committed) whenever the model changes: four
    benches that exercise the memory, latency, issue and wgmma-drain terms must reproduce their recorded values."""
    doc = json.loads(RECORD.read_text())
    recorded = {(r["name"], r["source"]): r["modelled"] for r in doc["rows"]}
    assert {name for name, _ in recorded} == set(BENCHES)
    assert doc["error"] == pytest.approx(error_figure([Row(**r) for r in doc["rows"]]))
    # NOTE: wgmma_latency too: its sm_90a module's ptxas facts (SASS mix) move it, which the three others never see
    for row in validate(names=["dram_read", "chase_l2", "fp32_fma", "wgmma_latency"], static_facts=analyse_ptx):
        assert row.modelled == pytest.approx(recorded[(row.name, row.source)], rel=1e-9), \
            f"ptxsim/model/validation.json is stale for {row.name}: run python benchmarks/model_validation.py"


def _fitted_from():
    return {**costs.FITTED_FROM, **microbench.FITTED_FROM}


def test_fit_rows_are_exactly_the_rows_a_constant_was_set_from():
    """costs.FITTED_FROM (every model constant) and microbench.FITTED_FROM (kernel choices) name the published rows
    they were set from; those rows, and no others, are marked FIT; no paired row is named."""
    assert set(costs.FITTED_FROM) == set(costs.MODEL_CONSTANTS)
    assert role_problems(_fitted_from(), {pair.name for pair in PAIRS}) == []
    assert sum(pub.role == FIT for name in PUBLISHED for pub in entries(name)) == 8
    assert all(pair.role == PREDICTED for pair in PAIRS)


@pytest.mark.parametrize("planted, message", [
    ({"dram_achievable_fraction": (("dram_read", "[S3]"),)}, "marks 'predicted'"),     # set from a predicted row
    ({"dram_achievable_fraction": (("hbm_copy_32_vs_132_blocks", "[S1]"),)}, "paired row"),
    ({"dram_achievable_fraction": (("dram_read", "[S42]"),)}, "no published row"),
    ({"l1_latency_s": ()}, "marked FIT but no constant"),                               # a fit row nothing names
])
def test_a_constant_set_from_a_predicted_row_is_caught(planted, message):
    problems = role_problems({**_fitted_from(), **planted}, {pair.name for pair in PAIRS})
    assert len(problems) == 1 and message in problems[0]


def test_error_figures_by_role():
    rows = [_row("a", 1.2), _row("b", 1.0)]
    rows[1] = Row(**{**rows[1].__dict__, "role": FIT, "ratio": 1.5})
    assert error_figure(rows, PREDICTED) == pytest.approx(0.2) and error_figure(rows, FIT) == pytest.approx(0.5)
    assert "1 predicted: 20.0%; 1 fit" in table(rows)


def test_the_recorded_pairs_match_the_model():
    """Every published pair is in the record; two cheap pairs (one-warp ILP, and BabelStream
    on H200) reproduce their recorded modelled ratios."""
    from ptxsim.model.paired import validate_pairs

    doc = json.loads(RECORD.read_text())
    recorded = {row["name"]: row for row in doc["pairs"]}
    assert set(recorded) == {pair.name for pair in PAIRS}
    assert all(recorded[name]["role"] == PREDICTED for name in recorded)   # the interval fits: test_interval_table
    for row in validate_pairs(names=["ilp_fma_1_vs_4", "stream_dot_vs_copy_h200"], static_facts=analyse_ptx):
        assert row.modelled == pytest.approx(recorded[row.name]["modelled"], rel=1e-9), \
            f"ptxsim/model/validation.json is stale for pair {row.name}: run python benchmarks/model_validation.py"
