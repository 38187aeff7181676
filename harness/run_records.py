"""run.json as typed records: a Sweep of Rows and Verdicts, read once (docs/run-json.md is the field reference).

`Sweep.from_json(doc)` builds the records of a whole document (older schema versions are upgraded first by
harness.run_schema); every field is checked against its declared type and an error names the field ("rows[3]
(gate/ptx/tiny/balanced).timing.modelled_us is a string; expected a number or null"). A row's time is `Row.time_us`
and its "kernel[variant]" name `Row.label`, defined here once. Past the reader nothing reads a row as a dict.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.json_records import JsonTable, JsonValue, Record, RecordError

RowStatus = Literal["ok", "failed", "missing", "error", "skipped"]
Call = Literal["FASTER", "SAME", "SLOWER", "UNDECIDED", "NOT_MODELLED"]  # harness.timing.stats.VERDICTS


def kernel_label(kernel: str, variant: str | None) -> str:
    """"kernel[variant]", or the kernel alone: the name of a cell's kernel in keys, tables and figures."""
    return f"{kernel}[{variant}]" if variant else kernel


@dataclass(frozen=True)
class Rung(Record):
    """A laddered kernel's rung (issue #16): 1-based number, what it adds, of how many, whether the top one."""

    number: int
    name: str
    of: int
    top: bool


@dataclass(frozen=True)
class Correctness(Record):
    """The kernels.md check: ok, its message, and its error norms by name (a table: the norms are the kernel's)."""

    ok: bool
    message: str = ""
    errors: JsonTable = field(default_factory=dict)


@dataclass(frozen=True)
class Launch(Record):
    """One launch of the checked run (`impl`: the launch mechanism, numba or ptx)."""

    name: str
    impl: str | None = None
    grid: tuple[int, ...] = ()
    block: tuple[int, ...] = ()
    shared_bytes: int = 0
    host_seconds: float | None = None


@dataclass(frozen=True)
class ModelError(Record):
    """The timing model's error: `relative` interval half-width, the limiting component and where the figure comes
    from; a row's has the worst launch's beside it."""

    relative: float
    limiter: str | None = None
    basis: str | None = None
    worst_launch: ModelError | None = None


@dataclass(frozen=True)
class Occupancy(Record):
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float
    limiter: str | None = None


@dataclass(frozen=True)
class ModelledLaunch(Record):
    """One launch as the timing model saw it (`estimate`: Estimate.as_row(), a table of bounds in µs and %)."""

    name: str
    grid: tuple[int, ...] = ()
    block: tuple[int, ...] = ()
    shared_bytes: int = 0
    sim_wall_s: float | None = None
    modelled_s: float | None = None
    launch_s: float | None = None
    interval_s: tuple[float, ...] | None = None
    model_error: ModelError | None = None
    sass_mix: JsonTable | None = None
    occupancy: Occupancy | None = None
    estimate: JsonTable | None = None
    error: str | None = None
    simulated_fraction: float = 1.0
    waves: Mapping[str, int] = field(default_factory=dict)
    model_version: str | None = None  # "v1" (analytic bounds) or "v2" (cycle-approximate); absent before issue 29

    @property
    def limiter(self) -> str | None:
        value = (self.estimate or {}).get("limiter")
        return str(value) if value else None

    def components_us(self) -> dict[str, float]:
        """The model's per-bound times in µs ({"issue": 1.4, "dram": 0.9, ...}), from the estimate's "<bound> (us)"
        columns."""
        out: dict[str, float] = {}
        for key, value in (self.estimate or {}).items():
            if key.endswith(" (us)") and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key.removesuffix(" (us)")] = float(value)
        return out


