"""harness.run_schema: version-1 run.json documents read as version 2 (numba for cuda, pairwise verdicts)."""
import json

from harness.results import RunFile
from harness.run_schema import upgrade


def _nsight(impl: str) -> dict:
    return {"source": "ncu-csv-raw", "kernel": "gate", "nvtx_range": "", "metric": "m", "value": 1.0, "unit": "",
            "impl": impl}


def test_schema_1_run_loads_upgraded_and_saves_as_3(tmp_path):
    """A version-1 run.json (Numba path named "cuda", one PTX-over-Numba verdict per cell) reads as version 3 (the
    version-2 renames, then version 3's recorded device profile: none)."""
    cell = {"kernel": "gate", "preset": "tiny", "skew": "balanced"}
    v1 = {"schema_version": 1, "run_id": "old", "status": "interrupted",
          "settings": {"backend": "sim", "impls": ["cuda", "ptx"]},
          "environment": {}, "missing": ["align/cuda/tiny/balanced: cuda_impl has no align yet"],
          "rows": [{"key": "gate/cuda/tiny/balanced", "impl": "cuda", "status": "ok", **cell,
                    "launches": [{"name": "gate", "impl": "cuda"}], "nsight": [_nsight("cuda")]},
                   {"key": "gate/ptx/tiny/balanced", "impl": "ptx", "status": "ok", **cell},
                   {"key": "gate[cuda]/ptx/tiny/balanced", "impl": "ptx", "status": "ok", **cell}],
          "verdicts": [{"key": "gate/tiny/balanced", "kernel": "gate", "variant": None, "preset": "tiny",
                        "skew": "balanced", "basis": "modelled", "speedup": 1.5, "ci_lo": 1.5, "ci_hi": 1.5,
                        "verdict": "FASTER", "reason": None, "ptx_over": "cuda"}],
          "nvtx_ranges": [{"name": "gate/cuda/tiny/balanced", "key": "gate/cuda/tiny/balanced"},
                          {"name": "run-old", "depth": 0}]}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text(json.dumps(v1))
    run = RunFile.load(tmp_path / "old")
    doc = run.doc
    assert doc["schema_version"] == 3 and doc["upgraded_from"] == 1 and doc["settings"]["impls"] == ["numba", "ptx"]
    assert doc["settings"]["device_profile"] is None and run.sweep.settings.device_profile is None
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
    assert [r.impl for r in run.sweep.rows] == ["numba", "ptx", "ptx"] and run.sweep.verdicts[0].pair == "ptx-vs-numba"
    run.save()  # e.g. on --resume: written back as version 3
    assert json.loads((tmp_path / "old" / "run.json").read_text())["schema_version"] == 3
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


def test_layer_rows_from_before_the_variants_read_as_the_bf16_layer():
    """sim-real was recorded before the layer had variants: its layer rows and verdicts come back as layer[bf16]
    (keys too, so a resumed run skips them and compares them with new layer[bf16] cells); other kernels are as they
    were; a current document is left alone."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "sim-real" / "run.json"
    raw = json.loads(src.read_text())
    old_keys = {r["key"] for r in raw["rows"] if r["kernel"] == "layer"}
    assert old_keys and all(r.get("variant") is None for r in raw["rows"] if r["kernel"] == "layer")
    run = RunFile.load(src.parent)
    rows = [r for r in run.doc["rows"] if r["kernel"] == "layer"]
    assert {r["key"] for r in rows} == {k.replace("layer/", "layer[bf16]/", 1) for k in old_keys}
    assert all(r["variant"] == "bf16" and r["params"]["variant"] == "bf16" for r in rows)
    assert run.row("layer[bf16]/ptx/tiny/balanced") is not None
    verdicts = [v for v in run.doc["verdicts"] if v["kernel"] == "layer"]
    assert verdicts and all(v["cell"].startswith("layer[bf16]/") and v["key"].startswith("layer[bf16]/")
                            for v in verdicts)
    others = [r["key"] for r in run.doc["rows"] if r["kernel"] != "layer"]
    assert others == [r["key"] for r in raw["rows"] if r["kernel"] != "layer"]
    again = upgrade(json.loads(json.dumps(run.doc)))
    assert [r["key"] for r in again["rows"]] == [r["key"] for r in run.doc["rows"]]
