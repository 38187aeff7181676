"""Counters for the modelled sweep: run the comm kernels and the grouped GEMM on ptxsim at a small size, check their
outputs, and scale the simulator's ncu-style counters to the target (DeepSeek-V3) shapes.

Scaling (documented, because the target is far too large to simulate):
  comm       simulated at the target's H with `comm_rows` row copies (dispatch) / `comm_rows // K` tokens (combine);
             every counter x R_target / R_sim (rows: the per-row work is identical at the same H; per-thread setup,
             a few instructions per warp, is scaled too and so slightly over-counted).
  gemm       simulated with the target's routing block BM (so the same m64n128 / m64n64 CTA tile and reuse; checked)
             at a small Kd x N and a few experts; instruction and sector counters x W_target / W_sim, where
             W = padded routed rows x N x Kd is the tensor work (the kernel computes padding rows too); DRAM bytes x
             B_target / B_sim,
             B = 2 (rows x Kd + experts_used x N x Kd + rows x N), the fewest bytes (A once, used experts' weights
             once, C once). The target's rows are balanced routing's: every expert gets T*K/E rows padded to BM.
  launch     launch__grid_size is set per estimate: N for the comm kernels (persistent), the target's active row
             tiles x column tiles for the GEMM; the block size is the simulated one.
Per-kernel timing-model constant: the PTX comm kernels keep COMM_LOADS_IN_FLIGHT independent 16-byte loads in
flight per lane (four v4 loads are issued before the first store; see kernels/comm_dispatch.ptx), so their estimates
use loads_in_flight_per_warp = 4 instead of the model's generic 2. The Numba kernels (one 8-byte load per loop trip)
keep the generic value.
A comm "series" is impl/loads: ptx/plain, ptx/no_allocate (the two entries of ptx_impl/comm.py) and numba/plain
(cuda_impl/comm.py; Numba emits plain ld.global/st.global).
`l2_bytes` = 32 x (global ld + st + atom sectors + cp.async sectors): the bytes a kernel moves through L2, which the
interference model shares out (the timing model's own l2 bound does not include cp.async sectors).
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field

import numpy as np

from harness.errors import InputError, PtxmoeError
from harness.partition.problem import CommShapes, run_comm, shapes_of

SECTOR = 32
_SECTOR_KEYS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum", "ptxsim__cp_async_global_sectors.sum")
GEMM_VARIANTS = ("up", "down")
COMM_LOADS_IN_FLIGHT = 4.0
COMM_IMPLS = ("ptx", "numba")
LEGACY_SERIES_IMPLS = {"cuda": "numba"}  # partition files written before 2026-12-03 call the Numba path "cuda"
DEFAULT_SERIES = ("ptx/plain", "ptx/no_allocate", "numba/plain")


class PartitionError(PtxmoeError):
    """The partition experiment cannot run as asked (a simulated check failed, bad sizes, missing counters)."""


@dataclass(frozen=True)
class SimSizes:
    """What is simulated to get counters (kept small: the whole collection takes seconds on a CPU)."""

    comm_rows: int = 64          # dispatch row copies at the target's H (combine: comm_rows // K tokens)
    comm_ctas: int = 2           # CTAs of the simulated comm launches (the counters do not depend on it)
    gemm_tokens: int = 64        # tokens routed in the simulated GEMM
    gemm_experts: int = 4
    gemm_topk: int = 2
    gemm_kd: int = 256           # up: Kd (= H of the small problem); down: N
    gemm_n: int = 256            # up: N (= 2I of the small problem); down: Kd = gemm_n // 2

    def __post_init__(self):
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"SimSizes.{name} = {value!r}; expected an integer >= 1")
        if self.gemm_kd % 128 or self.gemm_n % 256:
            raise InputError(f"SimSizes: gemm_kd = {self.gemm_kd} must be a multiple of 128 and gemm_n = "
                             f"{self.gemm_n} a multiple of 256 (the GEMM tiles)")
        if self.gemm_topk >= self.gemm_experts:
            raise InputError(f"SimSizes: gemm_topk = {self.gemm_topk} must be < gemm_experts = {self.gemm_experts}")


@dataclass(frozen=True)
class KernelCounters:
    """One kernel's counters scaled to the target, plus what the timing model needs to estimate it."""

    name: str                 # "dispatch[ptx/plain]", "combine[numba/plain]", "gemm[up]", ...
    kind: str                 # "comm" or "gemm"
    entry: str
    metrics: dict = field(repr=False)  # scaled counters (launch__* set per estimate)
    scale: float              # the ratio applied to instruction and sector counters
    block: int
    registers: int
    shared_bytes: int
    grid: int                 # gemm: the target's tiles; comm: 0 (persistent: N per estimate)
    bytes: float              # comm: bytes moved (the bandwidth numerator); gemm: fewest bytes
    flops: float              # gemm: useful FLOPs (routed rows only); comm: the combine's FMAs x 2
    l2_bytes: float           # bytes through L2 (see the module docstring)
    dram_bytes: float
    check: str                # what the simulated run's output check said
    source: str = "ptxsim"
    model_constants: tuple = ()  # (name, value) overrides of ptxsim.model.MODEL_CONSTANTS for this kernel

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "entry": self.entry, "scale": self.scale, "block": self.block,
                "registers": self.registers, "shared_bytes": self.shared_bytes, "grid": self.grid,
                "bytes": self.bytes, "flops": self.flops, "l2_bytes": self.l2_bytes, "dram_bytes": self.dram_bytes,
                "check": self.check, "source": self.source, "model_constants": dict(self.model_constants)}


