"""The `sim` backend: kernels run on ptxsim, the NumPy PTX simulator, so everything works without a GPU.

PTX modules are parsed once per text (`ptxsim.load_ptx`); Numba kernels are compiled to PTX once per
(pyfunc, signature) with `numba.cuda.compile_ptx(..., cc=(9, 0))` and launched through Numba's kernel ABI
(harness.backends.numba_abi). Each launch returns a LaunchRecord carrying ptxsim's LaunchStats.

`SimBackend(sanitize=...)` runs every launch under ptxsim's sanitizers with `sanitize_report=True`: findings are
collected (not raised) on each record's `stats.sanitizer_reports` and in `backend.sanitizer_findings()`.
`SimBackend(sample_ctas=N)` simulates about N CTAs per launch, as whole waves of the model device (wave_shape) spread
over the grid, and extrapolates the counters (outputs are partial: for estimates only). Every launch, sampled or not,
counts DRAM bytes through ptxsim's L2 model sized and aged like that device.
`SimBackend(sample=policy)` (harness.sampling.SamplePolicy, `--sample`) decides per launch instead: big GEMM launches
simulate whole rows of their grid (the live rows and the dead tail as separate strata where the launch marks its
total_padded as a LiveRows, read here at launch), a big persistent GEMM (a WorkItems parameter) windows of its items
as ptxsim phases, everything else runs whole; `sample_ctas` given explicitly takes precedence.
`SimBackend(time_limit=S)`: wall-clock seconds one launch may run before ptxsim stops it as a runaway (naming the
kernel and the loop's PTX lines). The default, LAUNCH_TIME_LIMIT_S unless PTXSIM_TIME_LIMIT is set, is above
ptxsim's own one minute because a real-shape GEMM launch legitimately simulates for minutes on two cores.
`SimBackend(budget=N)`: the warp-instructions one launch may run before ptxsim stops it with InstructionBudgetExceeded
(a runaway loop); unlike the wall-clock limit it does not depend on the machine's load, so a caller whose outcome must
be reproducible (the mutation suite's hangs) sets it. None: ptxsim's PTXSIM_BUDGET (sampled launches: a CTA's share).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from contract.device import LAUNCH_MARKS, GridMeaning, GroupSubsets, LiveRows, StructArg, TensorMapArg, grid_meaning
from harness.backends import numba_abi
from harness.backends.base import Backend, DeviceArray, LaunchArg, LaunchRecord, WorkItems, flatten_work_items
from harness.errors import InputError, PtxmoeError, UnknownNameError
from harness.sampling import WHOLE, ItemWindow, LaunchPlan, WeightedWindow

LAUNCH_TIME_LIMIT_S = 1800.0
RESET_COLLECT_BYTES = 64 << 20  # a dropped simulated heap this big is collected at once (SimBackend.reset_memory)
# A launch that took this long is followed by a full collection (SimBackend._launch): its garbage is large and the
# collection (~0.1 s) is small beside it
LAUNCH_COLLECT_S = 2.0
# Warp-instructions a sampled launch may run per simulated CTA before ptxsim calls it a runaway: ptxsim's budget is per
# launch (PTXSIM_BUDGET, 5e8), and a dsv3-prefill GEMM CTA (BM=64, K=7168) on the Numba path runs ~1.5e6, so the 1152
# CTAs of six sampled waves legitimately exceed it. The wall-clock limit (time_limit) still stops real runaways.
SAMPLED_BUDGET_PER_CTA = 4_000_000
# L2-model waves between a sampled grouped launch's phases (_group_phases): wide enough that none reads another's data
PHASE_GAP = 64


def default_time_limit() -> float:
    """PTXSIM_TIME_LIMIT when the user set it (0 = none), else LAUNCH_TIME_LIMIT_S."""
    import os

    value = os.environ.get("PTXSIM_TIME_LIMIT")
    if value is None:
        return LAUNCH_TIME_LIMIT_S
    try:
        return float(value)
    except ValueError:
        raise InputError(f"PTXSIM_TIME_LIMIT={value!r}: expected seconds as a number (0 = no limit)") from None


def dim3(value, what: str) -> tuple[int, int, int]:
    """An int or a 1-3 tuple as a (x, y, z) triple of positive ints."""
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise InputError(f"{what} {value!r}: expected an int or 1 to 3 positive ints")
    x, y, z = [int(d) for d in dims] + [1] * (3 - len(dims))
    return x, y, z


def ptx_params(params: Sequence[LaunchArg]) -> list:
    """launch_ptx parameters: a DeviceArray passes its address as u64, a TensorMapArg its 128 bytes (a by-value
    CUtensorMap), a NumPy scalar passes as itself."""
    out: list = []
    for i, p in enumerate(params):
        if isinstance(p, DeviceArray):
            out.append(p.handle if p.handle is not None else np.uint64(p.addr))
        elif isinstance(p, TensorMapArg):
            if len(p.raw) != 128:
                raise InputError(f"PTX launch parameter {i}: a tensor map without its 128 bytes (made by another "
                                 f"backend?); make it with this backend's tensor_map")
            out.append(p.raw)
        elif isinstance(p, StructArg):
            out.append(struct_bytes(p, i))
        elif isinstance(p, (np.generic, int, float)):
            out.append(p)
        else:
            raise InputError(f"PTX launch parameter {i}: got {type(p).__name__}; expected a DeviceArray, a "
                             f"TensorMapArg, a StructArg or a NumPy scalar")
    return out


def struct_bytes(arg: StructArg, index: int) -> bytes:
    """A StructArg's bytes with each of its tensor maps encoded by ptxsim's host helper (the driver's checks) over
    its slot."""
    from ptxsim.tensormap import TensorMapError, encode_tiled

    raw = bytearray(arg.raw)
    for offset, call in arg.tensor_maps:
        if offset % 64 or not 0 <= offset <= len(raw) - 128:
            raise InputError(f"PTX launch parameter {index}: a tensor map at byte {offset} of a {len(raw)}-byte "
                             f"struct; expected a 64-aligned 128-byte slot inside it")
        try:
            raw[offset:offset + 128] = encode_tiled(
                call.data_type, call.rank, call.address, call.dims, call.strides, call.box, call.element_strides,
                call.interleave, call.swizzle, call.l2_promotion, call.oob_fill)
        except TensorMapError as exc:
            raise InputError(f"PTX launch parameter {index}: the tensor map at byte {offset}: {exc}") from None
    return bytes(raw)


def sanitize_tools(value) -> tuple[str, ...]:
    """None/""/() -> () (off); "all" -> every ptxsim sanitizer; a comma-separated str or an iterable of names ->
    those names in ptxsim's order. Raises UnknownNameError naming the bad tool and listing the valid ones."""
    from ptxsim.sanitizers import NAMES

    if not value:
        return ()
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    names = [n for n in names if n]
    if "all" in names:
        return tuple(NAMES)
    for n in names:
        if n not in NAMES:
            raise UnknownNameError("sanitizer", n, (*NAMES, "all"))
    return tuple(n for n in NAMES if n in names)


def finding_dict(launch: str, report) -> dict:
    """One ptxsim SanitizerReport as a run.json finding (everything needed to find it, plus its text)."""
    return {"launch": launch, "tool": report.tool, "kernel": report.kernel, "line": int(report.line),
            "instruction": report.instruction, "cta": list(report.cta), "thread": list(report.thread),
            "address": int(report.address), "space": report.space, "message": report.message,
            "count": int(report.count), "text": str(report)}


def wave_shape(ptx: str, entry: str, block, shared_bytes: int) -> dict:
    """ptxsim launch options for the timing model's device (harness.timing.sim.MODEL_DEVICE): `l2_bytes`, its L2
    capacity, and `wave_ctas`, the CTAs resident together (blocks per SM from the entry's ptxas resources x SMs);
    the unit of ptxsim's sampling and L2 ageing. Without a ptxas report only the L2 capacity is given (one wave)."""
    from harness.static import resources_of
    from harness.timing.sim import MODEL_DEVICE
    from ptxsim.model.devices import get_device
    from ptxsim.model.errors import ModelError
    from ptxsim.model.occupancy import occupancy_from_resources

    spec = get_device(MODEL_DEVICE)
    out = {"l2_bytes": int(spec.l2_bytes)}
    resources = resources_of(ptx, entry)
    if resources is None:
        return out
    try:
        occ = occupancy_from_resources(spec, block[0] * block[1] * block[2], resources, shared_bytes)
    except ModelError:  # a block the device cannot hold: the launch itself reports what is wrong
        return out
    if occ.blocks_per_sm > 0:
        out["wave_ctas"] = int(occ.blocks_per_sm * spec.sm_count)
    return out


def phase_grid(grid: tuple[int, int, int], window: int, kernel) -> tuple[int, int, int]:
    """The grid a window of `window` persistent items runs on: one cluster (or CTA) an item, at most the launch's.

    NOTE: the whole launch runs `grid` consecutive items at once, one a cluster; a window of consecutive items runs
    them the same way, so the data its items share is read by as many CTAs at once as on the device (ptxsim's L2 and
    L1 models see the same sharing). The whole grid would add CTAs that only set up and exit, whose setup, extrapolated,
    would charge the launch for idle CTAs (small's down GEMM modelled 42 % slow); fewer CTAs than items, each taking
    several (the launch's share of CTAs), change what runs at once (small's up GEMM: 18 % fast, L1 hits it does not
    get on the device). Each item's CTA sets up once, where on the device a CTA sets up once for count / grid items;
    launch_ptx's last phase of no items takes the difference back (small's down GEMM, 2 k-steps an item: modelled
    +12 % against the whole run without it, +0.6 % with it; docs/scale.md)."""
    from ptxsim.clusters import cluster_shape

    if grid[1] * grid[2] != 1:
        return grid
    shape = cluster_shape(kernel, grid, None) or (1, 1, 1)
    csize = shape[0] * shape[1] * shape[2]
    return (csize * max(1, min(grid[0] // csize, window)), 1, 1)


def _addr(allocation) -> int:
    """ptxsim allocations may come back as an int address or an object with `.addr`."""
    return int(getattr(allocation, "addr", allocation))



class SimBackend(Backend):
    """Backend over a `ptxsim.Device` (simulated global memory; launches run the simulator synchronously)."""

    name = "sim"

    def __init__(self, device=None, sanitize=None, sample_ctas: int | None = None, time_limit: float | None = None,
                 wave_ctas: int | None = None, sample=None, budget: int | None = None):
        import ptxsim

        missing = [name for name in ("Device", "load_ptx") if not hasattr(ptxsim, name)]
        if missing and device is None:
            raise PtxmoeError(f"the sim backend needs ptxsim.{' and ptxsim.'.join(missing)}, which this checkout's "
                              f"ptxsim does not provide yet")
        self._ptxsim = ptxsim
        self.device = device if device is not None else ptxsim.Device()
        self._modules: dict[str, object] = {}
        self.records: list[LaunchRecord] = []
        self.sources: dict[str, tuple[str, str]] = {}  # launch name -> (PTX text, entry), for static analysis
        self.sanitize = sanitize_tools(sanitize)  # () = sanitizers off
        self.sample_ctas = sample_ctas  # ptxsim sampled simulation: counters extrapolated, outputs partial
        self.time_limit = default_time_limit() if time_limit is None else float(time_limit)
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1):
            raise InputError(f"SimBackend budget={budget!r}: expected a positive number of warp-instructions")
        self.budget = None if budget is None else int(budget)  # warp-instructions a launch may run (None: ptxsim's)
        self.wave_ctas = wave_ctas  # None: the model device's wave (wave_shape); an int overrides it
        self.sample = sample  # a harness.sampling.SamplePolicy choosing per launch (None: sample_ctas decides)
        self._family_simulated: dict[str, dict[int, LaunchRecord]] = {}  # family -> {member: its record} this call

    # memory ---------------------------------------------------------------------------------------------------
    # NOTE: DeviceArray.handle is the ptxsim DeviceBuffer (what Device.copy_in/copy_out/free and launch args take).
    def to_device(self, host) -> DeviceArray:
        """A device copy of `host`: an ndarray (copied now), or a lazy tensor (anything with shape, dtype, nbytes and
        fill_bytes(start, stop), e.g. contract.generators.KeyedNormal) whose pages are filled when first touched."""
        lazy = not isinstance(host, np.ndarray) and callable(getattr(host, "fill_bytes", None))
        if lazy and hasattr(self.device, "alloc_lazy"):
            buf = self.device.alloc_lazy(int(host.nbytes), host.fill_bytes)
            return DeviceArray(tuple(int(d) for d in host.shape), np.dtype(host.dtype), _addr(buf), handle=buf)
        host = np.ascontiguousarray(host)
        buf = self.device.alloc(host.nbytes)
        if host.nbytes:
            self.device.copy_in(buf, host.view(np.uint8).reshape(-1))
        return DeviceArray(tuple(int(d) for d in host.shape), host.dtype, _addr(buf), handle=buf)

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A buffer that reads as `fill_byte` everywhere; its pages materialise only where something touches them."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if hasattr(self.device, "alloc_lazy"):
            buf = self.device.alloc_lazy(nbytes, int(fill_byte) & 0xFF)
        else:  # a device without lazy buffers: fill now
            buf = self.device.alloc(nbytes)
            if nbytes:
                self.device.copy_in(buf, np.full(nbytes, fill_byte & 0xFF, dtype=np.uint8))
        # poison is not an initialisation: reading it before writing is a bug
        if nbytes and "initcheck" in self.sanitize:
            self.device.mark_uninitialised(buf)
        return DeviceArray(shape, dtype, _addr(buf), handle=buf)

    def to_host(self, array: DeviceArray) -> np.ndarray:
        raw = np.empty(array.nbytes, np.uint8)
        if array.nbytes:
            self.device.copy_out(self._buffer(array), raw)
        return raw.view(np.dtype(array.dtype)).reshape(array.shape)

    def free(self, array: DeviceArray) -> None:
        self.device.free(self._buffer(array))

    _track_written = False  # set by watch_writes until reset_memory: launches keep the written shadow

    def watch_writes(self, arrays: Sequence[DeviceArray]) -> bool:
        """Mark `arrays` never written in ptxsim's per-byte shadow and have later launches update it on every global
        store (Backend.watch_writes). NOTE: the shadow is initcheck's: under initcheck the arrays stay as copied in
        (marking an in/out array unwritten would report its first read), so nothing is watched."""
        if "initcheck" in self.sanitize:
            return False
        from ptxsim.memory import GLOBAL_BASE

        for array in arrays:
            if array.nbytes:
                self.device.gmem.mark_written(self._buffer(array).addr - GLOBAL_BASE, array.nbytes, False)
        self._track_written = True
        return True

    def unwritten_fraction(self, array: DeviceArray) -> float | None:
        if not self._track_written:
            return None
        if not array.nbytes:
            return 0.0
        from ptxsim.memory import GLOBAL_BASE

        off = self._buffer(array).addr - GLOBAL_BASE
        itemsize = np.dtype(array.dtype).itemsize
        shadow = np.asarray(self.device.gmem.written[off: off + array.nbytes]).reshape(-1, itemsize)
        return 1.0 - float(np.count_nonzero(shadow.any(axis=1))) / shadow.shape[0]

    def tensor_map(self, array: DeviceArray, box, swizzle: int = 128, shape=None, oob_fill: str = "zero"
                   ) -> TensorMapArg:
        """A tiled tensor map over `array` (contract.device.KernelBackend.tensor_map), encoded by ptxsim's host
        helper with the driver's parameters and checks (harness.backends.tensormaps)."""
        from harness.backends.tensormaps import request, tiled_params
        from ptxsim.tensormap import TensorMapError, encode_tiled

        p = tiled_params(array, box, swizzle, shape, oob_fill)
        try:
            raw = encode_tiled(p.data_type, p.rank, p.address, p.dims, p.strides, p.box, p.element_strides,
                               swizzle=p.swizzle, l2_promotion=p.l2_promotion, oob_fill=p.oob_fill)
        except TensorMapError as exc:
            raise InputError(f"tensor_map over {tuple(array.shape)} (box {tuple(box)}, swizzle {swizzle}): "
                             f"{exc}") from None
        return request(array, box, swizzle, shape, oob_fill, raw=raw)

    # NOTE: run_kernel hands lazy input tensors to backends that say so; others get materialised arrays.
    lazy_inputs = True

    def memory_stats(self) -> dict:
        """Simulated memory use so far (ptxsim.Device.memory_stats: heap, lazy pages filled / pending, shadow)."""
        stats = getattr(self.device, "memory_stats", None)
        return stats() if stats is not None else {}

    def reset_memory(self) -> None:
        """Start over with an empty simulated device (ptxsim's allocator never reuses freed bytes, so a long sweep
        calls this between rows); every DeviceArray handed out before becomes invalid. Parsed modules are kept.

        NOTE: a launch leaves reference cycles to its device's heap (ptxsim's launch, scheduler and executor state
        refer to each other), so a dropped heap is freed only when Python's cyclic collector runs, which a process
        making few, large allocations rarely triggers: a serial dsv3 sweep kept earlier rows' heaps (1.3 GB after
        dsv3-decode's rows, 2.8 GB after dsv3-prefill's PTX layer) under the next row's peak. A heap of
        RESET_COLLECT_BYTES or more is collected here, at once (a small one is left to Python: a collection costs
        ~0.1 s, a tiny row about as much)."""
        dropped = getattr(getattr(self.device, "gmem", None), "top", 0)
        self._track_written = False
        self.device = type(self.device)()
        if dropped >= RESET_COLLECT_BYTES:
            import gc

            gc.collect()

    def done_with_workspace(self, arrays: dict[str, DeviceArray]) -> None:
        """Free a workspace (Backend.done_with_workspace), first copying it to `captured_workspace` when that is a
        dict: the runner checks a sampled layer stage by stage on the intermediates it really produced.
        NOTE: read-only views of the simulated heap where it is committed, not copies: nothing writes a freed
        workspace again, and at dsv3-prefill a copy of the layer's intermediates took 1.9 GB more (5.9 GB at the
        peak against 2.4 GB for the simulated run)."""
        if isinstance(self.captured_workspace, dict):
            self.captured_workspace.update({name: self.device.snapshot(self._buffer(a), a.dtype, a.shape)
                                            for name, a in arrays.items()})
        super().done_with_workspace(arrays)

    captured_workspace: dict | None = None

    def _buffer(self, array: DeviceArray):
        if array.handle is None:
            raise InputError(f"DeviceArray at {array.addr:#x} was not allocated by this sim backend")
        return array.handle

    # launches -------------------------------------------------------------------------------------------------
    def module(self, ptx: str):
        """The parsed ptxsim module of a PTX text (cached per text)."""
        mod = self._modules.get(ptx)
        if mod is None:
            mod = self._modules[ptx] = self._ptxsim.load_ptx(ptx)
        return mod

    def row_experts(self, params: Sequence[LaunchArg], tag: str, rows: int) -> np.ndarray | None:
        """Each of a launch's `rows` grid rows' expert (-1 from the first row past total_padded on), read from the
        device now (launches run in order, so what align wrote is there) when its parameters mark total_padded as a
        LiveRows; None without one. For a persistent launch (a WorkItems), rows are routing blocks."""
        marks = [p for p in params if isinstance(p, LiveRows)]
        if not marks:
            return None
        if len(marks) > 1:
            raise InputError(f"{tag}: {len(marks)} LiveRows parameters; a grouped GEMM has one total_padded")
        mark = marks[0]
        if mark.block_expert is None:
            raise InputError(f"{tag}: its LiveRows has no block_expert; make it with LiveRows.of(total_padded, rows, "
                             f"block_expert)")
        total = int(self.to_host(mark).reshape(-1)[0])
        block_expert = self.to_host(mark.block_expert).reshape(-1).astype(np.int64)
        row_tokens = np.arange(rows, dtype=np.int64) * mark.rows_per_grid_row
        # a routing block's rows: P_max / blocks, P_max being the rows the launch covers
        block_rows = max(1, rows * mark.rows_per_grid_row // max(1, block_expert.size))
        experts = block_expert[np.minimum(row_tokens // block_rows, block_expert.size - 1)]
        experts[row_tokens >= max(total, 0)] = -1
        return experts

    def _kernel(self, ptx: str, entry: str):
        """The entry of the parsed module; PTX ptxsim cannot parse or decode is named invalid (ptxas refuses it too)
        or a simulator gap (ptxas accepts it): harness.ptx_verdict."""
        from ptxsim.errors import DecodeError, PtxSyntaxError, UnsupportedInstruction

        try:
            return self.module(ptx).kernel(entry)
        except (PtxSyntaxError, UnsupportedInstruction, DecodeError) as exc:
            from harness.ptx_verdict import classify_refusal

            raise classify_refusal(ptx, exc) from exc

    def _launch(self, ptx: str, entry: str, grid, block, flat_params, shared_bytes: int, impl: str, tag: str,
                phased: LaunchPlan | None = None, row_experts: np.ndarray | None = None,
                meaning: GridMeaning = "plain"):
        self.sources[tag] = (ptx, entry)  # before loading: static facts are useful even when the launch fails
        kernel = self._kernel(ptx, entry)
        g, b = dim3(grid, "grid"), dim3(block, "block")
        t0 = time.perf_counter()
        extra = {"sanitize": set(self.sanitize), "sanitize_report": True} if self.sanitize else {}
        extra["time_limit"] = self.time_limit
        if self._track_written:
            extra["track_written"] = True
        if self.wait_bound:  # the bounded kernels' waits time out as on hardware, so a lost phase ends in their trap
            extra["wait_timeouts"] = True
        shape = wave_shape(ptx, entry, b, int(shared_bytes))
        if "l2_bytes" in shape:
            extra["l2_bytes"] = shape["l2_bytes"]
        wave = int(self.wave_ctas) if self.wave_ctas is not None else shape.get("wave_ctas")
        plan = WHOLE
        if phased is not None:  # a persistent launch's item windows: each phase one wave, on its own grid
            plan = phased
        elif self.sample_ctas is None and self.sample is not None:
            plan = self.sample.launch_plan(meaning, g, row_experts, name=tag, wave_ctas=wave)
        if not plan.whole:
            from ptxsim.config import CONFIG

            # NOTE: an item is a grid path's CTA (one tile of one routing block), so it gets a CTA's budget
            plan = replace(plan, budget=max(int(CONFIG.budget), SAMPLED_BUDGET_PER_CTA * plan.simulated_ctas(g)))
        if self.budget is not None:  # the caller's deterministic runaway limit, sampled or not
            plan = replace(plan, budget=self.budget)
        if self.sample_ctas is not None:  # a fixed systematic sample (the backend's sample_ctas), as before
            plan = replace(plan, sample_ctas=int(self.sample_ctas))
        if phased is None and plan.wave_ctas is None and wave is not None:  # phases are waves of their own
            plan = replace(plan, wave_ctas=wave)
        args = None if phased is not None else list(flat_params)
        stats = self.device.launch(kernel, g, b, args, shared_bytes=int(shared_bytes), plan=plan, **extra)
        seconds = time.perf_counter() - t0
        if seconds >= LAUNCH_COLLECT_S:
            # NOTE: a launch's state (its batches' executor state, its per-sector counter tables: 13 bytes per
            # touched 32-byte sector) sits in reference cycles, freed only at Python's rare full collection: the
            # cutlass bf16 layer at dsv3-decode held its up GEMM's through its down GEMM, whose launch then rose
            # 0.8 GB instead of 0.24 GB (2.39 GB at the row's peak, 2.13 GB with this collection)
            import gc

            gc.collect()
        record = LaunchRecord(tag, impl, g, b, int(shared_bytes), seconds, stats)
        self.records.append(record)
        return record

    def sanitizer_findings(self, records=None) -> list[dict]:
        """Every sanitizer finding of `records` (default: the launches so far) as run.json dicts, launch order."""
        return [finding_dict(r.name, rep) for r in (self.records if records is None else records)
                for rep in getattr(r.stats, "sanitizer_reports", None) or ()]

    def launched_sources(self) -> dict[str, tuple[str, str]]:
        """{launch name: (PTX text, entry)} of every kernel launched so far."""
        return dict(self.sources)

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        """Launch (KernelBackend.launch_ptx). A WorkItems parameter (a persistent kernel's item range) passes
        (0, count), or, when the sample policy picks item windows for the launch (SamplePolicy.work_windows), the
        launch runs as ptxsim phases, one window each, its counters extrapolated to every item."""
        tag = tag or entry
        marks = [p for p in params if isinstance(p, LAUNCH_MARKS)]
        if marks:
            if len(marks) > 1:
                raise InputError(f"{tag}: {len(marks)} launch marks (FamilyShare, GroupSubsets); a launch has one")
            params = [p for p in params if not isinstance(p, LAUNCH_MARKS)]
            if self.sample_ctas is None:
                marked = self._marked_launch(marks[0], ptx, entry, grid, block, params, shared_bytes, tag)
                if marked is not None:
                    return marked
        items = [p for p in params if isinstance(p, WorkItems)]
        if len(items) > 1:
            raise InputError(f"{tag}: {len(items)} WorkItems parameters; a persistent kernel has one item range")
        g = dim3(grid, "grid")
        experts = self.row_experts(params, tag, items[0].blocks if items else g[1] * g[2])
        windows: tuple[ItemWindow | WeightedWindow, ...] = ()
        weights: list[float] | None = None
        if items and self.sample_ctas is None and self.sample is not None:
            if experts is None:
                windows = self.sample.work_windows(items[0])
            else:  # runs of one expert's blocks and the tail past total_padded as strata, each window weighted
                weighted = self.sample.stratified_windows(items[0], experts)
                windows, weights = weighted, [float(w.weight) for w in weighted]
        if not windows:
            return self._launch(ptx, entry, grid, block, ptx_params(flatten_work_items(params)), shared_bytes, "ptx",
                                tag, row_experts=None if items else experts, meaning=grid_meaning(params))
        kernel = self._kernel(ptx, entry)
        ran = sum(w.end - w.begin for w in windows)
        if weights is None:
            weights = [items[0].count / ran] * len(windows)
        # NOTE: a window runs one CTA (cluster) an item, so it sets up once per item, where the device's CTAs set up
        # once each for count / grid items: a last phase of no items on the smallest grid counts one CTA's setup
        # (and exit), weighted so that the launch has its grid's setups, not its items'
        # (G - sum(weight x CTAs of each window)) / CTAs of that phase, a negative weight at every real size
        spans = [(w.begin, w.end) for w in windows] + [(items[0].count, items[0].count)]
        grids = [phase_grid(g, end - begin, kernel) for begin, end in spans[:-1]] + [phase_grid(g, 1, kernel)]
        ctas = [q[0] * q[1] * q[2] for q in grids]
        setup_weight = (g[0] * g[1] * g[2] - sum(x * n for x, n in zip(weights, ctas, strict=False))) / ctas[-1]
        phases = [ptx_params([q for p in params for q in ((np.uint32(begin), np.uint32(end))
                                                          if isinstance(p, WorkItems) else (p,))])
                  for begin, end in spans]
        phased = LaunchPlan(phases=tuple(tuple(p) for p in phases),
                            phase_waves=tuple(w.wave for w in windows) + (windows[-1].wave + 1,),
                            phase_grids=tuple(grids), represents=ran / items[0].count, items=ran,
                            phase_weights=(*weights, setup_weight))
        return self._launch(ptx, entry, grid, block, None, shared_bytes, "ptx", tag, phased=phased)

    def _marked_launch(self, mark, ptx: str, entry: str, grid, block, params, shared_bytes: int, tag: str
                       ) -> LaunchRecord | None:
        """A family member's or a grouped launch's record under the sample policy (harness.family_sampling); None
        when it runs whole."""
        from harness.family_sampling import min_work, refuse_too_much, shape_strata, simulated_fraction

        grouped = isinstance(mark, GroupSubsets)
        work = mark.tiles if grouped else mark.ctas
        tile_rows = mark.tile_rows if grouped else ()
        strata = shape_strata(mark.shapes, work, min_work(self.sample), "last" if grouped else "first", tile_rows)
        if not strata:
            return None
        refuse_too_much(strata, work, grouped, tag, tile_rows)
        if grouped:
            return self._group_phases(mark, strata, ptx, entry, grid, block, shared_bytes, tag)
        fraction = simulated_fraction(strata, work)
        stratum = next(s for s in strata if mark.index in s.members)
        simulated = self._family_simulated.setdefault(mark.family, {})
        if mark.index == min(s.simulated for s in strata):
            simulated.clear()  # a new call of the family: its first simulated member comes first
        marks = {"family_members": len(mark.shapes), "family_simulated": len(strata),
                 "charged_as_member": stratum.simulated}
        if mark.index == stratum.simulated:
            record = self.launch_ptx(ptx, entry, grid, block, params, shared_bytes, tag)
            record = replace(record, stats=replace(record.stats, sample_fraction=fraction,
                                                   waves={**record.stats.waves, **marks}))
            self.records[-1] = simulated[stratum.simulated] = record
            return record
        model = simulated.get(stratum.simulated)
        if model is None:
            raise InputError(f"{tag}: member {mark.index} of family {mark.family!r} was launched before member "
                             f"{stratum.simulated}, the one simulated for its shape {stratum.shape}; members are "
                             f"launched in index order (contract.device.FamilyShare)")
        self.sources[tag] = (ptx, entry)
        stats = replace(model.stats, sample_fraction=fraction, sanitizer_reports=[], wall_seconds=0.0,
                        waves={**model.stats.waves, **marks})
        record = LaunchRecord(tag, "ptx", dim3(grid, "grid"), dim3(block, "block"), int(shared_bytes), 0.0, stats)
        self.records.append(record)
        return record

    def _group_phases(self, mark, strata, ptx: str, entry: str, grid, block, shared_bytes: int, tag: str
                      ) -> LaunchRecord:
        """A grouped launch as ptxsim phases (harness.family_sampling): per stratum, its simulated group alone on a
        grid of its tiles (P1: a CTA a tile), weighted by the stratum's groups, or, for a long group (its tile rows
        given by the mark: family_sampling.group_windows), its first tile row (the head, weighted by the groups) and
        the next in the following L2 wave (the body, weighted by every other tile row of them). Then the setups: the
        launch's CTAs set up once each for many tiles, a P1 phase once a tile. Where the launch has more tiles than
        CTAs, the stratum with the most tiles also runs two tiles a CTA on the same grid (P2: two of its groups, as
        the launch's CTAs go from group to group; for a long group its tile rows 2-3, right after its body, as the
        launch's CTAs go from tile to tile of one group), and the setup S = (2 P1 - P2) / CTAs is taken back for
        every tile past the grid's CTAs (P1 the body of a long group); where it has fewer, a phase of no groups on
        one CTA (it sets up and exits) counts the CTAs left idle."""
        from harness.family_sampling import group_windows, long_group

        g, b = dim3(grid, "grid"), dim3(block, "block")
        kernel = self._kernel(ptx, entry)
        launch_ctas = g[0] * g[1] * g[2]
        # (subset entries, grid CTAs, weight, L2 wave) per phase; a long group's phases are consecutive waves, the
        # others PHASE_GAP apart (none reads what another left in the L2)
        runs: list[tuple[tuple, int, float, int]] = []
        windows = {s.simulated: group_windows(s.simulated, int(mark.tiles[s.simulated]),
                                              int(mark.tile_rows[s.simulated]))
                   for s in strata if mark.tile_rows and long_group(mark.tile_rows[s.simulated])}
        p1: dict[int, int] = {}  # stratum index -> its P1 phase (a long group's body)
        for n, stratum in enumerate(strata):
            wave = PHASE_GAP * n
            w = windows.get(stratum.simulated)
            if w is None:
                p1[n] = len(runs)
                runs.append(((stratum.simulated,), int(mark.tiles[stratum.simulated]), stratum.weight, wave))
            else:
                runs.append(((w.head,), w.row_tiles, stratum.weight, wave))
                p1[n] = len(runs)
                runs.append(((w.body,), w.row_tiles, stratum.weight * w.body_weight_per_group, wave + 1))
        excess = sum(s.weight * int(mark.tiles[s.simulated]) for s in strata) - launch_ctas
        pairs = [s for s in strata if len(s.members) > 1 or s.simulated in windows]
        if excess > 0 and pairs:
            main = max(pairs, key=lambda s: s.weight * int(mark.tiles[s.simulated]))
            at = p1[strata.index(main)]
            if main.simulated in windows:  # tile rows 2-3 of its group, warm like the body: the wave after it
                w = windows[main.simulated]
                pair: tuple = (w.pair,)
                ctas, wave = w.row_tiles, runs[at][3] + 1
            else:
                # the two groups before P1's (its stratum's last), so that no phase reads what another left in the L2
                # or L1 and each phase's CTAs walk the groups about as far (the scheduler's loads are per CTA, like
                # setup)
                pair = tuple(main.members[-3:-1]) if len(main.members) >= 3 else tuple(main.members[-2:])
                ctas, wave = int(mark.tiles[main.simulated]), PHASE_GAP * len(strata)
                if any(int(mark.tiles[m]) != ctas for m in pair):
                    raise InputError(f"{tag}: GroupSubsets groups {pair} of shape {main.shape} have tiles "
                                     f"{[int(mark.tiles[m]) for m in pair]}; groups of one shape have the same tiles")
            groups, _, weight, p1_wave = runs[at]
            runs[at] = (groups, ctas, weight - 2 * excess / ctas, p1_wave)
            runs.append((pair, ctas, excess / ctas, wave))
        elif excess < 0:  # one CTA (a cluster's column of CTAs, g[1]) that sets up and exits
            idle = phase_grid(g, 1, kernel)[0] if g[1] == 1 else 1
            runs.append(((), idle * g[1], -excess / g[1], PHASE_GAP * len(strata)))
        runs.sort(key=lambda r: r[3])  # ptxsim runs phases in wave order
        phases, grids = [], []
        for groups, ctas, _, _ in runs:
            sub_grid, sub_params = mark.subset(groups)
            sub = dim3(sub_grid, "grid")
            # NOTE: a cluster candidate's grid is (clusters, CTAs of a cluster, 1) (cutlass_impl.grouped_gemm): a
            # phase keeps the launch's y and takes whole columns
            if sub[1] != g[1] or sub[2] != 1 or sub[0] > g[0] \
                    or any(isinstance(p, LAUNCH_MARKS) for p in sub_params):
                raise InputError(f"{tag}: GroupSubsets.subset({groups}) gave grid {sub} and {len(sub_params)} "
                                 f"parameters; expected a grid (x, {g[1]}, 1) within the launch's {g} and no launch "
                                 f"marks")
            phases.append(tuple(ptx_params(flatten_work_items(sub_params))))
            grids.append((min(-(-ctas // g[1]), sub[0]) if groups else ctas // g[1], g[1], 1))
        # NOTE: phases weighted, the setup phase's weight may be negative; the launch's setups are then exact where
        # a CTA's work is its setup plus its tiles' (docs/cutlass.md measures it)
        ran: dict[int, int] = {}  # tiles that ran, per group (a long group: its windows' tile rows)
        for groups, _, _, _ in runs:
            for member in groups:
                if isinstance(member, tuple):
                    i, first, end = member
                    ran[i] = ran.get(i, 0) + (end - first) * windows[i].row_tiles
                else:
                    ran[member] = int(mark.tiles[member])
        fraction = sum(ran.values()) / sum(int(t) for t in mark.tiles)
        plan = LaunchPlan(phases=tuple(phases), phase_waves=tuple(r[3] for r in runs),
                          phase_grids=tuple(grids), phase_weights=tuple(r[2] for r in runs), represents=fraction,
                          items=sum(q[0] * q[1] for q in grids))
        record = self._launch(ptx, entry, g, b, None, shared_bytes, "ptx", tag, phased=plan)
        record = replace(record, stats=replace(record.stats, waves={**record.stats.waves,
                                                                    "groups": len(mark.shapes),
                                                                    "groups_simulated": len(ran),
                                                                    "group_windows": len(windows)}))
        self.records[-1] = record
        return record

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        compiled = numba_abi.compile_numba(pyfunc, signature)
        flat = numba_abi.expand_args(compiled.pyname, compiled.arg_types, args)
        g = dim3(grid, "grid")
        return self._launch(compiled.ptx, compiled.entry, grid, block, flat, shared_bytes, "numba",
                            tag or compiled.pyname, row_experts=self.row_experts(args, tag or compiled.pyname,
                                                                                 g[1] * g[2]),
                            meaning=grid_meaning(args))
