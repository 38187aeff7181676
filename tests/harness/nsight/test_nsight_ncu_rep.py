"""The .ncu-rep adapter against a small fake with the documented ncu_report interface, and the real module."""
import pytest

from harness.nsight import NsightFormatError, read_nsight
from harness.nsight.ncu_rep import read_ncu_rep, rows_from_report
from tests.harness.nsight.test_nsight_ncu_rep_file import report_bytes


class Metric:
    def __init__(self, value, unit):
        self._value, self._unit = value, unit

    def value(self):
        return self._value

    def unit(self):
        return self._unit


class Domain:
    def __init__(self, name, ranges):
        self._name, self._ranges = name, ranges

    def name(self):
        return self._name

    def push_pop_ranges(self):
        return tuple(self._ranges)


class State:
    def __init__(self, domains):
        self._domains = domains

    def domains(self):
        return tuple(self._domains)

    def domain_by_id(self, i):
        return self._domains.get(i)


class Action:
    NameBase_FUNCTION, NameBase_DEMANGLED = 0, 1

    def __init__(self, short, demangled, metrics, domains):
        self._names = {0: short, 1: demangled}
        self._metrics, self._state = metrics, State(domains)

    def name(self, base=0):
        return self._names[base]

    def metric_names(self):
        return tuple(self._metrics) + ("not_collected",)

    def metric_by_name(self, name):
        return self._metrics.get(name)

    def nvtx_state(self):
        return self._state


class Range:
    def __init__(self, actions):
        self._actions = actions

    def num_actions(self):
        return len(self._actions)

    def action_by_idx(self, i):
        return self._actions[i]


class Context:
    def __init__(self, ranges):
        self._ranges = ranges

    def num_ranges(self):
        return len(self._ranges)

    def range_by_idx(self, i):
        return self._ranges[i]


def fake_report(rng):
    dur = [float(rng.integers(1000, 10**6)) for _ in range(3)]
    mbytes = float(rng.integers(1, 10**4)) / 8
    actions = [
        Action("gate", "gate(float *, int)",
               {"gpu__time_duration.sum": Metric(dur[0] / 1e3, "usecond"),
                "dram__bytes_read.sum": Metric(mbytes, "Mbyte"),
                "launch__registers_per_thread": Metric(40, "register/thread"),
                "device__attribute_display_name": Metric("NVIDIA H200", "")},
               {0: Domain("<default domain>", ["outer"]), 3: Domain("ptxmoe", ["run-1", "gate/ptx/tiny/balanced"])}),
        Action("combine", "combine(int)", {"gpu__time_duration.sum": Metric(dur[1], "nsecond")}, {}),
    ]
    second = [Action("swiglu", "swiglu(int)", {"gpu__time_duration.sum": Metric(dur[2] / 1e6, "msecond"),
                                                "sm__throughput.avg.pct_of_peak_sustained_elapsed": Metric(None, "%")},
                     {})]
    return Context([Range(actions), Range(second)]), dur, mbytes


def test_adapter_reads_fake_report(rng):
    context, dur, mbytes = fake_report(rng)
    rows = rows_from_report(context)
    by = {(r.launch, r.metric): r for r in rows}
    gate = by[(0, "gpu__time_duration.sum")]
    assert gate.kernel == "gate(float *, int)"  # the DEMANGLED name base
    assert gate.value == pytest.approx(dur[0]) and gate.unit == "ns"
    assert (gate.nvtx_domain, gate.nvtx_range) == ("ptxmoe", "gate/ptx/tiny/balanced")
    assert gate.nvtx_stack == (("", "outer"), ("ptxmoe", "run-1"), ("ptxmoe", "gate/ptx/tiny/balanced"))
    assert by[(0, "dram__bytes_read.sum")].value == pytest.approx(mbytes * 1e6)
    assert by[(0, "device__attribute_display_name")].value == "NVIDIA H200"
    assert (0, "not_collected") not in by
    assert by[(1, "gpu__time_duration.sum")].value == dur[1] and by[(1, "gpu__time_duration.sum")].nvtx_range == ""
    assert by[(2, "gpu__time_duration.sum")].value == pytest.approx(dur[2])  # launch counts across ranges
    assert by[(2, "sm__throughput.avg.pct_of_peak_sustained_elapsed")].value is None


def test_read_ncu_rep_with_injected_loader(tmp_path, rng):
    context, _, _ = fake_report(rng)
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(report_bytes((3,)))
    seen = []
    table = read_ncu_rep(path, load_report=lambda p: seen.append(p) or context)
    assert seen == [str(path)] and table.format == "ncu-rep" and len(table) == 7


def test_loader_failure_and_broken_object_are_format_errors(tmp_path):
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(report_bytes((1,)))

    def boom(p):
        raise RuntimeError("Failed to load report")

    with pytest.raises(NsightFormatError, match="Failed to load report"):
        read_ncu_rep(path, load_report=boom)

    class Broken:
        def num_ranges(self):
            return 1

        def range_by_idx(self, i):
            return Range([object()])

    with pytest.raises(NsightFormatError, match="range 0 action 0"):
        read_ncu_rep(path, load_report=lambda p: Broken())


def test_real_ncu_report_module_on_a_non_report_and_a_missing_file(tmp_path):
    pytest.importorskip("ncu_report", reason="PyPI ncu-report not importable here")
    path = tmp_path / "garbage.ncu-rep"
    path.write_bytes(b"this is not an Nsight Compute report\n" * 10)
    with pytest.raises(NsightFormatError, match="expected the magic bytes"):
        read_nsight(path)  # ncu_report itself loads garbage as an empty report: the framing check refuses it
    missing = tmp_path / "missing.ncu-rep"
    with pytest.raises(NsightFormatError) as info:
        read_ncu_rep(missing)  # read_nsight checks existence first; read_ncu_rep names the file too
    assert str(missing) in str(info.value) and "No such file" in str(info.value)
