"""`ptxmoe compare`: run every kernel path (numba, cpp, ptx), check, time, write profiles/<run-id>/run.json."""
from __future__ import annotations

import argparse
import importlib
import math
import secrets
import sys
from pathlib import Path

from harness.backends.kinds import backend_kind
from harness.errors import InputError, PtxmoeError

DEFAULT_OUT = Path("profiles")


def add_compare_options(parser) -> None:
    """The options `compare` and `profile` share."""
    parser.add_argument("--backend", default="auto", help="auto (gpu when one is visible, else sim), sim or gpu")
    parser.add_argument("--preset", action="append", metavar="NAME",
                        help="preset (repeatable or comma-separated); default tiny on sim, dsv3-decode on gpu")
    parser.add_argument("--shape", action="append", metavar="GxMxNxK",
                        help="a GEMM shape for grouped_gemm and grouped_gemm_fp8 (repeatable or comma-separated): G "
                             "groups of M rows times N x K weights, DeepGEMM's contiguous layout; masked-GxMxNxK for "
                             "its masked layout. --preset deepgemm-table runs DeepGEMM's published MoE shapes")
    parser.add_argument("--skew", action="append", metavar="NAME",
                        help="routing skew: balanced, imbalanced, extreme (repeatable or comma-separated; "
                             "default balanced)")
    parser.add_argument("--kernels", metavar="LIST", help="comma-separated kernels (default: all and the layer)")
    parser.add_argument("--impls", metavar="LIST",
                        help="comma-separated implementations: numba, cpp, cutlass, triton, ptx (default: all; a "
                             "kernel one of them lacks gets a 'not implemented in <impl>' row)")
    parser.add_argument("--out", metavar="DIR", default=str(DEFAULT_OUT), help="profiles folder (default profiles/)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run, skipping rows done")
    parser.add_argument("--seed", type=int, help="base seed of the input generators (default: fresh, printed)")
    parser.add_argument("--no-static", action="store_true", help="skip ptxas/nvdisasm static analysis")
    parser.add_argument("--no-dashboard", action="store_true", help="do not build the dashboard at the end")
    parser.add_argument("--budget", type=float, default=2.0, metavar="S",
                        help="gpu: time budget per row for sampling, seconds (default 2)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="sim: run rows in N Dask worker processes on this machine (0: one per core; default: "
                             "one row at a time in this process)")
    parser.add_argument("--sim-workers", type=int, metavar="N",
                        help="as --workers where the backend is the simulator; ignored on a GPU, whose rows are "
                             "timed one at a time (make demo passes 2)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="sim: run rows on a running Dask cluster (start `dask scheduler`, then `dask worker "
                             "ADDRESS` on each machine)")
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="memory the run may take, e.g. 6GB or 8GiB (default: what the machine has free when "
                             "the run starts). Each row's memory is estimated before it runs; a row that does not "
                             "fit is skipped with the reason, and --workers starts a row only when the estimates of "
                             "the rows running with it fit what the limit leaves after this process (which hosts "
                             "Dask's scheduler and nannies)")
    parser.add_argument("--sim-memory-limit", metavar="SIZE",
                        help="as --memory-limit where the backend is the simulator; ignored on a GPU, whose rows "
                             "hold their inputs whole on the host (make demo passes 3.5GB: its 4 GB goal for the "
                             "whole process tree, less room for the estimates' error)")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare", help="run, verify and time the paths (Numba CUDA, CUDA C++, hand PTX) on sim or gpu",
        description="For each kernel, implementation (numba, cpp, ptx), preset and skew: fresh seeded inputs, "
                    "poisoned outputs, run, check against the reference, time (gpu: CUDA events, L2 flushed; sim: the "
                    "ptxsim timing model, labelled modelled), static analysis, and a run.json under "
                    "profiles/<run-id>/ with a verdict per pair (PTX vs CUDA C++ first, then each against Numba).")
    add_compare_options(parser)
    parser.add_argument("--run-id", help=argparse.SUPPRESS)  # set by `ptxmoe profile` to know the folder
    parser.add_argument("--sanitize", metavar="TOOLS",
                        help="sim: run every launch under ptxsim's sanitizers (all, or comma-separated memcheck, "
                             "racecheck, initcheck, synccheck, nc); a row with findings fails and names them. On gpu "
                             "use compute-sanitizer instead")
    parser.add_argument("--sample", metavar="auto|off|N[@C]",
                        help="sim: big GEMM launches (DeepSeek-V3 shapes) simulate N waves, each the routing blocks "
                             "of one expert (a persistent GEMM: the same blocks' work items), and the middle of the "
                             "blocks past total_padded, each weighted by the part of the grid it stands for, and "
                             "extrapolate the counters; their check covers exactly what ran. auto (the default): N = 2 "
                             "for launches over 4096 CTAs, so tiny and small run every CTA; off: every CTA of every "
                             "launch (hours at dsv3); auto@C or N@C: launches up to C CTAs run whole instead of 4096")
    parser.add_argument("--no-model-estimate", action="store_true",
                        help="gpu: do not record the timing model's estimate next to each measurement (it costs a "
                             "sampled ptxsim run per row)")
    parser.add_argument("--model-device", metavar="NAME",
                        help="sim: the device the timing model prices the rows on: H200 SXM (the default), H100 SXM "
                             "or H800 SXM (DeepGEMM's published figures are H800's); any spelling get_device accepts")
    parser.add_argument("--device-profile", metavar="FILE",
                        help="sim/model estimates: the timing model's constants from this `ptxmoe calibrate` profile")
    parser.add_argument("--timing-model", choices=("v1", "v2"),
                        help="sim: the timing model version: v1, the analytic bounds (default), or v2, the "
                             "cycle-approximate per-SM schedule (opt-in; docs/model-validation.md compares them)")
    parser.add_argument("--quick-timing", action="store_true",
                        help="one warm-up and one timed sample per row (what `ptxmoe profile` runs under a profiler)")
    parser.set_defaults(func=run)


