"""Three implementations on the dashboard: numba, cpp and ptx series, the three pairwise verdicts, the headline pair.

The fixture runs have two paths (numba, ptx); a CUDA C++ path is made from the PTX rows with every time scaled by
CPP_OVER_PTX, and the verdicts are recomputed by the runner's own `_verdict`, so the expected speedups are known.
"""
import copy
import json

import numpy as np
import pytest
from dashboard_runs import RUNS, copy_run

from harness import dashboard, runner
from harness.dashboard import data, figures
from harness.implementations import PAIRS
from harness.run_records import Row
from harness.verdicts import _verdict

# the fake CUDA C++ path takes 1.2x the PTX path's time in every cell: measured (2% noise), FASTER; modelled, inside
# the model's 95% prediction interval of today (its predicted paired errors are ~36-48%, so its intervals call a ratio
# only beyond about 1.5x): UNDECIDED
CPP_OVER_PTX = 1.2


def _scaled_cpp_row(ptx_row: dict, factor: float) -> dict:
    row = copy.deepcopy(ptx_row)
    row["impl"] = "cpp"
    row["key"] = row["key"].replace("/ptx/", "/cpp/", 1)
    timing = row.get("timing") or {}
    if timing.get("basis") == "modelled":
        timing["modelled_us"] *= factor
    else:
        timing["device_time_us"] = [t * factor for t in timing["device_time_us"]]
        for key in ("median_us", "ci_lo_us", "ci_hi_us", "mean_us"):
            timing["device"][key] *= factor
    if row.get("throughput"):
        row["throughput"]["time_us"] *= factor
        row["throughput"]["achieved_gbps"] /= factor
        row["throughput"]["achieved_tflops"] /= factor
    return row


def three_impl_doc(name: str, factor: float = CPP_OVER_PTX) -> dict:
    """The run.json of fixture `name` with a cpp row beside every ptx row and all three pairs' verdicts."""
    doc = json.loads((RUNS / name / "run.json").read_text())
    rows = []
    for row in doc["rows"]:
        rows.append(row)
        if row["impl"] == "ptx":
            rows.append(_scaled_cpp_row(row, factor))
    doc["rows"] = rows
    doc["settings"]["impls"] = ["numba", "cpp", "ptx"]
    basis = "modelled" if doc["settings"]["backend"] == "sim" else "measured"
    verdicts = []
    for cell in dict.fromkeys((r["kernel"], r["variant"], r["preset"], r["skew"]) for r in rows):
        item = runner.Item(*cell)
        by_impl = {r["impl"]: Row.from_json(r) for r in rows
                   if (r["kernel"], r["variant"], r["preset"], r["skew"]) == cell}
        verdicts += [_verdict(item, pair, by_impl, basis) for pair in PAIRS
                     if pair.impl in by_impl and pair.baseline in by_impl]  # the runner's rule (pairs_of)
    doc["verdicts"] = verdicts
    return doc


def _geomean(values) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))


def test_three_series_and_three_pairwise_headlines_modelled():
    doc = three_impl_doc("sim-tiny")
    assert data.impls_present(doc) == ["numba", "cpp", "ptx"]
    assert [p.name for p in data.pairs_present(doc)] == ["ptx-vs-cpp", "ptx-vs-numba", "cpp-vs-numba"]
    assert data.headline_pair(doc).name == "ptx-vs-cpp"
    h = data.headline(doc)  # the headline is PTX vs CUDA C++
    assert h["pair"] == "ptx-vs-cpp" and h["geomean"] == pytest.approx(CPP_OVER_PTX)
    assert h["lo"] < 1.0 < 1.1 < h["hi"] and h["verdict"] == "UNDECIDED"   # the model cannot call a modelled 1.2x
    assert h["counts"]["UNDECIDED"] == h["n"] + len(h["layer"]) and "95% prediction" in h["interval"]
    heads = {x["pair"]: x for x in data.pair_headlines(doc)}
    ptx_numba = heads["ptx-vs-numba"]["geomean"]
    kernels = [v["speedup"] for v in doc["verdicts"] if v["pair"] == "ptx-vs-numba" and v["kernel"] != "layer"]
    assert ptx_numba == pytest.approx(_geomean(kernels))
    assert heads["cpp-vs-numba"]["geomean"] == pytest.approx(ptx_numba / CPP_OVER_PTX)
    # every row series is drawn: one trace group per implementation, in numba, cpp, ptx order
    rows = [r for r in data.row_records(doc) if r["status"] == "ok"]
    fig = figures.timing_distributions(rows, "modelled")
    names = [tr.name for tr in fig.data]
    for label in ("Numba CUDA", "CUDA C++", "PTX"):
        assert any(n.startswith(label + " ") for n in names), (label, names)
    cpp_bar = next(tr for tr in fig.data if tr.name.startswith("CUDA C++ tiny/balanced"))
    ptx_bar = next(tr for tr in fig.data if tr.name.startswith("PTX tiny/balanced"))
    assert np.allclose(np.asarray(cpp_bar.y), np.asarray(ptx_bar.y) * CPP_OVER_PTX)


