"""`compare`: run your implementations of one kernel on one backend, check, analyse and time each, and judge them.

Each row runs through the sweep's own pipeline, harness.row_run.run_row (build, place, launch, check, time, record),
with a UserRow saying what is the user's: the kernel, make_inputs, check and counts. The backend times the row
(Backend.time_row: "modelled" on sim, "measured" on gpu), verdicts follow the sweep's rule
(harness.verdicts.timed_verdict). One implementation that fails to build or to run fails its own row (status
"error", the message naming it) and the others still run and get verdicts. The rows and verdicts are run.json rows
and verdicts (docs/run-json.md), so a result saves as a normal run folder.
"""
from __future__ import annotations

import sys
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ptxmoe.errors import InputError, KernelError, PtxmoeError
from ptxmoe.footprint import case_estimate
from ptxmoe.kernels import KERNEL_TYPES
from ptxmoe.progress import TimeLeft
from ptxmoe.tensors import is_tensor, to_numpy

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
    allow_unwritten: bool | tuple[str, ...] = False
    baseline: str | None = None
    axes: tuple[str, ...] = ()
    sample_waves: int | None = None
    device_profile: str | None = None  # sim: a `ptxmoe calibrate` profile (absolute path) the timing model uses
    device_profile_digest: str | None = None  # sha256 (12 hex) of its content

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {"backend": self.backend, "presets": [c.name for c in self.cases], "skews": [SKEW],
                "kernels": [self.name], "seed": self.seed, "impls": list(self.impls), "static": self.static,
                "timing": asdict(self.timing) if self.timing is not None else None,
                "model_device": self.model_device, "sanitize": [], "model_estimate": False,
                "source": "ptxmoe.compare", "languages": dict(zip(self.impls, self.languages, strict=True)),
                "cases": {c.name: dict(c.params) for c in self.cases}, "device_profile": self.device_profile,
                "device_profile_digest": self.device_profile_digest,
                "baseline": self.baseline, "axes": list(self.axes),
                "sample": None if self.sample_waves is None else f"warm waves {self.sample_waves}"}


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
    recorder: Any
    row_settings: Any  # harness.row_run.RowSettings


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
    gpu = not ctx.backend.kind.simulated
    inputs = {k: to_numpy(f"make_inputs for case {case.name!r}: {k!r}", v, gpu) if is_tensor(v) else v
              for k, v in inputs.items()}
    for key, value in inputs.items():
        if not isinstance(key, str) or not (isinstance(value, (np.ndarray, np.generic, int, float))
                                            and not isinstance(value, bool)):
            raise InputError(f"make_inputs for case {case.name!r}: {key!r} = {type(value).__name__}; expected str "
                             f"names and arrays (NumPy, torch, CuPy) or numbers")
    # NOTE: a 0-d array is a scalar argument (passed by value), not a one-element buffer
    inputs = {k: v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for k, v in inputs.items()}
    outputs = ctx.settings.outputs or ()
    bad = [o for o in outputs if not isinstance(inputs.get(o), np.ndarray)]
    if bad:
        raise InputError(f"outputs {bad} for case {case.name!r}: not arrays among the inputs; make_inputs returned "
                         f"{', '.join(inputs)}")
    return inputs


# --------------------------------------------------------------------------------------------------- one row
class UserCodeError(InputError):
    """The caller's own check / min_bytes / flops function misbehaved: the whole compare stops (no implementation's
    row is to blame)."""


def _owner(impl: str, kernel) -> str:
    return f"implementation {impl!r} ({type(kernel).__name__} {kernel.title})"


def _upload(backend, inputs: Mapping[str, Any]) -> dict:
    import numpy as np

    return {k: backend.to_device(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) and v.ndim > 0 else v
            for k, v in inputs.items()}


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
        raise UserCodeError(f"check(outputs, inputs) raised {type(exc).__name__} for implementation {impl!r}: "
                            f"{exc}; a failed check should return False or raise AssertionError") from exc
    if isinstance(verdict, tuple) and len(verdict) == 2:
        ok, message = bool(verdict[0]), str(verdict[1])
    else:
        try:
            ok, message = verdict is None or bool(verdict), ""
        except Exception as exc:  # e.g. an array returned instead of a bool
            raise UserCodeError(f"check(outputs, inputs) returned {type(verdict).__name__} for implementation "
                                f"{impl!r}; expected None, a bool or (ok, message)") from exc
    return {"ok": ok, "message": message or ("ok" if ok else f"{impl}: check returned False"), "errors": {}}