@dataclass(frozen=True)
class ModelledTiming(Record):
    """timing on sim: the ptxsim timing model's kernel time (docs/run-json.md "timing (sim)")."""

    basis: Literal["modelled"]
    device: str | None = None
    modelled_us: float | None = None
    sim_wall_s: float | None = None
    stages_us: Mapping[str, float] = field(default_factory=dict)
    launches: tuple[ModelledLaunch, ...] = ()
    error: str | None = None
    simulated_fraction: float = 1.0
    launch_us: float | None = None
    interval_us: tuple[float, ...] | None = None
    model_error: ModelError | None = None

    @property
    def time_us(self) -> float | None:
        return self.modelled_us

    @property
    def limiter(self) -> str | None:
        """The row's limiter: the bound that limits the launches carrying most of its modelled time (each launch's
        kernel limiter, the launch gap apart; summed by limiter), None when no launch says."""
        by_limiter: dict[str, float] = {}
        for launch in self.launches:
            name = (launch.model_error.limiter if launch.model_error is not None else None) or launch.limiter
            if name:
                by_limiter[name] = by_limiter.get(name, 0.0) + (launch.modelled_s or 0.0)
        return max(sorted(by_limiter), key=lambda k: by_limiter[k]) if by_limiter else None

    @property
    def model_version(self) -> str | None:
        """The timing model version its launches were modelled with ("v1", "v2"), None when none says."""
        return next((launch.model_version for launch in self.launches if launch.model_version), None)

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """(lo, hi) in µs: the 95% prediction interval (runs before it: the model's error band), else the point."""
        if self.interval_us is not None and len(self.interval_us) == 2:
            return self.interval_us[0], self.interval_us[1]
        return self.modelled_us, self.modelled_us


@dataclass(frozen=True)
class Summary(Record):
    """harness.timing.stats.Summary in µs: median, spread and the bootstrap interval of the median."""

    n: int | None = None
    median_us: float | None = None
    mean_us: float | None = None
    std_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    q1_us: float | None = None
    q3_us: float | None = None
    iqr_us: float | None = None
    rse: float | None = None
    ci_lo_us: float | None = None
    ci_hi_us: float | None = None


@dataclass(frozen=True)
class MeasuredTiming(Record):
    """timing on gpu: CUDA-event samples (docs/run-json.md "timing (gpu)"). `clocks_*`, `clock_reads` and
    `settings` are tables as recorded (nvidia-smi / NVML fields; GpuTimingSettings)."""

    basis: Literal["measured"]
    device: Summary
    device_time_us: tuple[float, ...] = ()  # every kept sample (a trimmed file may leave them out)
    dispatch_us: tuple[float, ...] = ()
    dispatch: Summary | None = None
    host_call_us: tuple[float, ...] = ()
    host_call: Summary | None = None
    stop_reason: str | None = None
    blocked: bool | None = None
    blocker_timeouts: int | None = None
    throttled_us: tuple[float, ...] = ()
    clock_reads: tuple[JsonTable, ...] = ()
    clock_note: str | None = None
    rotation_sets: int | None = None
    l2_flush_bytes: int | None = None
    clocks_before: JsonTable = field(default_factory=dict)
    clocks_reference: JsonTable = field(default_factory=dict)  # read after the warm-up: what the screen judges by
    clocks_after: JsonTable = field(default_factory=dict)
    stages_us: Mapping[str, float] = field(default_factory=dict)
    launch_us: tuple[tuple[JsonValue, ...], ...] = ()
    settings: JsonTable = field(default_factory=dict)
    module_loads: JsonTable = field(default_factory=dict)  # {module: {via, target, jit_target, info_log}}

    @property
    def time_us(self) -> float | None:
        return self.device.median_us

    @property
    def interval(self) -> tuple[float | None, float | None]:
        return self.device.ci_lo_us, self.device.ci_hi_us


Timing = ModelledTiming | MeasuredTiming


@dataclass(frozen=True)
class Throughput(Record):
    min_bytes: int | None = None
    flops: int | None = None
    time_us: float | None = None
    achieved_gbps: float | None = None
    achieved_tflops: float | None = None
    pct_peak_bandwidth: float | None = None
    pct_peak_flops: float | None = None
    peak_flops_kind: str | None = None
    device: str | None = None
    warnings: tuple[str, ...] = ()  # harness.throughput.impossible_rates: a time above the device's peaks


