"""Runs saved by ptxmoe.compare name their own implementations (not cuda/ptx): the dashboard still renders them."""
import json
import shutil
from pathlib import Path

from harness.dashboard import build
from harness.dashboard.data import headline

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def _renamed(tmp_path, names: dict, kernel: str) -> Path:
    run_dir = Path(shutil.copytree(RUNS / "gpu-measured", tmp_path / "mine"))
    doc = json.loads((run_dir / "run.json").read_text())
    for row in doc["rows"]:
        row["impl"] = names[row["impl"]]
        row["kernel"] = f"{kernel}_{row['kernel']}"
    for v in doc["verdicts"]:
        v["kernel"] = f"{kernel}_{v['kernel']}"
        v["impl"], v["baseline"] = names[v["impl"]], names[v["baseline"]]
        v["pair"] = f"{v['impl']}-vs-{v['baseline']}"
    (run_dir / "run.json").write_text(json.dumps(doc))
    return run_dir


def test_measured_run_with_other_implementation_names_renders(tmp_path):
    run_dir = _renamed(tmp_path, {"numba": "numba_saxpy", "ptx": "handwritten"}, "usersaxpy")
    doc = json.loads((run_dir / "run.json").read_text())
    h = headline(doc)
    # a pair of the user's own names is the headline, bootstrapped from its rows' samples like a built-in pair
    assert h["pair"] == "handwritten-vs-numba_saxpy"
    assert h["interval"].startswith("95% bootstrap") and h["lo"] < h["geomean"] < h["hi"]
    html = build(run_dir).read_text()
    assert "usersaxpy_gate" in html and "handwritten" in html
