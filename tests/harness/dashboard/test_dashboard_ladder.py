"""The ladder on the dashboard (issue #16): per rung its time and three speedups, SLOWER rungs said, and the
per-implementation views unchanged by the extra rung rows.

The fixture is the three-implementation sim run (test_dashboard_three) with its grouped_gemm PTX path made a
three-rung ladder: rung 1 takes RUNG_FACTORS[1] x the PTX time, rung 2 RUNG_FACTORS[2] x (faster than the top rung,
so the top rung is SLOWER than the rung below it); verdicts come from the runner's own code.
"""
import copy
import json

import pytest
from dashboard_runs import copy_run
from test_dashboard_three import CPP_OVER_PTX, _scaled_cpp_row, three_impl_doc

from harness import dashboard, runner
from harness.dashboard import data, figures
from harness.dashboard.ladder import ladder_cells, slower_rungs
from harness.implementations import Ladder, Pair
from harness.run_records import Row
from harness.verdicts import _verdict, cell_pairs

NAMES = ("mma.sync", "wgmma", "wgmma+TMA")
RUNG_FACTORS = {1: 3.0, 2: 0.5}  # time of rung n / time of the top rung
LADDERED = "grouped_gemm"


def ladder_doc(name: str = "sim-tiny") -> dict:
    doc = three_impl_doc(name)
    ladder = Ladder("ptx", NAMES)
    rows = []
    for row in doc["rows"]:
        rows.append(row)
        if row["kernel"] != LADDERED or row["impl"] != "ptx":
            continue
        row["rung"] = ladder.rung("ptx")
        for number, factor in RUNG_FACTORS.items():
            extra = _scaled_cpp_row(row, factor)
            slot = ladder.slot(number)
            extra.update(impl="ptx", key=row["key"].replace("/ptx/", f"/{slot}/", 1), rung=ladder.rung(slot))
            rows.append(extra)
        for r in rows[-3:]:  # the model's interval of each rung: +-10 %
            r["timing"]["interval_us"] = [0.9 * r["timing"]["modelled_us"], 1.1 * r["timing"]["modelled_us"]]
    doc["rows"] = rows
    basis = "modelled" if doc["settings"]["backend"] == "sim" else "measured"
    verdicts = []
    for cell in dict.fromkeys((r["kernel"], r["variant"], r["preset"], r["skew"]) for r in rows):
        item = runner.Item(*cell, ladders=(ladder,) if cell[0] == LADDERED else ())
        typed = [Row.from_json(r) for r in rows if (r["kernel"], r["variant"], r["preset"], r["skew"]) == cell]
        by_slot = {data.row_slot(r): r for r in typed}
        verdicts += [_verdict(item, pair, by_slot, basis) for pair in cell_pairs(item, by_slot)]
    doc["verdicts"] = verdicts
    return doc


def _rung_rows(doc: dict, cell: dict) -> list[dict]:
    rows = [r for r in doc["rows"] if r.get("rung") and data.label_of(r["kernel"], r["variant"]) == cell["label"]
            and (r["preset"], r["skew"]) == (cell["preset"], cell["skew"])]
    return sorted(rows, key=lambda r: r["rung"]["number"])


def test_ladder_cells_give_each_rungs_time_and_three_speedups():
    doc = ladder_doc()
    cells = ladder_cells(doc)
    assert {(c["label"], c["skew"]) for c in cells} == {(f"{LADDERED}[{v}]", s) for v in ("up", "down")
                                                        for s in ("balanced", "imbalanced")}
    for c in cells:
        assert [r["number"] for r in c["rungs"]] == [1, 2, 3] and [r["name"] for r in c["rungs"]] == list(NAMES)
        assert list(c["baselines"]) == ["cpp", "numba"]
        top = c["rungs"][-1]["time_us"]
        assert [r["time_us"] for r in c["rungs"]] == pytest.approx([3.0 * top, 0.5 * top, top])
        r1, r2, r3 = c["rungs"]
        assert r1["below"] is None
        assert r2["below"]["speedup"] == pytest.approx(3.0 / 0.5) and r2["below"]["verdict"] == "FASTER"
        assert r3["below"]["speedup"] == pytest.approx(0.5) and r3["below"]["verdict"] == "SLOWER"
        assert r1["vs"]["cpp"]["speedup"] == pytest.approx(CPP_OVER_PTX / 3.0)  # cpp = 1.25 x top
        assert r3["vs"]["cpp"]["speedup"] == pytest.approx(CPP_OVER_PTX)  # the top rung's is the headline verdict
        numba = c["baselines"]["numba"]["time_us"]
        assert r2["vs"]["numba"]["speedup"] == pytest.approx(numba / (0.5 * top))
        assert all(r["limiter"] == data.row_limiter(Row.from_json(r0))
                   for r, r0 in zip(c["rungs"], _rung_rows(doc, c), strict=True))
        assert [(r["lo_us"], r["hi_us"]) for r in c["rungs"]] == [
            pytest.approx((0.9 * r["time_us"], 1.1 * r["time_us"])) for r in c["rungs"]]
    slower = slower_rungs(cells)
    assert len(slower) == 4 and all("rung 3 (wgmma+TMA) is SLOWER than rung 2: 0.50x" in s for s in slower)