@dataclass(frozen=True)
class Resources(Record):
    """ptxas -v of one entry for sm_90."""

    entry: str | None = None
    registers: int | None = None
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    stack_frame_bytes: int | None = None
    shared_bytes: int | None = None
    constant_bytes: int | None = None
    spills: int | None = None


@dataclass(frozen=True)
class KernelStatic(Record):
    """Static facts of one launched PTX entry (histograms: opcode -> count)."""

    entry: str | None = None
    digest: str | None = None
    ptx_lines: int | None = None
    resources: Resources | None = None
    ptx_histogram: Mapping[str, int] = field(default_factory=dict)
    ptx_histogram_full: Mapping[str, int] = field(default_factory=dict)
    sass_histogram: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class StaticTotals(Record):
    kernels: int | None = None
    registers_max: int | None = None
    spills_bytes: int | None = None
    shared_bytes_max: int | None = None
    ptx_instructions: int | None = None
    sass_instructions: int | None = None


@dataclass(frozen=True)
class StaticFacts(Record):
    """Static facts of what a row launched, by launch name; `error` when they could not be had."""

    kernels: Mapping[str, KernelStatic] = field(default_factory=dict)
    totals: StaticTotals = field(default_factory=StaticTotals)
    error: str | None = None


@dataclass(frozen=True)
class LaunchCounters(Record):
    name: str
    metrics: JsonTable = field(default_factory=dict)


@dataclass(frozen=True)
class SimCounters(Record):
    """ptxsim's counters (ncu metric names -> values: a table), summed over the row's launches and per launch."""

    total: JsonTable = field(default_factory=dict)
    launches: tuple[LaunchCounters, ...] = ()


@dataclass(frozen=True)
class SampledStages(Record):
    checked: tuple[str, ...] = ()
    not_covered: tuple[str, ...] = ()
    least_checked_coverage: float = 0.0


@dataclass(frozen=True)
class Sampling(Record):
    """How much of a sim row ran (harness.sampling): the policy, whether sampled, and what the check covered."""

    policy: str | None = None
    sampled: bool = False
    simulated_fraction: float = 1.0
    coverage: float | None = None
    stages: SampledStages | None = None


@dataclass(frozen=True)
class GemmWork(Record):
    routed_rows: int | None = None
    padded_rows: int | None = None
    BM: int | None = None
    useful_flops: int | None = None
    padded_flops: int | None = None
    useful_pct: float | None = None


@dataclass(frozen=True)
class Finding(Record):
    """One ptxsim sanitizer finding (harness.backends.sim.finding_dict)."""

    launch: str
    tool: str
    kernel: str
    line: int
    instruction: str
    cta: tuple[int, ...]
    thread: tuple[int, ...]
    address: int
    space: str
    message: str
    count: int
    text: str


@dataclass(frozen=True)
class SanitizerResult(Record):
    tools: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    summary: str | None = None


@dataclass(frozen=True)
class RowMemory(Record):
    """The process's peak and starting resident memory around a row, beside the estimate made before it ran."""

    peak_rss_bytes: int | None = None
    peak_is_row: bool | None = None
    start_rss_bytes: int | None = None
    end_rss_bytes: int | None = None
    estimated_bytes: int | None = None
    estimated_host_bytes: int | None = None
    estimated_sim_bytes: int | None = None


