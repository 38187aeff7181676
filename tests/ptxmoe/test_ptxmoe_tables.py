"""Issue 31 item 5 (sim half): a user's run's counters are side by side under the user's implementation names, as
ncu's metrics are (tests/harness/fakegpu/test_profile_user_script.py), with ratios of the user's pairs."""
from pathlib import Path

import numpy as np

import ptxmoe
from harness.dashboard import data
from harness.dashboard.sections import nsight_section, sim_section

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()


def make_inputs(rng, n=256):
    return {"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}


def test_counters_side_by_side_under_the_users_names():
    kernels = {"mine": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "cpp": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    result = ptxmoe.compare(kernels, make_inputs, backend="sim", static=False)
    records = data.sim_counter_records(result.sweep)
    dram = next(r for r in records if r["counter"] == "DRAM bytes read")
    assert dram["mine"] is not None and dram["mine"] == dram["cpp"] and dram["ratios"] == {"cpp-vs-mine": 1.0}
    html = sim_section(data.Run(Path("."), result.doc, records=result.sweep), {})
    assert "<th>mine</th><th>cpp</th><th>cpp / mine</th>" in html and "CUDA C++" not in html


def test_a_sim_runs_nsight_table_holds_ptxsims_counters_under_ncu_names():
    kernels = {"mine": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "theirs": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    result = ptxmoe.compare(kernels, make_inputs, backend="sim", static=False)
    records = {r["metric"]: r for r in data.sim_ncu_records(result.sweep)}
    total = result.counters("mine")
    assert records["dram__bytes_read.sum"]["mine"] == total["dram__bytes_read.sum"] > 0
    assert records["dram__bytes_read.sum"]["ratios"] == {"theirs-vs-mine": 1.0}
    html = nsight_section(data.Run(Path("."), result.doc, records=result.sweep))
    assert "<th>mine</th><th>theirs</th><th>theirs / mine</th><th>source</th>" in html
    assert "dram__bytes_read.sum" in html and "ptxsim (modelled)" in html
