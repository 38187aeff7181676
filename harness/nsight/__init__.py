"""Nsight readers: ncu CSV / .ncu-rep and nsys SQLite / stats CSVs, normalised into one table (see table.py).

Entry point: read_nsight(path) -> NsightTable. Heavy or optional pieces (sqlite, ncu_report) load on use.
"""
from harness.nsight.errors import NsightFormatError
from harness.nsight.reader import read_nsight
from harness.nsight.table import (
    MetricRow,
    NsightTable,
    PtxmoeLabels,
    label_rows,
    ptxmoe_labels,
    short_kernel_name,
    split_ptxmoe_range,
)

__all__ = ["MetricRow", "NsightFormatError", "NsightTable", "PtxmoeLabels", "label_rows", "ptxmoe_labels",
           "read_nsight", "short_kernel_name", "split_ptxmoe_range"]