def device_profile_option(path: str | None) -> str | None:
    """--device-profile checked now (a bad file is a usage error, before the run folder exists) and made absolute:
    the value the timing model gets (CompareSettings.device_profile, recorded in run.json)."""
    from harness.errors import InputError
    from ptxsim.model.errors import ModelError
    from ptxsim.model.profile import load_profile

    if not path:
        return None
    try:
        load_profile(path)
    except ModelError as exc:
        raise InputError(str(exc)) from None
    return str(Path(path).resolve())


def _split(values) -> list[str]:
    """Names from repeatable, comma-separated options, each once, in the order first given."""
    out: list[str] = []
    for value in values or ():
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return list(dict.fromkeys(out))


def check_budget(budget: float) -> float:
    """--budget as seconds > 0; InputError otherwise."""
    if not math.isfinite(budget) or budget <= 0:
        raise InputError(f"--budget {budget:g}: expected a time budget per row in seconds > 0 (default 2)")
    return float(budget)


def check_out_dir(out) -> Path:
    """The --out profiles folder, created if absent (its parent must exist); InputError naming what is wrong.

    A typo in a deep path should not silently grow a tree of folders, so only the last level is created.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file; expected a folder to hold run folders (default profiles/)")
    if not out.exists():
        parent = out.parent
        if not parent.is_dir():
            what = "is a file" if parent.exists() else "does not exist"
            raise InputError(f"--out {out}: its parent folder {parent} {what}; expected an existing folder (create "
                             f"it first)")
        try:
            out.mkdir()
        except OSError as exc:
            raise InputError(f"--out {out}: cannot create the folder: {exc.strerror or exc}") from None
    probe = out / f".ptxmoe-write-test-{secrets.token_hex(4)}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--out {out}: folder is not writable: {exc.strerror or exc}") from None
    return out


def build_settings(args, backend_name: str):
    """CompareSettings from parsed options (names validated; UnknownNameError lists the valid ones)."""
    from dataclasses import replace

    from contract.kernels import KERNELS, get_kernel
    from contract.presets import GEMM_SHAPE_KERNELS, check_skew, expand_presets, get_preset
    from harness.implementations import parse_impls
    from harness.runner import CompareSettings
    from harness.timing.gpu import GpuTimingSettings

    shapes = [_shape_name(s) for s in _split(getattr(args, "shape", None))]
    presets = expand_presets(_split(args.preset) + shapes) or [backend_kind(backend_name).default_preset]
    skews = _split(args.skew) or ["balanced"]
    for p in presets:
        get_preset(p)
    gemm_only = any(get_preset(p).is_gemm_shape for p in presets)
    kernels = _split([args.kernels]) if args.kernels else list(GEMM_SHAPE_KERNELS if gemm_only else KERNELS)
    others = sorted(set(kernels) - set(GEMM_SHAPE_KERNELS)) if gemm_only else []
    if others:
        raise InputError(f"--kernels {','.join(kernels)} with GEMM shapes: a shape (--shape, deepgemm-table) runs "
                         f"only {', '.join(GEMM_SHAPE_KERNELS)}; drop {', '.join(others)} or run the shapes in a "
                         f"separate compare")
    for s in skews:
        check_skew(s)
    for k in kernels:
        get_kernel(k)
    impls = parse_impls(getattr(args, "impls", None))
    if not getattr(args, "impls", None):
        impls = default_impls(impls, kernels)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    timing = replace(GpuTimingSettings(), budget_s=check_budget(args.budget))
    if getattr(args, "quick_timing", False):
        # NOTE: no stream blocker under a profiler: ncu serialises each launch, so the blocker would wait out its
        # timeout
        timing = replace(timing, warmup_runs=1, warmup_s=0.0, min_samples=1, max_samples=1, host_samples=0,
                         block_stream=False)
    sanitize = sanitize_option(getattr(args, "sanitize", None), backend_name)
    sample = sample_option(getattr(args, "sample", None), backend_name)
    limit, option = getattr(args, "memory_limit", None), "--memory-limit"
    if limit is None and backend_kind(backend_name).simulated:
        limit, option = getattr(args, "sim_memory_limit", None), "--sim-memory-limit"
    memory_limit = None if limit is None else parse_memory_size(limit, option)
    from harness.timing.sim import profile_digest_of

    profile = device_profile_option(getattr(args, "device_profile", None))
    extra = {}
    if getattr(args, "model_device", None):
        extra["model_device"] = model_device_option(args.model_device)
    return CompareSettings(backend=backend_name, presets=tuple(presets), skews=tuple(skews), kernels=tuple(kernels),
                           seed=int(seed), impls=impls, static=not args.no_static, timing=timing, sanitize=sanitize,
                           model_estimate=not getattr(args, "no_model_estimate", False), sample=sample,
                           memory_limit=memory_limit,
                           device_profile=profile, device_profile_digest=profile_digest_of(profile),
                           timing_model=getattr(args, "timing_model", None) or "v1", **extra)


def default_impls(impls: tuple[str, ...], kernels) -> tuple[str, ...]:
    """Without --impls: the implementations that have at least one of the kernels (or whose package does not import,
    so its rows say why). Triton implements grouped_gemm_fp8 alone: a gate run gets no row of it, a full run gets its
    'not implemented in triton' rows; --impls names an implementation explicitly either way."""
    from harness.implementations import implementation_table

    keep = []
    for impl in impls:
        table, problem = implementation_table(impl)
        if problem or set(table) & set(kernels):
            keep.append(impl)
    return tuple(keep) or impls


def model_device_option(name: str) -> str:
    """--model-device as a canonical device name (ptxsim.model.devices); InputError listing the modelled ones."""
    from ptxsim.model.devices import get_device
    from ptxsim.model.errors import UnknownDeviceError

    try:
        return get_device(name).name
    except UnknownDeviceError as exc:
        raise InputError(f"--model-device {name!r}: {exc}") from None


def _shape_name(text: str) -> str:
    """The preset name of one --shape value; InputError naming the value and the forms expected."""
    from contract.presets import parse_gemm_shape

    shape = parse_gemm_shape(text)
    if shape is None:
        raise InputError(f"--shape {text!r}: expected GxMxNxK (four positive integers: G groups of M rows, N output "
                         f"columns, reduction depth K), optionally prefixed masked- or contiguous-")
    return shape.name


def parse_memory_size(text: str, option: str) -> int:
    """A size in bytes from "6GB" (10^9), "6GiB" or "6G" (2^30), "512MB", "512MiB", "512M", or a plain number of
    bytes; InputError naming the value and the forms expected."""
    import re

    units = {"": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 10**3, "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
             "g": 1 << 30, "gib": 1 << 30, "gb": 10**9, "t": 1 << 40, "tib": 1 << 40, "tb": 10**12}
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in units or float(match.group(1)) <= 0:
        raise InputError(f"{option} {text!r}: expected a positive size such as 6GB (10^9 bytes), 6GiB or 6G (2^30), "
                         f"512MB, 512MiB, or a number of bytes")
    return int(float(match.group(1)) * units[unit])


def sample_option(value, backend_name: str) -> str:
    """--sample checked (harness.sampling.parse_sample) and normalised: "auto", "off" or "N"; InputError on gpu."""
    from harness.sampling import parse_sample

    if value is None:
        return "auto"
    if not backend_kind(backend_name).simulated:
        raise InputError(f"--sample {value}: sampling is a simulator option; on gpu every CTA runs (drop --sample, "
                         f"or use --backend sim)")
    return parse_sample(value).text


def sanitize_option(value, backend_name: str) -> tuple[str, ...]:
    """--sanitize as ptxsim tool names; PtxmoeError (exit 2) on gpu, naming compute-sanitizer and its command."""
    from harness.backends.select import sanitize_on_gpu_message
    from harness.backends.sim import sanitize_tools

    if value is None:
        return ()
    if not backend_kind(backend_name).simulated:
        raise PtxmoeError(sanitize_on_gpu_message())
    tools = sanitize_tools(value)
    if not tools:
        raise PtxmoeError(f"--sanitize {value!r}: expected all or comma-separated names of memcheck, racecheck, "
                          f"initcheck, synccheck, nc")
    return tools


def settings_from_doc(doc: dict, where="run.json"):
    """CompareSettings recorded in a run document; ResultsError naming the field when one is missing or wrong."""
    from harness.results import ResultsError
    from harness.runner import CompareSettings
    from harness.timing.gpu import GpuTimingSettings

    s = doc["settings"]
    try:
        return CompareSettings(backend=s["backend"], presets=tuple(s["presets"]), skews=tuple(s["skews"]),
                               kernels=tuple(s["kernels"]), seed=int(s["seed"]), impls=tuple(s["impls"]),
                               static=bool(s["static"]), timing=GpuTimingSettings(**s["timing"]),
                               model_device=s.get("model_device", "H200 SXM"), sanitize=tuple(s.get("sanitize", ())),
                               model_estimate=bool(s.get("model_estimate", True)),
                               sample=str(s.get("sample", "off")),  # NOTE: runs before --sample never sampled
                               memory_limit=None if s.get("memory_limit") is None else int(s["memory_limit"]),
                               device_profile=s.get("device_profile"),
                               device_profile_digest=s.get("device_profile_digest"),
                               timing_model=str(s.get("timing_model", "v1")))
    except KeyError as exc:
        raise ResultsError(f"{where}: settings has no {exc.args[0]!r}; cannot resume a run whose settings are not "
                           f"recorded") from None
    except (TypeError, ValueError) as exc:
        raise ResultsError(f"{where}: settings cannot be read back ({exc})") from None


# options that choose what a run covers: (option, attribute of args, settings field); --resume takes them from
# run.json, so a value given next to --resume must agree with it
RESUME_CHECKED = (("--preset", "preset", "presets"), ("--skew", "skew", "skews"), ("--kernels", "kernels", "kernels"))


def check_resume_options(args, settings, run_dir) -> None:
    """InputError when --preset/--skew/--kernels/--seed/--device-profile/--backend given with --resume disagree with
    the run, or when the run's device profile file no longer has the content it had (its recorded digest)."""
    wrong = []
    for option, attr, field_name in RESUME_CHECKED:
        value = getattr(args, attr, None)
        if value is None:
            continue
        given = _split(value if isinstance(value, list) else [value])
        recorded = list(getattr(settings, field_name))
        if set(given) != set(recorded):
            wrong.append(f"{option} {','.join(given)} (the run has {','.join(recorded)})")
    if getattr(args, "seed", None) is not None and args.seed != settings.seed:
        wrong.append(f"--seed {args.seed} (the run has {settings.seed})")
    profile = device_profile_option(getattr(args, "device_profile", None))
    if profile is not None and profile != settings.device_profile:
        wrong.append(f"--device-profile {args.device_profile} (the run has {settings.device_profile or 'none'})")
    elif settings.device_profile and settings.device_profile_digest:
        now = recorded_profile_digest(settings.device_profile)
        if now != settings.device_profile_digest:
            wrong.append(f"the device profile {settings.device_profile} is not the one the run started with (sha256 "
                         f"{settings.device_profile_digest} recorded, {now} now): its rows and intervals would mix "
                         f"two profiles")
    model = getattr(args, "timing_model", None)
    if model is not None and model != settings.timing_model:
        wrong.append(f"--timing-model {model} (the run has {settings.timing_model})")
    backend = getattr(args, "backend", "auto")
    if backend not in (None, "auto") and backend != settings.backend:
        wrong.append(f"--backend {backend} (the run has {settings.backend})")
    if wrong:
        raise InputError(f"--resume {run_dir}: {'; '.join(wrong)}; a resumed run keeps the settings in its run.json: "
                         f"drop these options, or start a new run without --resume")


