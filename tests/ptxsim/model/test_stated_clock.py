"""A source's stated measurement clock (published.STATED_CLOCK_HZ) is a condition of its experiment: its rows run at
that clock instead of the device's one under-load clock. Clock-bound rates scale with it, clock counts do not."""
from __future__ import annotations

import pytest

from ptxsim.model.devices import get_device
from ptxsim.model.microbench import BENCHES, run_on_sim
from ptxsim.model.paired import PAIRS, variant_bench
from ptxsim.model.published import S1, S5, stated_clock_hz

H100 = get_device("H100 SXM")


def test_s1_states_its_boost_clock_and_the_others_state_none():
    assert stated_clock_hz(S1) == 1.98e9
    assert stated_clock_hz(S5.format(gpu="H100")) is None
    assert {stated_clock_hz(p.source) for p in PAIRS if p.source == S1} == {1.98e9}


def test_an_issue_bound_rate_scales_with_the_clock_and_a_clock_count_does_not():
    fma = BENCHES["fp32_fma"]
    at_load = run_on_sim(fma, "H100 SXM", model="v2").quantity
    at_boost = run_on_sim(fma, "H100 SXM", model="v2", clock_hz=1.98e9).quantity
    assert at_boost / at_load == pytest.approx(1.98e9 / H100.under_load_clock_hz, rel=1e-3)
    ilp = variant_bench("ilp_fma_4")
    assert run_on_sim(ilp, "H100 SXM", model="v2", clock_hz=1.98e9).quantity == \
        pytest.approx(run_on_sim(ilp, "H100 SXM", model="v2").quantity, rel=1e-6)
