"""An NsightTable as aligned text or CSV (what `ptxmoe nsight FILE [--csv]` prints).

Each row shows its whole NVTX push/pop stack, outer to inner ranges joined by "/" (e.g. `run_test/daxpy`), so
kernels can be grouped by an outer range; the CSV also keeps the innermost range alone in `nvtx_range`.
"""
from __future__ import annotations

import csv
import io

STACK_SEPARATOR = "/"
CSV_COLUMNS = ("launch", "kernel", "nvtx_range", "nvtx_stack", "metric", "value", "unit")
TEXT_COLUMNS = ("launch", "kernel", "nvtx_stack", "metric", "value", "unit")
COLUMNS = CSV_COLUMNS


def format_value(value, exact: bool = False) -> str:
    """A cell: "n/a" for None; integral floats without ".0"; other floats exactly (repr) or to 6 digits."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value) if exact else f"{value:.6g}"
    return str(value)


def stack_text(row) -> str:
    """The row's NVTX push/pop stack, outermost first, as "outer/inner" ("" when it is in no range)."""
    names = [name for _, name in row.nvtx_stack] or ([row.nvtx_range] if row.nvtx_range else [])
    return STACK_SEPARATOR.join(names)


def _cells(row, exact, columns):
    cells = {"launch": "" if row.launch is None else str(row.launch), "kernel": row.kernel,
             "nvtx_range": row.nvtx_range, "nvtx_stack": stack_text(row), "metric": row.metric,
             "value": format_value(row.value, exact), "unit": row.unit}
    return [cells[c] for c in columns]


def to_csv(table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_cells(row, True, CSV_COLUMNS) for row in table.rows)
    return out.getvalue()


def to_text(table, max_kernel: int = 60) -> str:
    if not table.rows:
        return f"{table.path}: no results ({table.empty_reason or 'empty'})\n"
    cells = []
    for row in table.rows:
        line = _cells(row, False, TEXT_COLUMNS)
        if len(line[1]) > max_kernel:
            line[1] = line[1][:max_kernel - 3] + "..."
        cells.append(line)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(TEXT_COLUMNS)]
    right = {TEXT_COLUMNS.index("launch"), TEXT_COLUMNS.index("value")}
    lines = []
    for line in [list(TEXT_COLUMNS)] + cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n"
