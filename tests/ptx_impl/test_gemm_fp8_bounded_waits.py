"""The persistent FP8 rungs 4 and 5 with bounded mbarrier waits (gemm_fp8_ws_template.render(wait_bound=...), what a
backend with wait_bound launches): the checked-in files are the unbounded render; the bounded variant passes
kernels.md's check at tiny; a barrier whose phase can never complete (expect_tx larger than the copies deliver) ends
in the kernel's own trap, named by line, where the unbounded kernel deadlocks; the bounded PTX assembles."""
import functools

import pytest

from contract.presets import SKEWS
from harness.verify import run_and_check
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_ws_template as template

BOUND = 8  # failed tries before the trap (small: under ptxsim's time-outs each try is a whole deadlock round)


def _sim(bound: int):
    from harness.backends.sim import SimBackend

    sim = SimBackend()
    sim.wait_bound = bound
    return sim


def _check(backend, seed, cluster: bool, sms: int):
    from ptx_impl import gemm_fp8_r5 as r5

    run = r5.run if cluster else r4.run
    return run_and_check(functools.partial(run, sms=sms), backend, "grouped_gemm_fp8", "tiny",
                         SKEWS[seed % len(SKEWS)], seed, variant=("up", "down")[seed // 3 % 2])


@pytest.mark.parametrize("cluster", [False, True])
def test_the_bound_is_off_in_the_checked_in_files_and_counts_every_wait_loop(cluster):
    for tokens in template.TOKEN_TILES:
        plain, bounded = template.render(cluster, tokens), template.render(cluster, tokens, wait_bound=BOUND)
        assert plain == template.path(cluster, tokens).read_text(encoding="utf-8") == r4.ptx_source(tokens, cluster)
        assert "trap;" not in plain
        loops = plain.count("mbarrier.try_wait")
        assert loops == 2 and bounded.count("trap;") == loops and bounded.count(f"%spin, {BOUND};") == loops
        assert r4.ptx_source(tokens, cluster, BOUND) == bounded
    with pytest.raises(ValueError, match="wait_bound=-1"):
        template.render(cluster, 16, wait_bound=-1)


@pytest.mark.sim
@pytest.mark.parametrize("cluster", [False, True])
def test_the_bounded_rung_passes_tiny_without_reaching_its_trap(cluster, seed):
    sim = _sim(BOUND)
    result = _check(sim, seed, cluster, sms=4 if cluster else 5)
    assert result.ok, f"cluster={cluster} seed={seed}: {result.message}"
    ptx, _ = sim.launched_sources()[sim.records[-1].name]
    assert "trap;" in ptx  # the bounded variant is what ran


def _broken(bounded: str) -> str:
    """expect_tx 16 bytes more than the stage's copies deliver: the full barrier's phase never completes."""
    sb = template.stage_bytes(16)
    bad = bounded.replace(f"[%bar], {sb};", f"[%bar], {sb + 16};")
    assert bad != bounded
    return bad


@pytest.mark.sim
def test_a_barrier_that_never_completes_traps_in_the_bounded_rung_and_deadlocks_in_the_plain_one(monkeypatch, seed):
    from ptxsim.errors import DeadlockError, PtxSimError

    bad = _broken(template.render(False, 16, wait_bound=BOUND))
    traps = {i for i, line in enumerate(bad.splitlines(), 1) if "trap;" in line}
    monkeypatch.setattr(r4, "ptx_source", lambda tokens, cluster=False, wait_bound=0: bad)
    with pytest.raises(PtxSimError, match=r"trap executed in kernel grouped_gemm_fp8_ws_m16n128 at PTX line") as e:
        _check(_sim(BOUND), seed, False, sms=2)
    assert int(str(e.value).split("PTX line ")[1].split(",")[0]) in traps, str(e.value)
    plain = _broken(template.render(False, 16))
    monkeypatch.setattr(r4, "ptx_source", lambda tokens, cluster=False, wait_bound=0: plain)
    with pytest.raises(DeadlockError, match="can never complete"):
        _check(_sim(0), seed, False, sms=2)


@pytest.mark.parametrize("cluster", [False, True])
def test_the_bounded_variant_assembles_for_sm90a_with_zero_spills(cluster):
    from harness.toolchain import assemble

    for tokens in template.TOKEN_TILES:
        ptx = template.render(cluster, tokens, wait_bound=1 << 26)
        _, usage = assemble(ptx, "sm_90a", name=f"bounded_{template.path(cluster, tokens).name}")
        u = usage[template.entry(cluster, tokens)]
        assert u.spills == 0 and u.stack_frame_bytes == 0 and u.registers == template.MAXNREG, u


@pytest.mark.fakegpu
def test_the_gpu_backend_launches_the_bounded_variant_under_its_sync_watchdog(monkeypatch):
    """$PTXMOE_GPU_SYNC_TIMEOUT (gpu_check.sh sets 15 s) turns on the bounded waits too; without it the checked-in
    kernel runs."""
    import numpy as np

    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.cuda_api import WAIT_BOUND
    from harness.backends.gpu import GpuBackend
    from tests.harness.fakegpu.fakes import install

    install(monkeypatch)
    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    for timeout, bound in (("15", WAIT_BOUND), ("0", 0)):
        monkeypatch.setenv("PTXMOE_GPU_SYNC_TIMEOUT", timeout)
        backend = GpuBackend()
        assert backend.wait_bound == bound
        args = {k: backend.to_device(v) for k, v in inputs.items()}
        args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
        (record,) = r4.run(backend, args, preset, sms=7)
        ptx = backend.sources[record.name][1]
        assert ptx == r4.ptx_source(16, False, bound) and (f"%spin, {WAIT_BOUND};" in ptx) == bool(bound)