def unwritten_problem(fractions: Mapping[str, float], declared: tuple[str, ...] | None,
                      allow: bool | tuple[str, ...]) -> str | None:
    """Why a row's outputs fail for elements its kernel never stored to, or None. `fractions`: {array: fraction of
    its elements never written}. Declared outputs must be written whole; with no `outputs` declared, every array is
    read back, the ones never touched count as inputs, and a kernel that wrote to none of them at all fails. Arrays
    in `allow` (all with True) may stay partly unwritten."""
    if not fractions or allow is True:
        return None
    allowed = set(allow or ())
    if declared is None:
        judged = {n: f for n, f in fractions.items() if f < 1.0}
        if not judged:
            return (f"wrote nothing: every element of {', '.join(fractions)} was never written (a kernel that stores "
                    f"nothing, or to the wrong place); pass allow_unwritten=True if intended")
    else:
        judged = {n: fractions[n] for n in declared if n in fractions}
    bad = {n: f for n, f in judged.items() if f > 0.0 and n not in allowed}
    if not bad:
        return None
    return ("; ".join(f"output {n}: {100 * f:.3g}% of its elements never written" for n, f in bad.items())
            + " (a grid too small, or a missing store?); pass allow_unwritten=[name, ...] if intended")


def _user_count(fn, what: str, inputs) -> int | None:
    if fn is None:
        return None
    try:
        return int(fn(inputs))
    except Exception as exc:
        raise UserCodeError(f"{what}(inputs) raised {type(exc).__name__}: {exc}; expected an int") from exc


class UserRow:
    """The RowJob (harness.row_run) of one of the user's implementations on one case: the user's kernel, inputs
    (every array copied to the device), check and counts; each launch is named after its implementation."""

    def __init__(self, ctx: _Context, case: Case, impl: str, kernel):
        from harness.results import row_key

        s = ctx.settings
        self.ctx, self.impl, self.kernel_desc = ctx, impl, kernel
        self.kernel: str = s.name
        self.variant: str | None = None
        self.watched: dict = {}
        self.arg_types: str | None = None
        self.unwritten: dict[str, float] | None = None
        self.head = {"key": row_key(s.name, None, impl, case.name, SKEW), "kernel": s.name, "variant": None,
                     "impl": impl, "language": kernel.language, "preset": case.name, "skew": SKEW, "seed": case.seed,
                     "backend": s.backend, "params": dict(case.params)}

    def build(self, backend, inputs: dict):
        """The kernel's launcher for these inputs (KernelSpecError / BuildError name the implementation)."""
        impl, kernel = self.impl, self.kernel_desc
        launcher = _named(impl, kernel, lambda: kernel.prepare(inputs, _owner(impl, kernel), kernel.title))
        self.arg_types = getattr(launcher, "arg_types", None)
        return lambda be, args: _named(impl, kernel, lambda: launcher(be, args))

    def begin(self, backend) -> None:
        """Nothing: a user's backend runs as it was made (its own sampling and sanitizers)."""

    def place(self, backend, inputs: dict) -> tuple[dict, tuple[str, ...]]:
        """Device copies of the inputs; every array read back is watched for the elements no store reaches (sim:
        they start as never written in ptxsim's shadow; gpu: not watched)."""
        from contract.device import DeviceArray

        args = _upload(backend, inputs)
        outputs = self.ctx.settings.outputs
        wanted = outputs if outputs is not None else tuple(k for k, v in args.items() if isinstance(v, DeviceArray))
        self.watched = {n: args[n] for n in wanted} if backend.watch_writes([args[n] for n in wanted]) else {}
        return args, tuple(wanted)

    def check(self, backend, outputs: dict, inputs: dict, records: list) -> dict:
        """The user's check, and (sim) the never-written rule (unwritten_problem), with or without a check; a
        sampled run (sample_waves) writes part of its outputs, so it is neither checked nor failed for them."""
        s = self.ctx.settings
        fractions = {n: backend.unwritten_fraction(a) for n, a in self.watched.items()}
        self.unwritten = {n: f for n, f in fractions.items() if f is not None} if self.watched else None
        if s.sample_waves is not None:
            return {"ok": True, "message": f"not checked: a sampled run (sample_waves={s.sample_waves}) writes part "
                                           f"of its outputs; check at a size that runs whole", "errors": {}}
        judged = _run_check(self.ctx, self.impl, outputs, inputs)
        problem = unwritten_problem(self.unwritten or {}, s.outputs, s.allow_unwritten)
        if problem is not None:
            shown = f"{self.impl}: {problem}"
            if not judged["ok"]:
                shown += f"; and the check failed: {judged['message']}"
            judged = {"ok": False, "message": shown, "errors": {}}
        return judged

    def counts(self, inputs: dict) -> tuple[int | None, int | None]:
        return _user_count(self.ctx.min_bytes, "min_bytes", inputs), _user_count(self.ctx.flops, "flops", inputs)

    def annotate(self, row: dict, backend, inputs: dict, records: list) -> None:
        """The fraction of each read-back array never written (sim; None where stores are not watched); a user's
        kernel has no contract fields (gemm_work, sampling)."""
        row["unwritten"] = self.unwritten
        row["arg_types"] = self.arg_types

    def stages(self, records: list, timing: dict) -> tuple[list[str], dict[str, float]]:
        from harness.row_run import launch_name_stages

        return launch_name_stages(records, timing)


