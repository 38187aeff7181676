"""Plotly figures from the records of data.py; each returns a Figure, or None when there is nothing to draw.

Traces that belong to one (preset, skew) carry `meta={"preset": ..., "skew": ...}` so the page's filter can hide
them. Every string that came from a file goes through `t()` (HTML-escaped): Plotly renders a subset of HTML in
labels and decodes entities, so escaped text shows as typed and cannot become markup.
"""
from __future__ import annotations

import html

from harness.implementations import IMPL_NAMES, impl_name

COLOURS = {"numba": "#4C78A8", "cpp": "#54A24B", "cutlass": "#72B7B2", "triton": "#B279A2", "ptx": "#F58518"}
VERDICT_COLOURS = {"FASTER": "#2E7D32", "SAME": "#757575", "SLOWER": "#C62828", "UNDECIDED": "#B28704",
                   "NOT_MODELLED": "#6A1B9A", None: "#BDBDBD"}
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC",
           "#EECA3B", "#8CD17D", "#86BCB6")
LAYOUT = {"template": "none", "margin": {"l": 60, "r": 20, "t": 50, "b": 60}, "height": 420,
          "legend": {"orientation": "h", "y": -0.2}, "hoverlabel": {"namelength": -1}}


def t(value) -> str:
    """A file-derived string made safe for Plotly text (escaped; Plotly shows the entities as characters)."""
    # NOTE: quote=False: Plotly decodes &lt; &gt; &amp; but would print &quot; as is; quotes are harmless here
    # because with < and > escaped no tag (and so no attribute) can form in Plotly's text
    return html.escape("" if value is None else str(value), quote=False)


SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "x", "star", "hexagon")
PATTERNS = ("", "/", "x", ".", "\\", "+", "-", "|")


def _pattern(index: int) -> dict:
    """A bar pattern per (preset, skew) group, so groups of one colour stay apart in the legend."""
    return {"shape": PATTERNS[index % len(PATTERNS)], "fillmode": "overlay", "solidity": 0.3}


def _meta(preset, skew) -> dict:
    return {"preset": "" if preset is None else str(preset), "skew": "" if skew is None else str(skew)}


def _groups(records, *keys):
    out: dict = {}
    for r in records:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def _fig(title: str, **layout):
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.update_layout(**{**LAYOUT, "title": title, **layout})
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)  # long kernel / range names on horizontal bar charts
    return fig


def speedup_bars(verdicts: list[dict], basis: str, pair=None):
    """One pair's speedup per kernel (default: the pair of the first verdict with a speedup), one bar group per
    (preset, skew), interval as error bars."""
    import plotly.graph_objects as go

    rows = [v for v in verdicts if v["speedup"]]
    name = pair.name if pair is not None else (rows[0]["pair"] if rows else None)
    rows = [v for v in rows if v["pair"] == name]
    if not rows:
        return None
    impl, base = (IMPL_NAMES.get(rows[0][k], rows[0][k]) for k in ("impl", "baseline"))
    what = "modelled" if basis == "modelled" else "measured"
    fig = _fig(f"Speedup of {impl} over {base} ({what}; > 1: {impl} faster)", barmode="group",
               yaxis_title=f"speedup ({base} time / {impl} time)")
    for i, ((preset, skew), group) in enumerate(_groups(rows, "preset", "skew").items()):
        lo = [v["speedup"] - (v["ci_lo"] if v["ci_lo"] is not None else v["speedup"]) for v in group]
        hi = [(v["ci_hi"] if v["ci_hi"] is not None else v["speedup"]) - v["speedup"] for v in group]
        fig.add_trace(go.Bar(
            name=t(f"{preset}/{skew}"), x=[t(v["label"]) for v in group], y=[v["speedup"] for v in group],
            error_y={"type": "data", "array": hi, "arrayminus": lo, "visible": True},
            marker_color=[VERDICT_COLOURS.get(v["verdict"], "#BDBDBD") for v in group],
            marker_line={"color": "#333", "width": 1}, marker_pattern=_pattern(i),
            hovertext=[t(f"{v['label']} {preset}/{skew}: {v['speedup']:.2f}x [{v['ci_lo'] or 0:.2f}, "
                         f"{v['ci_hi'] or 0:.2f}] {v['verdict']} ({v['basis']})") for v in group],
            hoverinfo="text", meta=_meta(preset, skew)))
    fig.add_hline(y=1.0, line_dash="dash", line_color="#333")
    return fig