@dataclass(frozen=True)
class ModelEstimate(Record):
    """gpu rows: the timing model's estimate of the same row (harness.timing.model_estimate)."""

    basis: Literal["modelled"] = "modelled"
    device: str | None = None
    sample: str | None = None
    sample_ctas: int | None = None
    modelled_us: float | None = None
    launches: tuple[ModelledLaunch, ...] = ()
    limiter: str | None = None
    sim_wall_s: float | None = None
    skipped: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class NsightMetric(Record):
    """An Nsight metric attached to a row (harness.nsight.table.MetricRow, labelled, plus the file it came from)."""

    source: str
    kernel: str
    nvtx_range: str
    metric: str
    value: float | str | None
    unit: str
    launch: int | None = None
    nvtx_domain: str = ""
    nvtx_stack: tuple[tuple[str, ...], ...] = ()
    run: str | None = None
    ptxmoe_kernel: str | None = None
    impl: str | None = None
    preset: str | None = None
    skew: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class Row(Record):
    """One row of run.json: one implementation (or one rung) of one (kernel[variant], preset, skew) cell."""

    key: str
    kernel: str
    impl: str
    preset: str
    status: RowStatus
    variant: str | None = None
    skew: str | None = None
    seed: int | None = None
    backend: str | None = None
    language: str | None = None
    params: JsonTable = field(default_factory=dict)
    rung: Rung | None = None
    reason: str | None = None
    correctness: Correctness | None = None
    launches: tuple[Launch, ...] = ()
    launch_stages: tuple[str, ...] = ()
    static: StaticFacts | None = None
    min_bytes: int | None = None
    flops: int | None = None
    gemm_work: GemmWork | None = None
    sim_counters: SimCounters | None = None
    timing: Timing | None = None
    stages_us: Mapping[str, float] = field(default_factory=dict)
    throughput: Throughput | None = None
    nsight: tuple[NsightMetric, ...] = ()
    sanitizer: SanitizerResult | None = None
    model_estimate: ModelEstimate | None = None
    sampling: Sampling | None = None
    elapsed_s: float | None = None
    cpu_s: float | None = None
    memory: RowMemory | None = None
    traceback: str | None = None
    sticky_cuda_error: str | None = None
    unwritten: Mapping[str, float] | None = None  # ptxmoe.compare on sim: per array, fraction never stored to
    arg_types: str | None = None  # ptxmoe.compare: how the array arguments' dtypes were checked, or that they weren't

    @property
    def label(self) -> str:
        """"kernel[variant]" (or the kernel alone)."""
        return kernel_label(self.kernel, self.variant)

    @property
    def ran(self) -> bool:
        """Whether it ran to a check (ok or failed), so it has a time."""
        return self.status in ("ok", "failed")

    @property
    def time_us(self) -> float | None:
        """The row's time: the modelled kernel time (sim) or the median measured sample (gpu); None without one."""
        return None if self.timing is None else self.timing.time_us

    @property
    def basis(self) -> str | None:
        return None if self.timing is None else self.timing.basis

    @property
    def is_lower_rung(self) -> bool:
        return self.rung is not None and not self.rung.top

    @property
    def why(self) -> str | None:
        """Why a row is not ok: its reason, else its check's message; None for an ok row."""
        if self.status == "ok":
            return None
        return self.reason or (self.correctness.message if self.correctness is not None else None)


@dataclass(frozen=True)
class Verdict(Record):
    """One pair's verdict in one cell: speedup = baseline time / impl time (> 1: impl faster), or a reason."""

    key: str
    kernel: str
    preset: str
    variant: str | None = None
    skew: str | None = None
    cell: str | None = None
    pair: str | None = None
    impl: str | None = None
    baseline: str | None = None
    headline: bool = False
    basis: str | None = None
    speedup: float | None = None
    ci_lo: float | None = None
    ci_hi: float | None = None
    verdict: Call | None = None
    reason: str | None = None
    rung: Rung | None = None
    baseline_rung: Rung | None = None
    confidence: float | None = None  # 0.95 (absent before issue 29)
    interval: str | None = None  # "bootstrap" (measured) or "prediction" (modelled: the model's paired errors)
    model_version: str | None = None
    limiters: tuple[str, ...] | None = None  # modelled: (baseline's, impl's) dominant limiter
    limiter_split: str | None = None  # modelled: "same_limiter" / "different_limiters"
    # modelled: the rows the prediction interval was fitted on: "published paired rows", or "N measured pairs of
    # profile <file> (sha256 <digest>)" with a --device-profile that has measured pairs
    interval_basis: str | None = None

    @property
    def label(self) -> str:
        return kernel_label(self.kernel, self.variant)

    @property
    def is_rung_verdict(self) -> bool:
        """A ladder's rung verdict: a lower rung on either side (the top rung's verdicts are the plain pairs')."""
        return self.baseline_rung is not None or (self.rung is not None and not self.rung.top)


