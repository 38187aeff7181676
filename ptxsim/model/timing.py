"""Analytic kernel-time model: ncu-style counters + occupancy + device spec -> seconds, limiter, components.

All constants live in costs.py (MODEL_CONSTANTS, CLASS_COSTS; each documented there with its value and source); the
per-kernel quantities come from the simulated instruction stream (stream.py: ILP, MLP; counters.py: L1 hits); this
file holds only formulas. With S the SMs the kernel may use (`sm_count`, an SM partition), f the SM clock (one for
every bound: the device's under-load clock, DeviceSpec.under_load_clock_hz, unless a clock is given), G the grid's
blocks, B blocks per SM (occupancy):

  active SMs     A = min(S, G);  resident warps per active SM  W = min(occ.warps_per_sm, G x warps_per_block / A)
  sub-partitions P = min(4, max(1, W)): a warp runs on one SMSP, so fewer than 4 warps leave SMSPs idle
  dram           (dram__bytes_read + dram__bytes_write) / BW, BW = min(peak x dram_achievable_fraction x
                 bandwidth_share, A x l1_fill_bytes_per_clk x f)   (a small partition cannot draw the full HBM rate)
  l2             32 x (global ld sectors - L1-hit sectors + st + atom + cp.async sectors (cp.async, cp.async.bulk
                 and TMA tensor copies, loads and stores; a multicast copy is read once)) / min(L2 peak x
                 l2_achievable_fraction, A x l1_fill x f), L2 peak = l2_bytes_per_clk_per_sm x S x f (per-SM
                 L1<->L2 path); L1 hits (ptxsim__l1_hit_sectors_global_op_ld: a sector the same CTA loaded before
                 with an L1-allocating load; .cg/.cv/L1::no_allocate neither hit nor allocate) never reach L2
  shared         shared wavefronts (ld + st; bank conflicts are already extra wavefronts; wgmma operand bytes / 128)
                 / (A x f x wavefronts/clk)
  issue          max(dispatch / r, busiest of the fma/alu/lsu/cbu pipes) / (P x A x f), where dispatch is one
                 clock per warp-instruction (SASS-charged when a sass_mix is given: sass.py), pipe busy time is
                 count x clocks from costs.class_cycles, and
                 r = min(1, (W / P) x ilp) is the issue rate of a sub-partition holding W / P warps that each issue
                 `ilp` instructions per clock alone (ptxsim__model_ilp.ratio, stream.py's scoreboard; without it
                 ilp = 1 / dependent_issue_latency_clk)
  sfu, fp64      busy clocks of the xu (MUFU + conversions; / sfu_achievable_fraction) and fp64 pipes / (P x A x f)
  tensor         tensor_bound.py: mma.sync and wgmma FLOPs by input width (tensor_counts.py) at the device's dense
                 peak per width (FP8 twice BF16) x mma_sync_fraction_of_peak / wgmma_fraction_of_peak, at f_t = f (one
                 clock for every bound); for wgmma, at least the warpgroups'
                 serial time when wgmma.wait_group 0 keeps them from overlapping tensor and other work (plus the
                 completion latency each drain exposes). mma.sync latency enters through ilp (a dependent mma chain
                 waits LATENCY_CLK["tensor"] per mma). wgmma operand reads are added to the shared bound.
  latency        Little's law for global loads: time = ld bytes x L / (A x W x mlp x bytes per request), with
                 L = (L1 hits x l1_latency + DRAM sectors x dram_latency + other sectors x l2_latency) / ld sectors
                 and mlp the loads each warp keeps in flight (ptxsim__model_mlp.ratio from the instruction stream;
                 without it loads_in_flight_per_warp); at least one round trip L when anything is loaded
  tail           the compute bounds (issue, tensor, sfu, fp64, shared) are multiplied by q = ceil(w)/w for
                 w = G/(B x S) >= 1 waves (the last partial wave leaves SMs idle; for a grid under one wave
                 q = ceil(n)/n with n = G/A blocks per active SM: uneven spread); "tail" reports the part of the
                 largest compute bound that q added, (q - 1) x unscaled compute. It is informational, never the limiter.
  launch         launch_overhead_s: the host-issued launch-to-launch gap, reported apart from the kernel time
  kernel         max(dram, l2, latency, issue, tensor, sfu, fp64, shared)   (roofline: memory and compute overlap)
  seconds        kernel + launch
  limiter        the largest component (ties: the first in COMPONENTS order); "launch" when the launch gap
                 exceeds the kernel time (a candidate for fusion)
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ptxsim.model.costs import INSTRUCTION_CLASSES, ISSUE_PIPES, MODEL_CONSTANTS, class_cycles
from ptxsim.model.devices import DeviceSpec, get_device
from ptxsim.model.errors import MetricsError, ModelArgumentError
from ptxsim.model.occupancy import Occupancy, check_sm_count
from ptxsim.model.tensor_bound import tensor_bound
from ptxsim.model.tensor_counts import KEYS as TENSOR_KEYS

SECTOR_BYTES = 32
CLASS_METRIC_PREFIX = "ptxsim__inst_executed_"
CLASS_METRICS = {name: f"{CLASS_METRIC_PREFIX}{name}.sum" for name in INSTRUCTION_CLASSES}
_L1 = "l1tex__t_{}_pipe_lsu_mem_global_op_{}.sum"
CP_ASYNC_SECTORS = "ptxsim__cp_async_global_sectors.sum"  # global sectors cp.async reads (global -> shared via L2)
METRIC_KEYS = (
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "smsp__thread_inst_executed_per_inst_executed.ratio",
    _L1.format("requests", "ld"), _L1.format("sectors", "ld"), _L1.format("sectors", "st"),
    _L1.format("sectors", "atom"), "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "ptxsim__l1_hit_sectors_global_op_ld.sum", CP_ASYNC_SECTORS, "ptxsim__model_ilp.ratio", "ptxsim__model_mlp.ratio",
    "launch__grid_size", "launch__block_size", "launch__thread_count", *CLASS_METRICS.values(), *TENSOR_KEYS,
)
COMPONENTS = ("dram", "l2", "shared", "issue", "tensor", "sfu", "fp64", "latency", "tail", "launch")
_COMPUTE = ("issue", "tensor", "sfu", "fp64", "shared")


@dataclass(frozen=True)
class Estimate:
    """A modelled kernel time. `components` are seconds per bound (COMPONENTS); `achieved` the fraction of each
    resource's peak (over the SMs the kernel was given) the kernel sustains at the estimated time."""

    seconds: float
    limiter: str
    components: Mapping[str, float]
    achieved: Mapping[str, float]
    device: str
    sm_count: int
    clock_hz: float
    bandwidth_share: float
    grid_blocks: int
    waves: float
    details: Mapping[str, float]

    @property
    def kernel_seconds(self) -> float:
        """Device time without the launch overhead."""
        return self.seconds - self.components["launch"]

    def as_row(self) -> dict[str, object]:
        """A flat row for tables/dashboards, units in the column names ("time (us)", "dram (us)", "dram (% peak)")."""
        row: dict[str, object] = {"device": self.device, "limiter": self.limiter, "time (us)": self.seconds * 1e6,
                                  "kernel (us)": self.kernel_seconds * 1e6, "sm count": self.sm_count,
                                  "waves": self.waves, "bandwidth share": self.bandwidth_share}
        row.update({f"{name} (us)": value * 1e6 for name, value in self.components.items()})
        row.update({f"{name} (% peak)": value * 100 for name, value in self.achieved.items()})
        return row


