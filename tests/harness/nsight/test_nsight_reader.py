"""read_nsight's format detection, "no results" cases and whole-file errors."""
import gzip

import pytest

from harness.nsight import NsightFormatError, read_nsight


@pytest.mark.parametrize("name,fmt", [
    ("ncu_details_2021_12col_preamble.csv", "ncu-csv-details"),
    ("ncu_raw_page_units_row.csv", "ncu-csv-raw"),
    ("nsys_cuda_gpu_kern_sum.csv", "nsys-stats:cuda_gpu_kern_sum"),
    ("nsys_nvtx_sum_domains.csv", "nsys-stats:nvtx_sum"),
])
def test_detects_each_text_layout(own, name, fmt):
    table = read_nsight(own(name))
    assert table.format == fmt and len(table) > 0 and {r.source for r in table.rows} == {fmt}


@pytest.mark.parametrize("name,reason", [("empty.csv", "empty file"),
                                         ("ncu_no_results.txt", "No kernels were profiled")])
def test_no_results_is_an_empty_table_not_an_error(own, name, reason):
    table = read_nsight(own(name))
    assert len(table) == 0 and reason in table.empty_reason


def test_gzipped_csv_reads_like_the_plain_one(own, tmp_path):
    src = own("ncu_details_2023_20col_nvtx_rules.csv")
    gz = tmp_path / "details.csv.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert [r for r in read_nsight(gz).rows] == list(read_nsight(src).rows)


def test_unknown_text_names_line_and_layouts(own):
    path = own("not_nsight.txt")
    with pytest.raises(NsightFormatError) as info:
        read_nsight(path)
    assert info.value.where == 1 and '"ID",' in info.value.expected and "nvtx_sum" in info.value.expected


def test_missing_file(tmp_path):
    with pytest.raises(NsightFormatError, match="no such file"):
        read_nsight(tmp_path / "nope.csv")


def test_unexported_nsys_report_says_how_to_export(tmp_path):
    path = tmp_path / "run.nsys-rep"
    path.write_bytes(b"\x00\x01binary")
    with pytest.raises(NsightFormatError, match="nsys export --type sqlite"):
        read_nsight(path)


def test_binary_and_bad_utf8(tmp_path):
    binary = tmp_path / "blob.csv"
    binary.write_bytes(b"\x00\x00\x01\x02" * 10)
    with pytest.raises(NsightFormatError, match="binary data"):
        read_nsight(binary)
    bad = tmp_path / "latin1.csv"
    bad.write_bytes('"ID","Kernel Name"\n"0","caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(NsightFormatError) as info:
        read_nsight(bad)
    assert info.value.where == 2 and info.value.expected == "UTF-8 text"


def test_truncated_gzip(tmp_path, own):
    path = tmp_path / "cut.sqlite.gz"
    path.write_bytes(gzip.compress(own("nsys_cuda_gpu_kern_sum.csv").read_bytes())[:-12])
    with pytest.raises(NsightFormatError, match="gzip"):
        read_nsight(path)


def test_sqlite_named_file_that_is_text(tmp_path):
    path = tmp_path / "export.sqlite"
    path.write_text("Time (%),Name\n")
    with pytest.raises(NsightFormatError, match="SQLite header"):
        read_nsight(path)


def test_crlf_line_endings(own, tmp_path):
    src = own("ncu_details_2025_short_rows.csv")
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(src.read_bytes().replace(b"\n", b"\r\n"))
    assert read_nsight(crlf).rows == read_nsight(src).rows


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(NsightFormatError, match="a directory"):
        read_nsight(tmp_path)
