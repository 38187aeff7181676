"""`compare`: run your implementations of one kernel on one backend, check, analyse and time each, and judge them.

One code path for every backend (tinygrad's small device interface): `harness.backends.select.select_backend` gives
a sim (ptxsim) or gpu backend; every implementation is launched through its `launch_numba` / `launch_ptx`; times are
`harness.timing.sim.model_row` ("modelled", sim) or `harness.timing.gpu.time_gpu` ("measured", gpu); verdicts are
`harness.timing.stats.compare_modelled` / `compare`; static facts `harness.static.static_facts`. The rows and
verdicts are run.json rows and verdicts (docs/run-json.md), so a result saves as a normal run folder.
"""
from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ptxmoe.errors import InputError, KernelError, PtxmoeError
from ptxmoe.kernels import KERNEL_TYPES

SKEW = "none"  # user kernels have no routing skew; the run.json field is kept for the dashboard's filters
DEFAULT_CASE = "default"


@dataclass(frozen=True)
class Case:
    """One set of inputs: its name (the run.json `preset`), the keyword parameters of make_inputs, and its seed."""

    name: str
    params: Mapping[str, Any]
    seed: int


@dataclass(frozen=True)
class Settings:
    """What one `compare` call does (recorded as the run.json `settings`)."""

    name: str
    backend: str  # resolved: "sim" or "gpu"
    impls: tuple[str, ...]
    languages: tuple[str, ...]
    cases: tuple[Case, ...]
    seed: int
    static: bool = True
    model_device: str = "H200 SXM"
    timing: Any = None  # harness.timing.gpu.GpuTimingSettings on gpu
    outputs: tuple[str, ...] | None = None

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {"backend": self.backend, "presets": [c.name for c in self.cases], "skews": [SKEW],
                "kernels": [self.name], "seed": self.seed, "impls": list(self.impls), "static": self.static,
                "timing": asdict(self.timing) if self.timing is not None else None,
                "model_device": self.model_device, "sanitize": [], "model_estimate": False,
                "source": "ptxmoe.compare", "languages": dict(zip(self.impls, self.languages, strict=True)),
                "cases": {c.name: dict(c.params) for c in self.cases}}


@dataclass
class _Context:
    settings: Settings
    backend: Any
    make_inputs: Callable
    check: Callable | None
    min_bytes: Callable | None
    flops: Callable | None
    device_spec: Any
    progress: Any
    recorder: Any = None
    ranges: list = field(default_factory=list)


# ------------------------------------------------------------------------------------------------- validation
def _name_ok(value) -> bool:
    return isinstance(value, str) and value != "" and "/" not in value and value.strip() == value


def _check_kernels(kernels) -> None:
    if not isinstance(kernels, Mapping) or not kernels:
        raise InputError(f"kernels = {kernels!r}: expected a non-empty dict {{implementation name: kernel}}")
    for impl, kernel in kernels.items():
        if not _name_ok(impl):
            raise InputError(f"implementation name {impl!r}: expected a non-empty str without '/' or edge spaces")
        if not isinstance(kernel, KERNEL_TYPES):
            raise InputError(f"implementation {impl!r}: got {type(kernel).__name__}; expected ptxmoe.NumbaKernel, "
                             f"ptxmoe.CppKernel or ptxmoe.PtxKernel")


def _cases(name: str, cases, seed: int) -> tuple[Case, ...]:
    if cases is None:
        cases = {DEFAULT_CASE: {}}
    if not isinstance(cases, Mapping) or not cases:
        raise InputError(f"cases = {cases!r}: expected a non-empty dict {{case name: make_inputs keyword args}}")
    out = []
    for case, params in cases.items():
        if not _name_ok(case) or not isinstance(params, Mapping):
            raise InputError(f"case {case!r}: {params!r}; expected a name without '/' and a dict of keyword args")
        out.append(Case(case, dict(params), (int(seed) + zlib.crc32(f"{name}/{case}".encode())) % 2**32))
    return tuple(out)