def _counters(metrics: Mapping) -> dict[str, float]:
    if not isinstance(metrics, Mapping):
        raise MetricsError(f"metrics must be a mapping of ncu-style names to numbers, got {type(metrics).__name__}")
    for key in metrics:
        if isinstance(key, str) and key.startswith(CLASS_METRIC_PREFIX) and key not in CLASS_METRICS.values():
            raise MetricsError(f"metrics: unknown instruction-class counter {key!r}; expected "
                               f"{CLASS_METRIC_PREFIX}<class>.sum with class in {', '.join(INSTRUCTION_CLASSES)}")
    out = {}
    for key in METRIC_KEYS:
        value = metrics.get(key, 0)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise MetricsError(f"metrics[{key!r}] = {value!r} is not a number") from None
        if isinstance(value, bool) or not math.isfinite(number) or number < 0:
            raise MetricsError(f"metrics[{key!r}] = {value!r}; expected a finite number >= 0")
        out[key] = number
    return out


def _grid_blocks(m: dict[str, float], occ: Occupancy) -> int:
    block = m["launch__block_size"]
    if block and block != occ.threads_per_block:
        raise MetricsError(f"metrics['launch__block_size'] = {block:g} but the occupancy was computed for "
                           f"{occ.threads_per_block} threads per block")
    grid = m["launch__grid_size"] or math.ceil(m["launch__thread_count"] / occ.threads_per_block)
    if grid < 1 or grid != int(grid):
        raise MetricsError(f"metrics: launch__grid_size = {m['launch__grid_size']:g} (thread count "
                           f"{m['launch__thread_count']:g}); expected a whole number of blocks >= 1")
    return int(grid)


