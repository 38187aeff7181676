"""Timing on a real GPU, the way careful harnesses do it (nvbench, triton.testing.do_bench, ThunderKittens' benches).

Per sample: the L2 is flushed (a memset of a buffer twice the L2 size); a blocker kernel holds the stream (it spins
on a flag in host-mapped memory, as nvbench's blocking kernel does); CUDA events bracket one call of the
implementation's `run`, queued while the stream is held; the flag is written and the events read. So the host's
launch dispatch (Python, Numba's dispatcher) never falls inside the timed window; it is recorded per sample as the
implementation's dispatch time instead. Inputs rotate between copies when they fit in L2; workspaces (the layer's
intermediates) are allocated once, before the timed window, and kept for the whole loop. Warm-up first; sampling
stops when the relative standard error drops under 0.5 % (after a minimum count), or at the time budget or the
sample cap. A sample whose blocker gave up waiting (the host took longer than `block_timeout_s` to queue the call)
is discarded. The SM clock is read (NVML, else nvidia-smi) before the warm-up, once after it (the reference) and every
`clock_every_s` during sampling; samples taken while NVML's throttle reasons (GPU idle ignored) say the GPU was
throttling, or, without reasons, while the clock was more than `throttle_tolerance` below the reference, are
discarded and counted. The host-side
call time without a held stream is sampled separately too (`host_call_us`).
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from harness.backends import cuda_api
from harness.timing import stats


@dataclass(frozen=True)
class GpuTimingSettings:
    warmup_runs: int = 3
    warmup_s: float = 0.05  # at least this long of warm-up as well
    min_samples: int = 10
    max_samples: int = 2000
    budget_s: float = 2.0  # per (kernel, impl) row
    rse_target: float = stats.RSE_TARGET
    flush_l2: bool = True
    max_rotation: int = 4
    host_samples: int = 30
    block_stream: bool = True  # hold the stream with the blocker kernel while a sample is queued
    block_timeout_s: float = 2.0  # the blocker gives up after this long (the sample is then discarded)
    clock_every_s: float = 0.25  # read the SM clock this often while sampling (NVML, else nvidia-smi)
    throttle_tolerance: float = 0.05  # no throttle reasons: discard samples below (1 - this) x the reference clock


# NOTE: nvidia-smi renamed clocks_throttle_reasons.* to clocks_event_reasons.* (driver 535); older drivers reject the
# new name and newer ones may drop the old one, so both are tried, then the clocks without reasons.
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
_CLOCK_FIELDS = ("clocks.sm", "clocks.mem", "temperature.gpu", "power.draw")
_CLOCK_NAMES = ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w", "throttle_reasons")


def read_clocks(run=subprocess.run, nvml=None) -> dict:
    """SM / memory clocks, temperature, power and throttle reasons: NVML (pynvml, microseconds) when importable, else
    nvidia-smi (tens of milliseconds a call).

    Args:
        run: subprocess.run stand-in for nvidia-smi. nvml: a pynvml stand-in (default: import pynvml if present).
    Returns:
        The values by name (strings, as nvidia-smi prints them), "utc_ns", "source" and the reason field used; or
        {"error": why} when nothing could be read: never an empty dict, so a run says that its clocks are unknown.
    """
    nvml_error = None
    try:
        return _nvml_clocks(nvml)
    except Exception as exc:  # noqa: BLE001 - no pynvml, no NVML library, an old driver: nvidia-smi then
        nvml_error = f"{type(exc).__name__}: {exc}"
    out = _smi_clocks(run)
    if "error" in out:
        out["error"] += f"; NVML: {nvml_error}"
    return out


_NVML_STATE: dict = {}


def _nvml_clocks(nvml=None) -> dict:
    if nvml is None:
        import pynvml

        nvml = pynvml
    if _NVML_STATE.get("module") is not nvml:
        nvml.nvmlInit()
        _NVML_STATE.update(module=nvml, handle=nvml.nvmlDeviceGetHandleByIndex(0))
    h = _NVML_STATE["handle"]
    # NOTE: NVML renamed ...ClocksThrottleReasons to ...ClocksEventReasons too; either may be missing
    reasons_fn = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                  or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
    try:
        reasons = f"0x{int(reasons_fn(h)):016x}" if reasons_fn else "[N/A]"
    except Exception:  # noqa: BLE001 - reasons are informative only
        reasons = "[N/A]"
    return {"utc_ns": time.time_ns(), "sm_clock_mhz": str(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
            "mem_clock_mhz": str(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
            "temperature_c": str(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
            "power_w": f"{nvml.nvmlDeviceGetPowerUsage(h) / 1000:.2f}", "throttle_reasons": reasons,
            "source": "nvml", "reason_field": getattr(reasons_fn, "__name__", None)}


def _smi_clocks(run) -> dict:
    errors = []
    for reason in (*REASON_FIELDS, None):
        fields = _CLOCK_FIELDS + ((reason,) if reason else ())
        try:
            proc = run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"error": f"nvidia-smi could not run: {exc}"}
        if proc.returncode == 0 and proc.stdout.strip():
            values = [v.strip() for v in proc.stdout.splitlines()[0].split(",")]
            # strict=False: without a reason field (the last try) nvidia-smi gives one value fewer than _CLOCK_NAMES,
            # and throttle_reasons is then left out
            clocks = dict(zip(_CLOCK_NAMES, values, strict=False))
            return {"utc_ns": time.time_ns(), **clocks, "source": "nvidia-smi", "reason_field": reason}
        why = (proc.stderr or proc.stdout or "").strip().splitlines()
        errors.append(f"{reason or 'clocks only'}: exit {proc.returncode}{': ' + why[0][:160] if why else ''}")
    return {"error": "nvidia-smi --query-gpu failed: " + "; ".join(errors)}


def sm_clock(clocks: dict) -> float | None:
    """The SM clock in MHz from a read_clocks dict (None when unknown, e.g. "[N/A]")."""
    value = clocks.get("sm_clock_mhz")
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def rotation_count(input_bytes: int, l2_bytes: int, max_sets: int = 4) -> int:
    """How many input copies to rotate through: 1 when the inputs exceed L2, else enough to span 2x L2 (capped)."""
    if input_bytes <= 0 or input_bytes >= l2_bytes:
        return 1
    return int(max(1, min(max_sets, -(-2 * l2_bytes // input_bytes))))


class L2Flusher:
    """Writes a device buffer of 2x the L2 size on the backend's stream (evicts everything the kernel could reuse)."""

    def __init__(self, backend, l2_bytes: int):
        cuda = cuda_api.numba_cuda()
        self.nbytes = int(2 * l2_bytes)
        self.buffer = cuda.device_array(self.nbytes, dtype=np.uint8, stream=backend.stream)
        self.ptr = int(self.buffer.__cuda_array_interface__["data"][0])
        self.backend = backend
        self.value = 0

    def __call__(self) -> None:
        driver = cuda_api.driver()
        self.value = (self.value + 1) & 0xFF
        cuda_api.check(driver.cuMemsetD8Async(driver.CUdeviceptr(self.ptr), self.value, self.nbytes,
                                              driver.CUstream(cuda_api.stream_handle(self.backend.stream))),
                       "cuMemsetD8Async (L2 flush)")