def recorded_profile_digest(path: str) -> str:
    """The digest of the profile file a run recorded, now; InputError naming the file when it can no longer be
    read (a resumed run's rows must use the same profile)."""
    from harness.timing.sim import profile_digest_of
    from ptxsim.model.errors import ModelError

    try:
        return str(profile_digest_of(path))
    except ModelError as exc:
        raise InputError(f"the run's device profile: {exc}; a resumed run needs the profile it started with") from None


def _select(select_backend, settings):
    """The backend of `settings` (with its sanitizers when --sanitize asked for them)."""
    if settings.sanitize:
        return select_backend(settings.backend, sanitize=settings.sanitize)
    return select_backend(settings.backend)


def open_run(args, lock=None):
    """(RunFile, CompareSettings, backend) for a new run or a resumed one.

    `lock` (a list) receives the RunLock held on the run folder; the caller releases it when the run ends.
    """
    from harness.backends.select import resolve_backend_name, select_backend
    from harness.results import RunFile, collect_environment, new_run_id, utc_now
    from harness.runlock import RunLock

    lock = lock if lock is not None else []
    if args.resume:
        RunFile.load(args.resume)  # a clear error for a folder that is no run before anything is created in it
        lock.append(RunLock(args.resume).acquire())
        run_file = RunFile.load(args.resume)  # read again under the lock: the last holder may have written since
        settings = settings_from_doc(run_file.doc, run_file.path)
        check_resume_options(args, settings, run_file.run_dir)
        backend = _select(select_backend, settings)
        run_file.doc["status"] = "running"
        run_file.doc.setdefault("resumed_utc", []).append(utc_now())
        run_file.save()
        done = sum(1 for r in run_file.doc["rows"] if run_file.is_done(r["key"]))
        print(f"ptxmoe compare: resuming {run_file.run_dir} ({done} rows done; settings from its run.json)",
              file=sys.stderr)
        return run_file, settings, backend
    backend_name = resolve_backend_name(args.backend)
    settings = build_settings(args, backend_name)  # names and numbers first: a refused option creates nothing
    from harness.parallel import parallel_option, workers_for

    parallel_option(workers_for(getattr(args, "workers", None), getattr(args, "sim_workers", None), backend_name),
                    getattr(args, "scheduler", None), backend_name)
    out = check_out_dir(args.out)
    backend = _select(select_backend, settings)
    env = collect_environment(backend_name, settings.model_device)
    run_id = getattr(args, "run_id", None) or new_run_id(backend_name)
    run_file = RunFile.create(out, run_id, settings.as_dict(), env)
    lock.append(RunLock(run_file.run_dir).acquire())
    return run_file, settings, backend


