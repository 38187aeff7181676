"""Every script in examples/ runs on the sim backend (in-process, as `python examples/<name>.py` would)."""
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SIM_RUN = ROOT / "tests" / "fixtures" / "runs" / "sim-real"


def run_example(name: str, argv: list[str], monkeypatch) -> dict:
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / name), *argv])
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def test_every_example_is_covered_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == ["analyse_run.py", "reduction_three_ways.py",
                                                             "saxpy_numba_vs_ptx.py", "sweep_sizes.py"]


@pytest.mark.sim
def test_sweep_example_writes_its_plot(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    run_example("sweep_sizes.py", ["sim"], monkeypatch)
    out = capsys.readouterr().out
    table = [line.split() for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [(int(r[0]), r[1], r[2]) for r in table] == [(n, impl, "ok") for n in (1024, 4096, 16384, 65536)
                                                        for impl in ("numba", "ptx")]
    page = (tmp_path / "profiles" / "saxpy-sweep" / "dashboard.html").read_text()
    assert "Sweep over sizes" in page and '"fig-sweep-time"' in page and '"fig-sweep-gbps"' in page


@pytest.mark.sim
def test_saxpy_example(monkeypatch, capsys):
    run_example("saxpy_numba_vs_ptx.py", ["sim"], monkeypatch)
    out = capsys.readouterr().out
    assert "saxpy [default] numba  ok" in out and "saxpy [default] ptx    ok" in out
    assert "ptx vs numba [default]:" in out and "(modelled v1; 95% prediction, fitted on published paired rows)" in out


@pytest.mark.sim
def test_reduction_example_three_languages_all_correct(monkeypatch, capsys):
    module = run_example("reduction_three_ways.py", [], monkeypatch)
    out = capsys.readouterr().out
    for impl in ("numba", "cpp", "ptx"):
        assert f"reduce_sum [n=16k] {impl.ljust(5)}  ok" in out
        assert f"{impl}: " in out and " registers, " in out
    assert out.count("[n=16k]: ") == 3  # cpp vs numba, ptx vs numba, ptx vs cpp
    assert module["BLOCKS"] * module["THREADS"] < 1 << 14  # the grid-stride loop is exercised


def test_reduction_check_rejects_a_wrong_sum(monkeypatch):
    import numpy as np

    module = runpy.run_path(str(EXAMPLES / "reduction_three_ways.py"))
    inputs = module["make_inputs"](np.random.default_rng(1), n=1000)
    right = np.array([inputs["x"].astype(np.float64).sum()], np.float32)
    assert module["check"]({"out": right}, inputs)[0]
    assert not module["check"]({"out": right + 1.0}, inputs)[0]


def test_analyse_example_on_a_run_folder(monkeypatch, capsys):
    run_example("analyse_run.py", [str(SIM_RUN)], monkeypatch)
    out = capsys.readouterr().out
    assert "20 rows, backend sim, times modelled" in out
    assert "speedup_vs_numba" in out and "registers_max" in out
    assert "grouped_gemm[up]" in out
