"""The modelled sweep: communication on N SMs next to the grouped GEMM on the rest, from ptxsim counters through
`ptxsim.model.estimate(..., sm_count=..., bandwidth_share=...)` and the interference model (interference.py).

Per N (SMs given to communication) and comm series (ptx/plain, ptx/no_allocate: the two entries of ptx_impl/comm.py;
numba/plain: cuda_impl/comm.py), one step of an MoE layer is modelled as
  comm  = dispatch + combine (persistent: exactly N CTAs), on N SMs;
  GEMM  = grouped GEMM up + down (ptx_impl/grouped_gemm.py) over the GPU's local experts, on 132 - N SMs;
and reported alone, overlapped (interference.py), back to back on the same split, and unpartitioned (N = 0: no
SMs set aside; comm then GEMM, each on every SM). Every number is MODELLED, not measured.
"""
from __future__ import annotations

from harness.partition.interference import (
    MODEL_NOTE,
    grant,
    l2_stretch,
    policy,
    refetch_bytes,
    two_phase_step,
)

LABEL = "modelled (ptxsim counters scaled to the target, ptxsim.model timing, interference model assumptions)"


def estimate_kernel(kc, spec, sms: int, grid: int | None = None, dram_share: float = 1.0, extra_dram: float = 0.0):
    """The timing model's Estimate of one scaled kernel on `sms` SMs (grid: the comm kernel's N CTAs)."""
    from ptxsim.model import estimate, occupancy

    blocks = int(grid if grid is not None else kc.grid)
    metrics = dict(kc.metrics)
    metrics.update({"launch__grid_size": blocks, "launch__block_size": kc.block,
                    "launch__thread_count": blocks * kc.block})
    metrics["dram__bytes_read.sum"] = metrics.get("dram__bytes_read.sum", 0.0) + extra_dram
    occ = occupancy(spec, kc.block, kc.registers, kc.shared_bytes)
    return estimate(metrics, spec, occ, sm_count=int(sms), bandwidth_share=float(dram_share),
                    constants=dict(kc.model_constants) or None)


def _sum(kernels, spec, sms, grid=None, dram_share=1.0, extra=None):
    ests = [estimate_kernel(k, spec, sms, grid, dram_share, (extra or {}).get(k.name, 0.0)) for k in kernels]
    return sum(e.seconds for e in ests), ests


def _limiters(ests) -> str:
    return "+".join(e.limiter for e in ests)


