"""`ptxmoe compare` end to end: option handling, exit codes, missing paths, resume; a real sim run when ptxsim can."""
import json
from pathlib import Path

import pytest

from harness import runner
from harness.cli import main
from tests.harness.test_runner import FakeBackend, fake_run


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


@pytest.fixture
def fake(monkeypatch):
    """compare on the fake backend: gate correct on both paths, align wrong on ptx and missing on cuda."""
    import harness.backends.select as select

    monkeypatch.setattr(select, "select_backend", lambda name: FakeBackend())
    monkeypatch.setattr(select, "resolve_backend_name", lambda name: "sim")
    table = {("cuda", "gate"): fake_run("gate"), ("ptx", "gate"): fake_run("gate"),
             ("ptx", "align"): fake_run("align", wrong=True)}
    monkeypatch.setattr(runner, "_find_run", lambda impl, k: (table.get((impl, k)), "" if (impl, k) in table
                                                              else f"{impl} has no {k} yet"))


def _only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1
    return runs[0]


def test_unknown_names_exit_2(tmp_path, capsys):
    assert main(["compare", "--backend", "sim", "--kernels", "gate,bogus", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown kernel 'bogus'" in err and "grouped_gemm" in err and "Traceback" not in err
    assert main(["compare", "--backend", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err


def test_all_ok_exits_0(tmp_path, capsys, fake):
    assert main(["compare", "--kernels", "gate", "--seed", "7", "--out", str(tmp_path), "--no-static"]) == 0
    cap = capsys.readouterr()
    assert "seed 7" in cap.err and "[1/2] gate/cuda/tiny/balanced" in cap.err
    assert "dashboard:" in cap.out and (_only_run(tmp_path) / "dashboard.html").is_file()
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert doc["status"] == "complete" and doc["settings"]["seed"] == 7 and doc["settings"]["presets"] == ["tiny"]
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok"] and doc["rows"][0]["static"] is None


def test_failed_path_exits_1_and_lists_it(tmp_path, capsys, fake):
    assert main(["compare", "--kernels", "gate,align", "--out", str(tmp_path), "--no-static", "--no-dashboard"]) == 1
    err = capsys.readouterr().err
    assert "FAILED (1 rows)" in err and "align/ptx/tiny/balanced: failed" in err
    assert "missing (1 rows" in err and "cuda has no align yet" in err


def test_resume_via_cli(tmp_path, capsys, fake, monkeypatch):
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--preset", "tiny",
                 "--skew", "balanced,imbalanced", "--no-dashboard"]) == 0
    run_dir = _only_run(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    doc["rows"] = doc["rows"][:1]  # pretend the run was interrupted after its first row
    doc["status"] = "interrupted"
    (run_dir / "run.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard"]) == 0
    err = capsys.readouterr().err
    assert "resuming" in err and "done in the resumed run, skipped" in err
    doc = json.loads((run_dir / "run.json").read_text())
    assert len(doc["rows"]) == 4 and doc["status"] == "complete" and len(doc["resumed_utc"]) == 1


@pytest.mark.sim
@pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / load_ptx not landed yet")
def test_real_sim_compare_reduced_kernels(tmp_path, capsys):
    """The acceptance path on a reduced kernel set: each present path runs on ptxsim and is verified."""
    from harness.implementations import implementation_table

    kernels = ["gate"]  # one kernel, both paths: the whole-preset run takes about a minute (see the report)
    present = {impl: set(implementation_table(impl)[0]) for impl in ("cuda", "ptx")}
    if not any(k in present[i] for k in kernels for i in present):
        pytest.skip("neither path implements gate yet")
    rc = main(["compare", "--backend", "sim", "--kernels", ",".join(kernels), "--out", str(tmp_path)])
    cap = capsys.readouterr()
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert len(doc["rows"]) == 2 * len(kernels)
    for row in doc["rows"]:
        if row["kernel"] not in present[row["impl"]]:
            assert row["status"] == "missing" and row["reason"]
            continue
        assert row["status"] == "ok", (row["key"], row.get("reason") or row.get("correctness"), cap.err[-3000:])
        assert row["sim_counters"]["total"]["smsp__inst_executed.sum"] > 0
        assert row["static"]["totals"]["registers_max"] >= 1 and row["static"]["totals"]["sass_instructions"] > 0
        assert row["timing"]["basis"] == "modelled" and row["timing"]["modelled_us"] > 0
        assert row["throughput"]["achieved_gbps"] > 0
    both = [k for k in kernels if k in present["cuda"] and k in present["ptx"]]
    assert sorted(v["key"].split("/")[0] for v in doc["verdicts"] if v["verdict"]) == sorted(both)
    assert rc == 0
