"""Dashboard data (records, headline, timeline), escaping, build/build_index and the CLI, without a browser."""
import json
import re

import numpy as np
import pytest
from dashboard_runs import RUNS, XSS_KERNEL, copy_run, make_xss_run, nsys_fixture

from harness import dashboard
from harness.cli import main
from harness.dashboard import data
from harness.dashboard.html import esc, script_json
from harness.nsight.importer import import_into_run
from harness.timing.stats import VERDICTS, verdict_of


def _doc(name):
    return json.loads((RUNS / name / "run.json").read_text())


def test_modelled_headline_is_the_geometric_mean_of_the_kernel_cells():
    doc = _doc("sim-tiny")
    speedups = [v["speedup"] for v in doc["verdicts"] if v["kernel"] != "layer" and v["verdict"]]
    h = data.headline(doc)
    assert h["n"] == len(speedups) == 8
    assert h["geomean"] == pytest.approx(np.exp(np.mean(np.log(np.array(speedups, dtype=np.float64)))), rel=1e-12)
    # this fixture's verdicts predate the 95% prediction interval: no interval is claimed for the headline
    assert h["lo"] is None and h["verdict"] is None and "predate the 95% prediction interval" in h["interval"]
    # the same cells with prediction intervals: their ends' geometric means (the model's errors fully correlated
    # over cells: no narrower for having more of them), never a zero-width point
    for i, v in enumerate(doc["verdicts"]):
        v.update(interval="prediction", confidence=0.95, model_version="v1", ci_lo=v["speedup"] / (1.5 + i / 10),
                 ci_hi=v["speedup"] * (2 + i / 10))
    h = data.headline(doc)
    cells = [v for v in doc["verdicts"] if v["kernel"] != "layer" and v["verdict"]]
    lo, hi = (np.exp(np.mean(np.log([v[end] for v in cells]))) for end in ("ci_lo", "ci_hi"))
    assert (h["lo"], h["hi"]) == pytest.approx((lo, hi), rel=1e-12) and h["lo"] < h["geomean"] < h["hi"]
    assert "modelled" in h["interval"] and "95% prediction" in h["interval"] and "published" in h["interval"]
    assert h["verdict"] == verdict_of(h["lo"], h["hi"]) == "UNDECIDED"
    # swiglu's PTX path is slower in this fixture: the headline must list it
    assert sorted(h["slower"]) == ["swiglu tiny/balanced", "swiglu tiny/imbalanced"]
    assert [v["kernel"] for v in h["layer"]] == ["layer", "layer"]


def _measured_doc(rng, true_speedups, n=40):
    rows, verdicts = [], []
    for i, s in enumerate(true_speedups):
        base = float(rng.uniform(5, 50))
        for impl, t in (("numba", base), ("ptx", base / s)):
            samples = (t * rng.lognormal(0, 0.02, n)).tolist()
            rows.append({"key": f"k{i}/{impl}/tiny/balanced", "kernel": f"k{i}", "variant": None, "impl": impl,
                         "preset": "tiny", "skew": "balanced", "status": "ok",
                         "timing": {"basis": "measured", "device_time_us": samples,
                                    "device": {"n": n, "median_us": float(np.median(samples))}}})
        verdicts.append({"key": f"k{i}/tiny/balanced", "kernel": f"k{i}", "variant": None, "preset": "tiny",
                         "skew": "balanced", "basis": "measured", "verdict": "SAME", "ci_lo": None, "ci_hi": None,
                         "speedup": float(np.median(rows[-2]["timing"]["device_time_us"])
                                          / np.median(rows[-1]["timing"]["device_time_us"]))})
    return {"rows": rows, "verdicts": verdicts}


