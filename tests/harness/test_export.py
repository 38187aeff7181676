"""harness.export: run.json -> one table row per kernel x impl x preset x skew; `ptxmoe export` CSV / Parquet."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.errors import InputError
from harness.export import COUNTER_PREFIX, export_run, run_to_dataframe
from harness.results import ResultsError

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FIXTURES = ("sim-real", "sim-tiny", "gpu-measured", "sim-real-ptx-only")


def _doc(name: str) -> dict:
    """The fixture's document at the current schema (sim-real-ptx-only is a schema-1 run: its "cuda" reads "numba")."""
    from harness.run_schema import upgrade

    return upgrade(json.loads((RUNS / name / "run.json").read_text()))


@pytest.fixture
def run_copy(tmp_path):
    def copy(name: str) -> Path:
        return Path(shutil.copytree(RUNS / name, tmp_path / name))
    return copy


@pytest.mark.parametrize("name", FIXTURES)
def test_cli_csv_has_every_row_of_the_run(name, run_copy, capsys):
    run_dir = run_copy(name)
    assert main(["export", str(run_dir)]) == 0
    doc = _doc(name)
    assert f"({len(doc['rows'])} rows)" in capsys.readouterr().out
    table = pd.read_csv(run_dir / "run.csv")
    assert len(table) == len(doc["rows"])
    assert list(table["key"]) == [r["key"] for r in doc["rows"]]
    assert list(table["status"]) == [r["status"] for r in doc["rows"]]


def test_times_match_the_rows_modelled_and_measured():
    sim, gpu = run_to_dataframe(_doc("sim-real")), run_to_dataframe(_doc("gpu-measured"))
    for frame, doc in ((sim, _doc("sim-real")), (gpu, _doc("gpu-measured"))):
        for (_, rec), row in zip(frame.iterrows(), doc["rows"], strict=True):
            if row["timing"]["basis"] == "modelled":
                assert rec["basis"] == "modelled" and rec["time_us"] == row["timing"]["modelled_us"]
                interval = row["timing"].get("interval_us") or [rec["time_us"]]
                assert (rec["time_ci_lo_us"], rec["time_ci_hi_us"]) == (interval[0], interval[-1])
            else:
                device = row["timing"]["device"]
                assert rec["basis"] == "measured" and rec["time_us"] == device["median_us"]
                assert (rec["time_ci_lo_us"], rec["time_ci_hi_us"]) == (device["ci_lo_us"], device["ci_hi_us"])
                assert rec["samples"] == device["n"]


def test_verdict_columns_sit_on_the_candidate_row():
    doc = _doc("gpu-measured")
    frame = run_to_dataframe(doc).set_index("key")
    for v in doc["verdicts"]:
        label = f"{v['kernel']}[{v['variant']}]" if v["variant"] else v["kernel"]
        ptx = frame.loc[f"{label}/ptx/{v['preset']}/{v['skew']}"]
        numba = frame.loc[f"{label}/numba/{v['preset']}/{v['skew']}"]
        assert ptx["speedup_vs_numba"] == v["speedup"] and ptx["verdict_vs_numba"] == v["verdict"]
        assert (ptx["ci_lo_vs_numba"], ptx["ci_hi_vs_numba"]) == (v["ci_lo"], v["ci_hi"])
        assert pd.isna(numba["speedup_vs_numba"])


def test_counters_and_static_totals_are_columns():
    doc = _doc("sim-real")
    frame = run_to_dataframe(doc)
    row, rec = doc["rows"][3], frame.iloc[3]
    for name, value in row["sim_counters"]["total"].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert rec[f"{COUNTER_PREFIX}{name}"] == value
    assert rec["registers_max"] == row["static"]["totals"]["registers_max"]
    assert rec["achieved_gbps"] == pytest.approx(row["throughput"]["achieved_gbps"])


def test_missing_rows_keep_their_reason():
    frame = run_to_dataframe(_doc("sim-real-ptx-only"))
    missing = frame[frame["status"] == "missing"]
    assert len(missing) == 2 and missing["reason"].str.contains("cuda_impl").all()
    assert missing["time_us"].isna().all()


def test_parquet_round_trips(run_copy, tmp_path):
    run_dir = run_copy("sim-tiny")
    out = tmp_path / "t.parquet"
    assert main(["export", str(run_dir), "--format", "parquet", "-o", str(out)]) == 0
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, run_to_dataframe(run_dir), check_dtype=False)