@functools.lru_cache(maxsize=None)
def _resources(ptx: str) -> dict:
    """ptxas resource usage per entry of a PTX text (registers for occupancy)."""
    from harness.toolchain import assemble

    _, usage = assemble(ptx)
    return usage


def _scaled(metrics: dict, ratio: float, dram_ratio: float) -> dict:
    out = {}
    for key, value in metrics.items():
        if key.startswith("launch__") or key.endswith(".ratio") or not isinstance(value, (int, float)):
            continue
        out[key] = float(value) * (dram_ratio if key.startswith("dram__") else ratio)
    return out


def _l2_bytes(metrics: dict) -> float:
    return SECTOR * sum(float(metrics.get(k, 0.0)) for k in _SECTOR_KEYS)


def _dram_bytes(metrics: dict) -> float:
    return float(metrics.get("dram__bytes_read.sum", 0.0)) + float(metrics.get("dram__bytes_write.sum", 0.0))


def _stats_metrics(record, what: str) -> dict:
    metrics = getattr(getattr(record, "stats", None), "metrics", None)
    if not metrics:
        raise PartitionError(f"{what}: the launch record carries no ptxsim stats.metrics; the modelled sweep needs "
                             f"ptxsim's counters (harness.backends.sim.SimBackend)")
    return dict(metrics)


def parse_series(series: str) -> tuple[str, str]:
    """"ptx/no_allocate" -> ("ptx", "no_allocate"); the Numba path ("numba"; "cuda" in older files) has only plain
    loads.

    Raises:
        PartitionError: an unknown implementation or policy, or a policy the implementation cannot express.
    """
    from harness.partition.interference import LOAD_POLICIES

    impl, _, loads = str(series).partition("/")
    impl = LEGACY_SERIES_IMPLS.get(impl, impl)
    if impl not in COMM_IMPLS or loads not in LOAD_POLICIES:
        raise PartitionError(f"comm series {series!r}; expected impl/loads with impl in {', '.join(COMM_IMPLS)} and "
                             f"loads in {', '.join(LOAD_POLICIES)} (e.g. {', '.join(DEFAULT_SERIES)})")
    if impl == "numba" and loads != "plain":
        raise PartitionError(f"comm series {series!r}: Numba emits plain ld.global/st.global; only numba/plain exists")
    return impl, loads


