"""Issue 31 item 8: save(overwrite=True) leaves nothing of the old run; a folder that cannot be made says why;
GPU timing settings are not silently ignored on sim; `baseline=` chooses the pairs and the headline, titled with the
user's names."""
import warnings
from pathlib import Path

import numpy as np
import pytest

import ptxmoe
from harness.dashboard.data import headline_pair, pairs_present, verdict_records
from harness.timing.gpu import GpuTimingSettings

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
SLOW_PTX = SAXPY_PTX.replace("fma.rn.f32 %f4, %f1, %f2, %f3;",
                             "fma.rn.f32 %f4, %f1, %f2, %f3;\n    sqrt.rn.f32 %f1, %f1;\n    sqrt.rn.f32 %f1, %f1;")


def make_inputs(rng, n=256):
    return {"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}


@pytest.fixture(scope="module")
def three():
    # named like the built-in paths on purpose: a user's "cpp" is not the project's CUDA C++ path
    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "cpp": ptxmoe.PtxKernel(SLOW_PTX, "saxpy", grid=1, block=256),
               "mine": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    return ptxmoe.compare(kernels, make_inputs, backend="sim", static=False, baseline="mine")


def test_save_overwrite_removes_what_was_made_from_the_old_run(three, tmp_path):
    run = tmp_path / "run"
    three.save(run)
    for stale in ("dashboard.html", "dashboard-vs-other.html", "run.csv", "run.parquet"):
        (run / stale).write_text("old run")
    (run / "notes.txt").write_text("mine")
    three.save(run, overwrite=True)
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt", "run.json"]


@pytest.mark.parametrize("where, says", [("/proc/ptxmoe-run", "/proc is a proc pseudo-filesystem"),
                                         ("/proc/self/ptxmoe-run", "on /proc, a proc pseudo-filesystem")])
def test_saving_under_proc_names_the_real_problem(three, where, says):
    with pytest.raises(ptxmoe.PtxmoeError, match=says) as info:
        three.save(where)
    assert "No such file" not in str(info.value)


def test_saving_under_a_file_names_it(three, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ptxmoe.PtxmoeError, match="file is a file, not a folder"):
        three.save(tmp_path / "file" / "run")


def test_gpu_timing_settings_on_sim_are_refused_or_warned_about():
    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    with pytest.raises(ptxmoe.InputError, match="timing = .* is for the gpu backend"):
        ptxmoe.compare(kernels, make_inputs, backend="sim", timing=GpuTimingSettings())
    from harness.backends.select import select_backend

    if select_backend("auto").name != "sim":
        pytest.skip("a GPU is visible: auto picks gpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ptxmoe.compare(kernels, make_inputs, backend="auto", timing=GpuTimingSettings(), static=False)
    assert any("ignored" in str(w.message) for w in caught)


def test_baseline_chooses_the_pairs_and_the_headline_named_as_the_user_named_them(three):
    pairs = [(v.candidate, v.baseline) for v in three.verdicts]
    assert pairs == [("ptx", "mine"), ("cpp", "mine")]
    assert three.doc["settings"]["baseline"] == "mine"
    sweep = three.sweep
    assert [p.title for p in pairs_present(sweep)] == ["ptx vs mine", "cpp vs mine"]
    assert headline_pair(sweep).name == "ptx-vs-mine"
    assert all(not r["headline"] and "CUDA C++" not in r["title"] for r in verdict_records(sweep))
    with pytest.raises(ptxmoe.InputError, match="baseline = 'nope'"):
        ptxmoe.compare({"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}, make_inputs,
                       backend="sim", baseline="nope")


def test_without_a_baseline_every_pair_is_judged_and_titled_by_the_users_names():
    kernels = {"cpp": ptxmoe.PtxKernel(SLOW_PTX, "saxpy", grid=1, block=256),
               "ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    result = ptxmoe.compare(kernels, make_inputs, backend="sim", static=False)
    assert [p.title for p in pairs_present(result.sweep)] == ["ptx vs cpp"]
