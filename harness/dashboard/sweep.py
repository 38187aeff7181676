"""The dashboard's "sweep" section (runs of ptxmoe.sweep): time, and achieved bandwidth / throughput, against the
first size axis, one line per implementation (and per value of the other axes), with the table behind them."""
from __future__ import annotations

from harness.dashboard.figures import PALETTE, SYMBOLS, _fig, t
from harness.dashboard.html import esc, section, table
from harness.run_records import Sweep


def sweep_records(sweep: Sweep) -> list[dict]:
    """One record per row that ran and passed, with a time: {impl, x (the first axis), series (impl and the other
    axes' values), time_us, gbps, tflops, preset}; failed rows are no result and stay out of the plot."""
    axes = sweep.settings.axes
    out = []
    for row in sweep.rows:
        if row.status != "ok" or row.time_us is None or axes[0] not in row.params:
            continue
        others = ", ".join(f"{a}={row.params.get(a)}" for a in axes[1:])
        tp = row.throughput
        out.append({"impl": row.impl, "x": row.params[axes[0]], "series": row.impl + (f" [{others}]" if others
                                                                                         else ""),
                    "time_us": row.time_us, "gbps": tp.achieved_gbps if tp else None,
                    "tflops": tp.achieved_tflops if tp else None, "preset": row.preset})
    return out


def _lines(records: list[dict], key: str, title: str, axis: str, y_title: str):
    import plotly.graph_objects as go

    points = [r for r in records if r[key]]  # NOTE: 0 GB/s or TFLOP/s: that count was not given (min_bytes, flops)
    if not points:
        return None
    fig = _fig(title, xaxis_title=t(axis) + " (log)", xaxis_type="log", yaxis_title=y_title + " (log)",
               yaxis_type="log")
    series = list(dict.fromkeys(r["series"] for r in points))
    for i, name in enumerate(series):
        mine = sorted((r for r in points if r["series"] == name), key=lambda r: r["x"])
        fig.add_trace(go.Scatter(name=t(name), x=[r["x"] for r in mine], y=[r[key] for r in mine],
                                 mode="lines+markers", marker_color=PALETTE[i % len(PALETTE)],
                                 marker_symbol=SYMBOLS[i % len(SYMBOLS)],
                                 hovertext=[t(f"{r['series']} {r['preset']}: {r[key]:.4g}") for r in mine],
                                 hoverinfo="text"))
    return fig


def sweep_section(sweep: Sweep, figs: dict, basis: str) -> str:
    """The section, or "" for a run that is not a sweep."""
    axes = sweep.settings.axes
    if not axes:
        return ""
    records = sweep_records(sweep)
    body = ""
    for fig_id, key, what, unit in (("fig-sweep-time", "time_us", f"{basis} time", "µs"),
                                    ("fig-sweep-gbps", "gbps", "achieved bandwidth", "GB/s"),
                                    ("fig-sweep-tflops", "tflops", "achieved throughput", "TFLOP/s")):
        fig = _lines(records, key, t(f"{what.capitalize()} against {axes[0]}"), axes[0], f"{what} ({unit})")
        if fig is not None:
            figs[fig_id] = fig.to_json()
            body += f'<div class="fig" id="{esc(fig_id)}"></div>'
    rows = [[r["series"], r["x"], r["time_us"], r["gbps"], r["tflops"]] for r in records]
    body += table(["implementation", axes[0], f"{basis} time (µs)", "GB/s", "TFLOP/s"], rows)
    note = (f"Size axes: {', '.join(axes)}. Bandwidth and throughput need compare's min_bytes / flops; rows that "
            f"failed or have no time are left out.")
    return section("sweep", "Sweep over sizes", body, esc(note))