def _comm_kernel(impl: str, op: str, loads: str) -> tuple[str, str]:
    """(PTX text, entry) the series launches for `op`."""
    if impl == "ptx":
        from ptx_impl import comm

        kernel = comm.kernel_for(op, loads)
        return kernel.ptx, kernel.entry
    import cuda_impl.comm as cuda_comm
    from harness.backends.numba_abi import compile_numba

    pyfunc, sig = ((cuda_comm.comm_dispatch, cuda_comm.DISPATCH_SIGNATURE) if op == "dispatch"
                   else (cuda_comm.comm_combine, cuda_comm.COMBINE_SIGNATURE))
    compiled = compile_numba(pyfunc, sig)
    return compiled.ptx, compiled.entry


def comm_counters(preset, series: str, sizes: SimSizes, rng: np.random.Generator) -> list[KernelCounters]:
    """Dispatch and combine of one series ("ptx/plain", "ptx/no_allocate", "numba/plain") simulated at the target's
    H, checked, and scaled to the target's rows.

    Raises:
        PartitionError: a bad series, or a simulated output failed its check (a wrong kernel's counters are unused).
    """
    from harness.backends.sim import SimBackend

    impl, loads = parse_series(series)
    module = importlib.import_module("ptx_impl.comm" if impl == "ptx" else "cuda_impl.comm")
    launch = {"loads": loads} if impl == "ptx" else {}
    target = shapes_of(preset)
    out = []
    for op, rows_sim in (("dispatch", sizes.comm_rows), ("combine", max(1, sizes.comm_rows // target.K) * target.K)):
        shapes = CommShapes(rows_sim // target.K if op == "combine" else rows_sim, target.H,
                            target.K if op == "combine" else 1, spare=3)
        backend = SimBackend()
        result, record = run_comm(module, backend, op, shapes, rng, sizes.comm_ctas, **launch)
        if not result.ok:
            raise PartitionError(f"simulated comm {op}[{series}] at T={shapes.T}, H={shapes.H}, K={shapes.K} failed "
                                 f"its check: {result.message}")
        sim = _stats_metrics(record, f"comm {op}[{series}]")
        ratio = target.R / shapes.R
        ptx, entry = _comm_kernel(impl, op, loads)
        usage = _resources(ptx)[entry]
        metrics = _scaled(sim, ratio, ratio)
        nbytes = target.dispatch_bytes() if op == "dispatch" else target.combine_bytes()
        constants = (("loads_in_flight_per_warp", COMM_LOADS_IN_FLIGHT),) if impl == "ptx" else ()
        out.append(KernelCounters(
            name=f"{op}[{series}]", kind="comm", entry=entry, metrics=metrics, scale=ratio,
            block=module.BLOCK, registers=usage.registers, shared_bytes=usage.shared_bytes, grid=0,
            bytes=float(nbytes), flops=float(target.combine_flops() if op == "combine" else 0),
            l2_bytes=_l2_bytes(metrics), dram_bytes=_dram_bytes(metrics), check=result.message,
            model_constants=constants))
    return out


def balanced_padded_rows(preset) -> int:
    """Rows the grouped GEMM computes under balanced routing: each expert's T*K/E rows padded to BM."""
    per_expert = -(-preset.T * preset.K // preset.E)
    return preset.E * (-(-per_expert // preset.BM)) * preset.BM


def _gemm_dims(preset, variant: str) -> tuple[int, int]:
    """(Kd, N) of the up or down GEMM of a preset."""
    return (preset.H, 2 * preset.I) if variant == "up" else (preset.I, preset.H)


def _gemm_bytes(rows: int, kd: int, n: int, experts: int) -> float:
    return 2.0 * (rows * kd + experts * n * kd + rows * n)


def gemm_counters(preset, variant: str, sizes: SimSizes, seed: int) -> KernelCounters:
    """ptx_impl.grouped_gemm simulated small with the target's BM, checked, and scaled to the target's shapes.

    Raises:
        PartitionError: an unknown variant, or the simulated output failed its check.
    """
    from contract.kernels import get_kernel
    from contract.presets import Preset
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel
    from ptx_impl import grouped_gemm

    if variant not in GEMM_VARIANTS:
        raise PartitionError(f"gemm variant {variant!r}; expected one of {', '.join(GEMM_VARIANTS)}")
    small = Preset("partition-sim", T=sizes.gemm_tokens, H=sizes.gemm_kd, E=sizes.gemm_experts, K=sizes.gemm_topk,
                   G=1, TG=1, I=sizes.gemm_n // 2, BM=preset.BM)
    backend = SimBackend()
    inputs, outputs, records = run_kernel(grouped_gemm.run, backend, "grouped_gemm", small, "balanced", seed,
                                          variant=variant)
    result = get_kernel("grouped_gemm").check(outputs, inputs, small)
    if not result.ok:
        raise PartitionError(f"simulated grouped_gemm[{variant}] failed its check: {result.message}")
    sim = _stats_metrics(records[-1], f"grouped_gemm[{variant}]")
    kd_s, n_s = _gemm_dims(small, variant)
    rows_s = int(inputs["total_padded"][0])
    experts_s = len({int(e) for e in inputs["block_expert"] if e >= 0})
    kd_t, n_t = _gemm_dims(preset, variant)
    rows_t = balanced_padded_rows(preset)
    experts_t = min(preset.E, preset.T * preset.K)
    ratio = (rows_t * n_t * kd_t) / (rows_s * n_s * kd_s)
    dram_ratio = _gemm_bytes(rows_t, kd_t, n_t, experts_t) / _gemm_bytes(rows_s, kd_s, n_s, experts_s)
    metrics = _scaled(sim, ratio, dram_ratio)
    target_shapes = grouped_gemm.GemmShapes(rows_t, kd_t, n_t, preset.E, preset.BM)
    cfg = grouped_gemm.launch_config(target_shapes)
    if cfg.entry != grouped_gemm.launch_config(small, variant).entry:
        raise PartitionError(f"grouped_gemm[{variant}]: the simulated size runs "
                             f"{grouped_gemm.launch_config(small, variant).entry} but the target runs {cfg.entry}; "
                             f"choose SimSizes gemm_kd/gemm_n so both use the same CTA tile (scaling assumes it)")
    usage = _resources(grouped_gemm.ptx_source(target_shapes))[cfg.entry]
    tiles = (rows_t // cfg.tile.tm) * (n_t // cfg.tile.tn)
    return KernelCounters(
        name=f"gemm[{variant}]", kind="gemm", entry=cfg.entry, metrics=metrics, scale=ratio, block=cfg.block[0],
        registers=usage.registers, shared_bytes=usage.shared_bytes + cfg.shared_bytes, grid=tiles,
        bytes=_gemm_bytes(rows_t, kd_t, n_t, experts_t), flops=2.0 * preset.T * preset.K * n_t * kd_t,
        l2_bytes=_l2_bytes(metrics), dram_bytes=_dram_bytes(metrics), check=result.message)


def local_preset(preset, ep: int):
    """The GEMM's view of one GPU under expert parallelism `ep`: E/ep local experts receiving the T*K rows.

    Raises:
        PartitionError: ep not a positive divisor of E.
    """
    from dataclasses import replace

    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 1 or preset.E % ep:
        raise PartitionError(f"expert-parallel degree ep = {ep!r}; expected a positive divisor of E = {preset.E}")
    return replace(preset, name=f"{preset.name}/ep{ep}", E=preset.E // int(ep))


def collect(preset, sizes: SimSizes, seed: int, ep: int = 1, series=DEFAULT_SERIES) -> dict[str, KernelCounters]:
    """Every kernel the modelled sweep needs: dispatch/combine per comm series (the preset's T, H, K) and the
    grouped GEMM up and down over the E/ep local experts of one GPU."""
    rng = np.random.default_rng(seed)
    out: dict[str, KernelCounters] = {}
    for name in series:
        for kc in comm_counters(preset, name, sizes, rng):
            out[kc.name] = kc
    local = local_preset(preset, ep)
    for variant in GEMM_VARIANTS:
        kc = gemm_counters(local, variant, sizes, seed)
        out[kc.name] = kc
    return out