BLOCKER_ENTRY = "ptxmoe_stream_blocker"
BLOCKER_PTX = f"""
.version 8.0
.target sm_90
.address_size 64
// Holds its stream until the host writes a non-zero word at flag[0]; gives up after timeout_ns of %globaltimer and
// then writes 1 at flag[1] (the sample it held is worthless). One thread.
.visible .entry {BLOCKER_ENTRY}(.param .u64 p_flag, .param .u64 p_timeout_ns)
{{
    .reg .pred %p, %q;
    .reg .b32 %r;
    .reg .b64 %flag, %ns, %t0, %t;
    ld.param.u64 %flag, [p_flag];
    ld.param.u64 %ns, [p_timeout_ns];
    mov.u64 %t0, %globaltimer;
WAIT:
    ld.volatile.global.u32 %r, [%flag];
    setp.ne.u32 %p, %r, 0;
    @%p bra DONE;
    mov.u64 %t, %globaltimer;
    sub.u64 %t, %t, %t0;
    setp.lt.u64 %q, %t, %ns;
    @%q bra WAIT;
    mov.u32 %r, 1;
    st.volatile.global.u32 [%flag+4], %r;
DONE:
    ret;
}}
"""


class StreamBlocker:
    """nvbench's blocking kernel: `hold()` queues a one-thread kernel spinning on a host-mapped flag, `release()`
    writes the flag; `timed_out()` says whether the kernel gave up before the release."""

    def __init__(self, backend, timeout_s: float = 2.0):
        self.backend = backend
        self.flag = cuda_api.numba_cuda().mapped_array(2, dtype=np.int32)  # [release, timed out]
        self.ptr = int(self.flag.__cuda_array_interface__["data"][0])
        self.timeout_ns = np.uint64(int(timeout_s * 1e9))

    def hold(self) -> None:
        self.flag[0] = 0
        self.flag[1] = 0
        self.backend.launch_ptx_raw(BLOCKER_PTX, BLOCKER_ENTRY, (1, 1, 1), (1, 1, 1),
                                    [np.uint64(self.ptr), self.timeout_ns])

    def release(self) -> None:
        self.flag[0] = 1

    def timed_out(self) -> bool:
        return bool(self.flag[1])