@pytest.mark.parametrize("true_speedups, verdict", [((1.3, 1.2, 1.25), "FASTER"), ((0.7, 0.8, 0.75), "SLOWER")])
def test_measured_headline_bootstraps_an_interval_around_the_geometric_mean(rng, true_speedups, verdict):
    doc = _measured_doc(rng, true_speedups)
    h = data.headline(doc)
    point = np.exp(np.mean(np.log([v["speedup"] for v in doc["verdicts"]])))
    assert h["geomean"] == pytest.approx(point, rel=1e-12)
    assert h["lo"] < h["geomean"] < h["hi"]
    assert h["lo"] < np.exp(np.mean(np.log(true_speedups))) * 1.02 and h["hi"] > np.exp(
        np.mean(np.log(true_speedups))) * 0.98
    assert h["hi"] / h["lo"] < 1.1 and h["verdict"] == verdict and "bootstrap" in h["interval"]


def test_stages_counters_and_static_records_match_the_raw_rows():
    doc = _doc("sim-tiny")
    layer = {(r["impl"], r["skew"]): r for r in doc["rows"] if r["kernel"] == "layer"}
    stages = data.stage_records(doc)
    for (impl, skew), row in layer.items():
        mine = [s for s in stages if s["impl"] == impl and s["skew"] == skew]
        assert sum(s["time_us"] for s in mine) == pytest.approx(row["timing"]["modelled_us"], rel=1e-12)
        assert sum(s["share"] for s in mine) == pytest.approx(1.0)
    gate = next(r for r in doc["rows"] if r["key"] == "gate/ptx/tiny/balanced")
    m = gate["sim_counters"]["total"]
    recs = {(r["label"], r["skew"], r["counter"]): r for r in data.sim_counter_records(doc)}
    spr = recs[("gate", "balanced", "sectors per load request")]
    assert spr["ptx"] == m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / \
        m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    limiter = gate["timing"]["launches"][0]["estimate"]["limiter"]
    assert recs[("gate", "balanced", "limiting resource")]["ptx"] == limiter
    static = [s for s in data.static_records(doc) if s["label"] == "gate" and s["impl"] == "ptx"]
    facts = next(iter(gate["static"]["kernels"].values()))
    assert len(static) == 1 and static[0]["registers"] == facts["resources"]["registers"]


def test_rows_throughput_and_ceilings():
    run = data.load_run(RUNS / "sim-tiny")
    rows = {r["key"]: r for r in data.row_records(run.doc)}
    raw = next(r for r in run.doc["rows"] if r["key"] == "grouped_gemm[up]/ptx/tiny/balanced")
    r = rows[raw["key"]]
    assert r["time_us"] == raw["timing"]["modelled_us"]
    assert r["achieved_gbps"] == pytest.approx(raw["min_bytes"] / (r["time_us"] * 1e-6) / 1e9)
    assert r["intensity_flop_per_byte"] == pytest.approx(raw["flops"] / raw["min_bytes"])
    ceil = data.device_ceilings(run)
    assert ceil["name"] == "H200 SXM" and ceil["bandwidth_Bps"] == 4.8e12 and run.basis == "modelled"


def test_timeline_from_harness_ranges_and_from_imported_nsys(tmp_path):
    run_dir = copy_run("sim-tiny", tmp_path)
    source, bars = data.timeline_records(data.load_run(run_dir))
    doc = json.loads((run_dir / "run.json").read_text())
    assert source.startswith("harness") and len(bars) == len(doc["nvtx_ranges"])
    assert min(b["start_ms"] for b in bars) == 0 and all(b["end_ms"] >= b["start_ms"] for b in bars)
    gate = next(b for b in bars if b["name"] == "gate/ptx/tiny/balanced")
    raw = next(r for r in doc["nvtx_ranges"] if r["name"] == "gate/ptx/tiny/balanced")
    assert gate["end_ms"] - gate["start_ms"] == pytest.approx((raw["end_perf_ns"] - raw["start_perf_ns"]) / 1e6)
    assert (gate["impl"], gate["preset"], gate["skew"]) == ("ptx", "tiny", "balanced")

    import_into_run(nsys_fixture(), run_dir)
    run = data.load_run(run_dir)
    source, bars = data.timeline_records(run)
    assert source.startswith("nsys") and len(bars) == 5  # the fixture's README: 5 saxpy kernels in range "saxpy"
    assert {b["lane"] for b in bars} == {"saxpy"} and all(17.0 < b["end_ms"] - b["start_ms"] < 18.5 for b in bars)
    metrics = {(r["metric"], r["nvtx_range"]): r for r in data.nsight_metric_records(run)}
    assert metrics[("duration", "saxpy")]["n"] == 5 and metrics[("duration", "saxpy")]["kernel"] == "saxpy"