def finish(run_file, summary: dict, interrupted=None, dashboard: bool = True) -> int:
    """Close the run, build the dashboard if that package exists, print where things are; the exit code.

    `interrupted`: the KeyboardInterrupt (Ctrl-C, or SIGTERM as harness.interrupts.Terminated) that stopped the run,
    or True; the run is then saved as "interrupted" and the exit code is 128 + the signal (130, 143).
    """
    from harness.interrupts import exit_code, signal_name

    path = run_file.finish("interrupted" if interrupted else "complete")
    if interrupted:
        exc = interrupted if isinstance(interrupted, KeyboardInterrupt) else KeyboardInterrupt()
        print(f"ptxmoe compare: interrupted ({signal_name(exc)}); resume with: ptxmoe compare --resume "
              f"{run_file.run_dir}", file=sys.stderr)
        return exit_code(exc)
    from harness.answer import answer_rows, answer_text

    answer = answer_text(answer_rows(run_file.sweep))  # the answer first: PTX vs the best C++ present, per cell
    if answer:
        print(answer)
    module = None
    if dashboard:
        try:
            module = importlib.import_module("harness.dashboard")
        except ModuleNotFoundError as exc:
            if exc.name and not "harness.dashboard".startswith(exc.name):
                raise
    dashboard_failed = False
    if not dashboard:
        print(f"run.json: {path} (dashboard not built: --no-dashboard)")
    elif module is not None and hasattr(module, "build"):
        try:
            print(f"dashboard: {module.build(run_file.run_dir)}")
        except Exception as exc:  # noqa: BLE001 - the run itself is saved; say what broke and fail the exit code
            dashboard_failed = True
            print(f"ptxmoe compare: the dashboard failed to build ({type(exc).__name__}: {exc}); run.json is at "
                  f"{path}", file=sys.stderr)
    else:
        print(f"run.json: {path} (the dashboard is not built yet: harness.dashboard does not exist)")
    from harness.implementations import Pair

    for v in run_file.sweep.verdicts:  # NOTE: Pair from impl/baseline: rung verdicts ("ptx.r1-vs-cpp") are not PAIRS
        if v.verdict and v.impl and v.baseline:
            kind = f"; {v.confidence:.0%} {v.interval}" if v.confidence and v.interval else ""
            version = f" {v.model_version}" if v.model_version else ""
            print(f"  {v.key}: {Pair(v.impl, v.baseline).title} {v.speedup:.2f}x [{v.ci_lo:.2f}, {v.ci_hi:.2f}] "
                  f"{v.verdict} ({v.basis}{version}{kind})")
    if summary["missing"]:
        print(f"missing ({len(summary['missing'])} rows not run because an implementation lacks the kernel):",
              file=sys.stderr)
        for line in summary["missing"]:
            print(f"  {line}", file=sys.stderr)
    if summary.get("too_big"):
        print(f"skipped ({len(summary['too_big'])} rows would not fit in this machine's memory or could not be "
              f"simulated in reasonable time, each says why; --resume runs them again):", file=sys.stderr)
        for line in summary["too_big"]:
            print(f"  {line}", file=sys.stderr)
    if summary["failed"]:
        print(f"FAILED ({len(summary['failed'])} rows):", file=sys.stderr)
        for line in summary["failed"]:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 1 if dashboard_failed else 0


