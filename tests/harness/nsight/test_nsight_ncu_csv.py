"""ncu CSV, details and raw pages: the project's fixtures (one per quirk) and randomly generated files."""
import csv

import pytest

from harness.nsight import NsightFormatError, ptxmoe_labels, read_nsight
from harness.nsight.units import unit_factor


def values(table, launch=None):
    return {r.metric: (r.value, r.unit) for r in table.rows if launch is None or r.launch == launch}


def test_12_column_header_with_kernel_time_and_preamble(own):
    table = read_nsight(own("ncu_details_2021_12col_preamble.csv"))
    assert table.format == "ncu-csv-details"
    assert values(table, 0) == {
        "DRAM Frequency": (1.21e9, "hz"),          # 1.21 cycle/nsecond
        "SM Frequency": (1410.5e6, "hz"),          # "1,410.50" cycle/usecond
        "Duration": (12.35 * 1e3, "ns"),           # usecond
        "Memory [%]": (41.27, "%"),
    }
    assert values(table, 1) == {"Duration": (1.5e6, "ns"), "Registers Per Thread": (32.0, "register/thread"),
                                "Memory Throughput": (1555.2e9, "byte/s")}
    assert {r.kernel for r in table.rows} == {"gate_kernel", "align_kernel"}
    assert all(r.nvtx_range == "" and r.nvtx_stack == () for r in table.rows)