def test_every_pair_gets_its_speedup_figure_with_intervals_measured():
    doc = three_impl_doc("gpu-measured")
    verdicts = data.verdict_records(doc)
    for pair in data.pairs_present(doc):  # the three pairs of the fixture's paths (no Triton row)
        mine = [v for v in verdicts if v["pair"] == pair.name and v["speedup"]]
        fig = figures.speedup_bars(verdicts, "measured", pair)
        assert pair.title.split(" vs ")[0] in fig.layout.title.text
        drawn = [y for tr in fig.data for y in tr.y]
        assert sorted(drawn) == sorted(v["speedup"] for v in mine)
        for tr in fig.data:
            cell = [v for v in mine if v["skew"] == tr.meta["skew"]]
            assert np.allclose(np.asarray(tr.y) + np.asarray(tr.error_y.array), [v["ci_hi"] for v in cell])
    h = data.headline(doc)
    assert h["pair"] == "ptx-vs-cpp" and "bootstrap" in h["interval"]
    assert h["lo"] < CPP_OVER_PTX < h["hi"] and h["hi"] / h["lo"] < 1.1  # samples scaled exactly: ratio CPP_OVER_PTX
    recs = data.sim_counter_records(three_impl_doc("sim-tiny"))
    rec = next(r for r in recs if r["counter"] == "warp instructions" and r["label"] == "gate")
    assert rec["cpp"] == rec["ptx"] and rec["ratios"]["ptx-vs-cpp"] == 1.0
    assert rec["ratios"]["ptx-vs-numba"] == pytest.approx(rec["ptx"] / rec["numba"])


def test_three_implementation_page(tmp_path):
    run_dir = copy_run("sim-tiny", tmp_path, "three")
    (run_dir / "run.json").write_text(json.dumps(three_impl_doc("sim-tiny")))
    text = dashboard.build(run_dir).read_text()
    body = text.split("</script></head>", 1)[1]
    assert "ptxmoe: PTX vs CUDA C++ vs Numba CUDA" in text
    assert "geometric-mean speedup of PTX over CUDA C++" in body
    assert "UNDECIDED between PTX and CUDA C++: 1.20x on the geometric mean" in body
    # the answer first: PTX against the best C++ present (CUDA C++ here), per cell, with its 95% interval
    assert body.index('id="answer"') < body.index('id="headline"')
    answer = body.split('id="answer"', 1)[1].split("</section>", 1)[0]
    assert "hand PTX vs the best C++ present" in answer and "95% prediction, modelled v1" in answer
    assert "<td>CUDA C++</td>" in answer and "on predicted paired ratios" in answer
    for pair, fig_id in (("ptx-vs-cpp", "fig-speedup"), ("ptx-vs-numba", "fig-speedup-ptx-vs-numba"),
                         ("cpp-vs-numba", "fig-speedup-cpp-vs-numba")):
        assert f'id="{fig_id}"' in body and f'data-pair="{pair}"' in body
    figs = json.loads(text.split('id="ptxmoe-figures">', 1)[1].split("</script>", 1)[0])
    assert "over CUDA C++" in figs["fig-speedup"]["layout"]["title"]["text"]
    assert "PTX vs CUDA C++ (headline)" in body and "CUDA C++ vs Numba CUDA" in body
    assert "<th>CUDA C++ / Numba CUDA</th>" in body  # the sim-counter table has every pair's ratio column
    index = (tmp_path / "index.html").read_text()
    assert "PTX vs CUDA C++" in index and "<td>1.2</td>" in index


def test_a_two_implementation_run_still_headlines_its_one_pair(tmp_path):
    """A numba+ptx run has no PTX vs CUDA C++ verdict: its headline is PTX vs Numba, with no empty columns."""
    run_dir = copy_run("sim-tiny", tmp_path)
    text = dashboard.build(run_dir).read_text().split("</script></head>", 1)[1]
    assert "geometric-mean speedup of PTX over Numba CUDA" in text and 'id="fig-speedup"' in text
    assert "fig-speedup-" not in text and "<th>CUDA C++</th>" not in text and "<th>PTX / Numba CUDA</th>" in text


