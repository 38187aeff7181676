"""harness/sampling.py: which launches a sim row simulates in part (--sample auto|off|N)."""
import pytest

from contract.presets import get_preset
from harness.errors import InputError
from harness.sampling import AUTO_MIN_CTAS, AUTO_WAVES, SamplePolicy, parse_sample


def test_parse_auto_off_and_a_number():
    assert parse_sample(None) == parse_sample("auto") == SamplePolicy(AUTO_WAVES, AUTO_MIN_CTAS, "auto")
    assert parse_sample("off").off and parse_sample(" OFF ").text == "off"
    assert parse_sample("3").waves == 3 and parse_sample(3).text == "3"


@pytest.mark.parametrize("bad", ["0", "-2", "many", "1.5", ""])
def test_a_bad_value_names_itself_and_the_choices(bad):
    with pytest.raises(InputError, match=rf"--sample '{bad}'.*auto, off, or a positive number of waves"):
        parse_sample(bad)


def test_only_big_gemm_launches_sample_whole_grid_rows():
    policy = SamplePolicy(6, 4096, rows_per_wave=2)
    assert policy.launch_options("swiglu", (10_000, 1, 1)) == {}  # elementwise kernels run whole
    assert policy.launch_options("grouped_gemm[512x1024]", (8, 95, 1)) == {}  # small's GEMM: 760 CTAs, whole
    big = policy.launch_options("grouped_gemm[4096x7168]", (64, 304, 1))
    assert big == {"sample_ctas": 64 * 6 * 2, "wave_ctas": 64 * 2}  # 6 waves of 2 grid rows each
    assert policy.sampled_fraction((64, 304, 1)) == pytest.approx(12 / 304)
    assert policy.launch_options("gemm", (64, 12, 1)) == {}  # asking for every row runs the grid whole
    assert SamplePolicy(None).launch_options("gemm", (64, 304, 1)) == {}


def test_waves_hold_about_one_experts_routing_blocks():
    assert SamplePolicy(6).for_preset(get_preset("dsv3-decode")).rows_per_wave == 1  # 304 blocks, 256 experts
    assert SamplePolicy(6).for_preset(get_preset("dsv3-prefill")).rows_per_wave == 3  # 764 blocks
    assert SamplePolicy(6).for_preset(get_preset("small")).rows_per_wave == 3


def test_the_layers_up_and_down_gemms_sample_the_same_routing_blocks():
    """Different column tiles (64 vs 112 per row), same row blocks: the same grid rows run, so the down GEMM reads
    rows of the swiglu output that the up GEMM's simulated CTAs produced."""
    from ptxsim.launch import plan_waves

    policy = SamplePolicy(6, 4096).for_preset(get_preset("dsv3-prefill"))
    rows = []
    for gx in (64, 112):
        opts = policy.launch_options("grouped_gemm", (gx, 764, 1))
        plan = plan_waves(gx * 764, opts["sample_ctas"], opts["wave_ctas"])
        ctas = [int(c) for _, ids in plan.batches(10_000) for c in ids]
        assert len(ctas) == gx * 18  # 6 waves of 3 whole grid rows
        rows.append(sorted({c // gx for c in ctas}))
    assert rows[0] == rows[1] and len(rows[0]) == 18


def test_a_sampled_launch_gets_a_budget_for_its_ctas(monkeypatch):
    """ptxsim's runaway budget is per launch; six sampled waves of a dsv3-prefill GEMM exceed the default, so the sim
    backend raises it in proportion to the CTAs simulated (the wall-clock limit still applies)."""
    from harness.backends.sim import SAMPLED_BUDGET_PER_CTA, SimBackend
    from ptxsim.config import CONFIG

    seen = []

    class Device:  # records the launch options the backend passes
        def launch(self, kernel, grid, block, params, shared_bytes=0, **kw):
            seen.append(kw)

    sim = SimBackend(device=Device(), sample=SamplePolicy(6, 4096, rows_per_wave=3))
    monkeypatch.setattr(sim, "module", lambda ptx: type("M", (), {"kernel": lambda self, e: None})())
    monkeypatch.setattr("harness.backends.sim.wave_shape", lambda *a: {})
    sim.launch_ptx("", "k", (64, 764, 1), 128, [], tag="grouped_gemm")
    sim.launch_ptx("", "k", (4096, 1, 1), 128, [], tag="swiglu")
    assert seen[0]["sample_ctas"] == 64 * 18
    assert seen[0]["budget"] == max(CONFIG.budget, 64 * 18 * SAMPLED_BUDGET_PER_CTA) > CONFIG.budget
    assert "budget" not in seen[1] and "sample_ctas" not in seen[1]


def test_a_persistent_gemm_at_dsv3_is_refused_with_the_reason_not_simulated_for_hours():
    """A one-row grid with fewer CTAs than routing blocks (PTX rungs 4-5: one CTA per SM looping over tiles) cannot
    be sampled by grid rows: at dsv3 the row is skipped naming the flags that help; at small it runs whole; with
    --sample off it runs whole anyway; a non-persistent GEMM at dsv3 is still sampled."""
    from contract.presets import get_preset
    from harness.errors import TooSlowToSimulate
    from harness.sampling import parse_sample

    auto = parse_sample("auto")
    with pytest.raises(TooSlowToSimulate, match=r"grouped_gemm_fp8_ws.*132 CTAs.*304 routing blocks.*--backend gpu"):
        auto.for_preset(get_preset("dsv3-decode")).launch_options("grouped_gemm_fp8_ws[4096x7168]", (132, 1, 1))
    assert auto.for_preset(get_preset("small")).launch_options("grouped_gemm_fp8_ws", (132, 1, 1)) == {}
    assert parse_sample("off").for_preset(get_preset("dsv3-decode")).launch_options("gemm_ws", (132, 1, 1)) == {}
    assert auto.for_preset(get_preset("dsv3-decode")).launch_options("grouped_gemm", (64, 304, 1))["sample_ctas"] > 0
    assert auto.for_preset(get_preset("dsv3-decode")).launch_options("swiglu", (132, 1, 1)) == {}  # not a GEMM