def sweep_row(n: int, series: str, comm: list, gemm: list, spec) -> dict:
    """One modelled row: N SMs for communication by comm series `series` ("ptx/no_allocate", ...)."""
    from harness.partition.counters import parse_series
    from ptxsim.model import MODEL_CONSTANTS

    impl, policy_name = parse_series(series)
    total = spec.sm_count
    share = policy(policy_name).l2_share
    comm_bytes = sum(k.bytes for k in comm)
    gemm_flops = sum(k.flops for k in gemm)
    g_full, g_full_ests = _sum(gemm, spec, total)
    c_full, _ = _sum(comm, spec, total, grid=total)
    row = {"comm SMs": n, "GEMM SMs": total - n, "series": series, "impl": impl, "loads": policy_name,
           "modelled": True,
           "step unpartitioned (us)": (c_full + g_full) * 1e6}
    if n == 0:
        row.update({
            "comm (us)": c_full * 1e6, "comm bandwidth (GB/s)": comm_bytes / c_full / 1e9,
            "comm overlapped (us)": c_full * 1e6, "GEMM (us)": g_full * 1e6,
            "GEMM (TFLOP/s)": gemm_flops / g_full / 1e12, "GEMM overlapped (us)": g_full * 1e6,
            "GEMM interference slowdown (%)": 0.0, "step overlapped (us)": (c_full + g_full) * 1e6,
            "step back-to-back (us)": (c_full + g_full) * 1e6, "overlap saving (%)": 0.0,
            "DRAM grant comm": 1.0, "DRAM grant GEMM": 1.0, "L2 stretch": 1.0, "GEMM refetch (MB)": 0.0,
            "comm limiter": "n/a (no overlap)", "GEMM limiter": _limiters(g_full_ests),
        })
        return row
    c0, c_ests = _sum(comm, spec, n, grid=n)
    g0, g_ests = _sum(gemm, spec, total - n)
    gemm_l2 = sum(k.l2_bytes for k in gemm)
    gemm_dram = sum(k.dram_bytes for k in gemm)
    overlapped_comm_bytes = comm_bytes * min(1.0, g0 / c0)
    extra_total = refetch_bytes(share, overlapped_comm_bytes, gemm_l2, gemm_dram)
    extra = {k.name: extra_total * (k.dram_bytes / gemm_dram if gemm_dram else 1.0 / len(gemm)) for k in gemm}
    dram_cap = spec.memory_bandwidth * MODEL_CONSTANTS["dram_achievable_fraction"]
    l2_cap = spec.l2_bandwidth * MODEL_CONSTANTS["l2_achievable_fraction"]
    d_c = sum(k.dram_bytes for k in comm) / c0
    d_g = (gemm_dram + extra_total) / g0
    f_c, f_g = grant(d_c, d_g, dram_cap), grant(d_g, d_c, dram_cap)
    stretch = l2_stretch(gemm_l2 / g0, sum(k.l2_bytes for k in comm) / c0, share, l2_cap)
    c1 = max(_sum(comm, spec, n, grid=n, dram_share=f_c)[0], c0 * stretch)
    g1 = max(_sum(gemm, spec, total - n, dram_share=f_g, extra=extra)[0], g0 * stretch)
    step = two_phase_step(c0, g0, c1, g1)
    serial = c0 + g0
    row.update({
        "comm (us)": c0 * 1e6, "comm bandwidth (GB/s)": comm_bytes / c0 / 1e9, "comm overlapped (us)": c1 * 1e6,
        "GEMM (us)": g0 * 1e6, "GEMM (TFLOP/s)": gemm_flops / g0 / 1e12, "GEMM overlapped (us)": g1 * 1e6,
        "GEMM interference slowdown (%)": (g1 / g0 - 1.0) * 100, "step overlapped (us)": step * 1e6,
        "step back-to-back (us)": serial * 1e6, "overlap saving (%)": (1.0 - step / serial) * 100,
        "DRAM grant comm": f_c, "DRAM grant GEMM": f_g, "L2 stretch": stretch, "GEMM refetch (MB)": extra_total / 1e6,
        "comm limiter": _limiters(c_ests), "GEMM limiter": _limiters(g_ests),
    })
    return row


def modelled_sweep(counters: dict, spec, sms, series=None) -> list[dict]:
    """Rows for every comm series and every N in `sms` (each 0..spec.sm_count - 1).

    Args:
        counters: harness.partition.counters.collect(...) output (dispatch[s], combine[s], gemm[up], gemm[down]).
        spec: a ptxsim.model DeviceSpec.
        sms: SM counts for communication.
        series: comm series ("ptx/plain", "ptx/no_allocate", "numba/plain"); default counters.DEFAULT_SERIES.
    Raises:
        PartitionError: a missing kernel in `counters` or an N outside 0..sm_count-1.
    """
    from harness.partition.counters import DEFAULT_SERIES, PartitionError

    series = tuple(series or DEFAULT_SERIES)
    need = [f"{op}[{s}]" for s in series for op in ("dispatch", "combine")] + ["gemm[up]", "gemm[down]"]
    missing = [name for name in need if name not in counters]
    if missing:
        raise PartitionError(f"modelled sweep: counters lack {', '.join(missing)}; have {', '.join(counters)}")
    bad = [n for n in sms if not 0 <= int(n) < spec.sm_count]
    if bad:
        raise PartitionError(f"modelled sweep: SM counts {bad} outside 0..{spec.sm_count - 1} on {spec.name}")
    gemm = [counters["gemm[up]"], counters["gemm[down]"]]
    rows: list[dict] = []
    for s in series:
        comm = [counters[f"dispatch[{s}]"], counters[f"combine[{s}]"]]
        rows.extend(sweep_row(int(n), s, comm, gemm, spec) for n in sms)
    return rows


__all__ = ["LABEL", "MODEL_NOTE", "estimate_kernel", "modelled_sweep", "sweep_row"]
