"""The one normalised table every Nsight reader returns, and the ptxmoe NVTX range labels.

A MetricRow is one value of one metric for one kernel launch (or one NVTX range, for nsys range reports), in base
units (see units.py). Our own ranges are `<kernel>/<impl>/<preset>/<skew>` in NVTX domain "ptxmoe", nested in a
run range; `ptxmoe_labels(row)` recovers (run, kernel, impl, preset, skew) from a row's NVTX stack.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

PTXMOE_DOMAIN = "ptxmoe"
ROWS_SCHEMA = "ptxmoe.nsight.rows.v1"
_PART = re.compile(r"[^\s/]+")


@dataclass(frozen=True)
class MetricRow:
    """One normalised value.

    Attributes:
        source: the layout it came from ("ncu-csv-details", "ncu-csv-raw", "ncu-rep", "nsys-sqlite",
            "nsys-stats:<report>").
        kernel: the kernel name as the tool wrote it ("" for rows about an NVTX range itself).
        nvtx_range: the innermost enclosing push/pop range name ("" when none).
        metric: the metric name as the tool wrote it (ncu) or a fixed name (nsys: duration, start, ...).
        value: float in `unit`, a string for non-numeric cells (device names), or None for a missing value (n/a).
        unit: the base unit ("ns", "byte", "byte/s", "hz", "%", "inst", ...; "" for none).
        launch: launch index/ID (ncu ID, nsys launch order, nvtx RangeId) or None.
        nvtx_domain: domain of `nvtx_range` ("" for the default or an unknown domain).
        nvtx_stack: every enclosing push/pop range as (domain, name), outermost first.
    """

    source: str
    kernel: str
    nvtx_range: str
    metric: str
    value: float | str | None
    unit: str
    launch: int | None = None
    nvtx_domain: str = ""
    nvtx_stack: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        record = asdict(self)
        record["nvtx_stack"] = [list(entry) for entry in self.nvtx_stack]
        return record

    @classmethod
    def from_dict(cls, record: dict) -> MetricRow:
        stack = tuple((str(d), str(n)) for d, n in record.get("nvtx_stack", ()))
        return cls(record["source"], record["kernel"], record["nvtx_range"], record["metric"], record["value"],
                   record["unit"], record.get("launch"), record.get("nvtx_domain", ""), stack)


@dataclass(frozen=True)
class NsightTable:
    """Rows read from one file. An empty table says why in `empty_reason` ("no results" is not an error)."""

    path: str
    format: str
    rows: tuple[MetricRow, ...]
    meta: dict = field(default_factory=dict, hash=False, compare=False)
    empty_reason: str = ""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def select(self, *, kernel=None, metric=None, nvtx_range=None, source=None) -> list[MetricRow]:
        """Rows whose given fields equal the given values (None matches anything)."""
        want = {k: v for k, v in
                {"kernel": kernel, "metric": metric, "nvtx_range": nvtx_range, "source": source}.items()
                if v is not None}
        return [row for row in self.rows if all(getattr(row, k) == v for k, v in want.items())]

    def to_json_dict(self) -> dict:
        return {"schema": ROWS_SCHEMA, "path": self.path, "format": self.format, "meta": dict(self.meta),
                "empty_reason": self.empty_reason, "rows": [row.to_dict() for row in self.rows]}

    @classmethod
    def from_json_dict(cls, doc: dict) -> NsightTable:
        return cls(doc["path"], doc["format"], tuple(MetricRow.from_dict(r) for r in doc["rows"]),
                   dict(doc.get("meta", {})), doc.get("empty_reason", ""))


def split_ptxmoe_range(name: str):
    """(kernel, impl, preset, skew) of a ptxmoe range name "<kernel>/<impl>/<preset>/<skew>", else None.

    Each part must be non-empty and free of whitespace; a "ptxmoe:" domain prefix (as nsys stats prints it)
    is accepted.
    """
    if not isinstance(name, str):
        return None
    if name.startswith(PTXMOE_DOMAIN + ":"):
        name = name[len(PTXMOE_DOMAIN) + 1:]
    parts = name.split("/")
    if len(parts) != 4 or not all(_PART.fullmatch(p) for p in parts):
        return None
    return tuple(parts)


@dataclass(frozen=True)
class PtxmoeLabels:
    """What a ptxmoe NVTX range says about a row; run is the enclosing range's name (None if not nested)."""

    run: str | None
    kernel: str
    impl: str
    preset: str
    skew: str


def ptxmoe_labels(row: MetricRow) -> PtxmoeLabels | None:
    """Labels of the innermost ptxmoe range enclosing `row`, or None when it is in none.

    A range counts when its domain is "ptxmoe", or unknown ("": the default domain, or a layout that does not
    record domains) and its name splits; run = the next range out in the same domain.
    """
    stack = row.nvtx_stack or ((row.nvtx_domain, row.nvtx_range),)
    for i in range(len(stack) - 1, -1, -1):
        domain, name = stack[i]
        if domain not in (PTXMOE_DOMAIN, ""):
            continue
        parts = split_ptxmoe_range(name)
        if parts is None:
            continue
        run = next((n for d, n in reversed(stack[:i]) if d == domain), None)
        return PtxmoeLabels(run, *parts)
    return None


def label_rows(rows) -> list[dict]:
    """Each row as a dict plus run, ptxmoe_kernel, impl, preset, skew (None when outside any ptxmoe range)."""
    out = []
    for row in rows:
        labels = ptxmoe_labels(row)
        record = row.to_dict()
        record.update(run=labels.run if labels else None, ptxmoe_kernel=labels.kernel if labels else None,
                      impl=labels.impl if labels else None, preset=labels.preset if labels else None,
                      skew=labels.skew if labels else None)
        out.append(record)
    return out


def short_kernel_name(name: str) -> str:
    """A normalised short kernel name for joining ncu and nsys rows ("void ns::k<int>(float *)" -> "k").

    Drops a leading return type, the argument list, template arguments and namespaces.
    """
    text = (name or "").strip()
    text = _strip_balanced(text, "(", ")")
    text = _strip_balanced(text, "<", ">")
    text = text.split()[-1] if text.split() else text
    return text.rsplit("::", 1)[-1]


def _strip_balanced(text: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()
