"""A laddered kernel in the sweep (issue #16): a row per rung in the cell, verdicts per rung, resume, plan order."""
import io
import sys
import types

import pytest

from contract.registry import Implementation
from harness import cell, runner
from harness.implementations import Ladder, Pair, impl_name, split_slot
from harness.timing.stats import verdict_of
from tests.harness.test_runner import FakeBackend, _run_file, _settings, fake_run

RUNG_NAMES = ("plain", "async copies", "tensor cores")  # a fake three-rung ladder of the gate kernel


def _package(name: str, kernels: dict, ladders: dict | None = None):
    module = types.ModuleType(f"fake_{name}_impl")
    module.IMPLEMENTATION = Implementation(name=name, language=f"fake {name}", kernels=kernels, ladders=ladders or {})
    return module


def _laddered_gate(calls: list, broken_rung: int | None = None):
    """ptx's gate as a three-rung ladder: rung n launches 4 - n nops (each lower rung slower), top rung by default."""
    def run(backend, args, preset, rung=None, **params):
        number = 3 if rung is None else rung
        calls.append((number, {n: backend.mem[args[n].addr].tobytes() for n in ("logits", "bias")}))
        if number == broken_rung:
            raise RuntimeError(f"rung {number} broke")
        stages = tuple(f"gate_r{number}_{i}" for i in range(4 - number))
        return fake_run("gate", stages=stages)(backend, args, preset, **params)

    return run


@pytest.fixture
def three_paths(monkeypatch):
    """numba (3 launches), cpp (2) and a ptx whose gate is a three-rung ladder; returns the ptx calls."""
    calls: list = []
    packages = {"cuda_impl": _package("numba", {"gate": fake_run("gate", stages=("a", "b", "c"))}),
                "cpp_impl": _package("cpp", {"gate": fake_run("gate", stages=("a", "b"))}),
                "ptx_impl": _package("ptx", {"gate": _laddered_gate(calls)}, {"gate": RUNG_NAMES})}
    for name, module in packages.items():
        monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_slots_and_names_of_a_ladder():
    ladder = Ladder("ptx", RUNG_NAMES)
    assert ladder.slots() == ("ptx.r1", "ptx.r2", "ptx")  # the plain name is the top rung
    assert split_slot("ptx.r2") == ("ptx", 2) and split_slot("ptx") == ("ptx", None)
    assert split_slot("cpp") == ("cpp", None) and split_slot("x.r0") == ("x.r0", None)
    assert ladder.rung("ptx") == {"number": 3, "name": "tensor cores", "of": 3, "top": True}
    assert ladder.rung("cpp") is None and impl_name("ptx.r2") == "PTX rung 2"
    assert Pair("ptx.r1", "cpp").title == "PTX rung 1 vs CUDA C++"
    # every rung against the one below and the other paths; the top rung's PAIRS verdicts are not repeated
    names = [p.name for p in ladder.pairs(("numba", "cpp", "ptx", "ptx.r1", "ptx.r2"))]
    assert names == ["ptx.r1-vs-cpp", "ptx.r1-vs-numba", "ptx.r2-vs-ptx.r1", "ptx.r2-vs-cpp", "ptx.r2-vs-numba",
                     "ptx-vs-ptx.r2"]
    assert [p.name for p in ladder.pairs(("ptx", "ptx.r1", "ptx.r2"))] == ["ptx.r2-vs-ptx.r1", "ptx-vs-ptx.r2"]


