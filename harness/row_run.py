"""One row of the sweep: one implementation (or one rung of a ladder) of one cell run, checked, analysed and timed.

Fresh seeded inputs (keyed and lazy on sim where they are big), poisoned outputs, one run inside an NVTX range, the
kernels.md check (on exactly what ran when big GEMM launches were sampled: harness.sampling), static facts of the PTX
it launched, then timing (sim: the ptxsim timing model, "modelled"; gpu: CUDA events with L2 flush, "measured") and
achieved throughput; with --sanitize, the sanitizers' findings.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from harness.gemm_work import gemm_work
from harness.implementations import split_slot
from harness.nvtx_ranges import RangeRecorder, range_name
from harness.row_report import _launch_summary, sampling_summary
from harness.stages import stage_names, stage_times
from harness.sweep_plan import CompareSettings, Item
from harness.throughput import throughput


def _alloc(backend, spec, inputs: dict, preset):
    """Device copies of the inputs (lazy tensors stay lazy on backends that take them) and poisoned outputs."""
    from contract.kernels import POISON_BYTE
    from harness.verify import to_device

    args = {name: to_device(backend, arr) for name, arr in inputs.items()}
    out_specs = spec.output_specs(preset, inputs)
    for out in out_specs:
        args[out.name] = backend.empty(out.shape, out.dtype, fill_byte=POISON_BYTE)
    return args, out_specs


def draw_inputs(backend, item: Item, seed: int) -> dict:
    """A cell's inputs: keyed lazy tensors for the big ones when the backend takes them (contract.footprint
    .wants_lazy: the dsv3 GEMM weights are 14 GiB), else NumPy arrays; the same values either way."""
    from contract.footprint import wants_lazy
    from contract.kernels import get_kernel
    from contract.presets import get_preset

    preset = get_preset(item.preset)
    lazy = bool(getattr(backend, "lazy_inputs", False)) and _wants_lazy(wants_lazy, item)
    return get_kernel(item.kernel).make_inputs(preset, item.skew, seed, lazy=lazy, **item.params)


def _wants_lazy(wants_lazy, item: Item) -> bool:
    from contract.errors import UnknownNameError

    try:
        return wants_lazy(item.kernel, item.preset, item.variant or "up")
    except UnknownNameError:  # a kernel without a size table: drawn whole
        return False


def sample_policy(settings: CompareSettings):
    """The row's harness.sampling.SamplePolicy on sim (None on gpu)."""
    from harness.sampling import parse_sample

    return parse_sample(settings.sample) if settings.backend == "sim" else None


def _row_sample_policy(settings: CompareSettings, preset):
    policy = sample_policy(settings)
    return policy.for_preset(preset) if policy is not None else None


def _l2_bytes(spec) -> int:
    try:
        from cuda.bindings import driver

        err, value = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0)
        if err == driver.CUresult.CUDA_SUCCESS and value > 0:
            return int(value)
    except Exception:  # noqa: BLE001 - fall back to the modelled spec
        pass
    return int(getattr(spec, "l2_bytes", 50 * 2**20))


