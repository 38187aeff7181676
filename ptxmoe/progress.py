"""The time a compare or sweep has left, learned from its rows so far: each case costs in proportion to its size
(the product of its numeric make_inputs arguments, e.g. n, or m x n: a sweep's points), each of its rows alike."""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any


def case_weight(params: Mapping[str, Any]) -> float:
    """A case's relative cost: the product of its positive numeric arguments (1 with none)."""
    numbers_given = [float(v) for v in params.values() if isinstance(v, numbers.Real) and not isinstance(v, bool)]
    sizes = [v for v in numbers_given if v > 0]
    return math.prod(sizes) if sizes else 1.0


class TimeLeft:
    """Rows done and the seconds they took, and what the remaining rows will take at the same seconds per unit of
    case weight."""

    def __init__(self, cases: Sequence[Mapping[str, Any]], rows_per_case: int):
        self.weights = [case_weight(c) for c in cases]
        self.rows_per_case = rows_per_case
        self.total = len(cases) * rows_per_case
        self.done = 0
        self.units = 0.0
        self.seconds = 0.0

    def row_done(self, case_index: int, seconds: float) -> None:
        self.done += 1
        self.units += self.weights[case_index]
        self.seconds += max(0.0, seconds)

    def left_s(self, case_index: int, rows_done_in_case: int) -> float | None:
        """Seconds left after `rows_done_in_case` rows of case `case_index`; None before any row has a time."""
        if self.units <= 0:
            return None
        remaining = (self.weights[case_index] * (self.rows_per_case - rows_done_in_case)
                     + sum(self.weights[case_index + 1:]) * self.rows_per_case)
        return remaining * self.seconds / self.units

    def line(self, case_index: int, rows_done_in_case: int) -> str:
        """"[3/8 rows, ~12 s left]"."""
        left = self.left_s(case_index, rows_done_in_case)
        shown = "" if left is None else f", ~{fmt_seconds(left)} left"
        return f"[{self.done}/{self.total} rows{shown}]"


def fmt_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"
