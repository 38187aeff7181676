"""The simulated schedules reproduce DeepSeek-V3's Table 2 exactly: bubble, parameters, activations."""
import math

import pytest

from harness.pipeline import (
    BUILDERS,
    EXACT_WHEN,
    FORMULAS,
    ChunkTimes,
    dualpipe,
    formula_bubble,
    measure,
    schedule_table,
    simulate,
    zb1p,
)

# All exact in binary floating point. W < B everywhere; F&B < F+B everywhere; the DualPipe line F == B - W holds
# (see harness/pipeline/report.py for the region where each formula is exact).
TIME_SETS = [
    ChunkTimes(F=1, B=2, W=1, FB=2.5),          # the zero-bubble paper's F = B_input = W
    ChunkTimes(F=2, B=3, W=1, FB=4),            # W < F
    ChunkTimes(F=1.5, B=2.25, W=0.75, FB=3),    # fractional, F&B well below F+B
    ChunkTimes(F=4, B=5.5, W=1.5, FB=5.5),      # F&B = B: perfect overlap
    ChunkTimes(F=0.75, B=1.25, W=0.5, FB=2),    # F&B = F+B: no gain from overlap
]
CASES = [(pp, mb) for pp in (4, 8, 16) for mb in (2 * pp, 3 * pp)]


@pytest.mark.parametrize("times", TIME_SETS, ids=lambda t: f"F{t.F}B{t.B}W{t.W}FB{t.FB}")
@pytest.mark.parametrize("pp,microbatches", CASES)
def test_table2_rows_are_reproduced_exactly(pp, microbatches, times):
    rows = {r["method"]: r for r in schedule_table(pp, microbatches, times)}
    assert set(rows) == {"1F1B", "ZB1P", "DualPipe", "DualPipeV"}
    expected_bubble = {
        "1F1B": (pp - 1) * (times.F + times.B),
        "ZB1P": (pp - 1) * (times.F + times.B - 2 * times.W),
        "DualPipe": (pp / 2 - 1) * (times.FB + times.B - 3 * times.W),
        "DualPipeV": (pp / 2 - 1) * (times.FB + times.B - 3 * times.W),
    }
    expected_memory = {"1F1B": (1, pp), "ZB1P": (1, pp), "DualPipe": (2, pp + 1), "DualPipeV": (2, pp + 1)}
    for method, row in rows.items():
        assert row["formula_exact"], method
        assert row["bubble"] == expected_bubble[method] == row["formula_bubble"], (method, row)
        assert (row["parameter_x"], row["activation"]) == expected_memory[method], (method, row)
        assert row["activation_max"] == row["activation"], (method, row)
    assert rows["DualPipe"]["devices"] == pp and rows["DualPipeV"]["devices"] == pp // 2
    # The ordering the report argues for: DualPipe beats ZB1P beats 1F1B at these times.
    assert rows["DualPipe"]["bubble"] < rows["ZB1P"]["bubble"] < rows["1F1B"]["bubble"]


def test_random_times_inside_the_exact_region_match(rng):
    """Fresh dyadic times (exact in float) on each method's exact region; pp and micro-batch counts drawn too."""
    for _ in range(12):
        F, W = (rng.integers(1, 25, 2) / 8).tolist()
        W = min(W, F)
        b_zb = max(W, float(rng.integers(1, 25) / 8))      # ZB1P needs only W <= F and W <= B - W
        pp = int(rng.choice([4, 8, 16]))
        mb = int(rng.choice([2 * pp, 3 * pp, 4 * pp]))
        zt = ChunkTimes(F, b_zb + W, W, F + b_zb + W)
        assert EXACT_WHEN["ZB1P"](zt)
        assert measure(simulate(zb1p(pp, mb), zt)).bubble == (pp - 1) * (zt.F + zt.B - 2 * zt.W)
        B = F + W                                          # the DualPipe line: F == B - W
        FB = float(rng.integers(int(B * 8), int((F + B) * 8) + 1) / 8)
        dt = ChunkTimes(F, B, W, FB)
        assert EXACT_WHEN["DualPipe"](dt), dt
        for method in ("1F1B", "DualPipe", "DualPipeV"):
            m = measure(simulate(BUILDERS[method](pp, mb), dt))
            assert m.bubble == formula_bubble(method, pp, dt), (method, pp, mb, dt)