def test_lower_rungs_leave_the_per_implementation_views_alone():
    plain, laddered = three_impl_doc("sim-tiny"), ladder_doc()
    assert [p.name for p in data.pairs_present(laddered)] == ["ptx-vs-cpp", "ptx-vs-numba", "cpp-vs-numba"]
    assert data.headline(laddered)["geomean"] == pytest.approx(data.headline(plain)["geomean"])
    assert data.headline(laddered)["n"] == data.headline(plain)["n"]
    assert data.sim_counter_records(laddered) == data.sim_counter_records(plain)
    assert data.instruction_mix(laddered) == data.instruction_mix(plain)
    recs = data.row_records(laddered)
    lower = [r for r in recs if r["lower_rung"]]
    assert len(lower) == 8 and {r["slot"] for r in lower} == {"ptx.r1", "ptx.r2"}
    assert {r["impl"] for r in lower} == {"ptx"}
    fig = figures.timing_distributions([r for r in recs if r["status"] == "ok" and not r["lower_rung"]], "modelled")
    assert sum(len(tr.y) for tr in fig.data) == len([r for r in plain["rows"] if r["status"] == "ok"])


def test_ladder_figure_draws_rungs_then_the_other_paths():
    cells = ladder_cells(ladder_doc())
    fig = figures.ladder_figure(cells, "modelled")
    assert len(fig.data) == len(cells)
    bar = fig.data[0]
    assert list(bar.x) == ["1 mma.sync", "2 wgmma", "3 wgmma+TMA", "CUDA C++", "Numba CUDA"]
    c = cells[0]
    assert list(bar.y) == pytest.approx([r["time_us"] for r in c["rungs"]]
                                        + [c["baselines"][b]["time_us"] for b in ("cpp", "numba")])
    assert list(bar.marker.color)[2] == figures.VERDICT_COLOURS["SLOWER"]
    assert "vs CUDA C++: " in bar.hovertext[0] and "first rung" in bar.hovertext[0]
    assert figures.ladder_figure([], "modelled") is None


def test_ladder_page_section(tmp_path):
    run_dir = copy_run("sim-tiny", tmp_path, "ladder")
    (run_dir / "run.json").write_text(json.dumps(ladder_doc()))
    text = dashboard.build(run_dir).read_text()
    body = text.split("</script></head>", 1)[1]
    section = body.split('<section id="ladder">', 1)[1].split("</section>", 1)[0]
    assert "<th>speedup over the rung below</th>" in section and "<th>speedup over CUDA C++</th>" in section
    assert section.count('data-rung="') == 12 and 'id="fig-ladder"' in section
    assert "4 rung(s) SLOWER than the rung below" in section
    assert '<a href="#ladder">' in text
    plain_dir = copy_run("sim-tiny", tmp_path, "plain")
    assert '<section id="ladder">' not in dashboard.build(plain_dir).read_text()  # no ladder: no section


def test_a_rung_row_without_a_time_says_why():
    doc = ladder_doc()
    broken = next(r for r in doc["rows"] if r["key"].startswith(f"{LADDERED}[up]/ptx.r1/tiny/balanced"))
    for key in ("timing", "throughput", "sim_counters"):
        broken.pop(key, None)
    broken.update(status="error", reason="RuntimeError: rung 1 broke")
    item = runner.Item(LADDERED, "up", "tiny", "balanced", (Ladder("ptx", NAMES),))
    by_slot = {data.row_slot(r): r for r in map(Row.from_json, doc["rows"])
               if r.key.split("/", 1)[0] == f"{LADDERED}[up]" and r.skew == "balanced"}
    doc["verdicts"] = [_verdict(item, p, by_slot, "modelled") for p in cell_pairs(item, by_slot)]
    cell = next(c for c in ladder_cells(copy.deepcopy(doc)) if c["label"] == f"{LADDERED}[up]")
    r1, r2, _ = cell["rungs"]
    assert r1["status"] == "error" and r1["time_us"] is None
    assert r2["below"]["speedup"] is None and "ptx.r1 error (RuntimeError: rung 1 broke)" in r2["below"]["reason"]


def test_a_users_implementation_named_like_a_rung_slot_is_a_pair_of_its_own():
    doc = three_impl_doc("sim-tiny")
    for v in doc["verdicts"]:
        if v["pair"] == "cpp-vs-numba":
            v.update(pair="v.r2-vs-numba", impl="v.r2")
    assert "v.r2-vs-numba" in [p.name for p in data.pairs_present(doc)]
    assert Pair("v.r2", "numba").title == "v.r2 vs Numba CUDA"
