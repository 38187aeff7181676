"""Units and cell parsing; the normalised table, ptxmoe range labels and short kernel names."""
import dataclasses
import json

import pytest

from harness.nsight import MetricRow, NsightTable, label_rows, ptxmoe_labels, short_kernel_name, split_ptxmoe_range
from harness.nsight.units import normalise, parse_number, unit_factor


def test_thousands_separators_random_integers_and_decimals(rng):
    for _ in range(300):
        n = int(rng.integers(-10**12, 10**12))
        assert parse_number(f"{n:,}") == float(n)
        frac = int(rng.integers(0, 100))
        assert parse_number(f"{n:,}.{frac:02d}") == float(f"{n}.{frac:02d}")


@pytest.mark.parametrize("cell", ["1,2", "12,3456", "1,234,56", ",123", "1,,234", "1.234,5"])
def test_cells_not_shaped_like_thousands_are_not_stripped(cell):
    assert parse_number(cell) == cell


@pytest.mark.parametrize("cell", ["n/a", "N/A", "", "  ", "nan", "inf", None])
def test_missing_values(cell):
    assert parse_number(cell) is None


def test_other_cells():
    assert parse_number(" 12.5 ") == 12.5 and parse_number("1e3") == 1000.0 and parse_number(7) == 7.0
    assert parse_number("NVIDIA H200") == "NVIDIA H200"
    assert parse_number("158 (0: 158)") == 158.0 and parse_number("(256, 1, 1)") == "(256, 1, 1)"


def test_unit_factors_and_unknown_units(rng):
    for prefix, factor in (("", 1.0), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        assert unit_factor(f"{prefix}byte") == (factor, "byte")
        assert unit_factor(f"{prefix}byte/s") == (factor, "byte/s")
        assert unit_factor(f"{prefix}byte/second") == (factor, "byte/s")
    for time, ns in (("nsecond", 1.0), ("usecond", 1e3), ("msecond", 1e6), ("second", 1e9)):
        assert unit_factor(time) == (ns, "ns")
        assert unit_factor(f"cycle/{time}") == (1e9 / ns, "hz")
        assert unit_factor(f"byte/{time}") == (1e9 / ns, "byte/s")
    assert unit_factor("Kibyte") == (1024.0, "byte")
    assert unit_factor("Kbyte/block") == (1e3, "byte/block")
    assert unit_factor("Mcycle") == (1e6, "cycle")
    assert unit_factor("furlong/fortnight") == (1.0, "furlong/fortnight")
    v = float(rng.random() * 1000)
    assert normalise(v, "Gbyte/s") == (v * 1e9, "byte/s")
    assert normalise("text", "Gbyte/s") == ("text", "byte/s") and normalise(None, "ns") == (None, "ns")


def test_split_ptxmoe_range():
    assert split_ptxmoe_range("gate/cuda/tiny/balanced") == ("gate", "cuda", "tiny", "balanced")
    assert split_ptxmoe_range("ptxmoe:grouped_gemm/ptx/dsv3-prefill/extreme") == (
        "grouped_gemm", "ptx", "dsv3-prefill", "extreme")
    for bad in ("gate/cuda/tiny", "gate/cuda/tiny/balanced/x", "gate//tiny/balanced", "gate/cu da/tiny/b", "", None,
                "run-1"):
        assert split_ptxmoe_range(bad) is None


def row(stack, metric="m", value=1.0):
    domain, name = stack[-1] if stack else ("", "")
    return MetricRow("ncu-csv-details", "k", name, metric, value, "ns", 0, domain, tuple(stack))


def test_ptxmoe_labels_take_innermost_and_its_run():
    r = row([("", "outer"), ("ptxmoe", "run-3"), ("ptxmoe", "combine/ptx/small/balanced"), ("NVTX", "inner")])
    labels = ptxmoe_labels(r)
    assert (labels.run, labels.kernel, labels.impl, labels.preset, labels.skew) == (
        "run-3", "combine", "ptx", "small", "balanced")
    assert ptxmoe_labels(row([("NVTX", "gate/cuda/tiny/balanced")])) is None  # other domain: not ours
    assert ptxmoe_labels(row([("ptxmoe", "gate/cuda/tiny/balanced")])).run is None
    assert ptxmoe_labels(row([])) is None
    records = label_rows([r, row([])])
    assert records[0]["ptxmoe_kernel"] == "combine" and records[0]["run"] == "run-3" and records[1]["impl"] is None


def test_table_json_round_trip_and_select():
    rows = (row([("ptxmoe", "run"), ("ptxmoe", "a/b/c/d")]), row([], metric="x", value=None),
            row([], metric="s", value="NVIDIA H200"))
    table = NsightTable("f.csv", "ncu-csv-details", rows, {"gpus": [{"name": "H200"}]})
    doc = json.loads(json.dumps(table.to_json_dict(), allow_nan=False))
    back = NsightTable.from_json_dict(doc)
    assert back.rows == rows and back.meta == table.meta and back.format == table.format
    assert table.select(metric="x") == [rows[1]] and table.select(nvtx_range="a/b/c/d") == [rows[0]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].value = 2.0


@pytest.mark.parametrize("name,short", [
    ("saxpy(double *, double *, double *, double, int)", "saxpy"),
    ("void grouped_gemm<128, 64>(const __nv_bfloat16 *, int)", "grouped_gemm"),
    ("void cutlass::Kernel<cutlass::gemm::Gemm<(int)1>>(Params)", "Kernel"),
    ("gate_ptx", "gate_ptx"),
])
def test_short_kernel_name(name, short):
    assert short_kernel_name(name) == short
