"""launch(): marshal args, run the grid in batches of CTAs (one lane vector per batch), copy results back, stats."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ptxsim import stats as stats_mod
from ptxsim.buffers import _SERIALS, DeviceMemory, Launch, NumbaArray, _dim3, marshal
from ptxsim.config import CONFIG
from ptxsim.counters import MemCounters, NoCounters
from ptxsim.errors import LaunchError
from ptxsim.executor import Scheduler
from ptxsim.plan import LaunchPlan
from ptxsim.state import ExecState

MAX_SHARED = 227 * 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
REG_FILE_BUDGET = 96 << 20  # bytes of simulated registers per batch
# Wave size when sampling without one: one CTA per SM on an H100/H200 SXM (132 SMs). Callers that know the occupancy
# (the harness's sim backend) pass blocks per SM x SMs instead.
DEFAULT_WAVE_CTAS = 132


def launch(kernel, grid, block, args, shared_bytes: int = 0, device: DeviceMemory | None = None, *, sanitize=None,
           sanitize_report: bool = False, sample_ctas: int | None = None, budget: int | None = None,
           max_lanes: int | None = None, counters: bool = True, time_limit: float | None = None, cluster=None,
           wave_ctas: int | None = None, l2_bytes: int | None = None, phases=None, represents: float | None = None,
           phase_waves=None, phase_grids=None, sample_ranges=None, phase_weights=None, strict_async=None,
           plan: LaunchPlan | None = None, track_written: bool = False, wait_timeouts: bool | None = None,
           shared_fill: int = 0):
    """Run `kernel` over `grid` x `block` threads (or, with `phases`, the whole grid once per parameter list).

    Args:
        kernel: a Kernel from module.kernel(name).
        grid, block: int or (x[, y[, z]]).
        args: one per .param: ndarray (copied to the device, updated in place afterwards), DeviceBuffer, NumPy
            scalar (type must match the param), bytes (byte-array params) or NumbaArray (Numba's array ABI).
        shared_bytes: dynamic shared memory (`.extern .shared`) per CTA.
        device: keep buffers on this Device across launches (a fresh one otherwise).
        sanitize: None, "all", or a set of {"memcheck", "racecheck", "initcheck", "synccheck", "nc", "asynccheck"}.
        sanitize_report: collect findings on stats.sanitizer_reports instead of raising.
        sample_ctas: simulate about this many CTAs, as whole waves spread over the grid (at least one wave), and
            extrapolate the counters (LaunchStats.simulated_metrics keeps the simulated subset's own counts).
        sample_ranges: instead of sample_ctas, a stratified sample: [(first, end, weight)], ranges of launch positions
            (CTAs in launch order, whole clusters) to simulate, each one wave of the L2 model (index first //
            wave_ctas), and how many of the grid's CTAs each stands for, as a multiple of its own (a stratum of S CTAs
            sampled by ranges holding s CTAs: S / s each). Counters are the weighted sum; the weighted CTAs must add
            up to the grid. For grids whose CTAs differ in kind: a grouped GEMM's routing blocks, one expert's
            weights each run of them, and the padding blocks after them, which exit at once.
        wave_ctas: CTAs resident together (blocks per SM x SMs), in launch order. The unit of sampling and of the
            L2 model's ageing. Default: with sample_ctas or sample_ranges, DEFAULT_WAVE_CTAS; without, the whole grid
            is one wave.
        l2_bytes: L2 capacity for the DRAM counters (ptxsim.model.l2.WaveL2); None = unbounded.
        budget: warp-instruction limit (default PTXSIM_BUDGET).
        max_lanes: most threads in one lane vector (default PTXSIM_MAX_LANES).
        counters: memory counters (sectors, bank conflicts); off saves time.
        time_limit: wall-clock seconds before TimeLimitExceeded (default PTXSIM_TIME_LIMIT; 0 = none).
        cluster: thread-block cluster shape (x[, y[, z]]); default the kernel's .reqnctapercluster, else none.
            The CTAs of a cluster run in the same batch; sample_ctas then samples whole clusters.
        phases: instead of `args` (pass None), a list of argument lists: the whole grid runs once per list, in order,
            each run one wave of the L2 model, their counts accumulated into this one launch. For a kernel whose
            parameters select part of its work (a persistent kernel's item range): the phases are a sample of it.
            Arguments must be DeviceBuffers, scalars or bytes (an ndarray would be a fresh copy per phase).
        represents: with phases, the fraction (0, 1] of the whole work the phases together are: counters are
            extrapolated by 1 / represents, sample_fraction = represents (simulated_metrics stay as counted).
        phase_weights: with phases, a stratified sample: each phase's counts weighted by how much of the whole work it
            stands for, as a multiple of its own, instead of all of them scaled by 1 / represents. A negative weight
            subtracts a phase's counts: e.g. a phase of no work, whose CTAs only set up, taking back the setups the
            other phases repeat more often than the whole launch would.
        phase_waves: with phases, each phase's wave index in the whole work, ascending (default 0, 1, ...): a gap
            ages the L2 as the skipped waves would have (ptxsim.model.l2).
        phase_grids: with phases, each phase's grid (default `grid`; within it, whole clusters). NOTE: a persistent
            kernel's window with fewer items than CTAs runs on that many CTAs: the rest would only set up and exit,
            and extrapolating their setup by 1 / represents would charge the whole launch for CTAs that, in the
            whole launch, all have work. LaunchStats still report `grid` (the launch as the device runs it).
        track_written: keep the device's per-byte written shadow up to date on global stores even with no sanitizer
            asking for it (a caller measuring which bytes of an output a launch never wrote).

        strict_async: adversarial timing of asynchronous operations (None: on when there are sanitizers or
            PTXSIM_STRICT_ASYNC=1). Async-copy destinations hold poison (0xFF bytes) until a waiter observes the
            copy's completion, mbarrier try_wait / test_wait return false once at each wait whose phase is
            incomplete, bulk copies complete only when a waiter needs them, bulk stores read shared memory and land
            at their wait_group, and wgmma re-reads its shared-memory operands when wgmma.wait_group retires it.
        wait_timeouts: when every live thread is blocked, threads blocked in mbarrier try_wait / test_wait get false
            and go on (a time-out, legal on hardware) rather than the launch raising a deadlock (None:
            PTXSIM_WAIT_TIMEOUTS). For kernels that bound their wait loops and trap past the bound.
        shared_fill: the byte every CTA's shared memory holds at its start (default 0). On hardware it holds whatever
            was there; 0xFF (NaN as f32) shows whether a kernel's reads of shared memory it never wrote reach what
            it stores (initcheck reports such reads, not their effect).
        plan: the sampling as one value (ptxsim.plan.LaunchPlan): its fields are the keywords sample_ctas, wave_ctas,
            sample_ranges, phases, phase_waves, phase_grids, phase_weights, represents and budget, which must then
            not be passed as well.

    Returns:
        LaunchStats.

    Raises:
        ParamTypeError, LaunchError (a shape CUDA refuses), MemoryFault, DeadlockError, InstructionBudgetExceeded,
        TimeLimitExceeded, ResourceLimitError, SanitizerError.
    """
    t0 = time.perf_counter()
    if plan is not None:
        given = {"sample_ctas": sample_ctas, "wave_ctas": wave_ctas, "budget": budget, "sample_ranges": sample_ranges,
                 "phases": phases, "phase_waves": phase_waves, "phase_grids": phase_grids,
                 "phase_weights": phase_weights, "represents": represents}
        twice = sorted(name for name, v in given.items() if v is not None)
        if not isinstance(plan, LaunchPlan) or twice:
            raise LaunchError(f"plan={plan!r:.100}: expected a ptxsim.plan.LaunchPlan and none of the keywords it "
                              f"sets" + (f" (also given: {', '.join(twice)})" if twice else ""))
        opts = plan.ptxsim_options()
        sample_ctas, wave_ctas, budget = opts.get("sample_ctas"), opts.get("wave_ctas"), opts.get("budget")
        sample_ranges, phases, phase_waves = opts.get("sample_ranges"), opts.get("phases"), opts.get("phase_waves")
        phase_grids, phase_weights = opts.get("phase_grids"), opts.get("phase_weights")
        represents = opts.get("represents")
    grid, block = _dim3(grid, "grid"), _dim3(block, "block")
    prog = kernel.program
    _check_shape(prog, grid, block)
    for name, v in (("sample_ctas", sample_ctas), ("budget", budget), ("max_lanes", max_lanes),
                    ("wave_ctas", wave_ctas), ("l2_bytes", l2_bytes)):
        if v is not None and (isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1):
            raise LaunchError(f"{name} must be a positive integer, got {v!r:.100}")
    nthreads = block[0] * block[1] * block[2]
    if shared_bytes < 0 or prog.shared_dyn_offset + shared_bytes > MAX_SHARED:
        raise LaunchError(f"shared memory {prog.shared_dyn_offset} static + {shared_bytes} dynamic bytes exceeds "
                          f"{MAX_SHARED} bytes per CTA")
    dev = device or DeviceMemory()
    symaddr = dict(dev.module_symbols(kernel.module))
    runs = _phase_runs(phases, represents, phase_waves, phase_grids, sample_ctas, wave_ctas, args)
    phase_weights = _phase_weights(phase_weights, runs)
    param_buf, back = marshal(kernel, args if runs is None else runs[0][1], dev)
    from ptxsim.sanitizers import make_sanitizers

    sans = make_sanitizers(sanitize, sanitize_report, dev)
    L = Launch(grid, block, int(shared_bytes), dev.gmem, param_buf, symaddr, [],
               track_written=track_written or any(s.needs_written for s in sans))
    mem = MemCounters(dev.gmem, l2_bytes) if counters else NoCounters()
    L.hooks = ([mem] if counters else []) + sans
    L.memcheck = next((s for s in sans if s.tool == "memcheck"), None)
    L.strict_async = (bool(sans) or CONFIG.strict_async) if strict_async is None else bool(strict_async)
    L.wait_timeouts = CONFIG.wait_timeouts if wait_timeouts is None else bool(wait_timeouts)
    if isinstance(shared_fill, (bool, np.bool_)) or not isinstance(shared_fill, (int, np.integer)) \
            or not 0 <= shared_fill <= 255:
        raise LaunchError(f"shared_fill must be a byte value 0..255, got {shared_fill!r:.100}")
    L.shared_fill = int(shared_fill)
    from ptxsim.clusters import cluster_shape, cta_order

    L.cluster = cluster_shape(kernel, grid, cluster)
    csize = 1 if L.cluster is None else L.cluster[0] * L.cluster[1] * L.cluster[2]
    ncta = grid[0] * grid[1] * grid[2]
    # launch order: CTA ids in order, or cluster by cluster (None: in order, made lazily per batch, so a 2**31-CTA
    # grid is never materialised); waves hold whole clusters
    order = None if L.cluster is None else cta_order(grid, L.cluster)
    weights = None
    if sample_ranges is not None:
        if runs is not None or sample_ctas is not None:
            raise LaunchError("sample_ranges is a sample of its own: it excludes sample_ctas and phases")
        plan, weights = _stratified_plan(ncta, sample_ranges, wave_ctas, csize, order)
        nrun, fraction = plan.simulated_ctas, plan.simulated_ctas / ncta
        phase_list = [(None, L, plan)]
        mem.weigh()
    elif runs is None:
        plan = plan_waves(ncta, sample_ctas, wave_ctas, csize, order)
        nrun, fraction = plan.simulated_ctas, plan.simulated_ctas / ncta
        phase_list = [(None, L, plan)]
    else:  # every phase: its grid as one wave, on its own parameter buffer
        grids = _phase_grids(phase_grids, len(runs), grid, kernel, cluster)
        phase_list = []
        for i, ((wave, params), pgrid) in enumerate(zip(runs, grids, strict=True)):
            pl = L if i == 0 and pgrid == grid else _phase_launch(L, kernel, params, dev, pgrid)
            n = pgrid[0] * pgrid[1] * pgrid[2]
            phase_list.append((wave, pl, plan_waves(n, None, None, csize,
                                                    None if L.cluster is None else cta_order(pgrid, L.cluster))))
        nrun, fraction = sum(p.ncta for _, _, p in phase_list), float(represents)
        plan = PhasePlan(ncta, tuple(wave for wave, _ in runs), fraction)
        if phase_weights is not None:
            weights = dict(zip((wave for wave, _ in runs), phase_weights, strict=True))
            mem.weigh()
    padded = (nthreads + 31) // 32 * 32
    lanes_cap = max_lanes or CONFIG.max_lanes
    reg_bytes = sum(max(b, 8) // 8 for b in prog.reg_bits) + prog.local_bytes + prog.frame_bytes + 16
    per_batch = max(1, min(lanes_cap // padded, REG_FILE_BUDGET // (reg_bytes * padded)))
    per_batch = max(csize, per_batch // csize * csize)  # whole clusters per batch
    counts = {k: np.zeros(len(prog.instrs) + 1, np.int64) for k in ("warp", "thread", "pred_on")}
    weighted = None if weights is None else {k: np.zeros(len(v), np.float64) for k, v in counts.items()}
    # warp-instructions per (warp of its CTA, pc) over the simulated CTAs, unweighted (model v2's warp roles)
    by_warp = np.zeros((padded // 32, len(prog.instrs) + 1), np.int64)
    mbar_waits: dict = {}
    limit = budget if budget is not None else CONFIG.budget
    seconds = CONFIG.time_limit if time_limit is None else _seconds(time_limit)
    deadline = t0 + seconds if seconds > 0 else None
    executed = 0
    prog_depth = min(CONFIG.max_call_depth, 1 << 19) if prog.recursive else len({i.func for i in prog.instrs}) + 1
    with np.errstate(all="ignore"):
        for phase_wave, phase_launch, phase_plan in phase_list:
            for wave, ids in phase_plan.batches(per_batch):  # a batch never holds two waves
                weight = 1.0 if weights is None else weights[wave if phase_wave is None else phase_wave]
                mem.begin_wave(wave if phase_wave is None else phase_wave, weight)
                before = None if weighted is None else {k: v.copy() for k, v in counts.items()}
                st = ExecState(prog, phase_launch, ids)
                st.prog_max_depth = prog_depth
                st.call_stack = None
                sch = Scheduler(st, {**counts, "by_warp": by_warp}, limit - executed, CONFIG.trace, deadline,
                                seconds)
                executed += sch.run()
                if st.mbars is not None:
                    for wait_pc, kinds in st.mbars.wait_kinds.items():
                        total = mbar_waits.setdefault(wait_pc, [0, 0, 0, 0])
                        for i, n in enumerate(kinds):
                            total[i] += n
                if st.bulk_stores:  # strict timing: stores never waited for land when their CTAs end
                    from ptxsim.ops.bulk import retire_stores

                    retire_stores(st, None, None)
                for h in L.hooks:
                    h.on_batch_end(st)
                if weighted is not None:
                    for k, v in counts.items():
                        weighted[k] += weight * (v - before[k])
    for arr, db in back:
        dev.copy_out(db, arr)
        dev.free(db)
    reports = [r for s in sans for r in s.reports]
    wall = time.perf_counter() - t0
    roles = stats_mod.WarpCounts(by_warp[:, : len(prog.instrs)], {pc: tuple(v) for pc, v in mbar_waits.items()})
    if weighted is not None:
        return stats_mod.build(prog, counts, mem, L, wall, reports=reports, sample_fraction=fraction,
                               simulated=nrun, waves=plan, weighted=(weighted, mem.weighted_view()), by_warp=roles)
    return stats_mod.build(prog, counts, mem, L, wall, scale=1.0 / fraction, reports=reports,
                           sample_fraction=fraction, simulated=nrun, waves=plan, by_warp=roles)


def _stratified_plan(ncta: int, sample_ranges, wave_ctas, cluster_size: int, order) -> tuple[RangePlan, dict]:
    """The RangePlan and {wave: weight} of a stratified sample (launch's sample_ranges), checked: ranges ascending,
    disjoint, inside the grid, of whole clusters, weights >= 1, and the weighted CTAs adding up to the grid's."""
    try:
        ranges = [(int(a), int(b), float(x)) for a, b, x in sample_ranges]
    except (TypeError, ValueError):
        raise LaunchError(f"sample_ranges={sample_ranges!r:.100}: expected [(first CTA, end CTA, weight)]") from None
    if not ranges:
        raise LaunchError("sample_ranges is empty: expected at least one (first CTA, end CTA, weight)")
    wave = min(int(wave_ctas) if wave_ctas is not None else DEFAULT_WAVE_CTAS, ncta)
    end, waves = 0, []
    for first, stop, weight in ranges:
        if not end <= first < stop <= ncta:
            raise LaunchError(f"sample_ranges: ({first}, {stop}) is not a range of the grid's {ncta} CTAs after the "
                              f"one before it (ranges ascending and disjoint)")
        if first % cluster_size or stop % cluster_size:
            raise LaunchError(f"sample_ranges: ({first}, {stop}) splits a cluster of {cluster_size} CTAs")
        if not weight >= 1.0:
            raise LaunchError(f"sample_ranges: ({first}, {stop}) has weight {weight!r}; a simulated range stands for "
                              f"at least itself (weight >= 1)")
        waves.append(max(first // wave, waves[-1] + 1 if waves else 0))  # one wave each, for the L2 model
        end = stop
    stood_for = sum(x * (b - a) for a, b, x in ranges)
    if abs(stood_for - ncta) > 1e-6 * ncta:
        raise LaunchError(f"sample_ranges: the weighted ranges stand for {stood_for:.6g} CTAs; the grid has {ncta}: "
                          f"each stratum's weight must be its CTAs over the CTAs simulated in it")
    plan = RangePlan(ncta, wave, tuple((a, b) for a, b, _ in ranges), tuple(waves), order)
    return plan, {w: x for w, (_, _, x) in zip(waves, ranges, strict=True)}


def _phase_runs(phases, represents, phase_waves, phase_grids, sample_ctas, wave_ctas, args):
    """[(wave, argument list)] of a phased launch after checking its options; None without phases."""
    if phases is None:
        for name, v in (("represents", represents), ("phase_waves", phase_waves), ("phase_grids", phase_grids)):
            if v is not None:
                raise LaunchError(f"{name}={v!r:.100} applies only to a launch with phases")
        return None
    if args is not None:
        raise LaunchError("a launch with phases takes its arguments from the phases: pass args=None")
    if sample_ctas is not None or wave_ctas is not None:
        raise LaunchError("phases are whole-grid waves: sample_ctas and wave_ctas do not apply to them")
    phases = [list(p) for p in phases]
    if not phases:
        raise LaunchError("phases is empty: expected at least one argument list")
    if isinstance(represents, (bool, np.bool_)) or not isinstance(represents, (int, float, np.floating)) \
            or not 0 < represents <= 1:
        raise LaunchError(f"represents={represents!r:.100}: expected the fraction in (0, 1] of the whole work the "
                          f"{len(phases)} phase(s) are")
    waves = list(range(len(phases))) if phase_waves is None else [int(w) for w in phase_waves]
    if len(waves) != len(phases) or any(w < 0 for w in waves) or waves != sorted(set(waves)):
        raise LaunchError(f"phase_waves={phase_waves!r:.100}: expected {len(phases)} ascending wave indices >= 0, "
                          f"one per phase")
    for i, p in enumerate(phases):
        for a in p:
            if isinstance(a, (np.ndarray, NumbaArray)) and getattr(a, "ndim", 1) > 0:
                raise LaunchError(f"phase {i}: an array argument would be copied to the device once per phase; "
                                  f"pass DeviceBuffers (Device.to_device) so every phase works on the same memory")
    return list(zip(waves, phases, strict=True))


def _phase_weights(phase_weights, runs) -> list[float] | None:
    """A phased launch's weights (launch's phase_weights) after checking them: one finite number per phase."""
    if phase_weights is None:
        return None
    if runs is None:
        raise LaunchError(f"phase_weights={phase_weights!r:.100} applies only to a launch with phases")
    try:
        weights = [float(w) for w in phase_weights]
    except (TypeError, ValueError):
        raise LaunchError(f"phase_weights={phase_weights!r:.100}: expected one number per phase") from None
    if len(weights) != len(runs) or not all(np.isfinite(weights)):
        raise LaunchError(f"phase_weights={phase_weights!r:.100}: expected {len(runs)} finite weights, one per phase")
    return weights


def _phase_grids(phase_grids, n: int, grid: tuple, kernel, cluster) -> list[tuple]:
    """Each phase's grid (default the launch's), checked: within the launch's grid, whole clusters."""
    from ptxsim.clusters import cluster_shape

    if phase_grids is None:
        return [grid] * n
    grids = [_dim3(g, "phase grid") for g in phase_grids]
    if len(grids) != n:
        raise LaunchError(f"phase_grids has {len(grids)} grids for {n} phases; expected one per phase")
    for i, g in enumerate(grids):
        if any(a > b for a, b in zip(g, grid, strict=True)):
            raise LaunchError(f"phase {i}'s grid {g} exceeds the launch's grid {grid}")
        cluster_shape(kernel, g, cluster)  # raises unless whole clusters
    return grids


def _phase_launch(first: Launch, kernel, params, dev: DeviceMemory, grid: tuple) -> Launch:
    """The launch state of a phase: the launch's, with the phase's grid and parameter buffer (and serial: ld.param
    caches its value per launch serial)."""
    buf, _ = marshal(kernel, params, dev)
    return replace(first, grid=grid, param_buf=buf, serial=next(_SERIALS))


@dataclass(frozen=True)
class PhasePlan:
    """A phased launch's waves for LaunchStats.waves: every phase is the whole grid (`ncta` CTAs) as one wave, `waves`
    their indices in the whole work, which `represents` of."""

    ncta: int
    waves: tuple
    represents: float

    @property
    def wave_ctas(self) -> int:
        return self.ncta

    @property
    def total_waves(self) -> int:
        return max(len(self.waves), round(len(self.waves) / self.represents))


@dataclass(frozen=True)
class WavePlan:
    """Which CTAs a launch simulates: whole waves (`wave_ctas` CTAs resident together, in launch order) out of
    `total_waves`; `waves` are the simulated wave indices, ascending."""

    ncta: int
    wave_ctas: int
    waves: tuple
    order: np.ndarray | None = field(default=None, compare=False, repr=False)  # launch position -> CTA id

    @property
    def total_waves(self) -> int:
        return -(-self.ncta // self.wave_ctas)

    @property
    def simulated_ctas(self) -> int:
        if len(self.waves) == self.total_waves:
            return self.ncta
        return sum(min(self.ncta, (w + 1) * self.wave_ctas) - w * self.wave_ctas for w in self.waves)

    def batches(self, per_batch: int):
        """(wave, CTA ids) batches of at most per_batch CTAs, in launch order (made lazily: a 2**31-CTA grid is
        never materialised)."""
        ranges = ((w * self.wave_ctas, min(self.ncta, (w + 1) * self.wave_ctas)) for w in self.waves)
        return _batches(ranges, self.waves, per_batch, self.order)


@dataclass(frozen=True)
class RangePlan:
    """A stratified sample's CTAs: `ranges` of launch positions, ascending and disjoint, each simulated whole as one
    wave of the L2 model (`waves`: their indices, ascending), out of `ncta` CTAs in waves of `wave_ctas`."""

    ncta: int
    wave_ctas: int
    ranges: tuple
    waves: tuple
    order: np.ndarray | None = field(default=None, compare=False, repr=False)  # launch position -> CTA id

    @property
    def total_waves(self) -> int:
        return max(-(-self.ncta // self.wave_ctas), self.waves[-1] + 1)

    @property
    def simulated_ctas(self) -> int:
        return sum(b - a for a, b in self.ranges)

    def batches(self, per_batch: int):
        """(wave, CTA ids) batches of at most per_batch CTAs, range by range (a batch never holds two ranges)."""
        return _batches(self.ranges, self.waves, per_batch, self.order)


def _batches(ranges, waves, per_batch: int, order):
    """(wave, CTA ids) of each (first, end) launch-position range with its wave, cut into batches of per_batch."""
    for (lo, hi), w in zip(ranges, waves, strict=True):
        for start in range(lo, hi, per_batch):
            stop = min(start + per_batch, hi)
            yield w, (np.arange(start, stop, dtype=np.int64) if order is None else order[start:stop])


def plan_waves(ncta: int, sample_ctas: int | None, wave_ctas: int | None, cluster_size: int = 1,
               order: np.ndarray | None = None) -> WavePlan:
    """Every wave without sampling; else about sample_ctas CTAs as whole waves, systematic sampling: the grid's waves
    cut into equal strata, the middle wave of each simulated (at least one wave). NOTE: middles, not the first and
    last waves: the last wave is often partial and, in grouped GEMMs, all padding rows that exit at once.
    Waves hold whole thread-block clusters (`cluster_size` CTAs, consecutive in `order`, the launch order)."""
    if sample_ctas is None or sample_ctas >= ncta:
        wave = int(wave_ctas) if wave_ctas is not None else ncta
        wave = max(cluster_size, wave // cluster_size * cluster_size)
        return WavePlan(ncta, wave, range(-(-ncta // wave)), order)
    wave = min(int(wave_ctas) if wave_ctas is not None else DEFAULT_WAVE_CTAS, ncta)
    wave = max(cluster_size, wave // cluster_size * cluster_size)
    total = -(-ncta // wave)
    want = min(total, max(1, round(sample_ctas / wave)))
    return WavePlan(ncta, wave, tuple(sorted({int((i + 0.5) * total / want) for i in range(want)})), order)


def _seconds(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise LaunchError(f"time_limit must be a number of seconds (0 = none), got {v!r:.100}") from None


def _check_shape(prog, grid, block) -> None:
    """Raise LaunchError for a grid or block CUDA refuses to launch (limits, .maxntid, .reqntid)."""
    for what, dims, lim in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        for axis, n, top in zip("xyz", dims, lim, strict=True):
            if n > top:
                raise LaunchError(f"{what}.{axis} = {n} exceeds CUDA's limit of {top} (kernel {prog.name}, "
                                  f"{what} {dims})")
    nthreads = block[0] * block[1] * block[2]
    if nthreads > 1024:
        raise LaunchError(f"block {block} has {nthreads} threads; at most 1024 per CTA (kernel {prog.name})")
    if prog.maxntid:
        cap = int(np.prod(prog.maxntid))
        if nthreads > cap:
            raise LaunchError(f"block {block} has {nthreads} threads; kernel {prog.name} declares .maxntid "
                              f"{', '.join(map(str, prog.maxntid))} (at most {cap} threads)")
    if prog.ntid_hint:
        want = tuple(prog.ntid_hint) + (1,) * (3 - len(prog.ntid_hint))
        if tuple(block) != want:
            raise LaunchError(f"block {block} differs from kernel {prog.name}'s .reqntid "
                              f"{', '.join(map(str, prog.ntid_hint))} (the block must be exactly {want})")