def timing_distributions(rows: list[dict], basis: str):
    """Measured: box plots of the per-row samples; modelled: one bar per row (the model's single estimate)."""
    import plotly.graph_objects as go

    ok = [r for r in rows if r["time_us"] is not None]
    if not ok:
        return None
    measured = any(r["samples_us"] for r in ok)
    title = "Timing distributions (device time per call, CUDA events)" if measured else \
        "Modelled time per row (ptxsim timing model; one estimate, no distribution)"
    times = [r["time_us"] for r in ok if r["time_us"] > 0]
    log = bool(times) and max(times) / min(times) > 20  # NOTE: log only when the rows span decades
    fig = _fig(title, boxmode="group", barmode="group", yaxis_title=("measured" if measured else "modelled")
               + " time (µs)" + (" (log)" if log else ""), yaxis_type="log" if log else "linear")
    cells = list(dict.fromkeys((r["preset"], r["skew"]) for r in ok))
    for (impl, preset, skew), group in _groups(ok, "impl", "preset", "skew").items():
        name = t(f"{IMPL_NAMES.get(impl, impl)} {preset}/{skew}")
        colour = COLOURS.get(impl, "#888")
        if measured:
            xs, ys = [], []
            for r in group:
                xs.extend([t(r["label"])] * len(r["samples_us"]))
                ys.extend(r["samples_us"])
            fig.add_trace(go.Box(name=name, x=xs, y=ys, marker_color=colour, boxpoints="outliers",
                                 meta=_meta(preset, skew)))
        else:
            fig.add_trace(go.Bar(name=name, x=[t(r["label"]) for r in group], y=[r["time_us"] for r in group],
                                 marker_color=colour, meta=_meta(preset, skew),
                                 marker_pattern=_pattern(cells.index((preset, skew))),
                                 hovertext=[t(f"{r['key']}: {r['time_us']:.3f} µs modelled, limiter "
                                              f"{r['limiter'] or '-'}") for r in group], hoverinfo="text"))
    return fig


def roofline(rows: list[dict], ceilings: dict | None):
    """Achieved TFLOP/s against arithmetic intensity (FLOP per minimum byte), under the device's roofs."""
    import numpy as np
    import plotly.graph_objects as go

    pts = [r for r in rows if r["achieved_tflops"] and r["intensity_flop_per_byte"]]
    if not pts:
        return None
    name = ceilings["name"] if ceilings else "unknown device"
    fig = _fig(f"Roofline ({t(name)}): achieved TFLOP/s vs arithmetic intensity", xaxis_type="log",
               yaxis_type="log", xaxis_title="arithmetic intensity (FLOP / minimum DRAM byte)",
               yaxis_title="achieved TFLOP/s")
    xs = [r["intensity_flop_per_byte"] for r in pts]
    kinds = {r["peak_flops_kind"] for r in pts}
    if ceilings and ceilings.get("bandwidth_Bps"):
        ai = np.logspace(np.log10(min(xs) / 4), np.log10(max(max(xs) * 4, 1e3)), 80)
        # NOTE: the fp8 roof only when an FP8 row is drawn (runner.PEAK_FLOPS_KIND: its % of peak is of fp8_dense)
        for label, peak, dash in (("fp8 dense (tensor cores)", ceilings.get("fp8_dense_flops")
                                   if "fp8_dense" in kinds else None, "dash"),
                                  ("bf16 dense (tensor cores)", ceilings.get("bf16_dense_flops"), "solid"),
                                  ("fp32", ceilings.get("fp32_flops"), "dot")):
            if peak:
                roof = np.minimum(peak, ceilings["bandwidth_Bps"] * ai) / 1e12
                fig.add_trace(go.Scatter(x=ai.tolist(), y=roof.tolist(), mode="lines", line={"dash": dash,
                                         "color": "#555"}, name=f"roof: {label}, "
                                         f"{ceilings['bandwidth_Bps'] / 1e12:.2f} TB/s", hoverinfo="name"))
    cells = list(dict.fromkeys((r["preset"], r["skew"]) for r in pts))
    for (impl, preset, skew), group in _groups(pts, "impl", "preset", "skew").items():
        fig.add_trace(go.Scatter(
            x=[r["intensity_flop_per_byte"] for r in group], y=[r["achieved_tflops"] for r in group],
            mode="markers", marker={"size": 11, "color": COLOURS.get(impl, "#888"), "opacity": 0.85,
                                    "symbol": SYMBOLS[cells.index((preset, skew)) % len(SYMBOLS)]},
            name=t(f"{IMPL_NAMES.get(impl, impl)} {preset}/{skew}"), meta=_meta(preset, skew),
            hovertext=[t(f"{r['key']}: {r['achieved_tflops']:.3g} TFLOP/s, {r['achieved_gbps'] or 0:.1f} GB/s, "
                         f"{r['pct_peak_flops'] or 0:.2f}% of {r['peak_flops_kind']} peak") for r in group],
            hoverinfo="text"))
    return fig