def _check_args(spec, occ, clock_hz, bandwidth_share, constants):
    spec = get_device(spec)
    if not isinstance(occ, Occupancy):
        raise ModelArgumentError(f"estimate: occ must be an Occupancy from occupancy(), got {type(occ).__name__}")
    if occ.device != spec.name:
        raise ModelArgumentError(f"estimate: occupancy was computed for {occ.device!r}, not {spec.name!r}")
    if clock_hz is not None and (isinstance(clock_hz, bool) or not isinstance(clock_hz, numbers.Real)
                                 or not math.isfinite(clock_hz) or clock_hz <= 0):
        raise ModelArgumentError(f"estimate: clock_hz must be a positive number of hertz, got {clock_hz!r}")
    if isinstance(bandwidth_share, bool) or not isinstance(bandwidth_share, numbers.Real) \
            or not 0 < bandwidth_share <= 1:
        raise ModelArgumentError(f"estimate: bandwidth_share must be in (0, 1] (this kernel's fraction of DRAM "
                                 f"bandwidth), got {bandwidth_share!r}")
    table = dict(MODEL_CONSTANTS)
    for key, value in (constants or {}).items():
        if key not in table:
            raise ModelArgumentError(f"estimate: unknown model constant {key!r}; known: {', '.join(table)}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise ModelArgumentError(f"estimate: constant {key!r} = {value!r}; expected a finite number >= 0")
        table[key] = float(value)
    for key in ("dram_achievable_fraction", "l2_achievable_fraction", "shared_achievable_fraction",
                "sfu_achievable_fraction",
                "issue_achievable_fraction", "mma_sync_fraction_of_peak", "wgmma_fraction_of_peak",
                "loads_in_flight_per_warp"):
        if table[key] <= 0:
            raise ModelArgumentError(f"estimate: constant {key!r} must be > 0, got {table[key]!r}")
    return spec, table


def _check_mix(sass_mix) -> dict[str, float]:
    if sass_mix is None:
        return {}
    if not isinstance(sass_mix, Mapping):
        raise ModelArgumentError(f"estimate: sass_mix must be a mapping of class -> factor, got {sass_mix!r}")
    out = {}
    for key, value in sass_mix.items():
        if key not in CLASS_METRICS and key not in ("uniform_per_int", "unroll", "load_unroll"):
            raise ModelArgumentError(f"estimate: sass_mix key {key!r} is not an instruction class")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise ModelArgumentError(f"estimate: sass_mix[{key!r}] = {value!r}; expected a finite number >= 0")
        out[key] = float(value)
    return out


def estimate(metrics: Mapping, spec: DeviceSpec | str, occ: Occupancy, sm_count: int | None = None,
             clock_hz: float | None = None, bandwidth_share: float = 1.0,
             constants: Mapping[str, float] | None = None,
             sass_mix: Mapping[str, float] | None = None) -> Estimate:
    """Estimate one launch's time from its counters (see the module docstring for every formula).

    Args:
        metrics: ncu-style counters (METRIC_KEYS; missing keys count as 0, unrelated keys are ignored).
        spec: the device (or its name).
        occ: occupancy of the launch configuration on that device.
        sm_count: SMs the kernel may use (SM-partition experiments); default all.
        clock_hz: SM clock of every bound, tensor included; default the device's under-load clock
            (DeviceSpec.under_load_clock_hz, 1.6 GHz on the Hopper SXM parts: devices.py [FM]).
        bandwidth_share: this kernel's fraction of DRAM bandwidth when kernels run concurrently (0 < share <= 1).
        constants: overrides of MODEL_CONSTANTS entries (calibration).
        sass_mix: SASS-per-PTX factors of this kernel's module (ptxsim.model.sass.sass_factors): the int, other,
            control and convert counts are scaled by their factor and uniform-datapath instructions are added to
            dispatch (uniform_per_int per dynamic int instruction). None: charge the PTX counts as they are.
    Returns:
        An Estimate.
    Raises:
        MetricsError: a counter that is negative/not a number, an unknown class counter, no usable grid size,
            or a block size that contradicts `occ`.
        ModelArgumentError: an argument out of range, an occupancy for another device, an unknown constant.
        UnknownDeviceError: `spec` is an unknown device name.
    """
    spec, k = _check_args(spec, occ, clock_hz, bandwidth_share, constants)
    sms = check_sm_count(sm_count, spec.sm_count)
    m = _counters(metrics)
    grid = _grid_blocks(m, occ)
    # One clock for every bound (issue 29): the device's under-load clock unless the caller measured another.
    clock = float(clock_hz) if clock_hz is not None else spec.under_load_clock_hz
    tensor_clock = clock

    waves = occ.waves(grid, sms)
    active = min(sms, grid)
    warps = min(occ.warps_per_sm, grid * occ.warps_per_block / active)
    per_sm = grid / active
    tail_factor = math.ceil(waves) / waves if waves >= 1 else math.ceil(per_sm) / per_sm
    # A warp runs on one sub-partition: W < 4 resident warps leave 4 - W of them idle.
    smsps = min(float(spec.sub_partitions_per_sm), max(1.0, warps))
    smsp_clocks = smsps * active * clock                                # SMSP-clocks per second

    # Compute side: dispatch slots and pipe busy time, in SMSP-clocks.
    cycles = class_cycles(spec)
    mix = _check_mix(sass_mix)
    counts = {name: m[key] * mix.get(name, 1.0) for name, key in CLASS_METRICS.items()}
    if "ptxsim__tensor_warp_inst.sum" in metrics:   # dispatch: one slot per tensor warp-instruction, not per unit
        counts["tensor"] = m["ptxsim__tensor_warp_inst.sum"] * mix.get("tensor", 1.0)
    busy: dict[str, float] = {}
    for name, count in counts.items():
        pipe, clk = cycles[name]
        busy[pipe] = busy.get(pipe, 0.0) + count * clk
    uniform = m[CLASS_METRICS["int"]] * mix.get("uniform_per_int", 0.0)
    dispatch = sum(counts.values()) + uniform if mix else max(m["smsp__inst_executed.sum"], sum(counts.values()))
    if m["ptxsim__model_ilp.ratio"] > 0:        # instructions one warp issues per clock alone (stream.py)
        ilp = min(1.0, m["ptxsim__model_ilp.ratio"])
    else:
        ilp = 1.0 / k["dependent_issue_latency_clk"] if k["dependent_issue_latency_clk"] > 0 else 1.0
    issue_rate = min(1.0, warps / smsps * ilp)
    busiest = max(busy.get(pipe, 0.0) for pipe in ISSUE_PIPES)
    tb = tensor_bound(m, spec, k, active=active, sms=sms, smsps=smsps, warps=warps, dispatch=dispatch, ilp=ilp,
                      clock=clock, tensor_clock=tensor_clock,
                      legacy_units=None if "ptxsim__tensor_warp_inst.sum" in metrics else m[CLASS_METRICS["tensor"]])
    wavefronts = m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] + \
        m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] + tb.shared_wavefronts
    wavefronts_per_clk = spec.shared_bytes_per_clk_per_sm / (32 * 4)   # one 32-bank x 4 B wavefront per clock
    comp = {
        "issue": max(dispatch / issue_rate, busiest) / (smsp_clocks * k["issue_achievable_fraction"]),
        "tensor": tb.seconds,
        "sfu": busy.get("xu", 0.0) / (smsp_clocks * k["sfu_achievable_fraction"]),
        "fp64": busy.get("fp64", 0.0) / smsp_clocks,
        "shared": wavefronts / (active * clock * wavefronts_per_clk * k["shared_achievable_fraction"]),
    }
    compute = max(comp[name] for name in _COMPUTE)
    for name in _COMPUTE:
        comp[name] *= tail_factor

    # Memory side.
    fill_cap = active * spec.l1_fill_bytes_per_clk_per_sm * clock
    dram_bytes = m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
    dram_bw = min(spec.memory_bandwidth * k["dram_achievable_fraction"] * bandwidth_share, fill_cap)
    ld_sectors = m[_L1.format("sectors", "ld")]
    l1_hits = min(m["ptxsim__l1_hit_sectors_global_op_ld.sum"], ld_sectors)
    dram_sectors = min(m["dram__bytes_read.sum"] / SECTOR_BYTES, ld_sectors - l1_hits)
    l2_bytes = SECTOR_BYTES * (ld_sectors - l1_hits + m[_L1.format("sectors", "st")]
                               + m[_L1.format("sectors", "atom")] + m[CP_ASYNC_SECTORS])
    # NOTE: the L2 peak is per-SM (each SM's L1<->L2 path: l2_bytes_per_clk_per_sm) times the SMs the kernel may use,
    # so an SM partition (DeepSeek-V3's 20 SMs for communication) takes its share of L2 bandwidth away too
    l2_bw = min(spec.l2_bytes_per_clk_per_sm * sms * clock * k["l2_achievable_fraction"], fill_cap)
    ld_bytes = SECTOR_BYTES * m[_L1.format("sectors", "ld")]
    requests = m[_L1.format("requests", "ld")]
    bytes_per_request = ld_bytes / requests if requests else 4 * SECTOR_BYTES
    if ld_sectors:
        latency_s = (l1_hits * k["l1_latency_s"] + dram_sectors * k["dram_latency_s"]
                     + (ld_sectors - l1_hits - dram_sectors) * k["l2_latency_s"]) / ld_sectors
    else:
        latency_s = 0.0
    mlp = m["ptxsim__model_mlp.ratio"] or k["loads_in_flight_per_warp"]
    in_flight = active * warps * mlp * bytes_per_request
    latency = max(ld_bytes * latency_s / in_flight, latency_s) if ld_bytes else 0.0

    comp.update(dram=dram_bytes / dram_bw, l2=l2_bytes / l2_bw, latency=latency,
                tail=compute * (tail_factor - 1), launch=k["launch_overhead_s"])
    components = {name: comp[name] for name in COMPONENTS}
    kernel = max(components[name] for name in COMPONENTS if name not in ("tail", "launch"))
    seconds = kernel + components["launch"]
    limiter = max(COMPONENTS, key=lambda name: (components[name], -COMPONENTS.index(name)))

    def share(amount: float, peak_per_s: float) -> float:
        return amount / (kernel * peak_per_s) if kernel > 0 and peak_per_s > 0 else 0.0

    full_smsp = spec.sub_partitions_per_sm * sms * clock
    achieved = {
        "dram": share(dram_bytes, spec.memory_bandwidth),
        "l2": share(l2_bytes, spec.l2_bytes_per_clk_per_sm * spec.sm_count * clock),
        "shared": share(wavefronts, sms * clock * wavefronts_per_clk),
        "issue": share(dispatch, full_smsp),
        "tensor": tb.peak_seconds / kernel if kernel > 0 else 0.0,   # of the dense peak of each input width
        "sfu": share(busy.get("xu", 0.0), full_smsp),
        "fp64": share(busy.get("fp64", 0.0), full_smsp),
    }
    details = {
        "dram_bytes": dram_bytes, "dram_bandwidth": dram_bw, "l2_bytes": l2_bytes, "l2_bandwidth": l2_bw,
        "shared_wavefronts": wavefronts, "bank_conflicts": m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"],
        "warp_instructions": dispatch, "issue_rate": issue_rate, "ilp": ilp, "loads_in_flight_per_warp": mlp,
        "l1_hit_sectors": l1_hits, "sub_partitions_used": smsps, "uniform_instructions": uniform,
        "tensor_flops": tb.flops, "tensor_8bit_flops": tb.flops_8bit, "wgmma_flops": tb.wgmma_flops,
        "tensor_throughput_s": tb.throughput_s, "wgmma_serial_s": tb.serial_s, "wgmma_warpgroups": tb.warpgroups,
        "wgmma_overlap": tb.overlap, "wgmma_shared_wavefronts": tb.shared_wavefronts,
        "tensor_rate": tb.rate, "sfu_clocks": busy.get("xu", 0.0), "fp64_clocks": busy.get("fp64", 0.0),
        "load_bytes": ld_bytes, "load_latency_s": latency_s, "bytes_in_flight": in_flight,
        "bytes_in_flight_needed": dram_bw * latency_s, "resident_warps_per_sm": warps, "active_sms": active,
        "tail_factor": tail_factor, "blocks_per_sm": occ.blocks_per_sm, "occupancy": occ.occupancy,
    }
    return Estimate(seconds=seconds, limiter=limiter, components=MappingProxyType(components),
                    achieved=MappingProxyType(achieved), device=spec.name, sm_count=sms, clock_hz=clock,
                    bandwidth_share=float(bandwidth_share), grid_blocks=grid, waves=waves,
                    details=MappingProxyType(details))


