"""nsys SQLite exports (`nsys export --type sqlite`), plain or gzipped: kernels, NVTX ranges, and the join between.

Kernel -> NVTX range (nsight-formats.md): the kernel joins its launching runtime call on (process, correlationId),
runtime rows deduplicated per correlationId first; the kernel then belongs to every push/pop range on the call's
globalTid with range.start <= call.start and range.end >= call.end (open end = +inf); the innermost is reported.
"""
from __future__ import annotations

import math
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote as url_quote

from harness.nsight.errors import NsightFormatError
from harness.nsight.sqlite_schema import Schema
from harness.nsight.table import MetricRow, NsightTable

SOURCE = "nsys-sqlite"
PUSH_POP, DOMAIN_CREATE = 59, 75
PID_MASK = 0xFFFFFFFFFF000000
KNOWN_TABLES = ("StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                "TARGET_INFO_GPU", "EXPORT_META_DATA", "META_DATA_EXPORT")
# (metric, unit, kernel-table columns multiplied together)
_KERNEL_METRICS = (
    ("grid_size", "block", ("gridX", "gridY", "gridZ")),
    ("block_size", "thread", ("blockX", "blockY", "blockZ")),
    ("registers_per_thread", "register/thread", ("registersPerThread",)),
    ("static_shared_memory", "byte/block", ("staticSharedMemory",)),
    ("dynamic_shared_memory", "byte/block", ("dynamicSharedMemory",)),
)
_GPU_COLUMNS = ("id", "name", "smCount", "memoryBandwidth", "clockRate", "l2CacheSize", "totalMemory",
                "computeMajor", "computeMinor")


def read_nsys_sqlite(path, data: bytes | None = None) -> NsightTable:
    """Read an nsys export at `path` (or its bytes in `data`, e.g. gunzipped) into a table.

    Raises:
        NsightFormatError: not an SQLite database, or not an nsys export, or a required column is missing.
    """
    try:
        con = _connect(Path(path), data)
    except sqlite3.DatabaseError as exc:
        raise NsightFormatError(path, None, "an SQLite database (nsys export --type sqlite)", found=str(exc)) from None
    try:
        return _read(con, path)
    except sqlite3.DatabaseError as exc:
        raise NsightFormatError(path, None, "a readable nsys SQLite export", found=str(exc)) from None
    finally:
        con.close()


def _connect(path: Path, data):
    if data is None:
        con = sqlite3.connect(f"file:{url_quote(str(path.resolve()))}?mode=ro", uri=True)
    else:
        if sys.version_info < (3, 11):  # requires-python is 3.10; Connection.deserialize came in 3.11
            raise NsightFormatError(path, None, "an uncompressed .sqlite export (reading a gzipped one needs "
                                    "Python >= 3.11)", found=f"Python {sys.version.split()[0]}")
        con = sqlite3.connect(":memory:")
        con.deserialize(data)
    con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # raises DatabaseError on a non-database
    return con


def _read(con, path) -> NsightTable:
    schema = Schema(con)
    if not any(schema.has(t) for t in KNOWN_TABLES):
        raise NsightFormatError(path, None, f"an nsys export (tables such as {', '.join(KNOWN_TABLES[:4])})",
                                found=", ".join(sorted(schema.tables)[:6]) or "no tables")
    strings = _strings(schema)
    meta = _meta(schema)
    domains, ranges = _nvtx(schema, strings, path)
    rows = _range_rows(ranges, domains)
    if not schema.has("CUPTI_ACTIVITY_KIND_KERNEL"):
        reason = "" if rows else "no CUPTI_ACTIVITY_KIND_KERNEL or NVTX_EVENTS table (nothing was traced)"
        return NsightTable(str(path), SOURCE, tuple(rows), meta, reason)
    kernel_rows = _kernel_rows(schema, strings, ranges, domains, path)
    rows = kernel_rows + rows
    reason = "" if rows else "the export holds no kernels and no NVTX ranges"
    return NsightTable(str(path), SOURCE, tuple(rows), meta, reason)


def _strings(schema) -> dict:
    if not schema.has("StringIds"):
        return {}
    return {r["id"]: r["value"] for r in schema.select("StringIds", {"id": "id", "value": "value"})}


def _meta(schema) -> dict:
    meta: dict = {}
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if schema.has(table):
            pairs = {r["name"]: r["value"] for r in schema.select(table, {"name": "name", "value": "value"})}
            for key in ("EXPORT_PRODUCT_VERSION", "EXPORT_SCHEMA_VERSION"):
                if key in pairs:
                    meta[key.lower().replace("export_", "nsys_")] = pairs[key]
    if schema.has("TARGET_INFO_GPU"):
        wanted = {c: c for c in _GPU_COLUMNS}
        meta["gpus"] = [{k: v for k, v in r.items() if v is not None} for r in schema.select("TARGET_INFO_GPU", wanted)]
    return meta


def _name(strings, text, text_id):
    if text_id is not None and text_id in strings:
        return str(strings[text_id])
    return "" if text is None else str(text)


def _nvtx(schema, strings, path):
    """((process, domain id) -> name, push/pop ranges as dicts start/end/tid/domain/name) from NVTX_EVENTS."""
    if not schema.has("NVTX_EVENTS"):
        return {}, []
    cols = {k: schema.pick("NVTX_EVENTS", k) for k in ("start", "end", "eventType", "text", "textId", "globalTid",
                                                        "domainId")}
    for key in ("start", "eventType", "globalTid"):
        if cols[key] is None:
            raise NsightFormatError(path, f"table {schema.name('NVTX_EVENTS')}", f"a column {key!r}",
                                    found=", ".join(schema.columns("NVTX_EVENTS")))
    domains, ranges = {}, []
    for r in schema.select("NVTX_EVENTS", cols):
        pid = (r["globalTid"] or 0) & PID_MASK  # NOTE: domain ids are per process
        if r["eventType"] == DOMAIN_CREATE and r["domainId"] is not None:
            domains[(pid, r["domainId"])] = _name(strings, r["text"], r["textId"])
        elif r["eventType"] == PUSH_POP and r["start"] is not None:
            end = math.inf if r["end"] is None else r["end"]
            ranges.append({"start": r["start"], "end": end, "tid": r["globalTid"],
                           "domain": (pid, r["domainId"] or 0), "name": _name(strings, r["text"], r["textId"])})
    ranges.sort(key=lambda g: (g["start"], -g["end"]))
    return domains, ranges


def enclosing(ranges_by_tid, spans):
    """For each span (tid, start, end), the ranges on tid enclosing it, outermost first (a sweep, not N x M)."""
    out = [()] * len(spans)
    by_tid = defaultdict(list)
    for i, (tid, start, end) in enumerate(spans):
        by_tid[tid].append((start, end, i))
    for tid, items in by_tid.items():
        ranges, ptr, active = ranges_by_tid.get(tid, []), 0, []
        for start, end, i in sorted(items):
            while ptr < len(ranges) and ranges[ptr]["start"] <= start:
                active.append(ranges[ptr])
                ptr += 1
            active = [g for g in active if g["end"] >= start]  # ended before this span: before every later one
            out[i] = tuple(g for g in active if g["end"] >= end)
    return out


def _by_tid(ranges):
    grouped = defaultdict(list)
    for g in ranges:
        grouped[g["tid"]].append(g)
    return grouped


def _stack(domains, found):
    return tuple((domains.get(g["domain"], ""), g["name"]) for g in found)


def _range_rows(ranges, domains) -> list[MetricRow]:
    """One `range_duration` row per push/pop range (None when it never ended), stacked in its enclosing ranges."""
    found = enclosing(_by_tid(ranges), [(g["tid"], g["start"], g["end"]) for g in ranges])
    rows = []
    for index, (g, inside) in enumerate(zip(ranges, found, strict=True)):
        duration = None if math.isinf(g["end"]) else float(g["end"] - g["start"])
        rows.append(MetricRow(SOURCE, "", g["name"], "range_duration", duration, "ns", index,
                              domains.get(g["domain"], ""), _stack(domains, inside)))
    return rows


def _runtime_calls(schema):
    """(process, correlationId) -> (tid, start, end) of the launching call, deduplicated (earliest start wins)."""
    if not schema.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return {}
    wanted = {k: schema.pick("CUPTI_ACTIVITY_KIND_RUNTIME", k) for k in ("start", "end", "globalTid",
                                                                         "correlationId")}
    if None in wanted.values():
        return {}
    calls: dict[tuple[int, int], tuple[int, int, int]] = {}
    for r in schema.select("CUPTI_ACTIVITY_KIND_RUNTIME", wanted):
        if None in (r["globalTid"], r["correlationId"], r["start"], r["end"]):
            continue
        key = (r["globalTid"] & PID_MASK, r["correlationId"])
        span = (r["globalTid"], r["start"], r["end"])
        old = calls.get(key)
        if old is None or (span[1], -span[2]) < (old[1], -old[2]):
            calls[key] = span
    return calls


def _load_kernels(schema, path) -> list[dict]:
    """Kernel rows (start, end, name, corr, pid and the _KERNEL_METRICS columns), in launch order."""
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    name_col = schema.pick(table, "demangledName", "shortName", "mangledName", "name")
    for key, col in (("start", schema.pick(table, "start")), ("end", schema.pick(table, "end")), ("name", name_col)):
        if col is None:
            raise NsightFormatError(path, f"table {schema.name(table)}", f"a kernel {key} column",
                                    found=", ".join(schema.columns(table)))
    extra = {c: c for _, _, cs in _KERNEL_METRICS for c in cs}
    kernels = schema.select(table, {"start": "start", "end": "end", "name": name_col,
                                    "corr": "correlationId", "pid": "globalPid", **extra})
    for k in kernels:
        if not all(isinstance(k[t], (int, float)) for t in ("start", "end")):
            raise NsightFormatError(path, f"table {schema.name(table)}", "numeric start and end times on every kernel",
                                    found=f"start={k['start']!r}, end={k['end']!r} (correlationId {k['corr']})")
    kernels.sort(key=lambda k: (k["start"], k["corr"] or 0))
    return kernels


def _launching_calls(kernels, calls) -> list:
    """The runtime call (tid, start, end) that launched each kernel, or None."""
    by_corr = defaultdict(list)
    for (_, corr), span in calls.items():
        by_corr[corr].append(span)
    out: list[tuple[int, int, int] | None] = []
    for k in kernels:
        if k["corr"] is None:
            out.append(None)
        elif k["pid"] is not None:
            out.append(calls.get((k["pid"] & PID_MASK, k["corr"])))
        else:  # no globalPid column: join on correlationId alone when only one process has it
            spans = by_corr.get(k["corr"], ())
            out.append(spans[0] if len(spans) == 1 else None)
    return out


def _kernel_rows(schema, strings, ranges, domains, path) -> list[MetricRow]:
    kernels = _load_kernels(schema, path)
    launched_by = _launching_calls(kernels, _runtime_calls(schema))
    joined = [i for i, call in enumerate(launched_by) if call is not None]
    inside_of = dict(zip(joined, enclosing(_by_tid(ranges), [launched_by[i] for i in joined]), strict=True))
    rows = []
    for launch, k in enumerate(kernels):
        name = k["name"]
        name = str(strings.get(name, f"<StringIds {name} missing>")) if isinstance(name, int) else str(name or "")
        stack = _stack(domains, inside_of.get(launch, ()))
        domain, rng = stack[-1] if stack else ("", "")
        values = [("duration", float(k["end"] - k["start"]), "ns"), ("start", float(k["start"]), "ns"),
                  ("end", float(k["end"]), "ns")]
        for metric, unit, cols in _KERNEL_METRICS:
            dims = [k[c] for c in cols]
            if all(isinstance(v, (int, float)) for v in dims):
                values.append((metric, float(math.prod(dims)), unit))
        rows += [MetricRow(SOURCE, name, rng, m, v, u, launch, domain, stack) for m, v, u in values]
    return rows