def test_three_implementations_with_cpp_missing_everywhere(tmp_path):
    """Today's default run: cpp rows are all "missing"; the headline falls back to PTX vs Numba, the PTX vs CUDA C++
    pair is listed without a verdict (and why), and no empty CUDA C++ columns appear."""
    doc = three_impl_doc("sim-tiny")
    for row in doc["rows"]:
        if row["impl"] == "cpp":
            for key in ("timing", "static", "sim_counters", "throughput", "correctness", "launches"):
                row.pop(key, None)
            why = f"not implemented in cpp (cpp_impl registers no {row['kernel']} kernel)"
            row.update(status="missing", reason=why)
    basis = "modelled"
    verdicts = []
    for cell in dict.fromkeys((r["kernel"], r["variant"], r["preset"], r["skew"]) for r in doc["rows"]):
        by_impl = {r["impl"]: Row.from_json(r) for r in doc["rows"]
                   if (r["kernel"], r["variant"], r["preset"], r["skew"]) == cell}
        verdicts += [_verdict(runner.Item(*cell), pair, by_impl, basis) for pair in PAIRS]
    doc["verdicts"] = verdicts
    assert data.headline_pair(doc).name == "ptx-vs-numba"
    heads = {h["pair"]: h for h in data.pair_headlines(doc)}
    assert heads["ptx-vs-cpp"]["geomean"] is None and len(heads["ptx-vs-cpp"]["no_verdict"]) == 10
    assert "cpp missing (not implemented in cpp" in heads["ptx-vs-cpp"]["no_verdict"][0]["reason"]
    run_dir = copy_run("sim-tiny", tmp_path, "cpp-missing")
    (run_dir / "run.json").write_text(json.dumps(doc))
    body = dashboard.build(run_dir).read_text().split("</script></head>", 1)[1]
    assert "geometric-mean speedup of PTX over Numba CUDA" in body and "rows: 10 missing, 20 ok" in body
    assert "no verdict (10 cell(s) without both paths timed)" in body
    assert "<th>CUDA C++</th>" not in body and "<th>PTX / Numba CUDA</th>" in body


def test_the_best_cpp_present_is_chosen_per_cell_and_the_headline_follows_it(tmp_path):
    """A Triton row faster than CUDA C++ in the gate cells only: those cells' headline verdict and answer are PTX vs
    Triton, the others' PTX vs CUDA C++; the headline is the pair most often best, and the page says so."""
    from harness.answer import answer_rows
    from harness.dashboard.sections import _best_cpp_words

    doc = three_impl_doc("sim-tiny")
    extra = []
    for row in doc["rows"]:
        if row["impl"] == "ptx" and row["kernel"] == "gate":
            triton = _scaled_cpp_row(row, 1.1)  # faster than CUDA C++'s CPP_OVER_PTX
            triton["impl"], triton["key"] = "triton", triton["key"].replace("/cpp/", "/triton/", 1)
            extra.append(triton)
    doc["rows"] += extra
    verdicts = []
    for cell in dict.fromkeys((r["kernel"], r["variant"], r["preset"], r["skew"]) for r in doc["rows"]):
        by_impl = {r["impl"]: Row.from_json(r) for r in doc["rows"]
                   if (r["kernel"], r["variant"], r["preset"], r["skew"]) == cell}
        verdicts += [_verdict(runner.Item(*cell), pair, by_impl, "modelled") for pair in PAIRS
                     if pair.impl in by_impl and pair.baseline in by_impl]
    doc["verdicts"] = verdicts
    heads = {(v["kernel"], v["skew"]): v["pair"] for v in verdicts if v["headline"]}
    assert {pair for (kernel, _), pair in heads.items() if kernel == "gate"} == {"ptx-vs-triton"}
    assert {pair for (kernel, _), pair in heads.items() if kernel != "gate"} == {"ptx-vs-cpp"}
    assert data.headline_pair(doc).name == "ptx-vs-cpp"      # best in more cells
    sweep = data.as_sweep(doc)
    answers = {(a.label, a.skew): a for a in answer_rows(sweep)}
    gate = answers[("gate", "balanced")]
    assert gate.best_cpp == "triton" and gate.cpp_present == ("cpp", "triton")
    assert gate.speedup == pytest.approx(1.1)
    assert all(a.best_cpp == "cpp" for (label, _), a in answers.items() if label != "gate" and a.speedup)
    words = _best_cpp_words(data.Run(tmp_path, doc, records=sweep))
    assert words.startswith("The best C++ present differs between cells: CUDA C++ in ") and ", Triton in 2" in words