def run_row(ctx: _Context, case: Case, impl: str, kernel, inputs: dict) -> dict:
    """Run, check, analyse and time one implementation on one case (harness.row_run.run_row, the sweep's own
    pipeline); returns its run.json row: an "error" row with the message when the implementation fails to build or
    to run. A misbehaving check / min_bytes / flops function of the caller raises (UserCodeError)."""
    from harness import row_run

    row = row_run.run_row(ctx.backend, UserRow(ctx, case, impl, kernel), inputs, ctx.row_settings, ctx.recorder,
                          ctx.device_spec, fatal=(UserCodeError,))
    return row


# ----------------------------------------------------------------------------------------------------- verdicts
def verdict(name: str, case: str, baseline: dict, candidate: dict, basis: str,
            device_profile: str | None = None) -> dict:
    """The run.json verdict of `candidate` over `baseline` in one case: speedup = baseline time / candidate time
    (> 1: the candidate is faster) with its 95% interval (measured: bootstrap; modelled: the model's prediction
    interval, from `device_profile`'s measured pairs when it has them): the sweep's verdict rule
    (harness.verdicts.timed_verdict)."""
    from harness.results import typed_row
    from harness.verdicts import timed_verdict

    base, cand = baseline["impl"], candidate["impl"]
    out = {"key": f"{name}/{case}/{SKEW}/{cand}-vs-{base}", "kernel": name, "variant": None, "preset": case,
           "skew": SKEW, "basis": basis, "speedup": None, "ci_lo": None, "ci_hi": None, "verdict": None,
           "reason": None, "impl": cand, "baseline": base, "pair": f"{cand}-vs-{base}"}
    bad = [r for r in (baseline, candidate) if r.get("status") != "ok"]
    if bad:
        out["reason"] = "no verdict: " + "; ".join(f"{r['impl']} {r['status']}" + (f" ({r['reason']})" if
                                                                                      r.get("reason") else "")
                                                   for r in bad)
        return out
    judged = timed_verdict(typed_row(baseline), typed_row(candidate), basis, device_profile)
    if isinstance(judged, str):
        out["reason"] = f"no verdict: {judged}"
    else:
        out.update(judged)
    return out