def test_bom_15_columns_quoted_names_and_thousands_separators(own):
    table = read_nsight(own("ncu_details_2022_15col_bom_thousands.csv"))
    assert {r.kernel for r in table.rows} == {'void grouped_gemm<128, 64>(const __nv_bfloat16 *, int, "tile")'}
    got = values(table)
    assert got["dram__bytes_read.sum"] == (pytest.approx(134221.568e6), "byte")
    assert got["dram__bytes_write.sum"] == (pytest.approx(9495.42e3), "byte")
    assert got["gpu__time_duration.sum"] == (1234567.0, "ns")
    assert got["sm__cycles_elapsed.avg.per_second"] == (pytest.approx(1.98e9), "hz")
    assert got["dram__bytes.sum.per_second"] == (pytest.approx(3.35e12), "byte/s")
    # "1,2" does not match -?\d{1,3}(,\d{3})+(\.\d+)?: it is kept as the string it is, not read as 12
    assert got["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == ("1,2", "sector")


def test_20_columns_nvtx_rule_rows_and_na(own):
    table = read_nsight(own("ncu_details_2023_20col_nvtx_rules.csv"))
    assert len(table) == 6  # 8 rows less 2 rule-only rows
    by = {(r.launch, r.metric): r for r in table.rows}
    gate = by[(0, "gpu__time_duration.sum")]
    assert (gate.value, gate.unit, gate.nvtx_range, gate.nvtx_domain) == (4096.0, "ns", "gate/ptx/tiny/balanced",
                                                                         "ptxmoe")
    assert gate.nvtx_stack == (("ptxmoe", "run-20261202T1600"), ("ptxmoe", "gate/ptx/tiny/balanced"))
    assert by[(0, "dram__bytes_read.sum")].value is None
    align = by[(1, "gpu__time_duration.sum")]
    assert align.value == 2500.0 and align.nvtx_stack[0] == ("", "outer")
    labels = ptxmoe_labels(align)
    assert (labels.run, labels.kernel, labels.impl, labels.preset, labels.skew) == (
        "run-20261202T1600", "align", "cuda", "tiny", "extreme")
    warm = by[(2, "gpu__time_duration.sum")]
    assert (warm.nvtx_domain, warm.nvtx_range, warm.value) == ("NVTX", "warmup", 3000.0)
    assert ptxmoe_labels(warm) is None
    assert by[(3, "sm__warps_active.avg.pct_of_peak_sustained_active")].nvtx_stack == ()


def test_2025_short_rows(own):
    table = read_nsight(own("ncu_details_2025_short_rows.csv"))
    assert [(r.launch, r.metric, r.value, r.unit) for r in table.rows] == [
        (0, "gpu__time_duration.sum", 5312.0, "ns"),
        (0, "dram__bytes_write.sum", 1048576.0, "byte"),
        (0, "smsp__thread_inst_executed_per_inst_executed.ratio", 31.87, ""),
        (1, "gpu__time_duration.sum", 5120.0, "ns"),
    ]


def test_raw_page_units_row_strings_and_instances(own):
    table = read_nsight(own("ncu_raw_page_units_row.csv"))
    assert table.format == "ncu-csv-raw"
    first, second = values(table, 0), values(table, 1)
    assert first["device__attribute_display_name"] == ("NVIDIA H200", "")
    assert first["dram__bytes_read.sum"] == (pytest.approx(2097.152e6), "byte")
    assert first["gpu__time_duration.sum"] == (10250.0, "ns")
    assert first["launch__shared_mem_per_block_static"] == (pytest.approx(16896.0), "byte/block")
    assert first["lts__t_sector_hit_rate.pct"] == (None, "%")
    assert second["gpu__time_duration.sum"] == (158e3, "ns")  # "158 (0: 158)" usecond: the aggregate
    assert second["dram__bytes_read.sum"] == (1.5e6, "byte")
    assert "Block Size" not in first and "thread Domain" not in " ".join(first)
    assert {r.nvtx_range for r in table.rows} == {"swiglu/ptx/small/imbalanced", "swiglu/cuda/small/imbalanced"}


@pytest.mark.parametrize("name,line,expected", [
    ("ncu_malformed_quote.csv", 4, "well-formed CSV"),
    ("ncu_raw_missing_units_row.csv", 2, "units row"),
    ("ncu_details_too_many_fields.csv", 3, "at most 11 fields"),
    ("ncu_details_bad_id.csv", 3, "integer launch ID"),
])
def test_malformed_input_names_file_line_and_expectation(own, name, line, expected):
    path = own(name)
    with pytest.raises(NsightFormatError) as info:
        read_nsight(path)
    err = info.value
    assert (err.path, err.where) == (str(path), line)
    assert expected in err.expected
    assert str(path) in str(err) and f"line {line}" in str(err)


def test_details_row_short_of_the_metric_cells_is_an_error(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","Duration"\n')
    with pytest.raises(NsightFormatError, match="line 2: expected at least 5 fields"):
        read_nsight(path)


def test_details_header_without_kernel_column(tmp_path):
    path = tmp_path / "nokernel.csv"
    path.write_text('"ID","Metric Name","Metric Unit","Metric Value"\n"0","Duration","ns","1"\n')
    with pytest.raises(NsightFormatError, match="line 1: expected a kernel name column"):
        read_nsight(path)


def test_header_only_is_no_results(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n')
    table = read_nsight(path)
    assert len(table) == 0 and "no metric rows" in table.empty_reason


# (unit as ncu prints it, factor to base, base) -- written out here, independent of units.py's tables
UNITS = [("ns", 1, "ns"), ("nsecond", 1, "ns"), ("us", 1e3, "ns"), ("usecond", 1e3, "ns"), ("ms", 1e6, "ns"),
         ("msecond", 1e6, "ns"), ("s", 1e9, "ns"), ("second", 1e9, "ns"), ("byte", 1, "byte"),
         ("Kbyte", 1e3, "byte"), ("Mbyte", 1e6, "byte"), ("Gbyte", 1e9, "byte"), ("byte/s", 1, "byte/s"),
         ("Kbyte/s", 1e3, "byte/s"), ("Mbyte/second", 1e6, "byte/s"), ("Gbyte/s", 1e9, "byte/s"),
         ("cycle/second", 1, "hz"), ("cycle/usecond", 1e6, "hz"), ("hz", 1, "hz"), ("Khz", 1e3, "hz"),
         ("Mhz", 1e6, "hz"), ("Ghz", 1e9, "hz"), ("%", 1, "%"), ("inst", 1, "inst"),
         ("register/thread", 1, "register/thread"), ("sector/request", 1, "sector/request")]


@pytest.mark.parametrize("page", ["details", "raw"])
def test_random_files_round_trip_in_base_units(tmp_path, rng, page):
    """Write random launches in random units (and thousands separators) as ncu would; read them back."""
    expected = {}
    metrics = [f"metric_{i}__x.sum" for i in range(8)]
    units = {m: UNITS[int(rng.integers(len(UNITS)))] for m in metrics}
    launches = int(rng.integers(1, 6))
    cells = {}
    for launch in range(launches):
        for m in metrics:
            number = float(rng.integers(0, 10**7)) / 100 if rng.random() < 0.5 else float(rng.integers(0, 10**9))
            text = f"{number:,.2f}" if rng.random() < 0.5 else f"{number:.2f}"
            cells[(launch, m)] = text
            expected[(launch, m)] = (number * units[m][1], units[m][2])
    path = tmp_path / f"{page}.csv"
    with path.open("w", newline="") as handle:
        handle.write("==PROF== Connected to process 1\nprogram output, with, commas\n")
        w = csv.writer(handle, quoting=csv.QUOTE_ALL)
        if page == "details":
            w.writerow(["ID", "Process ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit",
                        "Metric Value"])
            for (launch, m), text in cells.items():
                w.writerow([launch, 1, f"k{launch}(int, float)", "Command line profiler metrics", m, units[m][0],
                            text])
        else:
            w.writerow(["ID", "Process ID", "Kernel Name", *metrics])
            w.writerow(["", "", "", *(units[m][0] for m in metrics)])
            for launch in range(launches):
                w.writerow([launch, 1, f"k{launch}(int, float)", *(cells[(launch, m)] for m in metrics)])
    table = read_nsight(path)
    got = {(r.launch, r.metric): (r.value, r.unit) for r in table.rows}
    assert got.keys() == expected.keys()
    for key, (value, unit) in expected.items():
        assert got[key][1] == unit
        assert got[key][0] == pytest.approx(value, rel=1e-12), (key, cells[key], units[key[1]])
    assert {r.kernel for r in table.rows} == {f"k{i}(int, float)" for i in range(launches)}
    assert all(unit_factor(u)[1] == base for u, _, base in UNITS)


def test_appended_logs_repeat_the_header(own, tmp_path):
    src = own("ncu_raw_page_units_row.csv").read_text()
    path = tmp_path / "twice.csv"
    path.write_text(src + "==PROF== Connected to process 2\n" + src.split("\n", 1)[1])
    once = read_nsight(own("ncu_raw_page_units_row.csv"))
    twice = read_nsight(path)
    assert twice.rows == once.rows + once.rows
    details = own("ncu_details_2025_short_rows.csv").read_text()
    path.write_text(details + details)
    assert len(read_nsight(path)) == 2 * len(read_nsight(own("ncu_details_2025_short_rows.csv")))
