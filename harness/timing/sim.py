"""Times on the sim backend: the ptxsim timing model's estimate per launch ("modelled"), plus simulator wall time.

For each launch: occupancy from the entry's ptxas resources and the launch shape, then
`ptxsim.model.estimate(stats.metrics, device_spec, occupancy)`. A launch's `modelled_s` is its kernel time (the
model's launch gap apart, in `launch_s`: verdicts are on kernel time, the launch cost is shown beside it for fusion
decisions), with its 95% prediction interval [t exp(-b - h), t exp(-b + h)]: b and h from the model version's
predicted ABSOLUTE validation rows (ptxsim.model.interval_table.time_interval, committed in interval_table.json by
benchmarks/model_validation.py). The row's modelled time, launch time and interval are sums over its launches (one
multiplicative interval, so the row's is that of its total); per-stage times group launches by name. Everything is
labelled "modelled": it is not a measurement.

A device profile from `ptxmoe calibrate` (`--device-profile FILE`, passed down as a value: RowTiming.device_profile,
recorded in run.json's settings) replaces the model's constants with ones fitted on that GPU, and its measured
under-load clock (when it has one) the documented default clock of every bound (profile_spec).

The model version is v1 (ptxsim.model.timing.estimate, the analytic bounds) unless `--timing-model v2` selects
the cycle-approximate per-SM schedule (ptxsim.model.cycle.estimate_v2, issue 29): opt-in because on the validation
it improves the predicted paired rows but not the predicted absolute ones (docs/model-validation.md, "Model v2").
Each launch records `model_version`; its interval comes from that version's absolute rows.
"""
from __future__ import annotations

from dataclasses import asdict, is_dataclass

MODEL_DEVICE = "H200 SXM"
MODEL_VERSIONS = ("v1", "v2")  # v1: analytic bounds; v2: cycle-approximate per-SM schedule (opt-in)


def check_model_version(version: str) -> str:
    """`version` if it names a timing model version, else ValueError naming it and the versions there are."""
    if version not in MODEL_VERSIONS:
        raise ValueError(f"timing model {version!r}; expected one of {', '.join(MODEL_VERSIONS)}")
    return version


def _profile(device: str, path: str):
    from ptxsim.model.profile import ProfileError, load_profile

    profile = load_profile(path)
    if profile.device != device:
        raise ProfileError(f"device profile {path} was calibrated on {profile.device}, but the model runs as {device}")
    return profile


def profile_constants(device: str, path: str | None) -> dict | None:
    """The constants of the device profile file `path` (None: none, the model's own); a profile calibrated on
    another device is refused (ProfileError naming both)."""
    return dict(_profile(device, path).constants) if path else None


def profile_digest_of(path: str | None) -> str | None:
    """The sha256 (12 hex digits) of the content of the device profile file `path` (None: none): what run.json
    records beside the path, so --resume refuses a profile that changed (ProfileError when it cannot be read)."""
    from ptxsim.model.profile import load_profile
    from ptxsim.model.profile_intervals import profile_digest

    return profile_digest(load_profile(path)) if path else None


def checked_device_profile(path: str, model_device: str) -> dict:
    """{device_profile, device_profile_digest} for a run's settings: the profile file `path` read and checked now
    (InputError naming the file and the bad field), made absolute; refused when it was calibrated on another device
    than `model_device`. ptxmoe.compare's device_profile= goes through here, so the API imports no ptxsim."""
    from pathlib import Path

    from harness.errors import InputError
    from ptxsim.model.devices import get_device
    from ptxsim.model.errors import ModelError
    from ptxsim.model.profile import load_profile
    from ptxsim.model.profile_intervals import profile_digest

    try:
        profile = load_profile(path)
        device = get_device(model_device).name
    except ModelError as exc:
        raise InputError(f"device_profile: {exc}") from None
    if profile.device != device:
        raise InputError(f"device_profile {path}: calibrated on {profile.device}, but model_device is {device}")
    return {"device_profile": str(Path(path).resolve()), "device_profile_digest": profile_digest(profile)}


def profile_spec(device: str, path: str | None):
    """The DeviceSpec the model runs with: `device`, at the under-load clock the profile `path` measured when it has
    one (every bound uses it), else at the documented default (devices.py [FM])."""
    from ptxsim.model.devices import get_device

    return _profile(get_device(device).name, path).spec() if path else get_device(device)


def kernel_limiter(components: dict) -> str:
    """The component that limits the kernel time (the launch gap and the informational tail apart)."""
    kernel = {k: v for k, v in components.items() if k not in ("launch", "tail")}
    return max(kernel, key=lambda k: kernel[k]) if kernel else "issue"


def _estimate_fn():
    """ptxsim.model.estimate, wherever it lives, or None while it has not landed."""
    import importlib

    for mod_name in ("ptxsim.model", "ptxsim.model.estimate", "ptxsim.model.timing"):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        fn = getattr(mod, "estimate", None)
        if callable(fn):
            return fn
    return None


