"""`nsys stats -f csv` reports: cuda_gpu_kern_sum (gpukernsum), nvtx_sum (nvtxsum) and nvtx_pushpop_trace.

Files written with `-o PREFIX` have no preamble; captured stdout has "Processing [...]" lines and may hold several
reports, each a CSV block ended by a blank line: every recognised block is read. Column units come from the header
("Total Time (ns)"); old headers without units (Average, Minimum...) are in ns.
"""
from __future__ import annotations

import csv
import math
import re

from harness.nsight.errors import NsightFormatError
from harness.nsight.ncu_csv import split_lines
from harness.nsight.table import PTXMOE_DOMAIN, MetricRow, NsightTable
from harness.nsight.units import normalise, parse_number

_LABEL = re.compile(r"(?P<label>.*?)\s*\((?P<unit>[^()]*)\)")
_ALIASES = {"Average": "Avg", "Median": "Med", "Minimum": "Min", "Maximum": "Max"}
_UNITLESS_NS = frozenset({"Average", "Median", "Minimum", "Maximum", "StdDev", "Avg", "Med", "Min", "Max"})
_IDENTITY = frozenset({"Name", "Range", "Style", "PID", "TID", "RangeId", "ParentId", "RangeStack", "NameTree",
                       "GridXYZ", "BlockXYZ", "Domain", "Lvl"})
_DIMS = {"GridXYZ": ("grid_size", "block"), "BlockXYZ": ("block_size", "thread")}
NO_DATA_PREFIXES = ("SKIPPED:", "Processing [", "** ", "Generating SQLite", "NOTICE:", "WARNING:")


def report_kind(header: list[str]) -> str | None:
    """Which report a CSV header belongs to, or None."""
    cols = set(header)
    if "Range" in cols and ("Instances" in cols or "Total Time (ns)" in cols):
        return "nvtx_sum"
    if "Name" in cols and "Start (ns)" in cols and cols & {"RangeId", "Lvl", "NameTree", "RangeStack"}:
        return "nvtx_pushpop_trace"
    if "Name" in cols and "Instances" in cols:
        return "cuda_gpu_kern_sum"
    return None


def find_blocks(lines: list[str]) -> list[tuple[int, str]]:
    """(0-based header line, report kind) of every recognised report block."""
    blocks: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if "," not in line or (blocks and _inside(lines, blocks[-1][0], i)):
            continue
        try:
            header = next(csv.reader([line.lstrip("\ufeff")]))
        except csv.Error:
            continue
        kind = report_kind([h.strip() for h in header])
        if kind:
            blocks.append((i, kind))
    return blocks


def _inside(lines, start, i) -> bool:
    """Whether line i still belongs to the block whose header is at `start` (no blank line between)."""
    return all(lines[j].strip() for j in range(start, i + 1))


def split_domain(name: str, strict: bool) -> tuple[str, str]:
    """(domain, range) of a stats range name: ":name" is the default domain; "dom:name" is split on the first ':'
    (strict: only for the ptxmoe domain, as trace names may hold ':' themselves)."""
    if name.startswith(":"):
        return "", name[1:]
    head, sep, tail = name.partition(":")
    if sep and (not strict or head == PTXMOE_DOMAIN):
        return head, tail
    return "", name


def _metric_columns(header):
    """(index, metric, unit) for each numeric column."""
    out = []
    for i, col in enumerate(header):
        if col in _IDENTITY or not col:
            continue
        match = _LABEL.fullmatch(col)
        label, unit = (match["label"], match["unit"]) if match else (col, "ns" if col in _UNITLESS_NS else "")
        out.append((i, _ALIASES.get(label, label), unit))
    return out


def parse_nsys_stats(text: str, path, blocks) -> NsightTable:
    """Rows of every block in `blocks` (from find_blocks)."""
    lines = split_lines(text)
    rows = []
    for start, kind in blocks:
        end = start
        while end < len(lines) and lines[end].strip():
            end += 1
        rows += _block(lines[start:end], start, kind, path)
    kinds = sorted({kind for _, kind in blocks})
    fmt = f"nsys-stats:{kinds[0]}" if len(kinds) == 1 else "nsys-stats"
    reason = "" if rows else f"nsys stats report ({', '.join(kinds)}) with a header but no rows"
    return NsightTable(str(path), fmt, tuple(rows), {}, reason)


def _records(block, offset, path):
    block = [block[0].lstrip("\ufeff")] + block[1:]
    reader = csv.reader(block, strict=True)
    try:
        for fields in reader:
            yield offset + reader.line_num, fields
    except csv.Error as exc:
        raise NsightFormatError(path, offset + reader.line_num + 1, "well-formed CSV", found=str(exc)) from None


def _block(block, offset, kind, path) -> list[MetricRow]:
    records = list(_records(block, offset, path))
    header = [h.strip() for h in records[0][1]]
    metrics = _metric_columns(header)
    source = f"nsys-stats:{kind}"
    parsed = []
    for line, fields in records[1:]:
        if len(fields) != len(header):
            raise NsightFormatError(path, line, f"{len(header)} fields as in the {kind} header",
                                    found=f"{len(fields)} fields")
        cells = dict(zip(header, fields, strict=True))
        values = []
        for index, metric, unit in metrics:
            value = parse_number(fields[index])
            if isinstance(value, str):
                raise NsightFormatError(path, line, f"a number in column {header[index]!r}", found=value)
            values.append((metric, *normalise(value, unit)))
        for col, (metric, unit) in _DIMS.items():
            dims = [int(d) for d in cells.get(col, "").split() if d.isdigit()]
            if dims:
                values.append((metric, float(math.prod(dims)), unit))
        parsed.append((line, cells, values))
    if kind == "cuda_gpu_kern_sum":
        return [MetricRow(source, c["Name"], "", m, v, u) for _, c, vals in parsed for m, v, u in vals]
    if kind == "nvtx_sum":
        out = []
        for _, cells, vals in parsed:
            domain, name = split_domain(cells["Range"], strict=False)
            out += [MetricRow(source, "", name, m, v, u, None, domain, ((domain, name),)) for m, v, u in vals]
        return out
    return _trace_rows(parsed, source, path)


def _trace_rows(parsed, source, path) -> list[MetricRow]:
    """nvtx_pushpop_trace: one row per range instance and column; the stack comes from RangeStack ids."""
    by_id = {}
    for line, cells, _ in parsed:
        if cells.get("RangeId", "").strip():
            try:
                by_id[int(cells["RangeId"])] = split_domain(cells["Name"], strict=True)
            except ValueError:
                raise NsightFormatError(path, line, "an integer RangeId", found=cells["RangeId"]) from None
    out = []
    for _, cells, vals in parsed:
        domain, name = split_domain(cells["Name"], strict=True)
        ids = [int(t) for t in cells.get("RangeStack", "").split(":") if t.strip().isdigit()]
        stack = tuple(by_id[i] for i in ids if i in by_id) or ((domain, name),)
        launch = int(cells["RangeId"]) if cells.get("RangeId", "").strip() else None
        out += [MetricRow(source, "", name, m, v, u, launch, domain, stack) for m, v, u in vals]
    return out