def run_row(backend, settings: CompareSettings, item: Item, impl: str, run: Callable, seed: int,
            recorder: RangeRecorder, device_spec, inputs: dict | None = None) -> dict:
    """Run, check, analyse and time one implementation of one cell; returns its run.json row.

    `inputs` (host arrays from spec.make_inputs with this seed) may be passed to share one draw between the paths.
    """
    from contract.kernels import get_kernel
    from contract.presets import get_preset

    preset = get_preset(item.preset)
    spec = get_kernel(item.kernel)
    params = item.params
    run_params = {k: v for k, v in params.items() if k != "variant"}
    row: dict[str, Any] = {**row_head(settings, item, impl, seed), "params": params}
    t_row = time.perf_counter()
    if inputs is None:
        inputs = draw_inputs(backend, item, seed)
    policy = _row_sample_policy(settings, preset)
    if hasattr(backend, "sample"):
        backend.sample = policy
    if hasattr(backend, "captured_workspace"):  # the layer's intermediates, for its stage-by-stage sampled check
        backend.captured_workspace = {} if item.kernel == "layer" and policy is not None and not policy.off else None
    backend.records.clear()
    backend.sources.clear()
    args, out_specs = _alloc(backend, spec, inputs, preset)
    extra_sets: list[dict] = []
    try:
        name = range_name(item.label, impl, item.preset, item.skew)
        with recorder.range(name, key=row["key"], phase="check"):
            records = list(run(backend, args, preset, **run_params) or backend.records)
            backend.synchronize()
        outputs = {o.name: backend.to_host(args[o.name]) for o in out_specs}
        check = _check(backend, spec, item, outputs, inputs, preset, records, run_params)
        row["correctness"] = {"ok": bool(check.ok), "message": check.message, "errors": check.errors}
        row["sampling"] = sampling_summary(records, check.errors, policy)
        row["launches"] = _launch_summary(records)
        # NOTE: on gpu, launched_sources compiles the Numba kernels to PTX again: only when static facts are wanted
        sources = backend.launched_sources() if settings.static or settings.backend == "sim" else {}
        row["static"] = _static_quietly(backend, settings, sources)
        row["min_bytes"], row["flops"] = int(spec.min_bytes(inputs, preset)), int(spec.flops(inputs, preset))
        row["gemm_work"] = gemm_work(item.kernel, inputs, preset)
        if settings.backend == "sim":
            from harness.timing.sim import metrics_dict, model_row, sum_metrics

            timing = model_row(records, sources, settings.model_device)
            per_launch = [{"name": r.name, "metrics": metrics_dict(r.stats)} for r in records]
            row["sim_counters"] = {"total": sum_metrics([p["metrics"] for p in per_launch]), "launches": per_launch}
            time_us = timing["modelled_us"]
        else:
            from harness.timing.gpu import rotation_count, time_gpu

            l2 = _l2_bytes(device_spec)
            input_bytes = sum(int(a.nbytes) for a in inputs.values())  # NOTE: gpu inputs are never lazy
            for _ in range(rotation_count(input_bytes, l2, settings.timing.max_rotation) - 1):
                copy = {n: backend.to_device(np.ascontiguousarray(a)) for n, a in inputs.items()}
                extra_sets.append({**args, **copy})
            with recorder.range(name, key=row["key"], phase="timing"):
                timing = time_gpu(backend, lambda a: run(backend, a, preset, **run_params), [args, *extra_sets],
                                  l2, settings.timing)
            row["sim_counters"] = None
            time_us = timing["device"]["median_us"]
            row["model_estimate"] = None
            if settings.model_estimate:
                from harness.timing.model_estimate import model_estimate

                row["model_estimate"] = model_estimate(run, inputs, preset, run_params, spec,
                                                       getattr(device_spec, "name", None) or settings.model_device,
                                                       sample=settings.sample)
        row["timing"] = timing
        row["launch_stages"] = stage_names([r.name for r in records])
        row["stages_us"] = stage_times(timing)
        row["throughput"] = throughput(item.kernel, row["min_bytes"], row["flops"], time_us, device_spec,
                                       item.variant)
        row["nsight"] = []
        row["status"] = "ok" if check.ok else "failed"
        if settings.sanitize:
            row["sanitizer"] = _sanitizer_result(backend, settings, records)
            if row["sanitizer"]["findings"]:
                row["status"] = "failed"
                row["reason"] = row["sanitizer"]["summary"]
    finally:
        for a in args.values():
            backend.free(a)
        for s in extra_sets:
            for n in inputs:
                backend.free(s[n])
        if getattr(backend, "captured_workspace", None) is not None:
            backend.captured_workspace = None
        if hasattr(backend, "reset_memory"):
            backend.reset_memory()  # sim: ptxsim never reuses freed memory; a fresh device per row
    row["elapsed_s"] = time.perf_counter() - t_row
    return row


def _check(backend, spec, item: Item, outputs: dict, inputs: dict, preset, records, run_params: dict):
    """The kernels.md check: on exactly the simulated subset when a launch was sampled; a sampled layer stage by
    stage on its captured intermediates (harness.verify.check_layer_stages)."""
    from harness.verify import check_layer_stages, was_sampled

    sampled = was_sampled(records)
    captured = getattr(backend, "captured_workspace", None)
    if item.kernel == "layer" and sampled and captured:
        backend.captured_workspace = None
        return check_layer_stages(outputs, inputs, captured, preset)
    return spec.check(outputs, inputs, preset, sampled=sampled, **run_params)


SHOW_FINDINGS = 10  # sanitizer findings printed per row (run.json keeps them all, up to ptxsim's MAX_REPORTS)


def _sanitizer_result(backend, settings: CompareSettings, records) -> dict:
    """{tools, findings, summary} of a row run under --sanitize (findings: harness.backends.sim.finding_dict)."""
    findings = backend.sanitizer_findings(records)
    summary = None
    if findings:
        first = findings[0]
        summary = (f"{len(findings)} sanitizer finding(s); first: {first['text']}"
                   + (f" [launch {first['launch']}]" if first["launch"] != first["kernel"] else ""))
    return {"tools": list(settings.sanitize), "findings": findings, "summary": summary}


def _static_quietly(backend, settings: CompareSettings, sources: dict | None = None) -> dict | None:
    """Static facts of what a row launched (also for erroring rows: ptxas often says more than the simulator);
    a failure to get them is recorded as {"error": ...}, never fatal to the row."""
    if not settings.static:
        return None
    try:
        return _static(backend.launched_sources() if sources is None else sources)
    except Exception as exc:  # noqa: BLE001 - static facts are an extra, not the row's outcome
        return {"error": f"{type(exc).__name__}: {exc}", "kernels": {}, "totals": {}}


def _static(sources: dict) -> dict:
    from harness.static import static_facts

    return static_facts(sources)


def row_head(settings: CompareSettings, item: Item, slot: str, seed: int) -> dict:
    """The fields that name a row: key, kernel, variant, impl, preset, skew, seed, backend, and for a laddered
    kernel's rows `rung` ({number, name, of, top}); `slot` is an implementation or a lower rung's slot ("ptx.r1",
    whose row has impl "ptx")."""
    head: dict[str, Any] = {"key": item.key(slot), "kernel": item.kernel, "variant": item.variant,
                            "impl": split_slot(slot)[0], "preset": item.preset, "skew": item.skew, "seed": seed,
                            "backend": settings.backend}
    rung = item.rung(slot)
    if rung is not None:
        head["rung"] = rung
    return head


def _plain_row(settings: CompareSettings, item: Item, impl: str, seed: int, status: str, reason: str) -> dict:
    """A row that did not run (missing, skipped) or broke before it had results (error)."""
    return {**row_head(settings, item, impl, seed), "status": status, "reason": reason}
