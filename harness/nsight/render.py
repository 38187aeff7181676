"""An NsightTable as aligned text or CSV (what `ptxmoe nsight FILE [--csv]` prints)."""
from __future__ import annotations

import csv
import io

COLUMNS = ("launch", "kernel", "nvtx_range", "metric", "value", "unit")


def format_value(value, exact: bool = False) -> str:
    """A cell: "n/a" for None; integral floats without ".0"; other floats exactly (repr) or to 6 digits."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value) if exact else f"{value:.6g}"
    return str(value)


def _cells(row, exact):
    launch = "" if row.launch is None else str(row.launch)
    return [launch, row.kernel, row.nvtx_range, row.metric, format_value(row.value, exact), row.unit]


def to_csv(table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(_cells(row, exact=True) for row in table.rows)
    return out.getvalue()


def to_text(table, max_kernel: int = 60) -> str:
    if not table.rows:
        return f"{table.path}: no results ({table.empty_reason or 'empty'})\n"
    cells = []
    for row in table.rows:
        line = _cells(row, exact=False)
        if len(line[1]) > max_kernel:
            line[1] = line[1][:max_kernel - 3] + "..."
        cells.append(line)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
    right = {0, 4}
    lines = []
    for line in [list(COLUMNS)] + cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n"
