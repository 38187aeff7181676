"""harness.sweep_plan: the cells of a sweep in run order and their seeds."""
from harness.sweep_plan import CompareSettings, item_seed, plan


def _settings(kernels):
    return CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=tuple(kernels), seed=1,
                           impls=("numba", "ptx"))


def test_plan_expands_grouped_gemm_variants():
    items = plan(_settings(["gate", "grouped_gemm"]))
    assert [i.label for i in items] == ["gate", "grouped_gemm[up]", "grouped_gemm[down]"]
    assert items[1].key("ptx") == "grouped_gemm[up]/ptx/tiny/balanced"
    assert item_seed(5, items[1]) != item_seed(5, items[2])
    assert item_seed(5, items[1]) == item_seed(5, items[1])
