"""The modelled sweep: properties that a wrong SM count, a wrong sharing rule or a swapped policy would break.

One module fixture simulates the real kernels (ptxsim, small sizes) and scales them to dsv3-prefill; the
interference primitives are checked on their own with hypothesis.
"""
import os
import secrets
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.presets import get_preset
from harness.partition import interference as itf
from harness.partition.counters import PartitionError, SimSizes, collect, local_preset
from harness.partition.model import estimate_kernel, modelled_sweep

SMS = (0, 4, 8, 12, 16, 20, 24, 28, 32)


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


needs_ptxsim = pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / ptxsim.load_ptx not available")
SMALL = SimSizes(comm_rows=16, gemm_tokens=32, gemm_kd=128)


@pytest.fixture(scope="module")
def counters():
    seed = int(os.environ.get("PTXMOE_SEED", secrets.randbits(32)))
    print(f"[seed] partition counters: PTXMOE_SEED={seed}")
    return collect(get_preset("dsv3-prefill"), SMALL, seed, ep=32)


@pytest.fixture(scope="module")
def spec():
    from ptxsim.model import get_device

    return get_device("h800")


@pytest.fixture(scope="module")
def rows(counters, spec):
    return modelled_sweep(counters, spec, SMS)


SERIES = ("ptx/plain", "ptx/no_allocate", "numba/plain")


def _by(rows, series):
    return sorted((r for r in rows if r["series"] == series), key=lambda r: r["comm SMs"])


@needs_ptxsim
def test_counters_come_from_checked_runs_and_scale_to_the_target(counters):
    preset = get_preset("dsv3-prefill")
    for name, entry in (("dispatch[ptx/plain]", "ptx_comm_dispatch_plain"),
                        ("dispatch[ptx/no_allocate]", "ptx_comm_dispatch_noalloc"),
                        ("dispatch[numba/plain]", "comm_dispatch")):
        kc = counters[name]
        assert entry in kc.entry and kc.check.startswith("recv bitwise equal")
        # the dispatch reads and writes every routed row once: the scaled DRAM bytes are the target's rows
        rows_bytes = 2 * preset.T * preset.K * 2 * preset.H
        assert abs(kc.dram_bytes - rows_bytes) / rows_bytes < 0.02
    local = local_preset(preset, 32)
    up = counters["gemm[up]"]
    assert up.flops == 2 * preset.T * preset.K * 2 * local.I * local.H
    # tensor instructions x 4096 FLOP cover the useful FLOPs (padding rows are computed too, never fewer)
    tensor = up.metrics["ptxsim__inst_executed_tensor.sum"] * 4096
    assert up.flops <= tensor <= 1.1 * up.flops


@needs_ptxsim
def test_gemm_time_grows_as_sms_are_taken_away(rows):
    for series in SERIES:
        gemm = [r["GEMM (us)"] for r in _by(rows, series)]
        assert all(b >= a for a, b in pairwise(gemm)), gemm
        assert gemm[-1] > gemm[0] * 1.1  # 100 SMs instead of 132: clearly slower (compute-bound GEMM)


@needs_ptxsim
def test_comm_gets_faster_with_more_sms(rows):
    for series in SERIES:
        bw = [r["comm bandwidth (GB/s)"] for r in _by(rows, series) if r["comm SMs"] > 0]
        assert all(b >= a for a, b in pairwise(bw)), bw
        assert bw[-1] > 2 * bw[0]


@needs_ptxsim
def test_overlapped_step_lies_between_the_longest_kernel_and_back_to_back(rows):
    for r in rows:
        assert r["step overlapped (us)"] <= r["step back-to-back (us)"] * (1 + 1e-12), r
        assert r["step overlapped (us)"] >= max(r["comm (us)"], r["GEMM (us)"]) * (1 - 1e-12), r
        if r["comm SMs"] == 0:
            assert r["step overlapped (us)"] == pytest.approx(r["step unpartitioned (us)"])


@needs_ptxsim
def test_no_allocate_interferes_no_more_than_plain(rows):
    plain, noalloc = _by(rows, "ptx/plain"), _by(rows, "ptx/no_allocate")
    for p, n in zip(plain, noalloc, strict=True):
        assert p["comm SMs"] == n["comm SMs"]
        assert n["GEMM interference slowdown (%)"] <= p["GEMM interference slowdown (%)"] + 1e-9
        assert n["step overlapped (us)"] <= p["step overlapped (us)"] * (1 + 1e-12)
        if p["comm SMs"] > 0:
            assert p["GEMM interference slowdown (%)"] > 0  # the plain policy does interfere in the model
            assert n["GEMM interference slowdown (%)"] < p["GEMM interference slowdown (%)"]