def verdicts_of(name: str, case: str, rows: list[dict], basis: str, baseline: str | None = None,
                device_profile: str | None = None) -> list[dict]:
    """With a `baseline`: every other implementation against it, in order. Without: every pair in order, each later
    implementation against each earlier one."""
    if baseline is not None:
        base = next(r for r in rows if r["impl"] == baseline)
        return [verdict(name, case, base, r, basis, device_profile) for r in rows if r is not base]
    return [verdict(name, case, rows[i], rows[j], basis, device_profile) for i in range(len(rows))
            for j in range(i + 1, len(rows))]


# ------------------------------------------------------------------------------------------------------ compare
def compare(kernels: Mapping[str, Any], make_inputs: Callable, *, check: Callable | None = None,
            outputs=None, name: str = "kernel", cases: Mapping[str, Mapping] | None = None,
            backend: str = "auto", seed: int = 0, static: bool = True, model_device: str = "H200 SXM",
            timing=None, min_bytes: Callable | None = None, flops: Callable | None = None, progress=None,
            allow_unwritten=False, baseline: str | None = None, axes=(), sample_waves: int | None = None,
            device_profile=None):
    """Run each implementation on the same inputs, check it, and time it; judge each pair.

    Args:
        kernels: {implementation name: NumbaKernel | CppKernel | PtxKernel}, in the order rows and pairs are shown.
        make_inputs: `make_inputs(rng, **case_params) -> {argument name: NumPy array or number}` (rng: a seeded
            numpy Generator). Arrays are copied to the device for each implementation (a non-contiguous array, e.g.
            a transposed view or a slice with a step, is copied to a C-contiguous one first: the kernel sees dense
            row-major data, not the view's strides); every array is read back
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
        timing: harness.timing.gpu.GpuTimingSettings for the gpu backend (warm-up, stopping rule, budget); refused
            on backend "sim" (times are modelled), warned about and ignored when "auto" chose sim.
        min_bytes, flops: optional functions of the inputs for achieved GB/s and TFLOP/s.
        progress: a text stream for one line per row, with rows done and the time left (default silent).
        allow_unwritten: on sim every array read back starts as never written and each row records the fraction of
            its elements no store reached (`row.unwritten`); a declared output (or, with no `outputs`, any array the
            kernel wrote to part of) left partly unwritten fails the row, as does a kernel that wrote nothing, with
            or without a check. True allows it everywhere, a list of names for those arrays only.
        baseline: the implementation every other one is judged against (verdicts "<impl> vs <baseline>", and the
            dashboard's headline); default none: every pair, each later implementation against each earlier one.
            Pairs are titled with your implementation names as given.
        sample_waves: sim only, for big shapes: each launch of more than this many waves simulates its first wave
            and sample_waves - 1 more spread over the rest (harness.plain_sampling.WarmWaves: the L2 carries what
            earlier waves loaded, so DRAM traffic keeps its reuse), counters and time extrapolated. A sampled run
            writes part of its outputs: the check is skipped (check at a size that runs whole) and unwritten
            elements do not fail the row. None: every CTA.
        axes: names of case parameters that are size axes (ptxmoe.sweep sets them): each becomes a DataFrame column
            and the dashboard plots time and throughput against the first.
        device_profile: sim only: the path of a `ptxmoe calibrate` profile of the modelled device: the timing model
            uses its constants and under-load clock, and, when it carries at least 2 measured paired variants, the
            modelled verdicts' 95% intervals are fitted on those pairs (the model's ratios on that GPU against the
            measured ones; about 20 s once) instead of the published paired rows. Each verdict's `interval_basis`
            says which; the path and the profile's digest are recorded in the settings.
    Before each row, its memory is estimated (ptxmoe.footprint: the device copies, on sim simulated in this
    process, and the outputs read back); a row that will not fit in the memory available is skipped with the reason
    and the estimate (row.memory), never run into the OOM killer.
    Returns:
        A ptxmoe.Result.
        An implementation that cannot be built or run (KernelSpecError, BuildError with NVRTC's log, KernelError)
        does not raise: its row has status "error" and the message as its reason; the others still run.
    Raises:
        InputError: bad arguments or inputs; UserCodeError (an InputError): `check`, `min_bytes` or `flops` crashed
            or returned the wrong type.
        UnknownNameError: an unknown backend; PtxmoeError: backend "gpu" with no GPU visible.
    """
    from harness.backends.base import Backend
    from harness.backends.select import select_backend
    from harness.nvtx_ranges import RangeRecorder
    from harness.results import utc_now
    from harness.row_run import RowSettings
    from harness.throughput import device_spec_for
    from harness.timing.gpu import GpuTimingSettings
    from harness.timing.row_timing import DEFAULT_L2_BYTES, RowTiming
    from ptxmoe.result import Result

    _check_kernels(kernels)
    if not _name_ok(name):
        raise InputError(f"name = {name!r}: expected a non-empty str without '/' or edge spaces")
    if not callable(make_inputs):
        raise InputError(f"make_inputs = {make_inputs!r}: expected a function (rng, **case_params) -> dict")
    if check is not None and not callable(check):
        raise InputError(f"check = {check!r}: expected a function (outputs, inputs) or None")
    if baseline is not None and baseline not in kernels:
        raise InputError(f"baseline = {baseline!r}: not one of the implementations ({', '.join(map(str, kernels))})")
    started = utc_now()
    be = backend if isinstance(backend, Backend) else select_backend(backend)
    if timing is not None and be.kind.simulated:
        message = (f"timing = {timing!r} is for the gpu backend (measured times); backend {be.name!r} models its times "
                   f"with ptxsim, so GPU timing settings would change nothing")
        if backend == "auto":  # the same script on a machine without a GPU: said, not refused
            import warnings

            warnings.warn(message + "; they are ignored", stacklevel=2)
        else:
            raise InputError(message + "; drop timing= or use backend='gpu'")
    settings = Settings(name=name, backend=be.name, impls=tuple(kernels),
                        languages=tuple(k.language for k in kernels.values()), cases=_cases(name, cases, seed),
                        seed=int(seed), static=bool(static), model_device=model_device,
                        timing=None if be.kind.simulated else (timing or GpuTimingSettings()),
                        outputs=None if outputs is None else tuple(outputs),
                        allow_unwritten=_allowed_unwritten(allow_unwritten), baseline=baseline,
                        axes=tuple(axes), sample_waves=_sample_waves(sample_waves, be),
                        **_device_profile(device_profile, be, model_device))
    gpu_name = None if be.kind.simulated else _gpu_name()
    spec = device_spec_for(be.name, gpu_name, model_device)
    row_timing = RowTiming(model_device=model_device, device_profile=settings.device_profile,
                           gpu=settings.timing or GpuTimingSettings(),
                           l2_fallback_bytes=getattr(spec, "l2_bytes", None) or DEFAULT_L2_BYTES)
    ctx = _Context(settings, be, make_inputs, check, min_bytes, flops, spec, progress, RangeRecorder(),
                   RowSettings(static=settings.static, timing=row_timing))
    basis = be.kind.basis
    if settings.sample_waves is not None:
        from harness.plain_sampling import WarmWaves

        kept_sample, be.sample = be.sample, WarmWaves(settings.sample_waves)
    try:
        rows, verdicts = _run_cases(ctx, kernels, name, basis)
    finally:
        if settings.sample_waves is not None:
            be.sample = kept_sample
    return Result(_document(settings, rows, verdicts, ctx.recorder.drain(), started))


