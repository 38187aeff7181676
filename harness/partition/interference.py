"""The interference model of the partition experiment: what the communication kernel's cache policy costs the GEMM.

MODEL ASSUMPTION, NOT A MEASUREMENT. ptxsim counts the same sectors for plain and no_allocate loads (the hint has no
architectural effect), so the difference DeepSeek-V3 reports ("significantly reduces the use of the L2 cache and
the interference to other SMs") enters only through the constants below. Calibrate them on hardware with
`ptxmoe partition --backend gpu`, which measures the same quantities.

While the two kernels overlap they share two chip-wide resources:

  DRAM   each kernel's demand rate alone (its DRAM bytes over its time alone) is granted in full when the two fit
         under the achievable bandwidth; otherwise in proportion to demand. The grant is the timing model's
         `bandwidth_share` (at least MIN_SHARE).
  L2     a fluid share of L2 bandwidth: with l_g and l_c the GEMM's and comm kernel's L2 byte rates alone, only
         l2_share[policy] of the comm kernel's count against the GEMM (lines the comm kernel allocates compete with
         the GEMM's tiles; lines streamed with L1::no_allocate, modelled as evicted first, mostly do not). Both
         kernels stretch by lambda = max(1, (l_g + l2_share x l_c) / C), C = max(L2 achievable bandwidth, l_g, l_c)
         (a rate the timing model already allowed one kernel alone is taken as achievable): overlapped time =
         max(timing-model estimate with the DRAM grant, time alone x lambda).
  refetch every comm byte allocated in L2 (l2_share x comm bytes overlapped with the GEMM) evicts GEMM data, which
         the GEMM re-reads from DRAM: extra GEMM DRAM bytes = REFETCH x l2_share x comm bytes overlapped, capped at
         the GEMM's L2 bytes that were not already DRAM traffic (it cannot miss more than it hit).

Overlapped step time (two phases): both run with the grants until the first finishes; the other then completes the
rest of its work at its time alone (work-conserving), e.g. comm first: step = c' + (1 - c'/g') x g.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class LoadPolicy:
    """One cache policy of the comm kernel and the share of its bytes that occupy L2 against the GEMM."""

    name: str
    l2_share: float
    ptx: str
    why: str


LOAD_POLICIES = MappingProxyType({
    "plain": LoadPolicy(
        "plain", 1.0, "ld.global.v4.u32 / st.global.v4.b32",
        "model assumption: every line moved allocates in L1 and L2 at normal eviction priority, so all of the "
        "comm kernel's L2 traffic and footprint competes with the GEMM"),
    "no_allocate": LoadPolicy(
        "no_allocate", 0.35, "ld.global.nc.L1::no_allocate.v4.u32 / st.global.L1::no_allocate.v4.b32",
        "model assumption: no L1 allocation and streamed lines are evicted first, so about a third of the comm "
        "kernel's L2 bytes still displace or contend with GEMM data (DeepSeek-V3 reports the reduction as "
        "significant without a number; 0.35 is a placeholder to calibrate)"),
})

# Extra GEMM DRAM bytes per comm byte allocated in L2 (model assumption: half of what a streamed line displaces is
# GEMM data that is used again before it would have been evicted anyway).
REFETCH = 0.5
# Floor of any bandwidth grant, so a starved kernel still progresses (a hardware arbiter never grants zero).
MIN_SHARE = 0.05

CONSTANTS = MappingProxyType({
    "REFETCH": (REFETCH, "extra GEMM DRAM bytes per comm byte allocated in L2 (model assumption)"),
    "MIN_SHARE": (MIN_SHARE, "smallest DRAM/L2 bandwidth grant while overlapped (model assumption)"),
    **{f"l2_share[{p.name}]": (p.l2_share, p.why) for p in LOAD_POLICIES.values()},
})

MODEL_NOTE = ("interference is a model assumption, not a measurement: plain vs no_allocate differ only through the "
              "l2_share constants of harness/partition/interference.py (ptxsim counts the same sectors for both); "
              "calibrate them with --backend gpu")


def policy(name: str) -> LoadPolicy:
    """The LoadPolicy called `name` ("plain" | "no_allocate")."""
    from harness.errors import UnknownNameError

    if name not in LOAD_POLICIES:
        raise UnknownNameError("load policy", name, LOAD_POLICIES)
    return LOAD_POLICIES[name]


def grant(demand: float, other: float, capacity: float) -> float:
    """The fraction of `capacity` a kernel demanding `demand` (bytes/s) gets next to one demanding `other`.

    Both fit: the kernel may use whatever the other leaves; oversubscribed: shares in proportion to demand.
    Never below MIN_SHARE, never above 1.
    """
    if capacity <= 0:
        return 1.0
    if demand + other <= capacity:
        share = (capacity - other) / capacity
    else:
        share = demand / (demand + other) if demand + other > 0 else 1.0
    return min(1.0, max(MIN_SHARE, share))


def l2_stretch(gemm_rate: float, comm_rate: float, l2_share: float, capacity: float) -> float:
    """lambda >= 1: how much L2 contention stretches both kernels while they overlap (rates in bytes/s)."""
    cap = max(capacity, gemm_rate, comm_rate)
    return max(1.0, (gemm_rate + l2_share * comm_rate) / cap) if cap > 0 else 1.0


def refetch_bytes(l2_share: float, comm_bytes_overlapped: float, gemm_l2_bytes: float, gemm_dram_bytes: float
                  ) -> float:
    """Extra DRAM bytes the GEMM re-reads because the comm kernel's allocated lines evicted its data."""
    return min(REFETCH * l2_share * comm_bytes_overlapped, max(0.0, gemm_l2_bytes - gemm_dram_bytes))


def two_phase_step(c_alone: float, g_alone: float, c_overlap: float, g_overlap: float) -> float:
    """Makespan of two kernels that overlap until the first finishes; the survivor then runs at its alone rate."""
    if c_overlap <= g_overlap:
        return c_overlap + (1.0 - c_overlap / g_overlap) * g_alone
    return g_overlap + (1.0 - g_overlap / c_overlap) * c_alone