def bandwidth_bars(rows: list[dict], ceilings: dict | None):
    """Achieved GB/s (minimum bytes / time) per row against the device's DRAM bandwidth."""
    import plotly.graph_objects as go

    pts = [r for r in rows if r["achieved_gbps"]]
    if not pts:
        return None
    peak = f"; dashed: {t(ceilings['name'])} peak {ceilings['bandwidth_Bps'] / 1e9:.0f} GB/s" \
        if ceilings and ceilings.get("bandwidth_Bps") else ""
    fig = _fig(f"Achieved bandwidth (minimum bytes moved / time){peak}", barmode="group",
               yaxis_title="GB/s (log)", yaxis_type="log")
    cells = list(dict.fromkeys((r["preset"], r["skew"]) for r in pts))
    for (impl, preset, skew), group in _groups(pts, "impl", "preset", "skew").items():
        fig.add_trace(go.Bar(marker_pattern=_pattern(cells.index((preset, skew))),
            name=t(f"{IMPL_NAMES.get(impl, impl)} {preset}/{skew}"), x=[t(r["label"]) for r in group],
            y=[r["achieved_gbps"] for r in group], marker_color=COLOURS.get(impl, "#888"), meta=_meta(preset, skew),
            hovertext=[t(f"{r['key']}: {r['achieved_gbps']:.1f} GB/s = {r['pct_peak_bandwidth'] or 0:.2f}% of peak")
                       for r in group], hoverinfo="text"))
    if ceilings and ceilings.get("bandwidth_Bps"):
        import math

        lo = min(r["achieved_gbps"] for r in pts) / 2
        fig.update_yaxes(range=[math.log10(lo), math.log10(ceilings["bandwidth_Bps"] / 1e9 * 2)])
        fig.add_hline(y=ceilings["bandwidth_Bps"] / 1e9, line_dash="dash", line_color="#C62828")
    return fig


def stage_breakdown(stages: list[dict], basis: str):
    """The layer's time per stage, stacked, one bar per (impl, preset, skew)."""
    import plotly.graph_objects as go

    if not stages:
        return None
    fig = _fig(f"End-to-end layer: time per stage ({basis})", barmode="stack", xaxis_title=f"{basis} time (µs)",
               height=360, legend={"orientation": "v", "x": 1.02, "y": 1, "traceorder": "normal"})
    names = list(dict.fromkeys(s["stage"] for s in stages))
    shown = set()
    for (stage, preset, skew), group in _groups(stages, "stage", "preset", "skew").items():
        colour = PALETTE[names.index(stage) % len(PALETTE)]
        fig.add_trace(go.Bar(
            name=t(stage), orientation="h", y=[t(f"{IMPL_NAMES.get(s['impl'], s['impl'])} {preset}/{skew}")
                                               for s in group],
            x=[s["time_us"] for s in group], marker_color=colour, legendgroup=t(stage),
            showlegend=stage not in shown, meta=_meta(preset, skew),
            hovertext=[t(f"{stage}: {s['time_us']:.3f} µs ({100 * (s['share'] or 0):.1f}% of the layer)")
                       for s in group], hoverinfo="text"))
        shown.add(stage)
    return fig


def instruction_mix_figure(mix: list[dict]):
    """Simulator instruction mix: warp instructions per class, stacked, one bar per (kernel, impl)."""
    import plotly.graph_objects as go

    if not mix:
        return None
    fig = _fig("Instruction mix (simulator, warp instructions per class)", barmode="stack",
               yaxis_title="warp instructions", height=460)
    classes = list(dict.fromkeys(m["cls"] for m in mix))
    shown = set()
    for (cls, preset, skew), group in _groups(mix, "cls", "preset", "skew").items():
        fig.add_trace(go.Bar(
            name=t(cls), x=[[t(m["label"]) for m in group], [t(f"{m['impl']} {preset}/{skew}") for m in group]],
            y=[m["count"] for m in group], marker_color=PALETTE[classes.index(cls) % len(PALETTE)],
            legendgroup=t(cls), showlegend=cls not in shown, meta=_meta(preset, skew)))
        shown.add(cls)
    return fig