def _seconds(result) -> float | None:
    if isinstance(result, (int, float)):
        return float(result)
    for attr in ("seconds", "time_s", "total_seconds", "duration_s"):
        value = getattr(result, attr, None)
        if isinstance(value, (int, float)):
            return float(value)
    if isinstance(result, dict):
        for attr in ("seconds", "time_s", "total_seconds", "duration_s"):
            if isinstance(result.get(attr), (int, float)):
                return float(result[attr])
    return None


def metrics_dict(stats) -> dict:
    """A LaunchStats' metrics (or the stats themselves) as a plain dict."""
    metrics = getattr(stats, "metrics", stats)
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        return dict(metrics)
    if is_dataclass(metrics) and not isinstance(metrics, type):
        return asdict(metrics)
    if hasattr(metrics, "as_dict"):
        return dict(metrics.as_dict())
    return {k: v for k, v in vars(metrics).items() if not k.startswith("_")} if hasattr(metrics, "__dict__") else {}


def sum_metrics(per_launch: list[dict]) -> dict:
    """Sum numeric counters over launches (non-numeric values kept from the first launch that has them). Ratios
    (names ending in ".ratio": threads per instruction, the model's ILP/MLP) are not summable: their total is the
    mean weighted by each launch's warp-instructions."""
    total: dict = {}
    weights: dict[str, float] = {}
    for metrics in per_launch:
        weight = float(metrics.get("smsp__inst_executed.sum") or 0.0)
        for key, value in metrics.items():
            if key.endswith(".ratio") and isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0.0) + value * weight
                weights[key] = weights.get(key, 0.0) + weight
            elif isinstance(value, bool):
                total.setdefault(key, value)
            elif isinstance(value, (int, float)):
                total[key] = total.get(key, 0) + value
            elif isinstance(value, dict):
                sub = total.setdefault(key, {})
                if isinstance(sub, dict):
                    for k2, v2 in value.items():
                        if isinstance(v2, (int, float)) and not isinstance(v2, bool):
                            sub[k2] = sub.get(k2, 0) + v2
            else:
                total.setdefault(key, value)
    for key, weight in weights.items():
        total[key] = total[key] / weight if weight else 0.0
    return total


def refuse_unassembled(name: str, ptx: str) -> None:
    """ToolchainError when ptxas refused the launch's PTX (e.g. ptxas 12.9 and the `.version 9.0` nvcc 13 writes): the
    row's error, not an "ok" row without a time. A missing ptxas is left to the occupancy error below."""
    from harness.errors import ToolchainError
    from harness.static import analyse_ptx

    refused = [e for e in analyse_ptx(ptx, name)["errors"] if e.startswith("ptxas: ptxas failed")]
    if refused:
        raise ToolchainError(f"{name}: the PTX does not assemble, so it has no resources and no modelled time; "
                             f"{refused[0][len('ptxas: '):]}")


def time_interval_95(seconds: float, version: str) -> tuple[float, float, str]:
    """(lo, hi, basis): the 95% prediction interval of a modelled time (interval_table.time_interval) and the words
    run.json records for it."""
    from ptxsim.model.interval_table import time_fit

    fit = time_fit(version)
    lo, hi = fit.interval(seconds) if seconds > 0 else (seconds, seconds)
    return lo, hi, (f"95% prediction interval of the {fit.n} predicted absolute validation rows "
                    f"(timing model {version}, ptxsim/model/interval_table.json)")


