"""The .ncu-rep framing check: truncated, corrupt and foreign files are errors naming the byte; an empty report is
a valid report with no kernels (ncu_report itself reads all of these as an empty report, without a word)."""
import struct

import pytest

from harness.cli import main
from harness.nsight import NsightFormatError, read_nsight
from harness.nsight.ncu_rep_file import MAGIC, check_ncu_rep, protobuf_varints


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _message(**fields) -> bytes:
    """A protobuf message of varint fields given as f<number>=value, plus a string field 4 as padding."""
    body = b"".join(_varint(int(name[1:]) << 3) + _varint(value) for name, value in fields.items())
    return body + _varint(4 << 3 | 2) + _varint(5) + b"table"


def report_bytes(results=(2,), version=11) -> bytes:
    """A .ncu-rep with the real framing: magic, FileHeader, then one block per entry of `results` (kernel results
    announced by its header), each with a payload of one length-prefixed entry per result."""
    header = _varint(1 << 3) + _varint(version)
    out = MAGIC + struct.pack("<I", len(header)) + header
    for n in results:
        payload = b"".join(struct.pack("<I", 3) + b"abc" for _ in range(n))
        block = _message(f1=0, f2=n, f5=len(payload))
        out += struct.pack("<I", len(block)) + block + payload
    return out


def test_a_well_framed_report_walks_to_its_end(tmp_path):
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(report_bytes((2, 0, 3)))
    layout = check_ncu_rep(path)
    assert (layout.version, layout.blocks, layout.results) == (11, 3, 5)


@pytest.mark.parametrize("cut", [1, 7, 20, -1, -4, -9])
def test_truncation_anywhere_is_an_error_naming_the_byte(tmp_path, cut):
    data = report_bytes((2, 3))
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(data[:cut])
    with pytest.raises(NsightFormatError, match=r"byte \d+: expected .*(truncated|magic)"):
        check_ncu_rep(path)


def test_corrupt_header_and_foreign_files(tmp_path):
    data = bytearray(report_bytes((2,)))
    data[len(MAGIC) + 4 + 2 + 4] = 0x07  # the block header's first key: wire type 7 does not exist
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(bytes(data))
    with pytest.raises(NsightFormatError, match="the header of block 0 as a protobuf message.*corrupt"):
        check_ncu_rep(path)
    path.write_bytes(b"this is not an Nsight Compute report\n" * 10)
    with pytest.raises(NsightFormatError, match=r"byte 0: expected the magic bytes b'NVR\\x00'"):
        check_ncu_rep(path)
    path.write_bytes(b"")
    with pytest.raises(NsightFormatError, match=r"empty file \(0 bytes\)"):
        check_ncu_rep(path)


def test_protobuf_walk_rejects_cut_messages():
    assert protobuf_varints(_message(f1=1, f2=300, f5=70000)) == {1: 1, 2: 300, 5: 70000}
    for bad in (b"\x10", b"\x10\x80", b"\x22\x05ab", b"\x00\x01"):
        with pytest.raises(ValueError):
            protobuf_varints(bad)


def test_cli_truncated_report_is_exit_2_and_an_empty_one_is_no_results(tmp_path, capsys):
    pytest.importorskip("ncu_report", reason="PyPI ncu-report not importable here")
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(report_bytes((2, 3))[:-5])
    assert main(["nsight", str(cut)]) == 2
    err = capsys.readouterr().err
    assert str(cut) in err and "truncated" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    # framing intact, but ncu_report reads none of the 2 announced results (their payloads are not real results)
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(report_bytes((2,)))
    assert main(["nsight", str(bad)]) == 2
    assert "the 2 kernel result(s) its block headers announce" in capsys.readouterr().err
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(report_bytes((0,)))
    table = read_nsight(empty)
    assert len(table) == 0 and "a valid report with no profiled kernels" in table.empty_reason
    assert main(["nsight", str(empty)]) == 0
    assert "no results (a valid report with no profiled kernels" in capsys.readouterr().out
