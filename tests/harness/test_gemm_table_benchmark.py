"""benchmarks/gemm_table.py: DeepGEMM's published table beside the modelled FP8 GEMMs (issue 28 item 6)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from contract.presets import DEEPGEMM_TABLE

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("gemm_table", REPO / "benchmarks" / "gemm_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_published_figures_cover_exactly_the_deepgemm_table():
    from contract.presets import DEEPGEMM_TABLE

    bench = _bench()
    assert tuple(bench.PUBLISHED) == DEEPGEMM_TABLE
    assert bench.PUBLISHED["contiguous-4x8192x4096x7168"] == (1346, 434, 1.3)  # README @55ab91f
    assert bench.PUBLISHED["masked-4x256x7168x2048"] == (815, 2047, 1.2)


def _row(shape, impl, tflops, rung=None, of=9, variant="up", status="ok", ok=True, sampled=True):
    """A run.json grouped_gemm_fp8 row as the compare writes it (the fields the benchmark reads)."""
    flops = 2.0e12
    time_us = flops / (tflops * 1e6) if tflops else None
    return {"kernel": "grouped_gemm_fp8", "variant": variant, "preset": shape, "impl": impl, "status": status,
            "rung": {"number": rung, "name": "x", "of": of, "top": rung == of} if rung else None,
            "correctness": {"ok": ok}, "flops": flops, "elapsed_s": 12.0,
            "throughput": {"flops": flops, "achieved_tflops": tflops, "achieved_gbps": 300.0 if tflops else None},
            "timing": {"device": "H800 SXM", "modelled_us": time_us,
                       "interval_us": [time_us / 1.5, time_us * 1.5] if time_us else None},
            "sampling": {"sampled": sampled, "simulated_fraction": 0.0156 if sampled else 1.0}}


CONTIGUOUS = [s for s in DEEPGEMM_TABLE if s.startswith("contiguous-")]


def test_render_sets_the_implied_cutlass_figure_the_interval_and_flags_a_failed_check():
    bench = _bench()
    doc = {"settings": {"timing_model": "v1"},
           "rows": [_row("contiguous-4x8192x4096x7168", "ptx", 700.0, rung=9),
                    _row("contiguous-4x8192x4096x7168", "cpp", None, status="failed", ok=False, sampled=False)]}
    text = bench.render(bench.table_rows(doc))
    assert "1035" in text  # 1346 TFLOPS / 1.3
    line = next(ln for ln in text.splitlines() if "ptx.r9 (top)" in ln)
    assert "700 [467, 1050]" in line and "modelled" in line and "sampled 1.6%" in line  # interval from interval_us
    assert "CHECK FAILED" in text and "v1" in text


def test_goals_take_the_top_rung_from_the_rung_records_and_judge_each_goal():
    """The top rung is whatever the run's rung records call top (rung 9 here, not 7); within 15% on every
    contiguous row is MET only with all four, MISSED by one outside; cutlass absent: NOT EVALUATED with the reason;
    the prefill goal per variant."""
    bench = _bench()
    rows = [_row(s, "ptx", 1346.0 * 0.9, rung=9) for s in CONTIGUOUS]
    rows += [_row(s, "ptx.r8", 5000.0, rung=8) for s in CONTIGUOUS]  # a faster lower rung does not count as the top
    goal = {g["goal"][:20]: g for g in bench.goals(bench.table_rows({"rows": rows}), [])}
    within = next(g for g in goal.values() if "15%" in g["goal"])
    assert within["status"] == "MET" and "ptx.r9 (top) 1211" in within["detail"], within
    side = [g for g in goal.values() if "cutlass" in g["goal"]]
    assert len(side) == 2 and all(g["status"] == "NOT EVALUATED" and "no cutlass row" in g["detail"] for g in side)

    missed = rows[:-1] + [_row(CONTIGUOUS[-1], "ptx", 900.0, rung=9)]  # 900 / 1214 = 0.74
    within = bench.goals(bench.table_rows({"rows": missed}), [])[0]
    assert within["status"] == "MISSED" and "= 0.74" in within["detail"]
    within = bench.goals(bench.table_rows({"rows": rows[1:]}), [])[0]
    assert within["status"] == "NOT EVALUATED" and CONTIGUOUS[0] in within["detail"]


def test_cutlass_side_and_prefill_goals_use_the_best_cutlass_row_and_rung_5():
    bench = _bench()
    table = ("contiguous-4x8192x4096x7168", "masked-4x256x7168x2048")
    rows = [_row(table[0], "ptx", 1000.0, rung=7, of=7), _row(table[0], "cutlass", 800.0),
            _row(table[1], "ptx", 600.0, rung=7, of=7), _row(table[1], "cutlass", 700.0)]
    verdicts = [{"preset": table[0], "kernel": "grouped_gemm_fp8", "pair": "ptx-vs-cutlass", "speedup": 1.25,
                 "ci_lo": 0.9, "ci_hi": 1.7}]
    side = bench.goals(bench.table_rows({"rows": rows}), verdicts, table)[1]
    assert side["status"] == "MISSED" and "1.25x [0.90, 1.70]" in side["detail"] and "0.86x" in side["detail"]
    side = bench.goals(bench.table_rows({"rows": rows[:2]}), verdicts, table[:1])[1]
    assert side["status"] == "MET"

    prefill = [_row("dsv3-prefill", "ptx", 900.0, rung=7, of=7, variant=v) for v in ("up", "down")]
    prefill += [_row("dsv3-prefill", "ptx.r5", 250.0, rung=5, of=7, variant=v) for v in ("up", "down")]
    goal = bench.goals(bench.table_rows({"rows": prefill}), [])[-1]
    assert goal["status"] == "MET" and "= 3.60x" in goal["detail"]
    goal = bench.goals(bench.table_rows({"rows": prefill[:1] + prefill[2:]}), [])[-1]
    assert goal["status"] == "NOT EVALUATED" and "down" in goal["detail"]
    assert bench.goals(bench.table_rows({"rows": []}), [])[-1]["status"] == "NOT EVALUATED"


def test_runs_a_small_shape_end_to_end_and_reads_it_back(tmp_path, capsys):
    """The plumbing at a tiny shape: the compare runs every rung the registry holds (new rungs appear as merged),
    the top labelled, the goals printed, and --from prints the same."""
    from harness.implementations import implementation_ladders

    bench = _bench()
    ladder = implementation_ladders("ptx")["grouped_gemm_fp8"]
    assert bench.main(["--shapes", "2x32x256x128", "--impls", "ptx", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    labels = {line.split()[1] for line in text.splitlines() if line.startswith("contiguous-2x32x256x128")}
    assert labels == {f"ptx.r{n}" for n in range(1, ladder.top + 1)}, text
    assert f"ptx.r{ladder.top} (top)" in text and "goals:" in text
    assert "[NOT EVALUATED] issue 29" in text
    run_json = next(tmp_path.glob("*/run.json"))
    doc = json.loads(run_json.read_text())
    assert doc["settings"]["model_device"] == "H800 SXM" and doc["settings"]["timing_model"] == "v1"
    assert all(r["timing"]["device"] == "H800 SXM" for r in doc["rows"])
    assert bench.main(["--from", str(run_json)]) == 0
    assert capsys.readouterr().out.split("\n", 1)[1] == text.split("\n", 1)[1]


def test_the_cutlass_column_names_its_configuration(tmp_path, capsys):
    """A cutlass row runs through the compare CLI on sim, passes its check and says which of CUTLASS's candidates it
    ran (a shape the sweep did not cover: CUTLASS's default, said so)."""
    bench = _bench()
    assert bench.main(["--shapes", "2x32x256x128", "--impls", "cutlass", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    (line,) = [ln for ln in text.splitlines() if ln.startswith("contiguous-2x32x256x128")]
    assert line.split()[1] == "cutlass" and " ok" in line
    assert "cooperative 128x128x128 (default, not swept)" in line, line


def test_a_bad_from_path_says_what_is_wrong_without_a_traceback(tmp_path, capsys):
    bench = _bench()
    assert bench.main(["--from", str(tmp_path / "nowhere" / "run.json")]) == 1
    assert "nowhere/run.json not found; expected a run.json or the run folder" in capsys.readouterr().err
    (tmp_path / "run.json").write_text("[1]")
    assert bench.main(["--from", str(tmp_path / "run.json")]) == 1
    assert "holds an array, not a run document" in capsys.readouterr().err


def test_a_bad_direct_slot_says_what_is_wrong_without_a_traceback(capsys):
    assert _bench().main(["--direct", "nosuch", "--shapes", "1x128x256x256"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unknown implementation 'nosuch'" in err and "cutlass" in err


def test_direct_rows_mark_only_the_top_rung_as_top(capsys):
    """--direct labels a row "(top)" by the ladder's own rung record: the plain implementation slot is the top rung,
    a lower rung's slot is not (it once marked every rung slot "(top)" and the top one not)."""
    assert _bench().main(["--direct", "ptx,ptx.r11", "--shapes", "1x128x256x256"]) == 0
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines() if line.startswith("contiguous-1x128x256x256")]
    labels = {" ".join(parts[1:3]) if parts[2] == "(top)" else parts[1] for parts in lines}
    assert labels == {"ptx.r11", "ptx (top)"}, lines