def test_a_row_per_rung_with_the_same_inputs_and_verdicts_per_rung(tmp_path, three_paths):
    settings = _settings(["gate"], impls=("numba", "cpp", "ptx"))  # the three faked packages
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    keys = [r["key"] for r in run_file.doc["rows"]]
    assert keys == ["gate/numba/tiny/balanced", "gate/cpp/tiny/balanced", "gate/ptx/tiny/balanced",
                    "gate/ptx.r1/tiny/balanced", "gate/ptx.r2/tiny/balanced"]
    rows = {k.split("/")[1]: run_file.row(k) for k in keys}
    assert all(r["status"] == "ok" for r in rows.values())
    assert [n for n, _ in three_paths] == [3, 1, 2]  # the plain ptx row is the top rung; lower rungs after it
    assert three_paths[0][1] == three_paths[1][1] == three_paths[2][1]  # one draw of inputs for every rung
    assert len({r["seed"] for r in rows.values()}) == 1
    assert {r["impl"] for k, r in rows.items() if k.startswith("ptx")} == {"ptx"}
    assert rows["ptx.r1"]["rung"] == {"number": 1, "name": "plain", "of": 3, "top": False}
    assert rows["ptx"]["rung"] == {"number": 3, "name": "tensor cores", "of": 3, "top": True}
    assert "rung" not in rows["cpp"] and "rung" not in rows["numba"]
    assert rows["ptx.r1"]["launch_stages"] == ["gate", "gate", "gate"]
    us = {slot: r["timing"]["modelled_us"] for slot, r in rows.items()}
    assert us["ptx.r1"] > us["ptx.r2"] > us["ptx"]
    verdicts = {v["key"].rsplit("/", 1)[1]: v for v in run_file.doc["verdicts"]}
    assert len(verdicts) == len(run_file.doc["verdicts"]) == 9  # unique keys: 3 PAIRS + 6 rung verdicts
    for name, v in verdicts.items():
        impl, base = name.split("-vs-")
        assert (v["impl"], v["baseline"]) == (impl, base)
        assert v["speedup"] == pytest.approx(us[base] / us[impl]), name
        assert v["headline"] == (name == "ptx-vs-cpp")
    # each rung faster than the one below (fewer launches); the calls are the model's 95% prediction intervals'
    assert verdicts["ptx.r2-vs-ptx.r1"]["speedup"] > 1 and verdicts["ptx-vs-ptx.r2"]["speedup"] > 1
    assert verdicts["ptx.r1-vs-cpp"]["speedup"] < 1
    assert all(v["verdict"] == verdict_of(v["ci_lo"], v["ci_hi"]) for v in verdicts.values())
    assert verdicts["ptx-vs-numba"]["verdict"] == "FASTER"       # 1 launch against 3: beyond the model's error
    # rung 1 launches what numba launches (3 nops, the same PTX and grids): the same time, SAME by identity
    assert (verdicts["ptx.r1-vs-numba"]["verdict"], verdicts["ptx.r1-vs-numba"]["reason"]) == (
        "SAME", "the same PTX on both sides")
    top_vs_below = verdicts["ptx-vs-ptx.r2"]
    assert top_vs_below["rung"]["number"] == 3 and top_vs_below["baseline_rung"]["number"] == 2
    assert verdicts["ptx-vs-cpp"]["rung"]["top"] and "baseline_rung" not in verdicts["ptx-vs-cpp"]


def test_rungs_run_only_when_their_implementation_is_asked_for(tmp_path, three_paths):
    settings = _settings(["gate"], impls=("numba", "cpp"))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    assert [r["key"] for r in run_file.doc["rows"]] == ["gate/numba/tiny/balanced", "gate/cpp/tiny/balanced"]
    assert not three_paths and [v["pair"] for v in run_file.doc["verdicts"]] == ["cpp-vs-numba"]


def test_resume_runs_only_the_missing_rung_and_a_broken_rung_is_its_own_error_row(tmp_path, three_paths,
                                                                                  monkeypatch):
    settings = _settings(["gate"], impls=("cpp", "ptx"))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    run_file.doc["rows"] = [r for r in run_file.doc["rows"] if r["key"] != "gate/ptx.r1/tiny/balanced"]
    three_paths.clear()
    ptx = sys.modules["ptx_impl"]
    broken = _package("ptx", {"gate": _laddered_gate(three_paths, broken_rung=1)}, dict(ptx.IMPLEMENTATION.ladders))
    monkeypatch.setitem(sys.modules, "ptx_impl", broken)
    summary = runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    assert [n for n, _ in three_paths] == [1] and summary["skipped"] == 3
    assert sorted(r["key"].split("/")[1] for r in run_file.doc["rows"]) == ["cpp", "ptx", "ptx.r1", "ptx.r2"]
    broken = run_file.row("gate/ptx.r1/tiny/balanced")
    assert broken["status"] == "error" and "rung 1 broke" in broken["reason"] and broken["rung"]["number"] == 1
    verdicts = {v["pair"]: v for v in run_file.doc["verdicts"]}
    assert verdicts["ptx.r2-vs-ptx.r1"]["verdict"] is None
    assert verdicts["ptx.r2-vs-ptx.r1"]["reason"].startswith("no verdict: ptx.r1 error (RuntimeError: rung 1 broke")
    again = verdicts["ptx-vs-ptx.r2"]
    assert again["speedup"] > 1 and again["verdict"] == verdict_of(again["ci_lo"], again["ci_hi"])


def test_find_run_passes_the_rung_of_a_slot(three_paths):
    run, why = cell.find_run("ptx.r2", "gate")
    assert why == "" and run.keywords == {"rung": 2}
    run, why = cell.find_run("cpp.r1", "align")
    assert run is None and why.startswith("not implemented in cpp")