def model_launch(record, ptx_entry: tuple[str, str] | None, device: str = MODEL_DEVICE,
                 profile: str | None = None, model: str = "v1") -> dict:
    """{name, modelled_s, sim_wall_s, occupancy, estimate, error} for one sim LaunchRecord."""
    out = {"name": record.name, "grid": list(record.grid), "block": list(record.block),
           "shared_bytes": record.shared_bytes, "sim_wall_s": record.host_seconds, "modelled_s": None,
           "launch_s": None, "interval_s": None, "model_error": None, "sass_mix": None, "occupancy": None,
           "estimate": None, "error": None, "model_version": None,
           # sampled simulation: the fraction of CTAs simulated (1.0: all), and the waves (ptxsim LaunchStats.waves)
           "simulated_fraction": float(getattr(record.stats, "sample_fraction", 1.0)),
           "waves": dict(getattr(record.stats, "waves", None) or {})}
    if ptx_entry is not None:
        refuse_unassembled(record.name, ptx_entry[0])
    estimate = _estimate_fn()
    if estimate is None:
        out["error"] = "ptxsim.model.estimate is not available yet"
        return out
    try:
        from harness.static import resources_of
        from ptxsim.model.occupancy import occupancy_from_resources

        spec = profile_spec(device, profile)
        threads = record.block[0] * record.block[1] * record.block[2]
        resources = resources_of(*ptx_entry) if ptx_entry else None
        occ = occupancy_from_resources(spec, threads, resources, int(record.shared_bytes)) if resources else None
        out["occupancy"] = None if occ is None else {"blocks_per_sm": occ.blocks_per_sm, "warps_per_sm":
                                                    occ.warps_per_sm, "occupancy": occ.occupancy,
                                                    "limiter": occ.limiter}
        if occ is None:
            out["error"] = f"no ptxas resource report for {record.name} (needed for occupancy)"
            return out
        from harness.static import analyse_ptx
        from ptxsim.model.microbench import module_sass_mix

        mix = module_sass_mix(ptx_entry[0], analyse_ptx(ptx_entry[0])) if ptx_entry else None
        out["sass_mix"] = mix
        version = check_model_version(model)
        out["model_version"] = version
        if version == "v2" and ptx_entry is not None and hasattr(record.stats, "per_line"):
            import ptxsim
            from ptxsim.model.cycle import estimate_v2
            from ptxsim.model.cycle_trace import per_pc_counts

            program = ptxsim.load_ptx(ptx_entry[0]).kernel(ptx_entry[1]).program
            result = estimate_v2(program, per_pc_counts(program, record.stats.per_line), record.stats.metrics, spec,
                                 occ, constants=profile_constants(spec.name, profile), sass_mix=mix,
                                 by_warp=getattr(record.stats, "by_warp", None),
                                 simulated_ctas=int(getattr(record.stats, "simulated_ctas", 0) or 0),
                                 sass_loops=analyse_ptx(ptx_entry[0]).get("sass_loops", {}).get(ptx_entry[1]),
                                 sass_loop_issue=analyse_ptx(ptx_entry[0]).get("sass_loop_issue", {})
                                 .get(ptx_entry[1]))
        else:
            out["model_version"] = "v1"
            result = estimate(getattr(record.stats, "metrics", record.stats), spec, occ,
                              constants=profile_constants(spec.name, profile), sass_mix=mix)
        out["modelled_s"] = _seconds(result)
        if hasattr(result, "kernel_seconds") and hasattr(result, "components"):
            out["modelled_s"] = float(result.kernel_seconds)
            out["launch_s"] = float(result.components["launch"])
            lo, hi, basis = time_interval_95(out["modelled_s"], out["model_version"])
            out["interval_s"] = [lo, hi]
            out["model_error"] = {"relative": hi / out["modelled_s"] - 1 if out["modelled_s"] > 0 else 0.0,
                                  "limiter": kernel_limiter(dict(result.components)), "basis": basis}
        if hasattr(result, "as_row"):
            out["estimate"] = dict(result.as_row())
        elif not isinstance(result, (int, float)):
            out["estimate"] = metrics_dict(result)
        if out["modelled_s"] is None:
            out["error"] = f"ptxsim.model.estimate returned {type(result).__name__} with no seconds field"
    except Exception as exc:  # noqa: BLE001 - a model failure is recorded on the row, not fatal to the run
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def model_row(records, sources: dict, device: str = MODEL_DEVICE, profile: str | None = None,
              model: str = "v1") -> dict:
    """Modelled time of one row: {basis, device, modelled_us (kernel time), launch_us, interval_us (its 95% prediction
    interval), model_error {relative (the interval's upper end as a fraction), basis}, sim_wall_s, stages_us,
    launches, error}."""
    launches = [model_launch(r, sources.get(r.name), device, profile, model) for r in records]
    modelled = [launch["modelled_s"] for launch in launches]
    errors = sorted({launch["error"] for launch in launches if launch["error"]})
    total = sum(modelled) if modelled and all(m is not None for m in modelled) else None
    stages: dict[str, float] = {}
    interval = launch_us = model_error = None
    if total is not None:
        for launch in launches:
            stages[launch["name"]] = stages.get(launch["name"], 0.0) + launch["modelled_s"] * 1e6
        if all(launch["interval_s"] for launch in launches):
            interval = [sum(launch["interval_s"][i] for launch in launches) * 1e6 for i in (0, 1)]
            launch_us = sum(launch["launch_s"] for launch in launches) * 1e6
            worst = max(launches, key=lambda launch: launch["model_error"]["relative"])["model_error"]
            model_error = {"relative": (interval[1] / (total * 1e6) - 1) if total > 0 else worst["relative"],
                           "basis": worst["basis"], "worst_launch": worst}
    fractions = [launch["simulated_fraction"] for launch in launches]
    return {"basis": "modelled", "device": device, "modelled_us": None if total is None else total * 1e6,
            "simulated_fraction": min(fractions) if fractions else 1.0,
            "launch_us": launch_us, "interval_us": interval, "model_error": model_error,
            "sim_wall_s": sum(r.host_seconds for r in records), "stages_us": stages, "launches": launches,
            "error": "; ".join(errors) or None}