def test_script_json_and_esc_keep_data_and_cannot_close_a_script(rng):
    alphabet = list("<>&/'\"\u2028\u2029 abc!-[]")
    values = ["</script><script>alert(1)</script>", "<!--", "a&b", *(
        "".join(rng.choice(alphabet, size=int(rng.integers(1, 30)))) for _ in range(50))]
    for value in values:
        text = script_json({"name": value, "list": [value]})
        assert not set(text) & set("<>&\u2028\u2029")
        assert json.loads(text) == {"name": value, "list": [value]}
        assert not set(esc(value)) & set("<>\"'")


def test_build_writes_dashboard_and_index_and_escapes_names(tmp_path):
    sim = copy_run("sim-tiny", tmp_path)
    gpu = copy_run("gpu-measured", tmp_path)
    xss = make_xss_run(tmp_path)
    out = dashboard.build(sim)
    assert out == sim / "dashboard.html" and out.stat().st_mode & 0o777 == 0o644
    text = out.read_text()
    assert text.count("<script") == 3 and "cdn.plot.ly" not in text.split("<main>")[1]  # inline plotly, no CDN
    assert "MODELLED times" in text and "PTX is SLOWER than Numba CUDA in 2 cell(s)" in text
    vs = dashboard.build(sim, vs=gpu)
    assert vs.name == "dashboard-vs-gpu-measured.html" and "Compared with gpu-measured" in vs.read_text()
    page = dashboard.build(xss).read_text()
    head, rest = page.split("</script></head>", 1)  # everything after plotly.js
    assert XSS_KERNEL not in rest and "<img" not in rest and rest.count("<script") == 2
    assert esc(XSS_KERNEL) in rest  # shown, as text
    index = (tmp_path / "index.html").read_text()
    for link in ("sim-tiny/dashboard.html", "sim-tiny/dashboard-vs-gpu-measured.html", "xss-run/dashboard.html"):
        assert f'href="{link}"' in index
    assert "<td>gpu-measured</td>" in index and "gpu-measured/dashboard" not in index  # listed, no page yet
    assert "<img" not in index and not list(tmp_path.rglob(".*.tmp"))


def test_missing_run_is_a_named_error_and_the_cli_exits_2(tmp_path, capsys):
    with pytest.raises(data.DashboardError, match=re.escape(str(tmp_path / "run.json"))):
        dashboard.build(tmp_path)
    assert main(["dashboard", str(tmp_path / "nope")]) == 2
    assert "run.json not found" in capsys.readouterr().err
    sim = copy_run("sim-tiny", tmp_path)
    out = tmp_path / "elsewhere" / "d.html"
    assert main(["dashboard", str(sim), "-o", str(out)]) == 0
    assert out.is_file() and str(out) in capsys.readouterr().out
    (tmp_path / "index.html").unlink()
    assert main(["dashboard", str(tmp_path)]) == 0  # a profiles folder: its index only
    assert "index:" in capsys.readouterr().out and "sim-tiny" in (tmp_path / "index.html").read_text()


