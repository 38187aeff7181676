"""Plotly figures of a partition sweep (partition.json); each function returns a Figure and never shows it.

    from harness.partition.figures import dashboard_section
    figs = dashboard_section("profiles/<run-id>")     # [] when the folder has no partition.json

Titles say "modelled" or "measured" (the document's backend), so a modelled curve is never mistaken for hardware.
Strings taken from the file are HTML-escaped (Plotly renders a subset of HTML in labels).
"""
from __future__ import annotations

import html
from pathlib import Path

from harness.backends.kinds import KINDS

COLOURS = {"ptx/plain": "#E45756", "ptx/no_allocate": "#4C78A8", "numba/plain": "#54A24B", "cuda/plain": "#54A24B"}
DASHES = {"step overlapped (us)": "solid", "step back-to-back (us)": "dash", "step unpartitioned (us)": "dot"}
LAYOUT = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 60, "b": 60}, "height": 420,
          "legend": {"orientation": "h", "y": -0.2}, "hoverlabel": {"namelength": -1}}


def _t(value) -> str:
    return html.escape("" if value is None else str(value))


def _basis(doc: dict) -> str:
    kind = KINDS.get(str(doc.get("backend")))
    return kind.basis if kind is not None else "measured"


def _by_policy(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in doc.get("rows", []):
        out.setdefault(str(row.get("series")), []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: r["comm SMs"])
    return out


def _line(go, rows, x_key, y_key, name, colour, dash="solid", only_overlap=False):
    pts = [r for r in rows if r.get(y_key) is not None and (r["comm SMs"] > 0 or not only_overlap)]
    return go.Scatter(x=[r[x_key] for r in pts], y=[r[y_key] for r in pts], mode="lines+markers", name=_t(name),
                      line={"color": colour, "dash": dash})


def _figure(title: str, x_title: str, y_title: str, traces):
    import plotly.graph_objects as go

    fig = go.Figure(list(traces))
    fig.update_layout(title=_t(title), xaxis_title=_t(x_title), yaxis_title=_t(y_title), **LAYOUT)
    return fig


def bandwidth_figure(doc: dict):
    """Communication bandwidth (dispatch + combine bytes over their time) vs SMs given to it."""
    import plotly.graph_objects as go

    traces = [_line(go, rows, "comm SMs", "comm bandwidth (GB/s)", p, COLOURS.get(p, "#777"),
                    only_overlap=True) for p, rows in _by_policy(doc).items()]
    return _figure(f"Communication bandwidth vs SMs ({_basis(doc)})", "SMs for communication (N)", "GB/s", traces)


def gemm_figure(doc: dict):
    """GEMM throughput vs the SMs left to it (alone, and overlapped with each comm policy)."""
    import plotly.graph_objects as go

    traces = []
    for i, (p, rows) in enumerate(_by_policy(doc).items()):
        if i == 0:
            traces.append(_line(go, rows, "GEMM SMs", "GEMM (TFLOP/s)", "GEMM alone", "#333333"))
        pts = [r for r in rows if r.get("GEMM overlapped (us)")]
        flops = [r["GEMM (TFLOP/s)"] * r["GEMM (us)"] / r["GEMM overlapped (us)"] for r in pts]
        traces.append(go.Scatter(x=[r["GEMM SMs"] for r in pts], y=flops, mode="lines+markers",
                                 name=_t(f"GEMM next to {p} comm"), line={"color": COLOURS.get(p, "#777")}))
    return _figure(f"GEMM throughput vs remaining SMs ({_basis(doc)})", "SMs for the GEMM (132 - N)", "TFLOP/s",
                   traces)


def step_figure(doc: dict):
    """Step time (comm + GEMM) overlapped vs back to back vs unpartitioned, per policy."""
    import plotly.graph_objects as go

    traces = []
    for p, rows in _by_policy(doc).items():
        for key, dash in DASHES.items():
            traces.append(_line(go, rows, "comm SMs", key, f"{key.split(' (')[0]} [{p}]", COLOURS.get(p, "#777"),
                                dash))
    return _figure(f"Step time vs SMs for communication ({_basis(doc)})", "SMs for communication (N)", "us", traces)


def interference_figure(doc: dict):
    """The GEMM's slowdown from running next to the comm kernel, per series (plain vs no_allocate loads)."""
    import plotly.graph_objects as go

    traces = [go.Bar(x=[r["comm SMs"] for r in rows if r["comm SMs"] > 0],
                     y=[r["GEMM interference slowdown (%)"] for r in rows if r["comm SMs"] > 0],
                     name=_t(p), marker={"color": COLOURS.get(p, "#777")})
              for p, rows in _by_policy(doc).items()]
    title = f"GEMM slowdown from interference ({_basis(doc)}"
    title += ", interference constants are model assumptions)" if _basis(doc) == "modelled" else ")"
    fig = _figure(title, "SMs for communication (N)", "slowdown (%)", traces)
    fig.update_layout(barmode="group")
    return fig


FIGURES = (bandwidth_figure, gemm_figure, step_figure, interference_figure)


def figures(doc: dict) -> list:
    """Every figure of one partition document, in reading order."""
    return [make(doc) for make in FIGURES]


def dashboard_section(run_dir) -> list:
    """Figures for a run folder's partition.json; [] when the folder has none (not every run is a partition run).

    Raises:
        InputError: the file exists but is not a readable partition document.
    """
    from harness.partition.sweep import DOC_FILE, load_doc

    path = Path(run_dir)
    if not (path / DOC_FILE).is_file() and not (path.is_file() and path.name == DOC_FILE):
        return []
    return figures(load_doc(path))