def _cuda_event():
    return cuda_api.numba_cuda().event()  # timing events (the default)


# NVML's clock event (throttle) reasons (nvml.h, nvmlClocksEventReason*): the bits that mean the SM clock is held
# below what the load asks for. NOTE: 0x1 "GPU idle" is left out on purpose: between two samples the GPU idles while
# the host queues the next one, so idle says nothing about the clock a sample ran at; 0x2 (applications clocks
# setting) is a configured clock, not a throttle.
IDLE_REASON = 0x1
THROTTLE_REASONS = {0x4: "SW power cap", 0x8: "HW slowdown", 0x10: "sync boost", 0x20: "SW thermal slowdown",
                    0x40: "HW thermal slowdown", 0x80: "HW power brake", 0x100: "display clock setting"}


def throttle_bits(clocks: dict) -> int | None:
    """The throttling reason bits of a read_clocks dict, "GPU idle" ignored; None when the reasons are unknown."""
    text = clocks.get("throttle_reasons")
    try:
        value = int(str(text).strip(), 16) if text is not None else None
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None
    if value is None:
        return None
    return value & sum(THROTTLE_REASONS)


class _ClockWatch:
    """Reads the SM clock every `every_s` while sampling; samples since the previous read are judged by the new one:
    by NVML's throttle-reason bits when the read has them ("GPU idle" ignored), else by the SM clock against the
    reference read after the warm-up (an idle GPU's clock before it would pass every throttled sample)."""

    def __init__(self, reader, settings: GpuTimingSettings):
        self.reader, self.settings = reader, settings
        self.before = reader()
        self.reference: dict = {}
        self.start_mhz: float | None = None
        self.reads: list[dict] = []
        self.last = time.perf_counter()
        self.discarded: list[float] = []
        self.reasons_seen = 0

    def arm(self) -> None:
        """Read the reference clock (call after the warm-up: the GPU is then at its loaded clock)."""
        self.reference = self.reader()
        self.start_mhz = sm_clock(self.reference)
        self.last = time.perf_counter()

    def due(self) -> bool:
        return time.perf_counter() - self.last >= self.settings.clock_every_s

    def judge(self, pending: list[float]) -> list[float]:
        """Read the clock now; return the pending samples to keep (none when the GPU was throttling)."""
        clocks = self.reader()
        self.last = time.perf_counter()
        now = sm_clock(clocks)
        bits = throttle_bits(clocks)
        if bits is not None:
            throttled = bits != 0
        else:
            throttled = (self.start_mhz is not None and now is not None
                         and now < self.start_mhz * (1.0 - self.settings.throttle_tolerance))
        read: dict = {"sm_clock_mhz": now, "samples": len(pending), "discarded": bool(throttled)}
        if bits:
            read["reasons"] = [name for bit, name in THROTTLE_REASONS.items() if bits & bit]
            self.reasons_seen |= bits
        self.reads.append(read)
        if throttled:
            self.discarded += pending
            return []
        return pending

    def note(self) -> str | None:
        if self.start_mhz is None and throttle_bits(self.reference) is None:
            why = self.reference.get("error") or self.before.get("error") or "no clocks.sm value"
            return f"SM clock unknown ({why}): samples not screened"
        if self.discarded:
            if self.reasons_seen:
                named = ", ".join(n for bit, n in THROTTLE_REASONS.items() if self.reasons_seen & bit)
                return f"{len(self.discarded)} samples discarded: the GPU reported throttling ({named})"
            floor = 1 - self.settings.throttle_tolerance
            return (f"{len(self.discarded)} samples discarded: SM clock below {floor:.0%} of {self.start_mhz:g} MHz "
                    "(read after the warm-up)")
        return None