def _draw_inputs(ctx: _Context, case: Case) -> dict:
    """make_inputs(rng, **case.params), checked: a dict of str -> NumPy array or number."""
    import numpy as np

    rng = np.random.default_rng(case.seed)
    try:
        inputs = ctx.make_inputs(rng, **case.params)
    except PtxmoeError:
        raise
    except Exception as exc:
        raise InputError(f"make_inputs(rng, **{dict(case.params)!r}) for case {case.name!r} raised "
                         f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(inputs, Mapping) or not inputs:
        raise InputError(f"make_inputs for case {case.name!r} returned {type(inputs).__name__}; expected a non-empty "
                         f"dict {{argument name: NumPy array or scalar}}")
    for key, value in inputs.items():
        if not isinstance(key, str) or not (isinstance(value, (np.ndarray, np.generic, int, float))
                                            and not isinstance(value, bool)):
            raise InputError(f"make_inputs for case {case.name!r}: {key!r} = {type(value).__name__}; expected str "
                             f"names and NumPy arrays or numbers")
    # NOTE: a 0-d array is a scalar argument (passed by value), not a one-element buffer
    inputs = {k: v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for k, v in inputs.items()}
    outputs = ctx.settings.outputs or ()
    bad = [o for o in outputs if not isinstance(inputs.get(o), np.ndarray)]
    if bad:
        raise InputError(f"outputs {bad} for case {case.name!r}: not arrays among the inputs; make_inputs returned "
                         f"{', '.join(inputs)}")
    return inputs


# --------------------------------------------------------------------------------------------------- one row
def _owner(impl: str, kernel) -> str:
    return f"implementation {impl!r} ({type(kernel).__name__} {kernel.title})"


def _upload(backend, inputs: Mapping[str, Any]) -> dict:
    import numpy as np

    return {k: backend.to_device(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) and v.ndim > 0 else v
            for k, v in inputs.items()}


def _free(backend, device_args: Mapping[str, Any]) -> None:
    from contract.device import DeviceArray

    for value in device_args.values():
        if isinstance(value, DeviceArray):
            backend.free(value)
    if hasattr(backend, "reset_memory"):
        backend.reset_memory()  # sim: ptxsim never reuses freed memory; a fresh device per row


def _prepare(impl: str, kernel, inputs):
    """The kernel's launcher for these inputs (KernelSpecError / BuildError name the implementation)."""
    return _named(impl, kernel, lambda: kernel.prepare(inputs, _owner(impl, kernel), kernel.title))


def _launch_once(ctx: _Context, impl: str, kernel, launcher, device_args) -> list:
    """One run of the implementation (the checked one); returns its LaunchRecords."""
    ctx.backend.records.clear()
    ctx.backend.sources.clear()

    def run():
        launcher(ctx.backend, device_args)
        ctx.backend.synchronize()
    _named(impl, kernel, run)
    return list(ctx.backend.records)


def _named(impl: str, kernel, action: Callable):
    """`action()`, with any error re-raised naming the implementation (ptxmoe errors keep their class)."""
    owner = _owner(impl, kernel)
    try:
        return action()
    except PtxmoeError as exc:
        if str(exc).startswith(owner):
            raise
        try:  # the same error class, with the implementation named
            named = type(exc)(f"{owner}: {exc}")
        except TypeError:
            named = KernelError(impl, f"{owner}: {exc}")
        raise named from exc
    except Exception as exc:  # simulator, Numba or driver errors: named after the implementation
        raise KernelError(impl, f"{owner} failed: {type(exc).__name__}: {exc}") from exc


def _run_check(ctx: _Context, impl: str, outputs: dict, inputs: dict) -> dict:
    """{ok, message, errors}: the user's check(outputs, inputs) -> None/True (ok), False, (ok, message), or raises
    AssertionError / CheckError (failed, with its message)."""
    from contract.errors import CheckError

    if ctx.check is None:
        return {"ok": True, "message": "not checked (compare(check=None))", "errors": {}}
    try:
        verdict = ctx.check(outputs, inputs)
    except (AssertionError, CheckError) as exc:
        return {"ok": False, "message": f"{impl}: {str(exc).strip() or type(exc).__name__}", "errors": {}}
    except Exception as exc:
        raise InputError(f"check(outputs, inputs) raised {type(exc).__name__} for implementation {impl!r}: {exc}; "
                         f"a failed check should return False or raise AssertionError") from exc
    if isinstance(verdict, tuple) and len(verdict) == 2:
        ok, message = bool(verdict[0]), str(verdict[1])
    else:
        try:
            ok, message = verdict is None or bool(verdict), ""
        except Exception as exc:  # e.g. an array returned instead of a bool
            raise InputError(f"check(outputs, inputs) returned {type(verdict).__name__} for implementation {impl!r}; "
                             f"expected None, a bool or (ok, message)") from exc
    return {"ok": ok, "message": message or ("ok" if ok else f"{impl}: check returned False"), "errors": {}}


def _static(ctx: _Context) -> dict | None:
    if not ctx.settings.static:
        return None
    from harness.static import static_facts

    try:
        return static_facts(ctx.backend.launched_sources())
    except Exception as exc:  # noqa: BLE001 - static facts are an extra, not the row's outcome
        return {"error": f"{type(exc).__name__}: {exc}", "kernels": {}, "totals": {}}


def _time(ctx: _Context, launcher, device_args, records) -> tuple[dict, float | None, dict | None]:
    """(timing dict, time in µs, sim counters) of one implementation: modelled on sim, measured on gpu."""
    if ctx.settings.backend == "sim":
        from harness.timing.sim import metrics_dict, model_row, sum_metrics

        timing = model_row(records, ctx.backend.launched_sources(), ctx.settings.model_device)
        per_launch = [{"name": r.name, "metrics": metrics_dict(r.stats)} for r in records]
        counters = {"total": sum_metrics([p["metrics"] for p in per_launch]), "launches": per_launch}
        return timing, timing["modelled_us"], counters
    from harness.timing.gpu import time_gpu

    def call(args):  # only the backend's launch: everything else was checked once by prepare
        launcher(ctx.backend, args)

    timing = time_gpu(ctx.backend, call, [device_args], _l2_bytes(ctx.device_spec), ctx.settings.timing)
    return timing, timing["device"]["median_us"], None


def _l2_bytes(spec) -> int:
    """The visible GPU's L2 size (driver attribute), else the device spec's, else 50 MiB."""
    fallback = int(getattr(spec, "l2_bytes", 50 * 2**20))
    try:
        from cuda.bindings import driver

        err, value = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0)
    except Exception:  # noqa: BLE001 - no driver or no GPU: the spec's size
        return fallback
    return int(value) if err == driver.CUresult.CUDA_SUCCESS and value > 0 else fallback