def test_errors(tmp_path, capsys):
    with pytest.raises(InputError, match=r"format 'xlsx': expected one of csv, parquet"):
        export_run(RUNS / "sim-tiny", "xlsx", tmp_path / "x")
    with pytest.raises(ResultsError, match=r"run.json not found"):
        run_to_dataframe(tmp_path)
    with pytest.raises(InputError, match=r"run = int"):
        run_to_dataframe(3)
    assert main(["export", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "ptxmoe export: error:" in err and "Traceback" not in err


def test_an_empty_run_is_an_empty_table_with_the_columns():
    frame = run_to_dataframe({"rows": [], "verdicts": []})
    assert len(frame) == 0 and {"key", "impl", "time_us", "basis"} <= set(frame.columns)


def test_a_ladder_has_a_row_per_rung_with_its_speedups(tmp_path, monkeypatch):
    """Rows of a three-rung ladder (the runner's fake, tests/harness/test_runner_ladder.py): each rung's row names its
    rung and slot and carries its own verdicts, the one against the rung below in `speedup_vs_rung_below`."""
    import io
    import sys

    from harness import runner
    from tests.harness.test_runner import FakeBackend, _run_file, _settings
    from tests.harness.test_runner import fake_run as gate_run
    from tests.harness.test_runner_ladder import RUNG_NAMES, _laddered_gate, _package

    for name, module in {"cuda_impl": _package("numba", {"gate": gate_run("gate", stages=("a", "b", "c"))}),
                         "cpp_impl": _package("cpp", {"gate": gate_run("gate", stages=("a", "b"))}),
                         "ptx_impl": _package("ptx", {"gate": _laddered_gate([])}, {"gate": RUNG_NAMES})}.items():
        monkeypatch.setitem(sys.modules, name, module)
    settings = _settings(["gate"], impls=("numba", "cpp", "ptx"))  # the three faked packages
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    frame = run_to_dataframe(run_file).set_index("slot")
    assert list(frame.index) == ["numba", "cpp", "ptx", "ptx.r1", "ptx.r2"]
    assert frame.loc["ptx.r1", "impl"] == "ptx" and frame.loc["ptx.r1", "rung"] == 1
    assert frame.loc["ptx", "rung_name"] == "tensor cores" and pd.isna(frame.loc["cpp", "rung"])
    t = frame["time_us"]
    assert frame.loc["ptx.r2", "speedup_vs_rung_below"] == pytest.approx(t["ptx.r1"] / t["ptx.r2"])
    assert frame.loc["ptx", "speedup_vs_rung_below"] == pytest.approx(t["ptx.r2"] / t["ptx"])
    assert frame.loc["ptx.r1", "speedup_vs_cpp"] == pytest.approx(t["cpp"] / t["ptx.r1"])
    assert frame.loc["ptx", "speedup_vs_cpp"] == pytest.approx(t["cpp"] / t["ptx"])
    assert pd.isna(frame.loc["ptx.r1", "speedup_vs_rung_below"]) and frame.loc["ptx.r1", "speedup_vs_cpp"] < 1
    # 3 launches against cpp's 2: a modelled 0.67x; its verdict is its own 95% prediction interval's call (the
    # interval's width follows the recorded validation fit, ptxsim/model/interval_table.json, so the call is not fixed)
    from harness.timing.stats import verdict_of

    lo, hi = frame.loc["ptx.r1", "ci_lo_vs_cpp"], frame.loc["ptx.r1", "ci_hi_vs_cpp"]
    assert lo < frame.loc["ptx.r1", "speedup_vs_cpp"] < hi and hi / lo > 1.1
    assert frame.loc["ptx.r1", "verdict_vs_cpp"] == verdict_of(lo, hi) != "SAME"
    assert frame.loc["ptx", "verdict_vs_numba"] == "FASTER"
    assert frame.loc["ptx", "interval_vs_numba"] == "95% prediction"


def test_a_modelled_rows_time_interval_is_its_95_percent_prediction_interval():
    doc = _doc("sim-real")
    row = next(r for r in doc["rows"] if r["timing"]["basis"] == "modelled" and r["timing"]["modelled_us"])
    t = row["timing"]["modelled_us"]
    row["timing"]["interval_us"] = [0.5 * t, 1.9 * t]
    rec = run_to_dataframe(doc).set_index("key").loc[row["key"]]
    assert (rec["time_ci_lo_us"], rec["time_ci_hi_us"]) == (0.5 * t, 1.9 * t) and rec["time_us"] == t
