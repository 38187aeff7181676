"""`ptxmoe compare` end to end: option handling, exit codes, missing paths, resume; a real sim run when ptxsim can."""
import json
from pathlib import Path

import pytest

from harness import cell
from harness.cli import main
from tests.harness.test_runner import FakeBackend, fake_run


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


@pytest.fixture
def fake(monkeypatch):
    """compare on the fake backend: gate correct on numba and ptx, align wrong on ptx and missing on numba."""
    import harness.backends.select as select

    monkeypatch.setattr(select, "select_backend", lambda name: FakeBackend())
    monkeypatch.setattr(select, "resolve_backend_name", lambda name: "sim")
    table = {("numba", "gate"): fake_run("gate"), ("ptx", "gate"): fake_run("gate"),
             ("ptx", "align"): fake_run("align", wrong=True)}
    monkeypatch.setattr(cell, "find_run", lambda impl, k: (table.get((impl, k)), "" if (impl, k) in table
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
    assert main(["compare", "--kernels", "gate", "--seed", "7", "--out", str(tmp_path), "--no-static",
                 "--impls", "ptx,numba"]) == 0
    cap = capsys.readouterr()
    assert "seed 7" in cap.err and "[1/2] gate/numba/tiny/balanced" in cap.err
    assert "gate/tiny/balanced/ptx-vs-numba: PTX vs Numba CUDA" in cap.out
    assert "dashboard:" in cap.out and (_only_run(tmp_path) / "dashboard.html").is_file()
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert doc["status"] == "complete" and doc["settings"]["seed"] == 7 and doc["settings"]["presets"] == ["tiny"]
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok"] and doc["rows"][0]["static"] is None


def test_failed_path_exits_1_and_lists_it(tmp_path, capsys, fake):
    assert main(["compare", "--kernels", "gate,align", "--out", str(tmp_path), "--no-static", "--no-dashboard",
                 "--impls", "numba,ptx"]) == 1
    err = capsys.readouterr().err
    assert "FAILED (1 rows)" in err and "align/ptx/tiny/balanced: failed" in err
    assert "missing (1 rows" in err and "numba has no align yet" in err


def test_resume_via_cli(tmp_path, capsys, fake, monkeypatch):
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--preset", "tiny",
                 "--skew", "balanced,imbalanced", "--no-dashboard", "--impls", "numba,ptx"]) == 0
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


def test_impls_option(tmp_path, capsys, fake):
    """Default: every implementation, in order numba, cpp, ptx; the fake table has no cpp kernels: missing rows."""
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--no-dashboard"]) == 0
    cap = capsys.readouterr()
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert doc["settings"]["impls"] == ["numba", "cpp", "ptx"]
    assert [(r["impl"], r["status"]) for r in doc["rows"]] == [("numba", "ok"), ("cpp", "missing"), ("ptx", "ok")]
    assert "gate/cpp/tiny/balanced: cpp has no gate yet" in cap.err and "[2/3] gate/cpp/tiny/balanced" in cap.err
    assert [v["pair"] for v in doc["verdicts"]] == ["ptx-vs-cpp", "ptx-vs-numba", "cpp-vs-numba"]
    assert [v["verdict"] is None for v in doc["verdicts"]] == [True, False, True]
    assert main(["compare", "--impls", "ptx,nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown implementation 'nope'" in err and "cpp, cutlass, numba, ptx" in err and "Traceback" not in err


@pytest.mark.sim
@pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / load_ptx not landed yet")
def test_real_sim_compare_reduced_kernels(tmp_path, capsys):
    """The acceptance path on a reduced kernel set: a row per implementation (each present kernel runs on ptxsim
    and is verified, an absent one is a "not implemented in <impl>" row) and a verdict per pair."""
    from harness.implementations import IMPL_ORDER, implementation_table, pairs_of

    kernels = ["gate"]  # one kernel, every path: the whole-preset run takes minutes
    present = {impl: set(implementation_table(impl)[0]) for impl in IMPL_ORDER}
    if not any(k in present[i] for k in kernels for i in present):
        pytest.skip("no path implements gate yet")
    rc = main(["compare", "--backend", "sim", "--kernels", ",".join(kernels), "--impls", ",".join(IMPL_ORDER),
               "--out", str(tmp_path)])  # named: by default an implementation without the kernel has no row
    cap = capsys.readouterr()
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert [r["impl"] for r in doc["rows"]] == list(IMPL_ORDER) * len(kernels)
    for row in doc["rows"]:
        if row["kernel"] not in present[row["impl"]]:
            assert row["status"] == "missing" and row["reason"].startswith(f"not implemented in {row['impl']}")
            continue
        assert row["status"] == "ok", (row["key"], row.get("reason") or row.get("correctness"), cap.err[-3000:])
        assert row["sim_counters"]["total"]["smsp__inst_executed.sum"] > 0
        assert row["static"]["totals"]["registers_max"] >= 1 and row["static"]["totals"]["sass_instructions"] > 0
        assert row["timing"]["basis"] == "modelled" and row["timing"]["modelled_us"] > 0
        assert row["throughput"]["achieved_gbps"] > 0
    assert [v["pair"] for v in doc["verdicts"]] == [p.name for p in pairs_of(IMPL_ORDER)] * len(kernels)
    for v in doc["verdicts"]:
        both = v["kernel"] in present[v["impl"]] and v["kernel"] in present[v["baseline"]]
        assert (v["verdict"] is not None) == both, v
    assert rc == 0


def test_a_laddered_kernel_prints_and_saves_a_row_and_verdicts_per_rung(tmp_path, capsys, monkeypatch):
    """compare over an implementation whose gate is a three-rung ladder (tests/harness/test_runner_ladder.py):
    a row per rung, the rung verdicts printed by name, the dashboard built with its ladder section, exit 0."""
    import sys

    import harness.backends.select as select
    from tests.harness.test_runner_ladder import RUNG_NAMES, _laddered_gate, _package

    monkeypatch.setattr(select, "select_backend", lambda name: FakeBackend())
    monkeypatch.setattr(select, "resolve_backend_name", lambda name: "sim")
    monkeypatch.setitem(sys.modules, "cpp_impl", _package("cpp", {"gate": fake_run("gate", stages=("a", "b"))}))
    monkeypatch.setitem(sys.modules, "ptx_impl", _package("ptx", {"gate": _laddered_gate([])}, {"gate": RUNG_NAMES}))
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--impls", "cpp,ptx"]) == 0
    out = capsys.readouterr().out
    assert "gate/tiny/balanced/ptx.r1-vs-cpp: PTX rung 1 vs CUDA C++" in out
    assert "gate/tiny/balanced/ptx-vs-ptx.r2: PTX vs PTX rung 2" in out
    run_dir = _only_run(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    assert [r["key"].split("/")[1] for r in doc["rows"]] == ["cpp", "ptx", "ptx.r1", "ptx.r2"]
    assert all(r["status"] == "ok" for r in doc["rows"])
    assert '<section id="ladder">' in (run_dir / "dashboard.html").read_text()
