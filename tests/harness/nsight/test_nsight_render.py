"""`ptxmoe nsight` shows each kernel's whole NVTX push/pop stack, outer to inner ("run_test/daxpy"), for ncu CSV,
.ncu-rep and nsys inputs alike, so kernels can be grouped by an outer range."""
import csv
import io

from harness.cli import main
from harness.nsight import ncu_rep
from tests.harness.nsight.test_nsight_ncu_rep import Action, Context, Domain, Metric, Range
from tests.harness.nsight.test_nsight_ncu_rep_file import report_bytes


def _text_rows(capsys) -> list[list[str]]:
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["launch", "kernel", "nvtx_stack", "metric", "value", "unit"]
    return [line.split() for line in lines[1:]]


def _csv_rows(capsys) -> list[dict]:
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_ncu_csv_shows_the_outer_ranges(own, capsys):
    path = own("ncu_details_2023_20col_nvtx_rules.csv")  # launch 1 runs inside "outer", then the ptxmoe ranges
    assert main(["nsight", str(path)]) == 0
    stacks = {(r[0], r[2]) for r in _text_rows(capsys) if r[0] in ("0", "1")}
    assert stacks == {("0", "run-20261202T1600/gate/ptx/tiny/balanced"),
                      ("1", "outer/run-20261202T1600/align/cuda/tiny/extreme")}
    assert main(["nsight", str(path), "--csv"]) == 0
    row = next(r for r in _csv_rows(capsys) if r["launch"] == "1")
    assert row["nvtx_stack"] == "outer/run-20261202T1600/align/cuda/tiny/extreme"
    assert row["nvtx_range"] == "align/cuda/tiny/extreme"  # the innermost alone, as before


def test_ncu_rep_shows_the_outer_ranges(tmp_path, capsys, monkeypatch):
    context = Context([Range([Action("daxpy", "daxpy(double *)", {"gpu__time_duration.sum": Metric(5, "usecond")},
                                     {0: Domain("<default domain>", ["run_test", "daxpy"])})])])
    monkeypatch.setattr(ncu_rep, "load_report_function", lambda: lambda path: context)
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(report_bytes((1,)))
    assert main(["nsight", str(path)]) == 0
    assert _text_rows(capsys) == [["0", "daxpy(double", "*)", "run_test/daxpy", "gpu__time_duration.sum", "5000",
                                   "ns"]]


def test_nsys_sqlite_shows_the_outer_ranges(nsys_db, capsys):
    db = nsys_db()
    db.range(0, 1000, "run_test")
    db.range(100, 500, "daxpy")
    db.range(600, 900, "dscal")
    db.launch(200, 210, 300, 400, "daxpy_kernel", corr=1)
    db.launch(700, 710, 800, 850, "dscal_kernel", corr=2)
    assert main(["nsight", str(db.close()), "--csv"]) == 0
    stacks = {r["kernel"]: r["nvtx_stack"] for r in _csv_rows(capsys) if r["kernel"]}
    assert stacks == {"daxpy_kernel": "run_test/daxpy", "dscal_kernel": "run_test/dscal"}


def test_nsys_stats_shows_the_outer_ranges(shared, capsys):
    path = shared("pipit_nsys_stats_nvtx_pushpop_trace_nbody.csv")
    assert main(["nsight", str(path), "--csv"]) == 0
    stacks = {r["nvtx_stack"] for r in _csv_rows(capsys)}
    assert "main/computeNBody11/bodyForce" in stacks and "main/computeNBody15/integratePositions" in stacks
