"""harness/progress.py: time left from the rows' predicted cost."""
import io

import pytest

from harness.progress import ROW_OVERHEAD, Progress, format_seconds, predicted_cost


def test_time_left_is_rate_times_the_cost_left():
    out = io.StringIO()
    prog = Progress({"a": 1.0, "b": 10.0, "c": 100.0}, out)
    prog.start("a", "running")
    assert prog.seconds_left() is None and "left" not in out.getvalue()  # nothing finished: no estimate
    prog.end("a", "ok", 2.0)  # 2 s per unit
    assert prog.seconds_left() == 2.0 * 110
    prog.end("b", "done in the resumed run, skipped", None)  # did not run: no rate, but no longer left
    assert prog.seconds_left() == 2.0 * 100
    prog.start("c", "running")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/3] a: running" and lines[1] == "[1/3] a: ok (~3m40s left)"
    assert lines[-1] == "[3/3] c: running (~3m20s left)"
    prog.end("c", "ok", 150.0)
    assert out.getvalue().splitlines()[-1] == "[3/3] c: ok"  # nothing left: no estimate


def test_each_class_of_row_learns_its_own_rate():
    """Elementwise rows cost more seconds per unit than GEMM rows (bytes against weighted FLOPs): a GEMM row's time
    left comes from the GEMM rows once one finished, not from a gate's rate (which put dsv3-prefill at ~70 h)."""
    prog = Progress({"g1": 1.0, "g2": 1.0, "m1": 100.0, "m2": 100.0}, io.StringIO(),
                    classes={"g1": "other", "g2": "other", "m1": "gemm", "m2": "gemm"})
    prog.end("g1", "ok", 10.0)  # 10 s a unit
    assert prog.seconds_left() == pytest.approx(10.0 * 201)  # no GEMM row finished: every class at the only rate
    prog.end("m1", "ok", 20.0)  # 0.2 s a unit
    assert prog.seconds_left() == pytest.approx(10.0 * 1 + 0.2 * 100)


def test_rows_running_at_once_divide_the_time_left():
    prog = Progress({"a": 1.0, "b": 4.0, "c": 4.0}, io.StringIO(), concurrency=2)
    prog.end("a", "ok", 3.0)
    assert prog.seconds_left() == pytest.approx(3.0 * 8 / 2)


def test_predicted_cost_orders_rows_by_work():
    assert predicted_cost("gate", "tiny", None) < predicted_cost("gate", "dsv3-decode", None)
    assert predicted_cost("swiglu", "dsv3-decode", None) < predicted_cost("grouped_gemm", "dsv3-decode", "up")
    assert predicted_cost("grouped_gemm", "dsv3-decode", "up") < predicted_cost("layer", "dsv3-decode", None)


def test_format_seconds():
    assert [format_seconds(s) for s in (4.4, 65, 3725)] == ["4s", "1m05s", "1h02m"]


def test_a_kernel_without_a_size_table_costs_one_unit():
    assert predicted_cost("my_kernel", "tiny", None) == 1.0


def test_sampling_scales_the_big_gemm_rows_cost_only():
    """A sampled dsv3 GEMM simulates the blocks of 2 experts, about 2 routing blocks of 304 (and one of the tail, which
    exits at once): its predicted cost shrinks with it (else the time left would be off by 100x); at dsv3-prefill
    about 2 x 3 blocks; rows that run whole (elementwise kernels, small's GEMMs) keep theirs."""
    from harness.sampling import parse_sample

    auto = parse_sample("auto")
    whole, sampled = (predicted_cost("grouped_gemm", "dsv3-decode", "up", s) for s in (None, auto))
    assert sampled - ROW_OVERHEAD == pytest.approx((whole - ROW_OVERHEAD) * 2 / 304)
    whole, sampled = (predicted_cost("grouped_gemm", "dsv3-prefill", "up", s) for s in (None, auto))
    assert sampled - ROW_OVERHEAD == pytest.approx((whole - ROW_OVERHEAD) * 6 / 764)
    assert predicted_cost("layer", "dsv3-decode", None, auto) < predicted_cost("layer", "dsv3-decode", None) / 10
    for kernel, preset, variant in (("swiglu", "dsv3-decode", None), ("grouped_gemm", "small", "up")):
        assert predicted_cost(kernel, preset, variant, auto) == predicted_cost(kernel, preset, variant)
    assert predicted_cost("swiglu", "dsv3-decode", None, auto) < sampled  # a sampled GEMM still outweighs swiglu