@dataclass(frozen=True)
class NvtxRange(Record):
    name: str
    domain: str = "ptxmoe"
    depth: int = 0
    key: str | None = None
    phase: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    start_perf_ns: int | None = None
    end_perf_ns: int | None = None
    duration_ms: float | None = None


@dataclass(frozen=True)
class SweepSettings(Record):
    """run.json `settings`: what the run was asked to do (the CLI's CompareSettings, or ptxmoe.compare's)."""

    backend: str
    presets: tuple[str, ...] = ()
    skews: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    seed: int = 0
    impls: tuple[str, ...] = ()
    static: bool = True
    timing: JsonTable | None = None
    model_device: str = "H200 SXM"
    device_profile: str | None = None
    device_profile_digest: str | None = None  # sha256 (12 hex) of the profile's content: --resume refuses a change
    timing_model: str = "v1"  # absent before --timing-model: those runs were all v1
    sanitize: tuple[str, ...] = ()
    model_estimate: bool = False
    sample: str | None = None
    memory_limit: int | None = None
    source: str | None = None
    baseline: str | None = None  # ptxmoe.compare(baseline=...): every verdict is against it, and so the headline
    axes: tuple[str, ...] = ()  # ptxmoe.sweep: the size axes, case parameters the dashboard plots time against
    languages: Mapping[str, str] = field(default_factory=dict)
    cases: Mapping[str, JsonTable] = field(default_factory=dict)


@dataclass(frozen=True)
class NsightFile(Record):
    file: str
    format: str | None = None
    rows: int | None = None
    attached: int | None = None
    unmatched: int | None = None
    empty_reason: str | None = None


@dataclass(frozen=True)
class Sweep(Record):
    """A whole run.json document. `environment` is a table as recorded (versions, host, GPU, device specs)."""

    schema_version: int
    run_id: str
    status: str
    settings: SweepSettings
    environment: JsonTable
    rows: tuple[Row, ...]
    verdicts: tuple[Verdict, ...]
    upgraded_from: int | None = None
    created_utc: str | None = None
    updated_utc: str | None = None
    finished_utc: str | None = None
    resumed_utc: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    nvtx_ranges: tuple[NvtxRange, ...] = ()
    missing: tuple[str, ...] = ()
    nsight_files: tuple[NsightFile, ...] = ()

    @classmethod
    def from_document(cls, doc, where: str = "run.json") -> Sweep:
        """The records of a run document of any readable schema version (an older one upgraded on a copy).

        Raises:
            RecordError: a field of the wrong type (named), a row without its identity, an unknown field.
        """
        import copy

        from harness.run_schema import SCHEMA_VERSION, upgrade

        if isinstance(doc, dict) and doc.get("schema_version") != SCHEMA_VERSION:
            doc = upgrade(copy.deepcopy(doc))
        return cls.from_json(doc, where)

    def check_record(self, where: str) -> None:
        keys = [r.key for r in self.rows]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise RecordError(f"{where}.rows: key {twice!r} appears {keys.count(twice)} times; expected one row a key")

    @property
    def backend(self) -> str:
        return self.settings.backend

    @property
    def basis(self) -> str:
        """"modelled" (sim: the ptxsim timing model) or "measured" (gpu: CUDA events)."""
        from harness.backends.kinds import KINDS

        kind = KINDS.get(self.backend)
        return kind.basis if kind is not None else "measured"

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.key == key), None)

    @property
    def plain_rows(self) -> tuple[Row, ...]:
        """The rows less the lower rungs of ladders: one per implementation and cell."""
        return tuple(r for r in self.rows if not r.is_lower_rung)


def row_where(index: int, row) -> str:
    key = row.get("key") if isinstance(row, dict) else None
    return f"rows[{index}]" + (f" ({key})" if isinstance(key, str) else "")


def rows_of(values, where: str = "run.json") -> tuple[Row, ...]:
    """Rows from parsed JSON rows (each error names the row by index and key)."""
    return tuple(Row.from_json(r, f"{where} {row_where(i, r)}") for i, r in enumerate(values))