# --- explain ---------------------------------------------------------------------------------------------------------

def _si(value: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _time(seconds: float) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


_LIMITER_WORDS = {
    "dram": "memory-bound", "l2": "L2-bound", "shared": "shared-memory-bound", "issue": "issue-bound",
    "tensor": "tensor-bound", "sfu": "SFU-bound", "fp64": "FP64-bound", "latency": "latency-bound",
    "tail": "tail-bound", "launch": "launch-bound",
}
# What each component's time is made of, from Estimate.details.
_COMPONENT_TEXT = {
    "dram": lambda d: f"{_si(d['dram_bytes'], 'B')} DRAM at {_si(d['dram_bandwidth'], 'B/s')}",
    "l2": lambda d: f"{_si(d['l2_bytes'], 'B')} L2 at {_si(d['l2_bandwidth'], 'B/s')}",
    "shared": lambda d: f"{d['shared_wavefronts']:.3g} shared wavefronts ({d['bank_conflicts']:.3g} bank conflicts)",
    "issue": lambda d: f"{d['warp_instructions']:.3g} warp-instructions at {d['issue_rate']:.0%} issue rate",
    "tensor": lambda d: f"{_si(d['tensor_flops'], 'FLOP')} tensor at {_si(d['tensor_rate'], 'FLOP/s')}" + (
        f" ({_time(d['tensor_throughput_s'])} at that rate; wgmma.wait_group serialises {d['wgmma_warpgroups']:.3g} "
        f"warpgroup(s)/SM, {d['wgmma_overlap']:.0%} of groups overlapped)"
        if d["wgmma_serial_s"] > d["tensor_throughput_s"] else ""),
    "sfu": lambda d: f"{d['sfu_clocks']:.3g} SFU/convert pipe clocks",
    "fp64": lambda d: f"{d['fp64_clocks']:.3g} FP64 pipe clocks",
    "latency": lambda d: f"{_si(d['bytes_in_flight'], 'B')} loads in flight vs "
                         f"{_si(d['bytes_in_flight_needed'], 'B')} needed at {_time(d['load_latency_s'])} latency",
    "tail": lambda d: f"partial last wave, x{d['tail_factor']:.3g} on compute",
    "launch": lambda d: "launch overhead",
}


def explain(est: Estimate) -> str:
    """One human sentence: the limiter with what it is made of, then the other non-zero components, largest first.

    e.g. "memory-bound: 2.15 GB DRAM at 3.02 TB/s = 712 us; l2 270 us, latency 166 us, ...; total 715 us on H100 SXM
    (132 SMs, 8 blocks/SM, occupancy 100%, 1.94 waves)".
    """
    if not isinstance(est, Estimate):
        raise ModelArgumentError(f"explain: expected an Estimate from estimate(), got {type(est).__name__}")
    d, comp = est.details, est.components
    head = f"{_LIMITER_WORDS[est.limiter]}: {_COMPONENT_TEXT[est.limiter](d)} = {_time(comp[est.limiter])}"
    if est.limiter in _COMPUTE and d["tail_factor"] > 1:
        head += f" (incl. x{d['tail_factor']:.3g} for the partial last wave)"
    rest = sorted((name for name in COMPONENTS if name != est.limiter and comp[name] > 0),
                  key=lambda name: -comp[name])
    others = ", ".join(f"{name} {_time(comp[name])}" for name in rest)
    where = (f"{est.device} ({est.sm_count} SMs, {d['blocks_per_sm']:g} blocks/SM, occupancy {d['occupancy']:.0%}, "
             f"{est.waves:.3g} waves")
    if est.bandwidth_share < 1:
        where += f", {est.bandwidth_share:.0%} of DRAM bandwidth"
    return f"{head}; {others}; total {_time(est.seconds)} on {where})" if others else \
        f"{head}; total {_time(est.seconds)} on {where})"