def _user_count(ctx: _Context, fn, what: str, inputs) -> int | None:
    if fn is None:
        return None
    try:
        return int(fn(inputs))
    except Exception as exc:
        raise InputError(f"{what}(inputs) raised {type(exc).__name__}: {exc}; expected an int") from exc


def run_row(ctx: _Context, case: Case, impl: str, kernel, inputs: dict) -> dict:
    """Run, check, analyse and time one implementation on one case; returns its run.json row."""
    from harness.results import row_key

    s = ctx.settings
    row = {"key": row_key(s.name, None, impl, case.name, SKEW), "kernel": s.name, "variant": None, "impl": impl,
           "language": kernel.language, "preset": case.name, "skew": SKEW, "seed": case.seed, "backend": s.backend,
           "params": dict(case.params)}
    t0 = time.perf_counter()
    launcher = _prepare(impl, kernel, inputs)
    device_args = _upload(ctx.backend, inputs)
    try:
        with ctx.recorder.range(row["key"], key=row["key"], phase="check"):
            records = _launch_once(ctx, impl, kernel, launcher, device_args)
        wanted = s.outputs if s.outputs is not None else [k for k, v in device_args.items() if hasattr(v, "addr")]
        row["correctness"] = _run_check(ctx, impl, {k: ctx.backend.to_host(device_args[k]) for k in wanted}, inputs)
        _analyse(ctx, row, records, inputs)
        with ctx.recorder.range(row["key"], key=row["key"], phase="timing"):
            row["timing"], time_us, row["sim_counters"] = _time(ctx, launcher, device_args, records)
    finally:
        _free(ctx.backend, device_args)
    _close(ctx, row, records, time_us)
    row["elapsed_s"] = time.perf_counter() - t0
    return row


def _analyse(ctx: _Context, row: dict, records, inputs: dict) -> None:
    """The row's launches, static facts and the user's byte / FLOP counts."""
    row["launches"] = [{"name": r.name, "impl": row["impl"], "grid": list(r.grid), "block": list(r.block),
                        "shared_bytes": r.shared_bytes, "host_seconds": r.host_seconds} for r in records]
    row["static"] = _static(ctx)
    row["min_bytes"] = _user_count(ctx, ctx.min_bytes, "min_bytes", inputs)
    row["flops"] = _user_count(ctx, ctx.flops, "flops", inputs)


