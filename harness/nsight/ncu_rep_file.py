"""The container layout of a .ncu-rep file, checked before NVIDIA's ncu_report module reads it.

ncu_report.load_report gives an empty report, and no error, for a file that is truncated, corrupt or no report at
all, so a damaged file would read as "no kernels profiled". The layout (as the ncu_report 2026.3 module's embedded
ProfilerReport.proto and the Extra-P/Kaitai description of the format agree):

    "NVR\\0"  u32 n  FileHeader (protobuf, n bytes: Version = 1)
    then blocks, to the end of the file:  u32 n  BlockHeader (protobuf, n bytes)  payload (PayloadSize bytes)

BlockHeader fields used here: NumSources = 1, NumResults = 2 (profiled kernel launches), PayloadSize = 5; all
little-endian. Only the framing and the protobuf wire format of the headers are checked, never the payloads'
content, so newer payload kinds pass.
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from harness.nsight.errors import NsightFormatError

MAGIC = b"NVR\x00"
FILE_VERSION, NUM_SOURCES, NUM_RESULTS, PAYLOAD_SIZE = 1, 1, 2, 5  # protobuf field numbers (see the docstring)
_EXPECTED = "an Nsight Compute report (.ncu-rep)"


@dataclass(frozen=True)
class ReportLayout:
    """What the framing says: the format version, the blocks and the kernel results their headers announce."""

    version: int | None
    blocks: int
    results: int


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("a varint runs past the end of the message")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def protobuf_varints(buf: bytes) -> dict[int, int]:
    """The varint fields (number -> last value) of one serialised protobuf message; ValueError if it is malformed.

    Every field is walked by its wire type (varint, 64-bit, length-delimited, 32-bit), so a message that is cut or
    overwritten almost always fails here.
    """
    fields, pos = {}, 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            fields[number], pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            pos += length
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        if pos > len(buf):
            raise ValueError(f"field {number} runs past the end of the message")
    return fields


def check_ncu_rep(path) -> ReportLayout:
    """Walk the framing of a .ncu-rep file.

    Raises:
        NsightFormatError: the file is empty, lacks the magic bytes, is cut short (a header or payload runs past the
            end) or has a header that is not a protobuf message; the message names the byte offset.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            if not path.stat().st_size:
                raise NsightFormatError(path, None, _EXPECTED, found="an empty file (0 bytes): truncated or never "
                                        "written")
            # NOTE: mapped, not read: reports reach hundreds of MB and only the headers are looked at
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _walk(path, data)
    except OSError as exc:
        raise NsightFormatError(path, None, "a readable file", found=exc.strerror or str(exc)) from None


def _walk(path: Path, data) -> ReportLayout:
    if data[:len(MAGIC)] != MAGIC:
        raise NsightFormatError(path, "byte 0", f"the magic bytes {MAGIC!r} of {_EXPECTED}", found=data[:8])
    version = _message(path, data, len(MAGIC), "the file header").get(FILE_VERSION)
    pos = len(MAGIC) + 4 + _u32(data, len(MAGIC))
    blocks = results = 0
    while pos < len(data):
        header = _message(path, data, pos, f"the header of block {blocks}")
        start = pos + 4 + _u32(data, pos)
        payload = header.get(PAYLOAD_SIZE, 0)
        if start + payload > len(data):
            raise NsightFormatError(path, f"byte {start}", f"the {payload}-byte payload of block {blocks}",
                                    found=f"{len(data) - start} bytes to the end: the file is truncated or corrupt")
        results += header.get(NUM_RESULTS, 0)
        blocks += 1
        pos = start + payload
    return ReportLayout(version, blocks, results)


def _u32(data: bytes, pos: int) -> int:
    return struct.unpack_from("<I", data, pos)[0]


def _message(path, data: bytes, pos: int, what: str) -> dict[int, int]:
    """The varint fields of the length-prefixed protobuf message at `pos`, or an NsightFormatError naming it."""
    if pos + 4 > len(data):
        raise NsightFormatError(path, f"byte {pos}", f"the 4-byte length of {what}",
                                found=f"{len(data) - pos} bytes to the end: the file is truncated")
    length = _u32(data, pos)
    if pos + 4 + length > len(data):
        raise NsightFormatError(path, f"byte {pos}", f"{what} of {length} bytes",
                                found=f"{len(data) - pos - 4} bytes to the end: the file is truncated or corrupt")
    try:
        return protobuf_varints(data[pos + 4:pos + 4 + length])
    except ValueError as exc:
        raise NsightFormatError(path, f"byte {pos + 4}", f"{what} as a protobuf message",
                                found=f"{exc}: the file is corrupt") from None