def _warm_up(backend, call, arg_sets, settings: GpuTimingSettings) -> None:
    t_end = time.perf_counter() + settings.warmup_s
    i = 0
    while i < settings.warmup_runs or time.perf_counter() < t_end:
        call(arg_sets[i % len(arg_sets)])
        i += 1
    backend.synchronize()


def _sample(backend, call, arg_sets, settings, event_factory, flusher, blocker, watch: _ClockWatch) -> dict:
    """The sampling loop: per sample flush, hold, record, queue the call, record, release, read."""
    stream = backend.stream
    kept: list[float] = []
    pending: list[float] = []
    dispatch: list[float] = []
    blocker_timeouts = 0
    start, end = event_factory(), event_factory()
    t0 = time.perf_counter()
    reason = ""
    i = 0
    while True:
        if flusher is not None:
            flusher()
        if blocker is not None:
            blocker.hold()
        start.record(stream)
        h0 = time.perf_counter()
        call(arg_sets[i % len(arg_sets)])
        dispatch.append((time.perf_counter() - h0) * 1e6)
        end.record(stream)
        if blocker is not None:
            blocker.release()
        end.synchronize()
        i += 1
        if blocker is not None and blocker.timed_out():
            blocker_timeouts += 1
        else:
            pending.append(start.elapsed_time(end) * 1e3)  # ms -> µs
        if watch.due():
            kept += watch.judge(pending)
            pending = []
        usable = kept + pending
        elapsed = time.perf_counter() - t0
        stop, reason = stats.should_stop(usable, elapsed, min_samples=settings.min_samples,
                                         max_samples=settings.max_samples, budget_s=settings.budget_s,
                                         rse_target=settings.rse_target)
        if not stop and len(usable) < 3 and elapsed >= 2 * settings.budget_s:
            stop, reason = True, f"few usable samples after {elapsed:.1f}s"
        if stop:
            break
    if pending:
        kept += watch.judge(pending)
    return {"kept": kept, "dispatch": dispatch, "reason": reason, "blocker_timeouts": blocker_timeouts}


def _host_calls(backend, call, arg_sets, settings) -> list[float]:
    host: list[float] = []
    for j in range(settings.host_samples):
        backend.synchronize()
        h0 = time.perf_counter()
        call(arg_sets[j % len(arg_sets)])
        host.append((time.perf_counter() - h0) * 1e6)
    backend.synchronize()
    return host


def _stage_run(backend, call, arg_sets, flusher) -> list[tuple[str, float]]:
    backend.event_timing = True
    backend.records.clear()
    if flusher is not None:
        flusher()
    call(arg_sets[0])
    backend.synchronize()
    return [(rec.name, rec.stats.elapsed_ms() * 1e3) for rec in backend.records if rec.stats is not None]