def _close(ctx: _Context, row: dict, records, time_us: float | None) -> None:
    """Stages, throughput and the row's status (a failed check or a sanitizer finding fails it)."""
    from harness.runner import throughput

    row["launch_stages"] = [r.name for r in records]
    row["stages_us"] = _stages(row["timing"])
    counted = row["min_bytes"] is not None or row["flops"] is not None
    row["throughput"] = (throughput(row["kernel"], row["min_bytes"] or 0, row["flops"] or 0, time_us,
                                    ctx.device_spec) if counted else None)
    row["nsight"] = []
    row["status"] = "ok" if row["correctness"]["ok"] else "failed"
    if not row["correctness"]["ok"]:
        row["reason"] = row["correctness"]["message"]
    if getattr(ctx.backend, "sanitize", ()):
        row["sanitizer"] = _sanitizer(ctx.backend, records)
        if row["sanitizer"]["findings"]:
            row["status"], row["reason"] = "failed", row["sanitizer"]["summary"]


def _sanitizer(backend, records) -> dict:
    """{tools, findings, summary} of a row run on a SimBackend with sanitizers on (as `ptxmoe compare --sanitize`)."""
    findings = backend.sanitizer_findings(records)
    summary = f"{len(findings)} sanitizer finding(s); first: {findings[0]['text']}" if findings else None
    return {"tools": list(backend.sanitize), "findings": findings, "summary": summary}


def _stages(timing: dict) -> dict[str, float]:
    """µs per launch name (modelled or from the per-launch events of one extra run)."""
    if timing.get("basis") == "modelled":
        pairs = [(x["name"], x["modelled_s"] * 1e6) for x in timing.get("launches", []) if x.get("modelled_s")]
    else:
        pairs = [(name, us) for name, us in timing.get("launch_us", [])]
    out: dict[str, float] = {}
    for name, us in pairs:
        out[name] = out.get(name, 0.0) + us
    return out


# ----------------------------------------------------------------------------------------------------- verdicts
def verdict(name: str, case: str, baseline: dict, candidate: dict, basis: str) -> dict:
    """The run.json verdict of `candidate` over `baseline` in one case: speedup = baseline time / candidate time
    (> 1: the candidate is faster) with its interval (measured: bootstrap 95 %; modelled: the model's validated
    error)."""
    from harness.timing import stats

    base, cand = baseline["impl"], candidate["impl"]
    out = {"key": f"{name}/{case}/{SKEW}/{cand}-vs-{base}", "kernel": name, "variant": None, "preset": case,
           "skew": SKEW, "basis": basis, "speedup": None, "ci_lo": None, "ci_hi": None, "verdict": None,
           "reason": None, "impl": cand, "baseline": base, "pair": f"{cand}-vs-{base}"}
    bad = [r["impl"] for r in (baseline, candidate) if r.get("status") != "ok"]
    if bad:
        out["reason"] = f"no verdict: {' and '.join(bad)} failed the check"
        return out
    if basis == "modelled":
        a, b = baseline["timing"].get("modelled_us"), candidate["timing"].get("modelled_us")
        if not a or not b:
            why = baseline["timing"].get("error") or candidate["timing"].get("error") or "no modelled time"
            out["reason"] = f"no verdict: {why}"
            return out
        v = stats.compare_modelled(a, b, stats.modelled_band(baseline["timing"], candidate["timing"]))
    else:
        v = stats.compare(baseline["timing"]["device_time_us"], candidate["timing"]["device_time_us"],
                          basis="measured")
    out.update(v.as_dict())
    return out


def verdicts_of(name: str, case: str, rows: list[dict], basis: str) -> list[dict]:
    """Every pair in order: each later implementation against each earlier one (the first is the baseline)."""
    return [verdict(name, case, rows[i], rows[j], basis) for i in range(len(rows)) for j in range(i + 1, len(rows))]


