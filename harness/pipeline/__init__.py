"""Pipeline-parallel schedule simulator: 1F1B, ZB1P, DualPipe, DualPipeV against DeepSeek-V3's Table 2.

    from harness.pipeline import ChunkTimes, dualpipe, simulate, measure, schedule_table
    timeline = simulate(dualpipe(8, 20), ChunkTimes(F=1, B=2, W=1, FB=2.5))
    measure(timeline).bubble  # == (8/2-1) * (2.5 + 2 - 3*1)

Pure Python; imports nothing from ptxsim or the kernels. Plotly is imported only inside gantt_figure.
"""
from harness.pipeline.engine import check_timeline, op_dependencies, simulate, validate
from harness.pipeline.metrics import Metrics, measure
from harness.pipeline.model import (
    Chunk,
    ChunkTimes,
    DeadlockError,
    DependencyError,
    Placed,
    Schedule,
    ScheduleError,
    Timeline,
)
from harness.pipeline.report import EXACT_WHEN, FORMULAS, formula_bubble, gantt_figure, gantt_rows, schedule_table
from harness.pipeline.schedules import BUILDERS, dualpipe, dualpipev, one_f_one_b, zb1p

__all__ = [
    "BUILDERS", "EXACT_WHEN", "FORMULAS", "Chunk", "ChunkTimes", "DeadlockError", "DependencyError", "Metrics",
    "Placed", "Schedule", "ScheduleError", "Timeline", "check_timeline", "dualpipe", "dualpipev", "formula_bubble",
    "gantt_figure", "gantt_rows", "measure", "one_f_one_b", "op_dependencies", "schedule_table", "simulate",
    "validate", "zb1p",
]