def _run_cases(ctx: _Context, kernels: Mapping[str, Any], name: str, basis: str) -> tuple[list, list]:
    settings, be = ctx.settings, ctx.backend
    rows, verdicts = [], []
    clock = TimeLeft([c.params for c in settings.cases], len(kernels))
    for index, case in enumerate(settings.cases):
        inputs = _draw_inputs(ctx, case)
        need = case_estimate(name, case.name, inputs, settings.outputs, be.kind.simulated)
        case_rows = []
        for impl, kernel in kernels.items():
            row = _fitting_row(ctx, case, impl, kernel, inputs, need)
            case_rows.append(row)
            clock.row_done(index, float(row.get("elapsed_s") or 0.0))
            _say(ctx, row, clock.line(index, len(case_rows)))
        rows += case_rows
        verdicts += verdicts_of(name, case.name, case_rows, basis, settings.baseline, settings.device_profile)
    return rows, verdicts


def _device_profile(value, backend, model_device: str) -> dict:
    """{device_profile, device_profile_digest} of compare(device_profile=...): the file checked now (InputError
    naming the file and the bad field), made absolute; refused off the simulator and for another device."""
    from harness.timing.sim import checked_device_profile

    if value is None:
        return {}
    if not backend.kind.simulated:
        raise InputError(f"device_profile = {value!r}: a device profile tunes the sim backend's timing model; backend "
                         f"{backend.name!r} measures its times")
    return checked_device_profile(value, model_device)