# ------------------------------------------------------------------------------------------------------ compare
def compare(kernels: Mapping[str, Any], make_inputs: Callable, *, check: Callable | None = None,
            outputs=None, name: str = "kernel", cases: Mapping[str, Mapping] | None = None,
            backend: str = "auto", seed: int = 0, static: bool = True, model_device: str = "H200 SXM",
            timing=None, min_bytes: Callable | None = None, flops: Callable | None = None, progress=None):
    """Run each implementation on the same inputs, check it, and time it; judge each pair.

    Args:
        kernels: {implementation name: NumbaKernel | CppKernel | PtxKernel}, baseline first.
        make_inputs: `make_inputs(rng, **case_params) -> {argument name: NumPy array or number}` (rng: a seeded
            numpy Generator). Arrays are copied to the device for each implementation; every array is read back
            afterwards (or only those named in `outputs`).
        check: `check(outputs, inputs)`: return None/True (correct), False, or (ok, message); or raise
            AssertionError (e.g. numpy.testing.assert_allclose). None: no check.
        outputs: names of the arrays to read back and pass to check (default: every array).
        name: the kernel's name in the result, run.json and the dashboard.
        cases: {case name: make_inputs keyword args}; default one case "default" with none.
        backend: "auto" (gpu when one is visible), "sim" (ptxsim; times modelled) or "gpu" (times measured); or a
            harness backend instance (harness.backends.sim.SimBackend(sanitize="all"), a GpuBackend...).
        seed: base seed; each case's seed mixes in its name (every implementation gets the same inputs).
        static: collect static facts (ptxas registers/spills, PTX and SASS instruction histograms).
        model_device: the GPU the sim timing model models.
        timing: harness.timing.gpu.GpuTimingSettings for the gpu backend (warm-up, stopping rule, budget).
        min_bytes, flops: optional functions of the inputs for achieved GB/s and TFLOP/s.
        progress: a text stream for one line per row (default silent).
    Returns:
        A ptxmoe.Result.
    Raises:
        InputError / KernelSpecError: bad arguments, inputs or kernel descriptions (the implementation is named).
        BuildError: CUDA C++ that NVRTC rejects (its log included). KernelError: an implementation failed to run.
        UnknownNameError: an unknown backend; PtxmoeError: backend "gpu" with no GPU visible.
    """
    from harness.backends.base import Backend
    from harness.backends.select import select_backend
    from harness.nvtx_ranges import RangeRecorder
    from harness.results import utc_now
    from harness.runner import device_spec_for
    from harness.timing.gpu import GpuTimingSettings
    from ptxmoe.result import Result

    _check_kernels(kernels)
    if not _name_ok(name):
        raise InputError(f"name = {name!r}: expected a non-empty str without '/' or edge spaces")
    if not callable(make_inputs):
        raise InputError(f"make_inputs = {make_inputs!r}: expected a function (rng, **case_params) -> dict")
    if check is not None and not callable(check):
        raise InputError(f"check = {check!r}: expected a function (outputs, inputs) or None")
    started = utc_now()
    be = backend if isinstance(backend, Backend) else select_backend(backend)
    settings = Settings(name=name, backend=be.name, impls=tuple(kernels),
                        languages=tuple(k.language for k in kernels.values()), cases=_cases(name, cases, seed),
                        seed=int(seed), static=bool(static), model_device=model_device,
                        timing=(timing or GpuTimingSettings()) if be.name == "gpu" else None,
                        outputs=None if outputs is None else tuple(outputs))
    gpu_name = _gpu_name() if be.name == "gpu" else None
    ctx = _Context(settings, be, make_inputs, check, min_bytes, flops,
                   device_spec_for(be.name, gpu_name, model_device), progress, RangeRecorder())
    basis = "modelled" if be.name == "sim" else "measured"
    rows, verdicts = [], []
    for case in settings.cases:
        inputs = _draw_inputs(ctx, case)
        case_rows = []
        for impl, kernel in kernels.items():
            row = run_row(ctx, case, impl, kernel, inputs)
            case_rows.append(row)
            _say(ctx, row)
        rows += case_rows
        verdicts += verdicts_of(name, case.name, case_rows, basis)
    return Result(_document(settings, rows, verdicts, ctx.recorder.drain(), started))


def _gpu_name() -> str | None:
    from harness.toolchain import gpu_visible

    ok, gpu = gpu_visible()
    return gpu if ok else None


def _say(ctx: _Context, row: dict) -> None:
    if ctx.progress is None:
        return
    t = row["timing"]
    value = t.get("modelled_us") if t.get("basis") == "modelled" else (t.get("device") or {}).get("median_us")
    shown = f"{value:.3f} us {t.get('basis')}" if value is not None else f"no time ({t.get('error')})"
    print(f"{row['key']}: {row['status']}, {shown}", file=ctx.progress or sys.stderr, flush=True)


def _document(settings: Settings, rows: list[dict], verdicts: list[dict], ranges: list[dict], started: str) -> dict:
    """A complete run.json document (docs/run-json.md) of one compare call."""
    from harness.results import SCHEMA_VERSION, collect_environment, new_run_id, utc_now

    now = utc_now()
    return {"schema_version": SCHEMA_VERSION, "run_id": new_run_id(settings.backend), "status": "complete",
            "created_utc": started, "updated_utc": now, "finished_utc": now, "command": list(sys.argv),
            "settings": settings.as_dict(), "environment": collect_environment(settings.backend,
                                                                               settings.model_device),
            "rows": rows, "verdicts": verdicts, "nvtx_ranges": ranges, "missing": [], "resumed_utc": []}
