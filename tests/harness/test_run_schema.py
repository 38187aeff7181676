"""harness.run_schema: version-1 run.json documents read as version 2 (numba for cuda, pairwise verdicts)."""
import json

from harness.results import RunFile


def test_schema_1_run_loads_upgraded_and_saves_as_2(tmp_path):
    """A version-1 run.json (Numba path named "cuda", one PTX-over-Numba verdict per cell) reads as version 2."""
    v1 = {"schema_version": 1, "run_id": "old", "status": "interrupted", "settings": {"impls": ["cuda", "ptx"]},
          "environment": {}, "missing": ["align/cuda/tiny/balanced: cuda_impl has no align yet"],
          "rows": [{"key": "gate/cuda/tiny/balanced", "impl": "cuda", "status": "ok",
                    "launches": [{"name": "gate", "impl": "cuda"}], "nsight": [{"impl": "cuda", "metric": "m"}]},
                   {"key": "gate/ptx/tiny/balanced", "impl": "ptx", "status": "ok"},
                   {"key": "gate[cuda]/ptx/tiny/balanced", "impl": "ptx", "status": "ok"}],
          "verdicts": [{"key": "gate/tiny/balanced", "kernel": "gate", "variant": None, "preset": "tiny",
                        "skew": "balanced", "basis": "modelled", "speedup": 1.5, "ci_lo": 1.5, "ci_hi": 1.5,
                        "verdict": "FASTER", "reason": None, "ptx_over": "cuda"}],
          "nvtx_ranges": [{"name": "gate/cuda/tiny/balanced", "key": "gate/cuda/tiny/balanced"},
                          {"name": "run-old", "depth": 0}]}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text(json.dumps(v1))
    run = RunFile.load(tmp_path / "old")
    doc = run.doc
    assert doc["schema_version"] == 2 and doc["upgraded_from"] == 1 and doc["settings"]["impls"] == ["numba", "ptx"]
    assert [(r["key"], r["impl"]) for r in doc["rows"]] == [
        ("gate/numba/tiny/balanced", "numba"), ("gate/ptx/tiny/balanced", "ptx"),
        ("gate[cuda]/ptx/tiny/balanced", "ptx")]  # only the impl field of a key is renamed
    assert doc["rows"][0]["nsight"][0]["impl"] == "numba" and doc["rows"][0]["launches"][0]["impl"] == "cuda"
    assert run.is_done("gate/numba/tiny/balanced") and not run.is_done("gate/cuda/tiny/balanced")
    assert doc["missing"] == ["align/numba/tiny/balanced: cuda_impl has no align yet"]
    assert doc["nvtx_ranges"][0] == {"name": "gate/numba/tiny/balanced", "key": "gate/numba/tiny/balanced"}
    (v,) = doc["verdicts"]
    assert (v["key"], v["cell"], v["pair"], v["impl"], v["baseline"], v["headline"]) == (
        "gate/tiny/balanced/ptx-vs-numba", "gate/tiny/balanced", "ptx-vs-numba", "ptx", "numba", False)
    assert v["speedup"] == 1.5 and v["verdict"] == "FASTER" and "ptx_over" not in v
    run.save()  # e.g. on --resume: written back as version 2
    assert json.loads((tmp_path / "old" / "run.json").read_text())["schema_version"] == 2
    assert RunFile.load(tmp_path / "old").doc["rows"] == doc["rows"]


def test_the_old_fixture_run_loads():
    """tests/fixtures/runs/sim-real-ptx-only is a real schema-1 run.json: it still opens, with its rows renamed."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "sim-real-ptx-only" / "run.json"
    raw = json.loads(src.read_text())
    assert raw["schema_version"] == 1
    doc = RunFile.load(src.parent).doc
    assert [r["impl"] for r in doc["rows"]] == [{"cuda": "numba"}.get(r["impl"], r["impl"]) for r in raw["rows"]]
    assert {r["impl"] for r in doc["rows"]} == {"numba", "ptx"}
    assert all(v["pair"] == "ptx-vs-numba" and v["verdict"] is None for v in doc["verdicts"])
