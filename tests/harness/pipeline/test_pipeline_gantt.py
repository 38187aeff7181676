"""Gantt rows carry every chunk with its times; the Plotly figure draws them and is never shown."""
from itertools import pairwise

import pytest

from harness.pipeline import ChunkTimes, dualpipe, gantt_figure, gantt_rows, simulate

T = ChunkTimes(F=1, B=2, W=1, FB=2.5)


def test_gantt_rows_cover_every_chunk_with_its_times():
    tl = simulate(dualpipe(4, 8), T)
    rows = gantt_rows(tl)
    assert len(rows) == sum(len(r) for r in tl.schedule.devices)
    for r in rows:
        assert {"device", "start", "end", "kind", "microbatch", "direction"} <= set(r)
        split = r["kind"] == "B" and "split" in r["label"]
        assert r["end"] - r["start"] == {"F": 1, "B": 1 if split else 2, "W": 1, "FB": 2.5}[r["kind"]], r
    fb = [r for r in rows if r["kind"] == "FB"]
    assert fb and all(r["backward_direction"] != r["direction"] for r in fb)
    split_b = [r for r in rows if r["kind"] == "B" and "split" in r["label"]]
    assert split_b and all(r["end"] - r["start"] == T.B - T.W for r in split_b)
    assert max(r["end"] for r in rows) == tl.makespan
    for device in range(4):   # per device, rows are in time order without overlap
        mine = [r for r in rows if r["device"] == device]
        assert all(a["end"] <= b["start"] for a, b in pairwise(mine))


def test_gantt_figure_draws_one_trace_per_kind_and_is_not_shown(monkeypatch):
    go = pytest.importorskip("plotly.graph_objects")
    monkeypatch.setattr(go.Figure, "show", lambda *a, **k: pytest.fail("gantt_figure must not call show()"))
    tl = simulate(dualpipe(4, 8), T)
    fig = gantt_figure(tl, "DualPipe PP=4")
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.text == "DualPipe PP=4"
    by_kind = {trace.name: trace for trace in fig.data}
    assert set(by_kind) == {"F", "B", "W", "FB"}
    rows = gantt_rows(tl)
    for kind, trace in by_kind.items():
        mine = [r for r in rows if r["kind"] == kind]
        assert list(trace.base) == [r["start"] for r in mine]
        assert list(trace.x) == [r["end"] - r["start"] for r in mine]
        assert list(trace.y) == [f"device {r['device']}" for r in mine]