def sass_mix_figure(static: list[dict], top: int = 10):
    """Static SASS instruction mix per launched entry (top opcodes, the rest summed as "other")."""
    import plotly.graph_objects as go

    rows, seen = [], set()
    names: dict[tuple, list[str]] = {}
    for s in static:  # one bar per distinct cubin: the layer launches the same kernels as the single-kernel rows
        if s["sass_histogram"] and (s["impl"], s["launch"], s["digest"]) not in seen:
            seen.add((s["impl"], s["launch"], s["digest"]))
            rows.append(s)
            names.setdefault((s["impl"], s["launch"]), []).append(s["digest"])
    if not rows:
        return None
    totals: dict[str, int] = {}
    for s in rows:
        for op, n in s["sass_histogram"].items():
            totals[op] = totals.get(op, 0) + n
    ops = [op for op, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:top]]
    fig = _fig("Static SASS mix (nvdisasm, instructions in the cubin)", barmode="stack",
               xaxis_title="SASS instructions", height=max(300, 40 + 28 * len(rows)))
    ys = [t(f"{impl_name(s['impl'])}: {s['launch']}"
            + (f" ({s['digest']})" if len(names[(s["impl"], s["launch"])]) > 1 else "")) for s in rows]
    for i, op in enumerate([*ops, "other"]):
        xs = [s["sass_histogram"].get(op, 0) if op != "other" else
              sum(n for o, n in s["sass_histogram"].items() if o not in ops) for s in rows]
        fig.add_trace(go.Bar(name=t(op), orientation="h", y=ys, x=xs, marker_color=PALETTE[i % len(PALETTE)]))
    return fig


def timeline_figure(source: str, bars: list[dict]):
    """NVTX timeline: one horizontal bar per kernel launch (nsys) or range (harness), lanes by range."""
    import plotly.graph_objects as go

    if not bars:
        return None
    lanes = list(dict.fromkeys(b["lane"] for b in bars))
    fig = _fig(f"NVTX timeline ({t(source)})", barmode="overlay", xaxis_title="time since the first bar (ms)",
               height=max(260, 80 + 22 * len(lanes)), yaxis={"categoryorder": "array",
                                                              "categoryarray": [t(x) for x in lanes[::-1]]})
    shown = set()
    for (impl, preset, skew), group in _groups(bars, "impl", "preset", "skew").items():
        fig.add_trace(go.Bar(
            orientation="h", base=[b["start_ms"] for b in group], x=[max(b["end_ms"] - b["start_ms"], 1e-6)
                                                                     for b in group],
            y=[t(b["lane"]) for b in group],
            name=t(IMPL_NAMES.get(impl, impl or "outside ptxmoe ranges")),
            legendgroup=t(impl), showlegend=impl not in shown,
            marker_color=COLOURS.get(impl, "#72B7B2"), meta=_meta(preset, skew) if preset else None,
            hovertext=[t(f"{b['name']}: {b['start_ms']:.3f} to {b['end_ms']:.3f} ms "
                         f"({b['end_ms'] - b['start_ms']:.3f} ms); {b['detail']}") for b in group],
            hoverinfo="text"))
        shown.add(impl)
    return fig


def _speedup_text(what: str, s: dict | None) -> str:
    if not s or s.get("speedup") is None:
        return f"{what}: no verdict" + (f" ({s['reason']})" if s and s.get("reason") else "")
    return f"{what}: {s['speedup']:.2f}x {s.get('verdict') or ''}"