def run(args) -> int:
    from harness.interrupts import sigterm_as_interrupt

    locks: list = []
    try:
        with sigterm_as_interrupt():  # `timeout` and CI send SIGTERM: save the run as interrupted, like Ctrl-C
            run_file, settings, backend = open_run(args, locks)
            return _run_opened(args, run_file, settings, backend)
    finally:
        for held in locks:
            held.release()


def _run_opened(args, run_file, settings, backend) -> int:
    from harness.runner import run_sweep

    print(f"ptxmoe compare: backend {settings.backend}, presets {','.join(settings.presets)}, skews "
          f"{','.join(settings.skews)}, seed {settings.seed} (reproduce with --seed {settings.seed}); "
          f"run folder {run_file.run_dir}", file=sys.stderr)
    from harness.parallel import parallel_option, workers_for

    summary = {"failed": [], "missing": [], "ran": 0}
    try:
        workers = workers_for(getattr(args, "workers", None), getattr(args, "sim_workers", None), settings.backend)
        parallel = parallel_option(workers, getattr(args, "scheduler", None), settings.backend)
        summary = run_sweep(backend, settings, run_file, parallel=parallel)
    except KeyboardInterrupt as exc:
        return finish(run_file, summary, interrupted=exc)
    except PtxmoeError:
        run_file.finish("interrupted")
        raise
    return finish(run_file, summary, dashboard=not getattr(args, "no_dashboard", False))
