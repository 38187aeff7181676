"""ncu --csv output (live, or `ncu --import X.ncu-rep --csv`): the details page (long) and the raw page (wide).

Columns are found by name, so the 12-, 15- and 18-20-column headers of different ncu versions all read. Text before
the header (==PROF== lines, the program's stdout, a BOM) is skipped; short 2025.x rows are padded; rule-only rows
(empty metric cells) are skipped; `n/a` reads as None.
"""
from __future__ import annotations

import csv

from harness.nsight import ncu_nvtx
from harness.nsight.errors import NsightFormatError
from harness.nsight.table import MetricRow, NsightTable
from harness.nsight.units import normalise, parse_number

HEADER_START = '"ID",'
NCU_LINE_MARKERS = ("==PROF==", "==WARNING==", "==ERROR==", "==WARN==")
# Identity columns of either page; every other raw-page column (bar NVTX ones) is a metric.
IDENTITY = frozenset({
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name", "Kernel Time", "Context",
    "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
    "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup",
})
_KERNEL_COLUMNS = ("Kernel Name", "Function Name")


def split_lines(text: str) -> list[str]:
    r"""Lines of `text` without terminators (\n or \r\n only: splitlines() would also break on \x0c, \u2028...)."""
    return text.replace("\r\n", "\n").split("\n")


def find_header(lines: list[str]) -> int | None:
    """Index of the first line that starts an ncu CSV header, or None."""
    for i, line in enumerate(lines):
        if line.lstrip("\ufeff").startswith(HEADER_START):
            return i
    return None


def parse_ncu_csv(text: str, path, header_index: int) -> NsightTable:
    """Parse ncu CSV text whose header is on line `header_index` (0-based) into a table.

    Raises:
        NsightFormatError: broken quoting, a row longer than the header, a non-integer ID, a missing column,
            or a raw page without its units row.
    """
    lines = split_lines(text)
    lines[header_index] = lines[header_index].lstrip("\ufeff")
    records = list(_records(lines[header_index:], path, header_index))
    header = records[0][1]
    if "Metric Name" in header and "Metric Value" in header:
        return _details(records, path)
    return _raw(records, path)


def _records(lines, path, offset):
    """(1-based line number, fields) for each non-empty CSV record; ncu's own ==PROF== lines are blanked."""
    reader = csv.reader(("" if line.startswith(NCU_LINE_MARKERS) else line for line in lines), strict=True)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise NsightFormatError(path, offset + reader.line_num, "well-formed CSV (quoted fields closed)",
                                    found=str(exc)) from None
        if fields and any(f.strip() for f in fields):
            yield offset + reader.line_num, fields


def _column(header, names, path, line, what):
    for name in names:
        if name in header:
            return header.index(name)
    raise NsightFormatError(path, line, f"a {what} column ({' or '.join(repr(n) for n in names)}) in the header",
                            found=",".join(header))


def _fit(fields, width, path, line):
    """Pad a short row (2025.x writes fewer fields than the header); reject one with extra non-empty fields."""
    if len(fields) > width:
        if any(f.strip() for f in fields[width:]):
            raise NsightFormatError(path, line, f"at most {width} fields (the header's count)",
                                    found=f"{len(fields)} fields")
        return fields[:width]
    return fields + [""] * (width - len(fields))


def _launch_id(cell, path, line):
    try:
        return int(cell.strip())
    except ValueError:
        raise NsightFormatError(path, line, "an integer launch ID in column 'ID'", found=cell) from None


def _nvtx(fields, nvtx_columns):
    stack: tuple[tuple[str, str], ...] = ()
    for index in nvtx_columns:
        stack += ncu_nvtx.parse_push_pop_cell(fields[index])
    domain, name = ncu_nvtx.innermost(stack)
    return stack, domain, name


def _details(records, path) -> NsightTable:
    header_line, header = records[0]
    width = len(header)
    col_id = header.index("ID")
    col_kernel = _column(header, _KERNEL_COLUMNS, path, header_line, "kernel name")
    col_name, col_value = header.index("Metric Name"), header.index("Metric Value")
    col_unit = header.index("Metric Unit") if "Metric Unit" in header else None
    nvtx_columns = [i for i, h in enumerate(header) if ncu_nvtx.is_push_pop_column(h)]
    needed = max(col_id, col_kernel, col_name, col_value) + 1
    rows = []
    for line, fields in records[1:]:
        if fields == header:
            continue  # a repeated header (output of several ncu runs appended to one log)
        if len(fields) < needed:  # 2025.x rows may be short, but never short of the metric cells
            raise NsightFormatError(path, line, f"at least {needed} fields (through 'Metric Value')",
                                    found=f"{len(fields)} fields")
        fields = _fit(fields, width, path, line)
        metric = fields[col_name].strip()
        if not metric:
            continue  # a rule-only row: its metric cells are empty
        launch = _launch_id(fields[col_id], path, line)
        value, unit = normalise(parse_number(fields[col_value]), fields[col_unit] if col_unit is not None else "")
        stack, domain, name = _nvtx(fields, nvtx_columns)
        rows.append(MetricRow("ncu-csv-details", fields[col_kernel], name, metric, value, unit, launch, domain,
                              stack))
    reason = "" if rows else "ncu CSV header but no metric rows (nothing was profiled)"
    return NsightTable(str(path), "ncu-csv-details", tuple(rows), {}, reason)


def _raw(records, path) -> NsightTable:
    header_line, header = records[0]
    width = len(header)
    col_id = header.index("ID")
    col_kernel = _column(header, _KERNEL_COLUMNS, path, header_line, "kernel name")
    nvtx_all = [i for i, h in enumerate(header) if ncu_nvtx.is_nvtx_column(h)]
    nvtx_columns = [i for i in nvtx_all if ncu_nvtx.is_push_pop_column(header[i])]
    metrics = [i for i, h in enumerate(header) if h not in IDENTITY and i not in nvtx_all]
    if len(records) < 2:
        return NsightTable(str(path), "ncu-csv-raw", (), {}, "ncu raw-page header but no rows (nothing profiled)")
    units_line, units = records[1]
    units = _fit(units, width, path, units_line)
    if units[col_id].strip():
        raise NsightFormatError(path, units_line, "the raw page's units row (empty 'ID' cell) after the header",
                                found=",".join(units[:3]))
    rows = []
    for line, fields in records[2:]:
        if fields == header or not fields[col_id].strip():
            continue  # a repeated header or units row (several ncu runs appended to one log)
        fields = _fit(fields, width, path, line)
        launch = _launch_id(fields[col_id], path, line)
        stack, domain, name = _nvtx(fields, nvtx_columns)
        for index in metrics:
            cell = fields[index]
            if not cell.strip():
                continue  # metric not collected for this launch
            value, unit = normalise(parse_number(cell), units[index])
            rows.append(MetricRow("ncu-csv-raw", fields[col_kernel], name, header[index], value, unit, launch,
                                  domain, stack))
    reason = "" if rows else "ncu raw page with a units row but no launches (nothing profiled)"
    return NsightTable(str(path), "ncu-csv-raw", tuple(rows), {}, reason)
