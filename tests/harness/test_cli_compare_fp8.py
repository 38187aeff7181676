"""`ptxmoe compare --backend sim --preset tiny --kernels grouped_gemm_fp8` end to end (issue #16's acceptance): a row
per path, variant and PTX rung, all passing their checks, the three pairwise verdicts and the verdicts per rung."""
import dataclasses
import json

import pytest

from harness.cli import main
from harness.implementations import CPP_SIDE, PAIRS, Ladder, impl_name
from harness.timing.stats import VERDICTS, verdict_of

pytestmark = pytest.mark.sim


def _run(tmp_path, capsys, *extra) -> tuple[list[dict], list[dict], str]:
    argv = ["compare", "--backend", "sim", "--preset", "tiny", "--kernels", "grouped_gemm_fp8", "--out", str(tmp_path),
            "--no-static", "--no-dashboard", "--quick-timing", "--seed", "7", *extra]
    assert main(argv) == 0, capsys.readouterr().err
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run_dir / "run.json").read_text())
    return doc["rows"], doc["verdicts"], capsys.readouterr().out


def _expect(rows: list[dict], verdicts: list[dict], ladder: Ladder, impls: tuple[str, ...]) -> None:
    slots = [*[i for i in impls if i != "ptx"], *ladder.slots()]
    assert sorted(r["key"] for r in rows) == sorted(f"grouped_gemm_fp8[{v}]/{s}/tiny/balanced"
                                                    for v in ("up", "down") for s in slots)
    for row in rows:
        assert row["status"] == "ok" and row["correctness"]["ok"], row["key"]
        assert row["correctness"]["errors"]["worst_block_normwise_rel"] < 1e-2
        # one launch (cutlass's too: CUTLASS's grouped kernel, docs/cutlass.md), and the ptx ladder's rungs 7 and up
        # launch their a_scale transpose first, a stage of its own in the row's time
        first = ["scale_transpose"] if (row.get("rung") or {}).get("number", 0) >= 7 else []
        assert row["launch_stages"] == [*first, "grouped_gemm_fp8"], row["key"]
        assert row["throughput"]["peak_flops_kind"] == "fp8_dense"
        assert row["gemm_work"]["useful_flops"] == row["flops"] < row["gemm_work"]["padded_flops"]
        if row["impl"] == "ptx":
            assert row["rung"]["name"] == ladder.names[row["rung"]["number"] - 1] and row["rung"]["of"] == ladder.top
    pairs = [p.name for p in PAIRS if p.impl in impls and p.baseline in impls] + [p.name for p in ladder.pairs(slots)]
    for variant in ("up", "down"):
        mine = {v["pair"]: v for v in verdicts if v["variant"] == variant}
        assert list(mine) == pairs and len(mine) == len([v for v in verdicts if v["variant"] == variant])
        assert all(v["verdict"] in VERDICTS and v["verdict"] == verdict_of(v["ci_lo"], v["ci_hi"])
                   or v["verdict"] == "NOT_MODELLED" for v in mine.values()), mine
        assert all(v["interval"] == "prediction" and v["confidence"] == 0.95 for v in mine.values()), mine


def test_compare_writes_a_passing_row_per_path_and_rung(tmp_path, capsys):
    from harness.dashboard.data import gemm_work_records
    from ptx_impl.grouped_gemm_fp8 import rung_names

    rows, verdicts, out = _run(tmp_path, capsys)
    _expect(rows, verdicts, Ladder("ptx", rung_names()), ("numba", "cpp", "cutlass", "triton", "ptx"))
    work = gemm_work_records({"rows": rows})  # the dashboard's GEMM-work section has the FP8 cells
    assert [w["label"] for w in work] == ["grouped_gemm_fp8[up]", "grouped_gemm_fp8[down]"]
    assert "grouped_gemm_fp8[up]/tiny/balanced/ptx-vs-cpp" in out
    # the answer first: PTX's top rung against the fastest of CUDA C++, CUTLASS and Triton, per cell, with its 95%
    # interval
    lines = out.splitlines()
    assert lines[0].startswith("ANSWER: hand PTX against the best C++ present"), out[:400]
    top = Ladder("ptx", rung_names()).top
    for variant in ("up", "down"):
        row = next(x for x in lines[2:4] if x.startswith(f"grouped_gemm_fp8[{variant}] tiny/balanced"))
        by_impl = {r["impl"]: r["timing"]["modelled_us"] for r in rows     # plain rows and PTX's top rung
                   if r["variant"] == variant and (r.get("rung") or {"top": True})["top"]}
        best = min(CPP_SIDE, key=lambda impl: (by_impl[impl], CPP_SIDE.index(impl)))
        assert f"PTX (rung {top} of {top}) / {impl_name(best)}" in row and "95% prediction, modelled v1" in row, row
        assert f"{by_impl[best] / by_impl['ptx']:.2f}x [" in row, row
    assert out.index("ANSWER") < out.index("grouped_gemm_fp8[up]/tiny/balanced/ptx-vs-cpp")
    assert "grouped_gemm_fp8[up]/tiny/balanced/ptx-vs-triton" in out and "triton-vs-cpp" in out
    assert "grouped_gemm_fp8[up]/tiny/balanced/ptx-vs-cutlass" in out and "cutlass-vs-cpp" in out


def test_a_lower_rung_runs_the_real_ptx_ladder_with_its_rung(tmp_path, capsys, monkeypatch):
    """The real ptx_impl dispatch on a two-rung ladder (rung 1's kernel twice): the lower rung's row runs
    `run(rung=1)` on the same inputs and gets its verdicts."""
    import ptx_impl
    from ptx_impl import grouped_gemm_fp8 as fp8

    calls = []
    real_run = fp8.run

    def run(backend, args, preset, rung=None, **params):
        calls.append(rung)
        return real_run(backend, args, preset, rung=1, **params)

    # a two-rung ladder whatever the real one holds: rung 1 and rung 1's kernel again as the top rung
    monkeypatch.setattr(fp8, "RUNGS", (fp8.RUNGS[0], fp8.Rung(2, "rung 1 again", fp8.RUNGS[0].module)))
    kernels = {**ptx_impl.IMPLEMENTATION.kernels, "grouped_gemm_fp8": run}
    monkeypatch.setattr(ptx_impl, "IMPLEMENTATION", dataclasses.replace(
        ptx_impl.IMPLEMENTATION, kernels=kernels, ladders={"grouped_gemm_fp8": fp8.rung_names()}))
    rows, verdicts, _ = _run(tmp_path, capsys, "--impls", "cpp,ptx")
    assert calls == [None, 1, None, 1]  # per variant: the plain (top) row, then rung 1
    _expect(rows, verdicts, Ladder("ptx", fp8.rung_names()), ("cpp", "ptx"))
    below = next(v for v in verdicts if v["pair"] == "ptx-vs-ptx.r1" and v["variant"] == "up")
    # the same kernel twice, run --no-static (no PTX digests to show it is the same code): the same modelled time
    # and counters, which the model cannot tell apart: NOT_MODELLED, not a SAME the model never measured
    assert (below["verdict"], below["speedup"]) == ("NOT_MODELLED", 1.0) and "does not represent" in below["reason"]