def test_failed_and_missing_rows_leave_the_cell_without_a_verdict_and_say_why(tmp_path):
    run_dir = copy_run("sim-tiny", tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    for row in doc["rows"]:
        if row["key"] == "swiglu/ptx/tiny/balanced":
            row.update(status="failed", correctness={"ok": False, "message": "out: 3 mismatches", "errors": {}})
        if row["key"] == "gate/numba/tiny/imbalanced":
            for k in ("timing", "static", "sim_counters", "throughput", "correctness"):
                row.pop(k)
            row.update(status="missing", reason="cuda_impl has no gate implementation yet")
    for v in doc["verdicts"]:
        if v["cell"] in ("swiglu/tiny/balanced", "gate/tiny/imbalanced"):
            v.update(speedup=None, ci_lo=None, ci_hi=None, verdict=None, reason="no verdict: a path failed")
    (run_dir / "run.json").write_text(json.dumps(doc))
    h = data.headline(doc)
    kept = [v["speedup"] for v in doc["verdicts"] if v["kernel"] != "layer" and v["verdict"]]
    assert h["n"] == len(kept) == 6 and len(h["no_verdict"]) == 2
    assert h["geomean"] == pytest.approx(float(np.exp(np.mean(np.log(kept)))))
    assert h["slower"] == ["swiglu tiny/imbalanced"]
    rows = {r["key"]: r for r in data.row_records(doc)}
    assert rows["gate/numba/tiny/imbalanced"]["time_us"] is None
    assert rows["swiglu/ptx/tiny/balanced"]["reason"] == "out: 3 mismatches"
    text = dashboard.build(run_dir).read_text()
    assert "cuda_impl has no gate implementation yet" in text and "out: 3 mismatches" in text
    assert "no verdict: 2" in text and "rows: 1 failed, 1 missing, 18 ok" in text
    assert "1 row(s) FAILED or raised: swiglu/ptx/tiny/balanced (failed: out: 3 mismatches)" in text


def test_a_real_compare_run_with_one_path_missing(tmp_path):
    """sim-real-ptx-only is the run.json of `ptxmoe compare --backend sim --preset tiny --kernels gate,swiglu`
    from when cuda_impl had no kernels yet: modelled PTX rows, missing Numba rows, no verdicts."""
    run_dir = copy_run("sim-real-ptx-only", tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    h = data.headline(doc)
    assert h["geomean"] is None and len(h["no_verdict"]) == 2
    rows = {r["key"]: r for r in data.row_records(doc)}  # read upgraded: the keys say numba for cuda
    for raw in doc["rows"]:
        key = raw["key"].replace("/cuda/", "/numba/")
        if raw["status"] == "ok":
            assert rows[key]["time_us"] == raw["timing"]["modelled_us"] > 0
        else:
            assert raw["status"] == "missing" and rows[key]["time_us"] is None
    assert data.sim_counter_records(doc) and data.static_records(doc)
    text = dashboard.build(run_dir).read_text()
    assert "No verdict: no kernel has two paths timed." in text and "MODELLED times" in text
    # a schema-1 file: the Numba rows were "cuda"; loaded, they read as "numba" and the one pair is ptx-vs-numba
    assert doc["schema_version"] == 1 and {r["impl"] for r in doc["rows"]} == {"cuda", "ptx"}
    run = data.load_run(run_dir)
    assert run.doc["schema_version"] == 3 and {r["impl"] for r in run.doc["rows"]} == {"numba", "ptx"}
    assert [p.name for p in data.pairs_present(run.doc)] == ["ptx-vs-numba"]
    assert "gate/numba/tiny/balanced" in text and "gate/cuda/tiny/balanced" not in text


def test_nsight_rows_inside_ptxmoe_ranges_go_side_by_side(tmp_path, rng):
    from harness.nsight.table import MetricRow, NsightTable

    run_dir = copy_run("sim-tiny", tmp_path)
    values = {impl: rng.uniform(1e3, 1e5, size=3) for impl in ("numba", "ptx")}
    rows = [MetricRow("ncu-csv-details", f"{impl}_gate_kernel", f"gate/{impl}/tiny/balanced", "dram__bytes_read.sum",
                      float(v), "byte", i, "ptxmoe", (("ptxmoe", "run/x"), ("ptxmoe", f"gate/{impl}/tiny/balanced")))
            for impl, vs in values.items() for i, v in enumerate(vs)]
    table = NsightTable("p.csv", "ncu-csv", tuple(rows))
    (run_dir / "nsight").mkdir()
    (run_dir / "nsight" / "p.csv.rows.json").write_text(json.dumps(table.to_json_dict()))
    run = data.load_run(run_dir)
    (rec,) = data.nsight_metric_records(run)
    assert (rec["label"], rec["preset"], rec["skew"], rec["metric"], rec["n"]) == (
        "gate", "tiny", "balanced", "dram__bytes_read.sum", 6)
    assert rec["numba"] == pytest.approx(values["numba"].mean()) and rec["ptx"] == pytest.approx(values["ptx"].mean())
    text = dashboard.build(run_dir).read_text()
    assert 'id="nsight"' in text and "dram__bytes_read.sum" in text.split("</script></head>", 1)[1]


def test_real_sim_run_headline_stages_and_counts():
    doc = _doc("sim-real")
    raw = [v for v in doc["verdicts"] if v["verdict"]]
    h = data.headline(doc)
    kernels = [v["speedup"] for v in raw if v["kernel"] != "layer"]
    assert h["geomean"] == pytest.approx(float(np.exp(np.mean(np.log(np.array(kernels, dtype=np.float64))))))
    assert h["counts"] == {k: sum(v["verdict"] == k for v in raw) for k in VERDICTS}
    assert len(h["layer"]) == 2
    for row in doc["rows"]:
        if row["kernel"] == "layer":
            mine = [s for s in data.stage_records(doc) if s["impl"] == row["impl"] and s["skew"] == row["skew"]]
            assert len(mine) >= 7 and sum(s["time_us"] for s in mine) == pytest.approx(row["timing"]["modelled_us"])
    mix = [m for m in data.instruction_mix(doc) if m["label"] == "grouped_gemm[up]" and m["impl"] == "ptx"]
    assert any(m["cls"] == "tensor" and m["count"] > 0 for m in mix)  # the mma.sync path


def test_sass_mix_has_one_bar_per_cubin_whose_stack_is_its_instruction_count():
    from harness.dashboard import figures

    recs = data.static_records(_doc("sim-real"))
    fig = figures.sass_mix_figure(recs)
    totals: dict = {}
    for trace in fig.data:
        assert len(set(trace.y)) == len(trace.y)  # no category drawn twice (stacked bars would add up)
        for y, x in zip(trace.y, trace.x, strict=True):
            totals[y] = totals.get(y, 0) + x
    want = {}
    for r in recs:
        want.setdefault((r["impl"], r["launch"], r["digest"]), r["sass_instructions"])
    assert sorted(totals.values()) == sorted(want.values())


def test_records_survive_rows_with_fields_missing_or_null(seed):
    """A run.json from an older or interrupted run may lack fields: the records do without the optional ones, and
    a required one missing or of the wrong type is a DashboardError naming it, never another exception."""
    import random

    from harness.dashboard.errors import DashboardError

    rnd = random.Random(seed)
    src = _doc("sim-real")
    for _ in range(25):
        doc = json.loads(json.dumps(src))
        for _ in range(10):
            d = rnd.choice(rnd.choice([doc["rows"], doc["verdicts"], doc["nvtx_ranges"]]))
            for _ in range(rnd.randint(0, 3)):
                subs = [v for v in d.values() if isinstance(v, dict) and v]
                if not subs:
                    break
                d = rnd.choice(subs)
            key = rnd.choice(list(d))
            if rnd.random() < 0.5:
                d[key] = None
            else:
                del d[key]
        run = data.Run(RUNS / "sim-real", doc)
        try:
            assert run.sweep.rows
        except DashboardError as exc:
            assert re.search(r"(rows|verdicts|nvtx_ranges)\[\d+\]\S* .*(is missing|is null|is an?|matches none)",
                             str(exc)), exc
            continue
        for fn in (data.row_records, data.verdict_records, data.headline, data.stage_records,
                   data.sim_counter_records, data.instruction_mix, data.static_records, data.environment_records,
                   data.filters):
            fn(doc)
        data.timeline_records(run)
        data.device_ceilings(run)


def test_figures_carry_the_numbers_roofs_error_bars_and_filter_meta():
    from harness.dashboard import figures

    run = data.load_run(RUNS / "gpu-measured")
    ceil = data.device_ceilings(run)
    rows = data.row_records(run.doc)
    fig = figures.roofline([r for r in rows if r["status"] == "ok"], ceil)
    roofs = [tr for tr in fig.data if tr.mode == "lines"]
    assert len(roofs) == 2
    for tr, peak in zip(roofs, (ceil["bf16_dense_flops"], ceil["fp32_flops"]), strict=True):
        x = np.asarray(tr.x)
        assert np.allclose(tr.y, np.minimum(peak, ceil["bandwidth_Bps"] * x) / 1e12, rtol=1e-12)
    pts = [tr for tr in fig.data if tr.mode == "markers"]
    assert sum(len(tr.x) for tr in pts) == sum(1 for r in rows if r["achieved_tflops"])
    assert all(tr.meta["preset"] == "tiny" and tr.meta["skew"] in ("balanced", "imbalanced") for tr in pts)

    verdicts = data.verdict_records(run.doc)
    bars = figures.speedup_bars(verdicts, "measured")
    for tr in bars.data:
        mine = [v for v in verdicts if v["skew"] == tr.meta["skew"]]
        assert list(tr.y) == [v["speedup"] for v in mine]
        assert np.allclose(np.asarray(tr.y) + np.asarray(tr.error_y.array), [v["ci_hi"] for v in mine])
        assert np.allclose(np.asarray(tr.y) - np.asarray(tr.error_y.arrayminus), [v["ci_lo"] for v in mine])


def test_nsys_kernels_inside_ptxmoe_ranges_get_their_row_labels(tmp_path, rng):
    from harness.nsight.table import MetricRow, NsightTable

    run_dir = copy_run("sim-tiny", tmp_path)
    rows, t = [], 1e9
    for launch, impl in enumerate(("numba", "ptx", "numba", "ptx")):
        rng_name = f"gate/{impl}/tiny/balanced"
        stack = (("ptxmoe", "run-x"), ("ptxmoe", rng_name))
        dur = float(rng.uniform(1e3, 1e4))
        for metric, value in (("start", t), ("end", t + dur), ("duration", dur)):
            rows.append(MetricRow("nsys-sqlite", f"k_{impl}", rng_name, metric, value, "ns", launch, "ptxmoe", stack))
        t += 2 * dur
    (run_dir / "nsight").mkdir()
    (run_dir / "nsight" / "r.sqlite.rows.json").write_text(
        json.dumps(NsightTable("r.sqlite", "nsys-sqlite", tuple(rows)).to_json_dict()))
    run = data.load_run(run_dir)
    source, bars = data.timeline_records(run)
    assert source.startswith("nsys") and [b["impl"] for b in bars] == ["numba", "ptx", "numba", "ptx"]
    assert {(b["lane"], b["preset"], b["skew"]) for b in bars} == {
        ("gate/numba/tiny/balanced", "tiny", "balanced"), ("gate/ptx/tiny/balanced", "tiny", "balanced")}
    durations = [r.value for r in rows if r.metric == "duration"]
    assert [b["end_ms"] - b["start_ms"] for b in bars] == pytest.approx([d / 1e6 for d in durations])
    (rec,) = [r for r in data.nsight_metric_records(run) if r["metric"] == "duration"]
    assert rec["numba"] == pytest.approx(np.mean(durations[0::2])) and rec["ptx"] == pytest.approx(
        np.mean(durations[1::2]))


def test_a_partition_folder_gets_its_figures_and_an_index_row(tmp_path):
    """partition-sim/ is the partition.json of `ptxmoe partition --backend sim --preset small --ep 4 --sms 0,8,20
    --seed 7 --pp 4 --microbatches 8` (harness.partition writes no run.json)."""
    folder = copy_run("partition-sim", tmp_path)
    copy_run("sim-tiny", tmp_path)
    text = dashboard.build(folder).read_text()
    figs = json.loads(text.split('id="ptxmoe-figures">', 1)[1].split("</script>", 1)[0])
    assert sorted(figs) == [f"fig-partition-{i}" for i in range(len(figs))] and len(figs) >= 3
    assert all(f["data"] for f in figs.values()) and "SM partition" in text
    index = (tmp_path / "index.html").read_text()
    assert "partition study" in index and 'href="partition-sim/dashboard.html"' in index and "sim-tiny" in index


def test_modelled_row_time_has_the_models_interval_and_the_launch_apart():
    """A modelled row shows its kernel time with the model's error interval and the launch cost beside it, not in it."""
    from harness.dashboard.data import row_time
    from harness.run_records import Row

    head = {"key": "gate/ptx/tiny/balanced", "kernel": "gate", "impl": "ptx", "preset": "tiny", "status": "ok"}
    row = Row.from_json({**head, "timing": {"basis": "modelled", "modelled_us": 2.0, "launch_us": 3.0,
                                            "interval_us": [1.8, 2.2]}})
    t = row_time(row)
    assert (t["time_us"], t["lo_us"], t["hi_us"], t["launch_us"]) == (2.0, 1.8, 2.2, 3.0)
    old = row_time(Row.from_json({**head, "timing": {"basis": "modelled", "modelled_us": 2.0}}))  # before intervals
    assert (old["lo_us"], old["hi_us"], old["launch_us"]) == (2.0, 2.0, None)


def test_gemm_work_one_record_per_cell_and_its_section(tmp_path):
    from harness.dashboard.sections import gemm_work_section

    work = {"routed_rows": 256, "padded_rows": 496, "BM": 16, "useful_flops": 4 * 10**9, "padded_flops": 8 * 10**9}
    rows = [{"key": f"grouped_gemm[up]/{impl}/tiny/balanced", "kernel": "grouped_gemm", "variant": "up",
             "impl": impl, "preset": "tiny", "skew": "balanced", "status": "ok", "gemm_work": work}
            for impl in ("cpp", "ptx")]
    rows.append({"key": "gate/ptx/tiny/balanced", "kernel": "gate", "variant": None, "impl": "ptx",
                 "preset": "tiny", "skew": "balanced", "status": "ok", "gemm_work": None})
    doc = {"rows": rows}
    (rec,) = data.gemm_work_records(doc)  # the two paths of one cell share one routing: one record
    assert rec["label"] == "grouped_gemm[up]" and rec["useful (%)"] == 50.0 and rec["padded (GFLOP)"] == 8.0
    html = gemm_work_section(data.Run(tmp_path, doc))
    assert 'id="gemm"' in html and "<td>50</td>" in html and "<td>496</td>" in html
    assert gemm_work_section(data.Run(tmp_path, {"rows": rows[2:]})) == ""  # no GEMM rows: no section


def test_sampled_rows_are_named_with_what_ran_and_what_the_check_covered():
    from harness.dashboard.sections import row_status_html

    doc = _doc("sim-tiny")
    rows = [r for r in doc["rows"] if r.get("status") == "ok"]
    rows[0]["sampling"] = {"policy": "auto", "sampled": True, "simulated_fraction": 0.0197, "coverage": 0.018}
    rows[1]["sampling"] = {"policy": "auto", "sampled": False, "simulated_fraction": 1.0, "coverage": 1.0}
    records = {r["key"]: r for r in data.row_records(doc)}
    assert records[rows[0]["key"]]["sampled_fraction"] == 0.0197 and records[rows[1]["key"]]["sampled_fraction"] is None
    html = row_status_html(data.Run(run_dir=RUNS / "sim-tiny", doc=doc))
    assert "1 row(s) simulated in part" in html and f"{rows[0]['key']} (1.97% of CTAs, check covered 1.80%)" in html