def test_dualpipe_family_supports_more_microbatch_counts():
    t = TIME_SETS[0]
    for pp in (4, 8):
        for mb in (2 * pp + 2, 4 * pp):
            assert measure(simulate(dualpipe(pp, mb), t)).bubble == formula_bubble("DualPipe", pp, t)
        for mb in (pp, pp + 1, 3 * pp + 1):  # DualPipeV also accepts odd counts and as few as pp
            m = measure(simulate(BUILDERS["DualPipeV"](pp, mb), t))
            assert (m.bubble, m.parameter_x, m.activation_first) == (formula_bubble("DualPipeV", pp, t), 2, pp + 1)


def test_bubble_is_per_device_idle_and_dualpipe_middle_devices_carry_it():
    t = ChunkTimes(F=1, B=2, W=1, FB=2.5)
    one = measure(simulate(BUILDERS["1F1B"](8, 16), t))
    assert len(set(one.bubble_per_device)) == 1                       # every device does the same work
    assert one.makespan == 16 * (t.F + t.B) + one.bubble               # makespan = useful compute + bubble
    dp = measure(simulate(dualpipe(8, 16), t))
    assert all(dp.makespan == b + i for b, i in zip(dp.busy, dp.bubble_per_device, strict=True))
    assert dp.bubble_per_device == dp.bubble_per_device[::-1]          # mirror-symmetric devices
    assert dp.bubble_per_device[3] == dp.bubble > dp.bubble_per_device[0]


def test_outside_the_exact_region_the_formula_is_not_met():
    """Documented limitation (report.py): with F != B - W the DualPipe formula is not what the schedule gives."""
    t = ChunkTimes(F=1.5, B=2.5, W=0.75, FB=3.25)
    assert not EXACT_WHEN["DualPipe"](t)
    assert measure(simulate(dualpipe(8, 16), t)).bubble == 9.75 != formula_bubble("DualPipe", 8, t) == 10.5
    heavy_w = ChunkTimes(F=1, B=3, W=2, FB=3.5)   # W > F: deferred W's no longer fit in ZB1P's gaps
    assert not EXACT_WHEN["ZB1P"](heavy_w)
    assert measure(simulate(zb1p(4, 8), heavy_w)).bubble > formula_bubble("ZB1P", 4, heavy_w)


def test_formulas_table_matches_the_report_text():
    assert {m: f[0] for m, f in FORMULAS.items()} == {
        "1F1B": "(PP-1)(F+B)", "ZB1P": "(PP-1)(F+B-2W)", "DualPipe": "(PP/2-1)(F&B+B-3W)",
        "DualPipeV": "(PP/2-1)(F&B+B-3W)"}


def test_module_cli_prints_the_table_and_rejects_bad_sizes(capsys):
    from harness.pipeline.__main__ import main

    assert main(["--pp", "4", "--microbatches", "8", "--F", "2", "--B", "3", "--W", "1", "--FB", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["method", "devices", "bubble", "formula_bubble"]
    by_method = {line.split()[0]: line.split() for line in lines[1:]}
    assert by_method["ZB1P"][2] == by_method["ZB1P"][3] == str(3 * (2 + 3 - 2 * 1.0))
    assert main(["--pp", "4", "--microbatches", "9"]) == 2
    assert "DualPipe: microbatches=9 with pp=4; expected an even number >= 8" in capsys.readouterr().err


def test_non_integer_chunk_times_are_accepted():
    """Measured times are not exact binary fractions: the checker must not reject end - start rounding."""
    from harness.pipeline import ChunkTimes, schedule_table

    f_time = 6195.326551818953
    times = ChunkTimes(F=f_time, B=2 * f_time, W=f_time, FB=3 * f_time * 0.79)
    rows = schedule_table(8, 16, times)
    assert {r["method"] for r in rows} >= {"1F1B", "ZB1P", "DualPipe"}
    one_f_one_b = next(r for r in rows if r["method"] == "1F1B")
    assert math.isclose(one_f_one_b["bubble"], 7 * (times.F + times.B), rel_tol=1e-9)