def time_gpu(backend, call: Callable[[dict], list], arg_sets: list[dict], l2_bytes: int,
             settings: GpuTimingSettings = GpuTimingSettings(), event_factory=None, flusher=None, blocker=None,
             clock_reader=None) -> dict:
    """Sample device time and host dispatch time of `call(args)` (one implementation's run) on a GpuBackend.

    Args:
        backend: a GpuBackend (its `stream`, `event_timing`, `records`, `synchronize`, `keep_workspaces`,
            `release_workspaces` and, for the default blocker, `launch_ptx_raw` are used).
        call: runs the implementation once on one argument set (launches only; no synchronisation).
        arg_sets: argument sets to rotate through (the first is the checked one).
        l2_bytes: the device's L2 size (the flush writes twice that).
        settings: warm-up, stopping rule, budget, blocker, clock screening.
        event_factory: makes a timing event (record(stream), synchronize(), elapsed_time(other) in ms); default CUDA
            events from numba. flusher: a callable flushing the L2 on the stream; default an L2Flusher.
        blocker: hold()/release()/timed_out(); default a StreamBlocker when settings.block_stream.
        clock_reader: returns a read_clocks-style dict; default read_clocks (nvidia-smi).

    Returns:
        {"basis": "measured", "device_time_us": [...], "device": Summary dict (…_us), "dispatch_us": [...] (host
         time to queue each timed call, stream held), "dispatch": Summary dict, "host_call_us": [...],
         "host_call": Summary dict, "stop_reason", "blocked": bool, "blocker_timeouts", "throttled_us": [discarded
         samples], "clock_reads", "clock_note", "rotation_sets", "l2_flush_bytes", "clocks_before",
         "clocks_reference" (read after the warm-up: what the clock is judged against), "clocks_after",
         "stages_us": {launch name: µs, from one extra run with per-launch events},
         "launch_us": [[launch name, µs], ...] in launch order (that same run), "module_loads"
         (GpuBackend.row_module_loads), "settings"}
    """
    event_factory = event_factory or _cuda_event
    if flusher is None and settings.flush_l2:
        flusher = L2Flusher(backend, l2_bytes)
    if blocker is None and settings.block_stream:
        blocker = StreamBlocker(backend, settings.block_timeout_s)
    watch = _ClockWatch(clock_reader or read_clocks, settings)
    saved_events, saved_keep = backend.event_timing, backend.keep_workspaces
    backend.event_timing = False
    backend.keep_workspaces = True  # NOTE: the warm-up allocates the workspaces; the timed calls reuse them
    try:
        _warm_up(backend, call, arg_sets, settings)
        watch.arm()
        sampled = _sample(backend, call, arg_sets, settings, event_factory, flusher, blocker, watch)
        host = _host_calls(backend, call, arg_sets, settings)
        launch_us = _stage_run(backend, call, arg_sets, flusher)
    finally:
        backend.event_timing, backend.keep_workspaces = saved_events, saved_keep
        backend.release_workspaces()
    samples = sampled["kept"] or watch.discarded  # NOTE: all throttled: keep them, clock_note says so
    if not samples:
        raise cuda_api.GpuError(f"no timing sample: the stream blocker timed out on all {sampled['blocker_timeouts']} "
                                f"samples (the host needed over {settings.block_timeout_s:g} s to queue one call; "
                                f"raise GpuTimingSettings.block_timeout_s or set block_stream=False)")
    stages: dict[str, float] = {}
    for name, us in launch_us:
        stages[name] = stages.get(name, 0.0) + us
    dispatch = sampled["dispatch"]
    return {
        "basis": "measured", "device_time_us": samples, "device": stats.summarize(samples).as_dict("us"),
        "dispatch_us": dispatch, "dispatch": stats.summarize(dispatch).as_dict("us") if dispatch else None,
        "host_call_us": host, "host_call": stats.summarize(host).as_dict("us") if host else None,
        "stop_reason": sampled["reason"], "blocked": blocker is not None,
        "blocker_timeouts": sampled["blocker_timeouts"], "throttled_us": watch.discarded,
        "clock_reads": watch.reads, "clock_note": watch.note(), "rotation_sets": len(arg_sets),
        "l2_flush_bytes": getattr(flusher, "nbytes", 0) if flusher else 0,
        "clocks_before": watch.before, "clocks_reference": watch.reference,
        "clocks_after": (clock_reader or read_clocks)(), "stages_us": stages,
        "launch_us": [[name, us] for name, us in launch_us],
        "module_loads": backend.row_module_loads(),
        "settings": asdict(settings),
    }