def ladder_figure(cells: list[dict], basis: str):
    """Where the gain comes from: each rung's time (interval as error bars), then the other paths' times, one bar
    group per laddered cell; a rung's bar is coloured by its verdict against the rung below it."""
    import plotly.graph_objects as go

    cells = [c for c in cells if any(r["time_us"] for r in c["rungs"])]
    if not cells:
        return None
    what = "modelled" if basis == "modelled" else "measured"
    fig = _fig(f"Where the gain comes from: {what} time per rung of the ladder, and the other paths",
               barmode="group", yaxis_title=f"{what} time (µs)")
    for i, c in enumerate(cells):
        bars = [(f"{r['number']} {r['name']}", r, COLOURS.get(c["impl"], "#888") if r["number"] == 1 or not
                 r["below"] else VERDICT_COLOURS.get(r["below"]["verdict"], "#BDBDBD"),
                 "; ".join([_speedup_text("vs the rung below", r["below"]) if r["below"] else "first rung",
                            *(_speedup_text(f"vs {impl_name(b)}", s) for b, s in r["vs"].items())]))
                for r in c["rungs"]]
        bars += [(impl_name(b), tm, COLOURS.get(b, "#888"), impl_name(b)) for b, tm in c["baselines"].items()]
        bars = [b for b in bars if b[1]["time_us"]]
        lo = [tm["time_us"] - (tm["lo_us"] if tm["lo_us"] is not None else tm["time_us"]) for _, tm, _, _ in bars]
        hi = [(tm["hi_us"] if tm["hi_us"] is not None else tm["time_us"]) - tm["time_us"] for _, tm, _, _ in bars]
        fig.add_trace(go.Bar(
            name=t(f"{c['label']} {c['preset']}/{c['skew']}"), x=[t(x) for x, _, _, _ in bars],
            y=[tm["time_us"] for _, tm, _, _ in bars], marker_color=[colour for _, _, colour, _ in bars],
            error_y={"type": "data", "array": hi, "arrayminus": lo, "visible": True},
            marker_line={"color": "#333", "width": 1}, marker_pattern=_pattern(i), meta=_meta(c["preset"], c["skew"]),
            hovertext=[t(f"{c['label']} {c['preset']}/{c['skew']}, {x}: {tm['time_us']:.3g} µs; {text}")
                       for x, tm, _, text in bars], hoverinfo="text"))
    return fig


def vs_figure(pairs: list[dict], name_a: str, name_b: str):
    """Per-row time in run A against run B (log-log) with the y = x line."""
    import plotly.graph_objects as go

    pts = [p for p in pairs if p["a_us"] and p["b_us"]]
    if not pts:
        return None
    fig = _fig(f"Time per row: {t(name_b)} vs {t(name_a)}", xaxis_type="log", yaxis_type="log",
               xaxis_title=f"{t(name_a)} (µs)", yaxis_title=f"{t(name_b)} (µs)")
    lo = min(min(p["a_us"], p["b_us"]) for p in pts) / 1.5
    hi = max(max(p["a_us"], p["b_us"]) for p in pts) * 1.5
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"dash": "dash", "color": "#555"},
                             name="y = x", hoverinfo="name"))
    cells = list(dict.fromkeys((p["preset"], p["skew"]) for p in pts))
    for (impl, preset, skew), group in _groups(pts, "impl", "preset", "skew").items():
        fig.add_trace(go.Scatter(
            x=[p["a_us"] for p in group], y=[p["b_us"] for p in group], mode="markers",
            marker={"size": 10, "color": COLOURS.get(impl, "#888"),
                    "symbol": SYMBOLS[cells.index((preset, skew)) % len(SYMBOLS)]}, meta=_meta(preset, skew),
            name=t(f"{IMPL_NAMES.get(impl, impl)} {preset}/{skew}"),
            hovertext=[t(f"{p['key']}: {p['a_us']:.3f} vs {p['b_us']:.3f} µs (x{p['b_over_a']:.2f})") for p in group],
            hoverinfo="text"))
    return fig


def pipeline_figure():
    """A DualPipe schedule Gantt (harness.pipeline, 8 ranks, 20 micro-batches; not from this run's data)."""
    from harness.pipeline import ChunkTimes, dualpipe, gantt_figure, simulate

    fig = gantt_figure(simulate(dualpipe(8, 20), ChunkTimes(F=1, B=2, W=1, FB=2.5)),
                       "DualPipe, 8 ranks, 20 micro-batches (F=1, B=2, W=1, FB=2.5; simulated schedule)")
    fig.update_layout(template="none", height=380, margin=LAYOUT["margin"])
    return fig


__all__ = ["bandwidth_bars", "instruction_mix_figure", "ladder_figure", "pipeline_figure", "roofline",
           "sass_mix_figure",
           "speedup_bars", "stage_breakdown", "timeline_figure", "timing_distributions", "vs_figure"]
