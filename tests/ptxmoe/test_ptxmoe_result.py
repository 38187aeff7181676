"""ptxmoe.load / Result on real run folders (ptxmoe compare runs with several kernels, skews; modelled and measured)."""
from pathlib import Path

import pytest

import ptxmoe
from harness.run_records import Row

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_load_a_cli_run_and_pick_rows_by_kernel_and_skew():
    result = ptxmoe.load(RUNS / "sim-real")
    assert result.backend == "sim" and result.basis == "modelled"
    # recorded before the layer had variants: its layer rows read as the bf16 layer (harness.run_schema)
    assert result.kernels == ["gate", "align", "grouped_gemm[up]", "grouped_gemm[down]", "layer[bf16]"]
    assert result.cases == ["tiny"] and result.skews == ["balanced", "imbalanced"] and result.impls == ["numba", "ptx"]
    row = next(r for r in result.doc["rows"] if r["key"] == "grouped_gemm[down]/ptx/tiny/imbalanced")
    assert result.row("ptx", kernel="grouped_gemm[down]", skew="imbalanced").to_json() == Row.from_json(row).to_json()
    assert result.time_us("ptx", kernel="grouped_gemm[down]", skew="imbalanced") == row["timing"]["modelled_us"]
    assert result.counters("ptx", kernel="grouped_gemm[down]", skew="imbalanced") == row["sim_counters"]["total"]
    with pytest.raises(ptxmoe.InputError, match=r"10 rows match impl='ptx', case='tiny'.*kernels gate, align"):
        result.row("ptx")
    with pytest.raises(ptxmoe.InputError, match=r"case 'small' not in this result; it has tiny"):
        result.row("ptx", "small", kernel="gate", skew="balanced")


def test_verdicts_of_a_cli_run_read_as_ptx_over_numba():
    result = ptxmoe.load(RUNS / "gpu-measured")
    doc_v = next(v for v in result.doc["verdicts"] if v["key"] == "swiglu/tiny/imbalanced/ptx-vs-numba")
    v = result.verdict(kernel="swiglu", skew="imbalanced")
    assert (v.candidate, v.baseline, v.basis) == ("ptx", "numba", "measured")
    assert (v.speedup, v.ci_lo, v.ci_hi, v.verdict) == (doc_v["speedup"], doc_v["ci_lo"], doc_v["ci_hi"],
                                                       doc_v["verdict"])
    assert str(v).startswith("swiglu: ptx vs numba [tiny/imbalanced]: ")
    text = repr(result)
    assert "on gpu: 20 rows, times measured, median" in text and text.count("\n") == 20 + 10


def test_load_refuses_a_folder_without_a_run(tmp_path):
    from harness.results import ResultsError

    with pytest.raises(ResultsError, match="run.json not found"):
        ptxmoe.load(tmp_path)
