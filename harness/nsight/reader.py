"""read_nsight(path): detect an Nsight file's layout and read it into one NsightTable.

Layouts: ncu CSV (details or raw page), nsys stats CSVs, nsys SQLite exports (.sqlite, .sqlite.gz), .ncu-rep.
A run that produced nothing (an empty file, ncu's ==PROF== lines without a header) is an empty table with its
reason, not an error; anything else we cannot place is an NsightFormatError naming file, line and expectation.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from harness.nsight import ncu_csv, nsys_stats
from harness.nsight.errors import NsightFormatError
from harness.nsight.table import NsightTable

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
NCU_MARKERS = ncu_csv.NCU_LINE_MARKERS
_UNEXPORTED = {".nsys-rep": "nsys-rep", ".qdrep": "qdrep"}


def read_nsight(path) -> NsightTable:
    """Read any supported Nsight file.

    Args:
        path: the file.
    Returns:
        NsightTable with rows in base units; `empty_reason` set when the file holds no results.
    Raises:
        NsightFormatError: the file is missing, unreadable, or malformed (the message names file, line, expectation).
        ToolchainError: a .ncu-rep file but the ncu_report module is not importable.
    """
    path = Path(path)
    if not path.is_file():
        found = "a directory" if path.is_dir() else "no such file"
        raise NsightFormatError(path, None, "an existing Nsight file", found=found)
    name = path.name.lower()
    if name.endswith(".ncu-rep"):
        from harness.nsight.ncu_rep import read_ncu_rep

        return read_ncu_rep(path)
    for suffix in _UNEXPORTED:
        if name.endswith(suffix):
            raise NsightFormatError(path, None, "an exported file (run `nsys export --type sqlite` or `nsys stats "
                                    "-f csv` on it first)", found=f"a raw {suffix} report")
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise NsightFormatError(path, None, "a complete gzip stream", found=str(exc)) from None
        return _read_bytes(path, data, gz=True)
    return _read_bytes(path, data, gz=False)


def _read_bytes(path: Path, data: bytes, gz: bool) -> NsightTable:
    from harness.nsight.nsys_sqlite import read_nsys_sqlite

    if data.startswith(SQLITE_MAGIC):
        return read_nsys_sqlite(path, data if gz else None)
    stem = path.name.lower().removesuffix(".gz")
    if stem.endswith((".sqlite", ".db")):
        raise NsightFormatError(path, "byte 0", "the SQLite header 'SQLite format 3' (nsys export --type sqlite)",
                                found=data[:16])
    return read_text(path, _decode(path, data))


def _decode(path, data: bytes) -> str:
    if b"\x00" in data[:4096]:
        raise NsightFormatError(path, "byte 0", "a text (CSV) or SQLite Nsight file", found="binary data")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise NsightFormatError(path, line, "UTF-8 text", found=f"byte 0x{data[exc.start]:02x}") from None


def read_text(path, text: str) -> NsightTable:
    """Read decoded CSV text of any of the CSV layouts."""
    lines = ncu_csv.split_lines(text)
    header = ncu_csv.find_header(lines)
    if header is not None:
        return ncu_csv.parse_ncu_csv(text, path, header)
    blocks = nsys_stats.find_blocks(lines)
    if blocks:
        return nsys_stats.parse_nsys_stats(text, path, blocks)
    return _no_header(path, lines)


def _no_header(path, lines) -> NsightTable:
    content = [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip()]
    if not content:
        return NsightTable(str(path), "empty", (), {}, "empty file (no results)")
    said = [line for _, line in content if line.startswith("==ERROR==")]
    said += [line for _, line in content if line.startswith(("==WARNING==", "==WARN=="))]
    if any(line.startswith(NCU_MARKERS) for _, line in content):
        detail = f": {said[0]}" if said else ""
        return NsightTable(str(path), "ncu-csv", (), {}, f"ncu output without a CSV header (no results){detail}")
    skipped = [line for _, line in content if line.startswith(nsys_stats.NO_DATA_PREFIXES)]
    if skipped:
        why = next((line for line in skipped if line.startswith("SKIPPED:")), skipped[0])
        return NsightTable(str(path), "nsys-stats", (), {}, f"nsys stats output without a report (no results): {why}")
    line, first = content[0]
    raise NsightFormatError(path, line, "an ncu CSV header starting '\"ID\",' or an nsys stats CSV header "
                            "(cuda_gpu_kern_sum, nvtx_sum, nvtx_pushpop_trace)", found=first)