def _sample_waves(value, backend) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InputError(f"sample_waves = {value!r}: expected an int >= 2 (the first wave and at least one more)")
    if not backend.kind.simulated:
        raise InputError(f"sample_waves = {value}: sampling is for the simulator; backend {backend.name!r} runs "
                         f"every CTA")
    return value


def _allowed_unwritten(value) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise InputError(f"allow_unwritten = {value!r}: expected True, False or a list of array names")
    return tuple(value)


def _gpu_name() -> str | None:
    from harness.toolchain import gpu_visible

    ok, gpu = gpu_visible()
    return gpu if ok else None


def _fitting_row(ctx: _Context, case: Case, impl: str, kernel, inputs: dict, need) -> dict:
    """run_row, unless the memory estimate made before it (ptxmoe.footprint) says it will not fit: then a skipped
    row with the reason. Either way the row records the estimate beside the peak it reached."""
    from harness.row_memory import available_bytes, memory_record, peak_rss_bytes, reset_peak_rss, rss_bytes
    from ptxmoe.footprint import device_need, device_skip_reason, skip_reason

    reason = skip_reason(need, available_bytes(), ctx.backend.kind.simulated)
    if reason is None and not ctx.backend.kind.simulated:
        reason = device_skip_reason(device_need(inputs), ctx.backend.device_free_bytes())
    if reason is not None:
        row = {**UserRow(ctx, case, impl, kernel).head, "status": "skipped", "reason": reason}
        row["memory"] = memory_record(need, None, False)
        return row
    start, windowed = rss_bytes(), reset_peak_rss()
    row = run_row(ctx, case, impl, kernel, inputs)
    row["memory"] = memory_record(need, peak_rss_bytes(), windowed, start)
    return row


def _say(ctx: _Context, row: dict, where: str = "") -> None:
    from harness.results import typed_row
    from harness.run_records import ModelledTiming

    if ctx.progress is None:
        return
    typed = typed_row(row)
    if typed.timing is not None and typed.time_us is not None:
        shown = f"{typed.time_us:.3f} us {typed.timing.basis}"
    else:
        error = typed.timing.error if isinstance(typed.timing, ModelledTiming) else None
        shown = f"no time ({error or typed.reason})"
    print(f"{row['key']}: {row['status']}, {shown}" + (f" {where}" if where else ""), file=ctx.progress,
          flush=True)


def _document(settings: Settings, rows: list[dict], verdicts: list[dict], ranges: list[dict], started: str) -> dict:
    """A complete run.json document (docs/run-json.md) of one compare call."""
    from harness.results import SCHEMA_VERSION, collect_environment, new_run_id, utc_now

    now = utc_now()
    return {"schema_version": SCHEMA_VERSION, "run_id": new_run_id(settings.backend), "status": "complete",
            "created_utc": started, "updated_utc": now, "finished_utc": now, "command": list(sys.argv),
            "settings": settings.as_dict(), "environment": collect_environment(settings.backend,
                                                                               settings.model_device),
            "rows": rows, "verdicts": verdicts, "nvtx_ranges": ranges, "missing": [], "resumed_utc": []}
