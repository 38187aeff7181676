"""Run-time discovery of an nsys SQLite export's tables and columns (names vary by version: _V2/_V3 suffixes,
dropped columns), so nothing is assumed that sqlite_master and PRAGMA table_info do not show."""
from __future__ import annotations

import re

_VERSIONED = re.compile(r"(?P<base>.+?)(?:_V(?P<v>\d+))?$")


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class Schema:
    """Tables by base name (the highest _Vn suffix wins) with their column names."""

    def __init__(self, con):
        self.con = con
        best: dict[str, tuple[int, str]] = {}
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"):
            match = _VERSIONED.fullmatch(name)
            if match is None:  # empty, or a newline in it: no nsys table
                continue
            base, version = match["base"], int(match["v"] or 1)
            if base not in best or version > best[base][0]:
                best[base] = (version, name)
        self.tables = {base: name for base, (_, name) in best.items()}
        self._columns: dict[str, list[str]] = {}

    def has(self, base: str) -> bool:
        return base in self.tables

    def name(self, base: str) -> str:
        return self.tables[base]

    def columns(self, base: str) -> list[str]:
        if base not in self._columns:
            table = self.tables[base]
            self._columns[base] = [row[1] for row in self.con.execute(f"PRAGMA table_info({quote(table)})")]
        return self._columns[base]

    def pick(self, base: str, *candidates: str) -> str | None:
        """The first of `candidates` that `base` has, or None."""
        cols = self.columns(base) if self.has(base) else []
        return next((c for c in candidates if c in cols), None)

    def select(self, base: str, wanted: dict[str, str | None]):
        """Rows of `base` as dicts keyed like `wanted` (key -> column or None; None/missing columns read None)."""
        cols = self.columns(base)
        present = {key: col for key, col in wanted.items() if col and col in cols}
        if not present:
            return []
        sql = ", ".join(quote(col) for col in present.values())
        keys = list(present)
        missing = [key for key in wanted if key not in present]
        out = []
        for values in self.con.execute(f"SELECT {sql} FROM {quote(self.tables[base])}"):
            record = dict(zip(keys, values, strict=True))
            record.update(dict.fromkeys(missing))
            out.append(record)
        return out
