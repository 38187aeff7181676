"""Bring an Nsight file into a run folder: a copy under run_dir/nsight/ plus its normalised rows as JSON."""
from __future__ import annotations

import json
import os
from pathlib import Path

from harness.atomic import atomic_copy, atomic_write_text
from harness.nsight.errors import NsightFormatError
from harness.nsight.reader import read_nsight
from harness.nsight.table import ROWS_SCHEMA, NsightTable


def import_into_run(path, run_dir) -> Path:
    """Copy `path` into `run_dir/nsight/` and write `run_dir/nsight/<name>.rows.json`; returns the JSON's path.

    The file is parsed first, so malformed input writes nothing; both writes are atomic, and if the JSON cannot
    be written a copy made by this call is removed again.

    Raises:
        NsightFormatError: the file is not a readable Nsight file.
        OSError: the run folder cannot be written.
    """
    src = Path(path)
    table = read_nsight(src)
    dest_dir = Path(run_dir) / "nsight"
    copy = dest_dir / src.name
    rows_path = dest_dir / f"{src.name}.rows.json"
    same = copy.exists() and os.path.samefile(src, copy)
    existed = copy.exists()
    if not same:
        atomic_copy(src, copy)
    doc = table.to_json_dict()
    doc["path"] = str(copy)
    doc["imported_from"] = str(src)
    try:
        atomic_write_text(rows_path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    except BaseException:
        if not same and not existed:
            copy.unlink(missing_ok=True)
        raise
    return rows_path


def load_rows_json(path) -> NsightTable:
    """Read a `.rows.json` written by import_into_run back into a table."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise NsightFormatError(path, exc.lineno, "JSON written by import_into_run", found=exc.msg) from None
    if not isinstance(doc, dict) or doc.get("schema") != ROWS_SCHEMA:
        raise NsightFormatError(path, 1, f"a document with schema {ROWS_SCHEMA!r}",
                                found=doc.get("schema") if isinstance(doc, dict) else type(doc).__name__)
    try:
        return NsightTable.from_json_dict(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise NsightFormatError(path, None, "rows with source, kernel, nvtx_range, metric, value, unit",
                                found=str(exc)) from None
