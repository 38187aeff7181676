"""Table 2 of the DeepSeek-V3 report next to the simulator's numbers, and Gantt data/figures for the dashboard.

FORMULAS holds the report's closed forms (Table 2, plus the DualPipeV row of deepseek-ai/DualPipe's README, which
compares at equal PP stages: DualPipeV has the same bubble, 2x parameters and PP+1 activations per device as
DualPipe, on PP/2 devices; the simulator confirms all three rather than assuming them). The formulas are
derived for idealised chunk times; this simulator reproduces them *exactly* inside the regions of EXACT_WHEN
(sufficient conditions found by sweeping dyadic times over PP 2..16 and several micro-batch counts, not proofs; the
tests re-sweep them with fresh seeds), and the `formula_exact` column says whether a given ChunkTimes lies inside:
- 1F1B: always.
- ZB1P: W <= F and W <= B - W (a deferred W must fit in the gaps it fills).
- DualPipe, DualPipeV: F == B - W (forward takes as long as the input-gradient backward, the usual F = B = W style
  assumption of the zero-bubble analysis), W <= F, and max(F, B) <= F&B <= F + B (overlap neither slower than the
  two chunks run back to back nor faster than the longer one). Outside it the measured bubble generally differs
  from the formula (e.g. F=1.5, B=2.5, W=0.75, F&B=3.25, PP=8 measures 9.75 against the formula's 10.5).
"""
from __future__ import annotations

from harness.pipeline.engine import simulate
from harness.pipeline.metrics import measure
from harness.pipeline.model import ChunkTimes, ScheduleError, Timeline
from harness.pipeline.schedules import BUILDERS

# method -> (bubble formula text, bubble(pp, times), parameter multiple, activation(pp), devices(pp))
FORMULAS = {
    "1F1B": ("(PP-1)(F+B)", lambda pp, t: (pp - 1) * (t.F + t.B), 1, lambda pp: pp, lambda pp: pp),
    "ZB1P": ("(PP-1)(F+B-2W)", lambda pp, t: (pp - 1) * (t.F + t.B - 2 * t.W), 1, lambda pp: pp, lambda pp: pp),
    "DualPipe": ("(PP/2-1)(F&B+B-3W)", lambda pp, t: (pp // 2 - 1) * (t.FB + t.B - 3 * t.W), 2,
                 lambda pp: pp + 1, lambda pp: pp),
    "DualPipeV": ("(PP/2-1)(F&B+B-3W)", lambda pp, t: (pp // 2 - 1) * (t.FB + t.B - 3 * t.W), 2,
                  lambda pp: pp + 1, lambda pp: pp // 2),
}


def _dualpipe_exact(t: ChunkTimes) -> bool:
    return t.F == t.B - t.W and t.W <= t.F and max(t.F, t.B) <= t.FB <= t.F + t.B


# method -> predicate on ChunkTimes: inside the region where the simulated bubble equals the formula exactly.
EXACT_WHEN = {
    "1F1B": lambda t: True,
    "ZB1P": lambda t: t.W <= t.F and t.W <= t.B - t.W,
    "DualPipe": _dualpipe_exact,
    "DualPipeV": _dualpipe_exact,
}


def formula_bubble(method: str, pp: int, times: ChunkTimes) -> float:
    """The report's bubble formula for `method` at `pp` stages."""
    if method not in FORMULAS:
        raise ScheduleError(f"unknown pipeline method {method!r}; expected one of {', '.join(FORMULAS)}")
    return FORMULAS[method][1](pp, times)


def schedule_table(pp: int, microbatches: int, times: ChunkTimes, methods=tuple(BUILDERS)) -> list[dict]:
    """Simulate every method at `pp` stages and `microbatches` micro-batches; one row per method.

    Args:
        pp: pipeline stages (even for DualPipe/DualPipeV).
        microbatches: micro-batches in all (DualPipe: both directions together; needs an even count >= 2*pp).
        times: chunk times.
        methods: which methods, default all four.

    NOTE: at equal PP the methods differ in devices (DualPipeV uses PP/2) and in work per device, so compare
    bubbles, not makespans, across rows (Table 2 compares bubbles).

    Returns:
        Rows with keys method, devices, pp, microbatches, makespan, bubble, formula, formula_bubble,
        formula_exact (times lie where the formula is exact), parameter_x, formula_parameter_x, activation
        (first device's peak), activation_max, formula_activation.

    Raises:
        ScheduleError: a method does not support these sizes (the message names the method and what it needs).
    """
    rows = []
    for method in methods:
        if method not in BUILDERS:
            raise ScheduleError(f"unknown pipeline method {method!r}; expected one of {', '.join(BUILDERS)}")
        text, bubble, params, activation, devices = FORMULAS[method]
        m = measure(simulate(BUILDERS[method](pp, microbatches), times))
        rows.append({
            "method": method,
            "devices": devices(pp),
            "pp": pp,
            "microbatches": microbatches,
            "makespan": m.makespan,
            "bubble": m.bubble,
            "formula": text,
            "formula_bubble": bubble(pp, times),
            "formula_exact": EXACT_WHEN[method](times),
            "parameter_x": m.parameter_x,
            "formula_parameter_x": params,
            "activation": m.activation_first,
            "activation_max": m.activation_max,
            "formula_activation": activation(pp),
        })
    return rows


def gantt_rows(timeline: Timeline) -> list[dict]:
    """One dict per chunk: device, start, end, kind, microbatch, direction (of the forward half for FB), stage,
    label, and for FB chunks backward_stage / backward_microbatch / backward_direction."""
    rows = []
    for row in timeline.placed:
        for p in row:
            c = p.chunk
            item = {"device": p.device, "start": p.start, "end": p.end, "kind": c.kind, "microbatch": c.microbatch,
                    "direction": c.direction, "stage": c.stage, "label": c.label()}
            if c.backward is not None:  # kind "FB"
                item.update(backward_stage=c.backward.stage, backward_microbatch=c.backward.microbatch,
                            backward_direction=c.backward.direction)
            rows.append(item)
    return rows


_COLOURS = {"F": "#4C78A8", "B": "#54A24B", "W": "#B279A2", "FB": "#F58518"}


def gantt_figure(timeline: Timeline, title: str):
    """A Plotly Gantt chart of `timeline` (one row per device, one colour per chunk kind); never shown here.

    Returns:
        plotly.graph_objects.Figure.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    rows = gantt_rows(timeline)
    for kind, colour in _COLOURS.items():
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        text = [f"{r['microbatch']}" + (f"/{r['backward_microbatch']}" if kind == "FB" else "") for r in mine]
        fig.add_trace(go.Bar(
            name=kind, orientation="h", base=[r["start"] for r in mine], x=[r["end"] - r["start"] for r in mine],
            y=[f"device {r['device']}" for r in mine], marker_color=colour, text=text, textposition="inside",
            hovertext=[f"{r['label']} [{r['start']}, {r['end']})" for r in mine], hoverinfo="text",
            marker_line_width=[2 if r["direction"] else 0.5 for r in mine]))
    devices = [f"device {d}" for d in range(len(timeline.placed))]
    fig.update_layout(title=title, barmode="overlay", xaxis_title="time", bargap=0.15,
                      yaxis={"categoryorder": "array", "categoryarray": devices[::-1]})
    return fig
