"""nsys stats CSVs: the real nbody nvtx_pushpop_trace and the project's own report fixtures."""
import csv

import pytest

from harness.nsight import NsightFormatError, ptxmoe_labels, read_nsight

NBODY = "pipit_nsys_stats_nvtx_pushpop_trace_nbody.csv"  # in ../shared/fixtures/nsight


def test_real_pushpop_trace_values_and_stacks(shared):
    path = shared(NBODY)
    table = read_nsight(path)
    assert table.format == "nsys-stats:nvtx_pushpop_trace"
    with path.open(newline="") as handle:
        records = list(csv.DictReader(handle))
    names = {int(r["RangeId"]): r["Name"] for r in records}
    by = {(r.launch, r.metric): r for r in table.rows}
    for rec in records:
        rid = int(rec["RangeId"])
        assert by[(rid, "Duration")].value == float(rec["Duration (ns)"])
        assert by[(rid, "End")].value - by[(rid, "Start")].value == float(rec["Duration (ns)"])
        stack = tuple(("", names[int(i)]) for i in rec["RangeStack"].split(":") if i)
        assert by[(rid, "Start")].nvtx_stack == stack
        assert by[(rid, "Start")].nvtx_range == rec["Name"]
    assert len({r.launch for r in table.rows}) == len(records)


def test_cuda_gpu_kern_sum(own):
    table = read_nsight(own("nsys_cuda_gpu_kern_sum.csv"))
    assert table.format == "nsys-stats:cuda_gpu_kern_sum"
    kernel = "saxpy(double *, double *, double *, double, int)"
    saxpy = {r.metric: (r.value, r.unit) for r in table.select(kernel=kernel)}
    assert saxpy == {"Time": (61.5, "%"), "Total Time": (88524000.0, "ns"), "Instances": (5.0, ""),
                     "Avg": (17704800.0, "ns"), "Med": (17713960.0, "ns"), "Min": (17700808.0, "ns"),
                     "Max": (17733416.0, "ns"), "StdDev": (13092.4, "ns")}
    assert {r.kernel for r in table.rows} == {"saxpy(double *, double *, double *, double, int)",
                                               'void grouped_gemm<128, "x">(int)'}


def test_old_gpukernsum_header_without_units_is_ns(own):
    table = read_nsight(own("nsys_gpukernsum_2021_old_header.csv"))
    got = {r.metric: (r.value, r.unit) for r in table.rows}
    assert got == {"Time": (100.0, "%"), "Total Time": (88524000.0, "ns"), "Instances": (5.0, ""),
                   "Avg": (17704800.0, "ns"), "Min": (17700808.0, "ns"), "Max": (17733416.0, "ns"),
                   "StdDev": (13092.4, "ns")}


def test_grid_and_block_xyz_columns(own):
    table = read_nsight(own("nsys_cuda_gpu_kern_sum_2022.4_gridxyz.csv"))
    combine = {r.metric: r.value for r in table.select(kernel="combine")}
    assert (combine["grid_size"], combine["block_size"]) == (4.0 * 2 * 1, 32.0 * 4 * 1)
    act = {r.metric: r.value for r in table.select(kernel="void act_quant<(int)128>(float *, int)")}
    assert (act["grid_size"], act["block_size"], act["Total Time"]) == (896.0, 128.0, 7000.0)


def test_nvtx_sum_domain_prefixes(own):
    table = read_nsight(own("nsys_nvtx_sum_domains.csv"))
    ranges = {(r.nvtx_domain, r.nvtx_range) for r in table.rows}
    assert ranges == {("ptxmoe", "gate/cuda/tiny/balanced"), ("", "saxpy"), ("MPI", "MPI_Send")}
    gate = table.select(nvtx_range="gate/cuda/tiny/balanced", metric="Total Time")[0]
    assert (gate.value, gate.kernel) == (400000.0, "")
    assert ptxmoe_labels(gate).impl == "cuda" and ptxmoe_labels(gate).run is None


def test_captured_stdout_with_two_reports(own):
    table = read_nsight(own("nsys_stats_stdout_two_reports.txt"))
    assert table.format == "nsys-stats"
    assert {r.source for r in table.rows} == {"nsys-stats:nvtx_sum", "nsys-stats:cuda_gpu_kern_sum"}
    assert table.select(metric="Total Time", source="nsys-stats:nvtx_sum")[0].value == 59054.0
    assert table.select(metric="Total Time", source="nsys-stats:cuda_gpu_kern_sum")[0].value == 17704808.0


def test_only_skipped_reports_is_no_results(own):
    table = read_nsight(own("nsys_stats_skipped_only.txt"))
    assert len(table) == 0 and "does not contain CUDA kernel data" in table.empty_reason


def test_non_number_in_numeric_column(own):
    path = own("nsys_stats_bad_number.csv")
    with pytest.raises(NsightFormatError) as info:
        read_nsight(path)
    assert info.value.where == 3 and "Total Time (ns)" in info.value.expected and info.value.found == "12ms"


def test_row_with_wrong_field_count(tmp_path):
    path = tmp_path / "kern.csv"
    path.write_text("Time (%),Total Time (ns),Instances,Name\n10,100,1,a\n10,100,1\n")
    with pytest.raises(NsightFormatError, match="line 3: expected 4 fields"):
        read_nsight(path)
