"""The timing model's tensor bound: warp-level mma.sync and warpgroup wgmma, 16-bit and 8-bit inputs.

Inputs are tensor_counts.py's counters; constants come from costs.py (MODEL_CONSTANTS, TENSOR_PEAKS). With A the
active SMs, f_t the tensor clock (timing.py passes the SM clock f: one clock for every bound), f the SM clock, R_w
the device's dense FLOP per clock per SM for input width w (TENSOR_PEAKS: BF16/F16 4096, FP8 8192 on Hopper):

  mma.sync      sum_w F_w / (R_w x A x f_t x mma_sync_fraction_of_peak x P/4)   (P: sub-partitions in use; one
                tensor core per sub-partition serves a warp)
  wgmma         sum_w G_w / (R_w x A x f_t x wgmma_fraction_of_peak)   (a warpgroup spans all 4 sub-partitions)
  throughput    mma.sync + wgmma (they share the tensor cores)
  serial        what wgmma.wait_group costs a warpgroup that cannot overlap its tensor work with its other work.
                Per SM: t = its wgmma time (as above), o = its warpgroups' other issue time
                (dispatch slots / (A x 4 x ilp x f): a warpgroup's 4 warps issue on 4 sub-partitions at once),
                phi = drains / commit groups (wait_group 0 retires everything in flight: with a drain after every
                group, phi = 1 and a warpgroup alternates tensor work and other work; with wait_group 1 and one
                final drain, phi = 1 / groups and the two overlap), e = drains per SM x max(0, L - p) with L the
                wgmma completion latency (wgmma_latency_clk) and p the mean wgmma pipe time (a drain waits L for
                the last wgmma, of which p is already in t), and W the resident warpgroups per SM, which overlap
                each other:
                    serial = (phi x (t + o) + (1 - phi) x max(t, o) + e / f_t) / W
  tensor        max(throughput, serial)
  shared        wgmma operands are read from shared memory by the tensor cores: B (N x 32 bytes) always, A (64 x 32)
                in SS mode; those bytes are added to the shared bound as 128-byte wavefronts (`shared_wavefronts`).
                NOTE [EST]: this is why the model's N < 64 wgmma falls below peak (e.g. m64n32k16 SS: 3 KB per
                16 tensor clocks > 128 B/clk); Luo et al. (arXiv 2501.12084) report that drop and attribute it to
                shared-memory access.

Counter dictionaries without tensor_counts.py's keys (Nsight imports, older records) are charged the old way:
ptxsim__inst_executed_tensor.sum m16n8k16 units x 4096 FLOP of 16-bit mma.sync.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ptxsim.model.costs import MMA_M16N8K16_FLOPS, TENSOR_PEAKS
from ptxsim.model.devices import DeviceSpec

WIDTHS = ("16bit", "8bit")
WARPGROUP_WARPS = 4
SHARED_WAVEFRONT_BYTES = 32 * 4


@dataclass(frozen=True)
class TensorBound:
    """The tensor bound of one launch and what it is made of (seconds; FLOPs; counts)."""

    seconds: float
    throughput_s: float
    serial_s: float
    flops: float
    flops_8bit: float
    wgmma_flops: float
    peak_seconds: float          # the same FLOPs at the datasheet dense peak of all the kernel's SMs
    shared_wavefronts: float     # wgmma operand reads, in 128-byte shared wavefronts
    warpgroups: float
    overlap: float               # 1 - phi: the share of wgmma groups retired by pipelined waits

    @property
    def rate(self) -> float:
        """Effective FLOP/s of the throughput bound."""
        return self.flops / self.throughput_s if self.throughput_s > 0 else 0.0


def _peaks(spec: DeviceSpec) -> dict[str, float]:
    return {width: float(getattr(spec, field)) for width, field in TENSOR_PEAKS.items()}


def _flops(m: Mapping[str, float], kind: str) -> dict[str, float]:
    return {width: float(m.get(f"ptxsim__{kind}_flops_{width}.sum", 0.0)) for width in WIDTHS}


def tensor_bound(m: Mapping[str, float], spec: DeviceSpec, k: Mapping[str, float], *, active: int, sms: int,
                 smsps: float, warps: float, dispatch: float, ilp: float, clock: float,
                 tensor_clock: float, legacy_units: float | None) -> TensorBound:
    """The tensor bound (see the module docstring). `m` are the counters, `k` the model constants, `legacy_units`
    the tensor class count when the counters have no tensor_counts.py keys (else None)."""
    peaks = _peaks(spec)
    mma, wg = _flops(m, "mma"), _flops(m, "wgmma")
    if legacy_units is not None:   # counters without tensor_counts.py's keys
        mma = {"16bit": legacy_units * MMA_M16N8K16_FLOPS, "8bit": 0.0}
    mma_clk = sum(mma[w] / peaks[w] for w in WIDTHS)           # SM tensor clocks at the dense peak
    wg_clk = sum(wg[w] / peaks[w] for w in WIDTHS)
    mma_s = mma_clk / (active * tensor_clock * k["mma_sync_fraction_of_peak"] * smsps / spec.sub_partitions_per_sm)
    wg_s = wg_clk / (active * tensor_clock * k["wgmma_fraction_of_peak"])
    throughput = mma_s + wg_s

    warpgroups = max(1.0, warps / WARPGROUP_WARPS)
    serial, overlap = 0.0, 1.0
    wgmma_inst = float(m.get("ptxsim__wgmma_inst.sum", 0.0))
    if wgmma_inst > 0:
        drains, commits = float(m.get("ptxsim__wgmma_drain.sum", 0.0)), float(m.get("ptxsim__wgmma_commit.sum", 0.0))
        phi = min(1.0, drains / commits) if commits else (1.0 if drains else 0.0)
        overlap = 1.0 - phi
        tensor_sm = wg_s                                         # per SM (wg_s is already per active SM)
        other_sm = dispatch / (active * WARPGROUP_WARPS * ilp * clock) if ilp > 0 else 0.0
        pipe_clk = wg_clk / k["wgmma_fraction_of_peak"] / wgmma_inst
        exposed = drains / active * max(0.0, k["wgmma_latency_clk"] - pipe_clk) / tensor_clock
        serial = (phi * (tensor_sm + other_sm) + overlap * max(tensor_sm, other_sm) + exposed) / warpgroups
    shared_bytes = float(m.get("ptxsim__wgmma_shared_bytes.sum", 0.0))
    return TensorBound(
        seconds=max(throughput, serial), throughput_s=throughput, serial_s=serial,
        flops=sum(mma.values()) + sum(wg.values()), flops_8bit=mma["8bit"] + wg["8bit"],
        wgmma_flops=sum(wg.values()), peak_seconds=(mma_clk + wg_clk) / (sms * tensor_clock),
        shared_wavefronts=shared_bytes / SHARED_WAVEFRONT_BYTES, warpgroups=warpgroups, overlap=overlap)
