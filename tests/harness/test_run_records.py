"""harness.run_records: run.json read once as typed records; a bad field is an error naming it, its type and the
type expected; every fixture run (schema 1 and 2) reads and round-trips."""
import json
from pathlib import Path

import pytest

from harness.json_records import RecordError
from harness.results import ResultsError, RunFile
from harness.run_records import MeasuredTiming, ModelledTiming, Row, Sweep

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
HEAD = {"key": "gate/ptx/tiny/balanced", "kernel": "gate", "impl": "ptx", "preset": "tiny", "skew": "balanced",
        "status": "ok"}


@pytest.mark.parametrize("name", ["sim-real", "sim-real-ptx-only", "sim-tiny", "gpu-measured"])
def test_fixture_runs_read_as_records_and_round_trip(name):
    raw = json.loads((RUNS / name / "run.json").read_text())
    sweep = RunFile.load(RUNS / name).sweep
    assert sweep.schema_version == 3 and len(sweep.rows) == len(raw["rows"])
    assert Sweep.from_json(sweep.to_json()) == sweep
    timed = [r for r in sweep.rows if r.status == "ok"]
    kind = MeasuredTiming if name == "gpu-measured" else ModelledTiming
    assert timed and all(isinstance(r.timing, kind) and r.time_us > 0 for r in timed)
    for row, old in zip(sweep.rows, raw["rows"], strict=True):
        want = (old.get("timing") or {}).get("modelled_us") if kind is ModelledTiming else \
            ((old.get("timing") or {}).get("device") or {}).get("median_us")
        assert row.time_us == want
        assert row.label == (f"{old['kernel']}[{row.variant}]" if row.variant else old["kernel"])


def test_a_bad_field_names_where_it_is_what_it_is_and_what_was_expected():
    with pytest.raises(RecordError, match=r"row\.timing\.modelled_us is a string \(.fast.\); expected a number or "
                                          r"null"):
        Row.from_json({**HEAD, "timing": {"basis": "modelled", "modelled_us": "fast"}}, "row")
    with pytest.raises(RecordError, match=r"row\.status is a string \('great'\); expected 'ok' or 'failed'"):
        Row.from_json({**HEAD, "status": "great"}, "row")
    with pytest.raises(RecordError, match=r"row\.timing\.device is missing; expected an object \(Summary\)"):
        Row.from_json({**HEAD, "timing": {"basis": "measured", "device_time_us": [1.0]}}, "row")
    with pytest.raises(RecordError, match=r"row: unknown field 'modeled_us'"):
        Row.from_json({**HEAD, "modeled_us": 1.0}, "row")
    with pytest.raises(RecordError, match=r"row\.launches\[0\]\.grid\[1\] is true/false \(True\); expected an integer"):
        Row.from_json({**HEAD, "launches": [{"name": "gate", "grid": [1, True, 1]}]}, "row")


def test_a_run_file_with_a_bad_row_is_refused_naming_the_row(tmp_path):
    doc = json.loads((RUNS / "sim-tiny" / "run.json").read_text())
    doc["rows"][2]["correctness"]["ok"] = "yes"
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.json").write_text(json.dumps(doc))
    key = doc["rows"][2]["key"]
    with pytest.raises(ResultsError, match=rf"rows\[2\] \({key}\)\.correctness\.ok is a string \('yes'\); "
                                           r"expected true/false"):
        RunFile.load(tmp_path / "r")