@needs_ptxsim
def test_partition_sizes_reach_the_timing_model(counters, spec):
    gemm = counters["gemm[up]"]
    assert estimate_kernel(gemm, spec, 100).sm_count == 100
    comm = counters["dispatch[ptx/plain]"]
    est = estimate_kernel(comm, spec, 20, grid=20)
    assert est.grid_blocks == 20 and est.sm_count == 20
    assert estimate_kernel(comm, spec, 20, grid=20, dram_share=0.1).seconds >= est.seconds


@needs_ptxsim
def test_rows_cover_every_series_and_sm_count(rows):
    assert sorted((r["series"], r["comm SMs"]) for r in rows) == sorted((s, n) for s in SERIES for n in SMS)
    assert all(r["series"] == f"{r['impl']}/{r['loads']}" for r in rows)


def test_series_names_are_checked():
    from harness.partition.counters import parse_series

    assert parse_series("ptx/no_allocate") == ("ptx", "no_allocate")
    assert parse_series("cuda/plain") == ("numba", "plain")  # the Numba path's name in older partition files
    with pytest.raises(PartitionError, match="only numba/plain"):
        parse_series("numba/no_allocate")
    with pytest.raises(PartitionError, match="impl/loads"):
        parse_series("triton/plain")


@needs_ptxsim
def test_bad_requests_are_named(counters, spec):
    with pytest.raises(PartitionError, match="outside 0..131"):
        modelled_sweep(counters, spec, (0, 132))
    partial = {k: v for k, v in counters.items() if k != "gemm[down]"}
    with pytest.raises(PartitionError, match=r"gemm\[down\]"):
        modelled_sweep(partial, spec, (0, 4))


def test_local_preset_needs_a_divisor():
    with pytest.raises(PartitionError, match="divisor"):
        local_preset(get_preset("dsv3-prefill"), 3)
    assert local_preset(get_preset("dsv3-prefill"), 32).E == 8


def test_policy_table_is_explicit_and_ordered():
    assert set(itf.LOAD_POLICIES) == {"plain", "no_allocate"}
    assert 0 < itf.LOAD_POLICIES["no_allocate"].l2_share < itf.LOAD_POLICIES["plain"].l2_share <= 1
    for p in itf.LOAD_POLICIES.values():
        assert "model assumption" in p.why
    assert "model assumption, not a measurement" in itf.MODEL_NOTE


times = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(times, times, st.floats(1.0, 4.0), st.floats(1.0, 4.0))
def test_two_phase_step_bounds(c, g, sc, sg):
    c1, g1 = c * sc, g * sg
    step = itf.two_phase_step(c, g, c1, g1)
    first, second = (c1, g) if c1 <= g1 else (g1, c)
    assert max(first, second) * (1 - 1e-12) <= step <= max(c1, g1) * (1 + 1e-12)


rates = st.floats(min_value=0.0, max_value=1e13, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(rates, rates, st.floats(1e9, 1e13))
def test_grant_gives_what_fits_and_shares_what_does_not(d, o, cap):
    f = itf.grant(d, o, cap)
    assert itf.MIN_SHARE <= f <= 1.0
    if d + o <= cap:
        assert f * cap >= min(d, cap * (1 - itf.MIN_SHARE)) * (1 - 1e-12)
    elif d > 0:
        assert f == pytest.approx(max(itf.MIN_SHARE, d / (d + o)))


@settings(max_examples=100, deadline=None)
@given(rates, rates, st.floats(1e9, 1e13))
def test_l2_stretch_is_monotone_in_the_share(g, c, cap):
    lo, hi = itf.l2_stretch(g, c, 0.35, cap), itf.l2_stretch(g, c, 1.0, cap)
    assert 1.0 <= lo <= hi


def test_refetch_is_capped_by_what_the_gemm_hit_in_l2():
    assert itf.refetch_bytes(1.0, 1e9, gemm_l2_bytes=5e8, gemm_dram_bytes=4e8) == pytest.approx(1e8)
    assert itf.refetch_bytes(0.35, 1e6, 1e12, 1e9) == pytest.approx(itf.REFETCH * 0.35 * 1e6)
    assert itf.refetch_bytes(1.0, 1e9, 1e8, 2e8) == 0.0
