"""The comparison sweep: every (kernel[variant], impl, preset, skew) row run, checked, timed, analysed, saved.

For each row: fresh seeded inputs (the same seed for every path of a (kernel, preset, skew); big ones keyed and lazy
on sim), poisoned outputs, one run inside an NVTX range, the kernels.md check (on exactly what ran when big GEMM
launches were sampled: harness.sampling), static facts of the PTX it launched, then timing (sim: the ptxsim timing
model, "modelled"; gpu: CUDA events with L2 flush, "measured") and achieved throughput. A row whose estimated memory
(contract.footprint) will not fit is skipped with the reason. run.json is
rewritten atomically after every row, so `--resume` continues where an interruption stopped. Each cell gets one
verdict per pair of implementations run (harness.implementations.PAIRS; PTX vs CUDA C++ is the headline).

A kernel an implementation writes as an ablation ladder (issue #16) has one row per rung: the plain row is the top
rung, each lower rung an extra row of the same cell (same seed, same inputs) keyed by its slot ("ptx.r1"), run only
when that implementation is asked for; each rung gets verdicts against the rung below it and against the other paths.
"""
from __future__ import annotations

import sys
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.errors import TooSlowToSimulate
from harness.gemm_work import gemm_work
from harness.implementations import IMPL_ORDER, Ladder, Pair, pairs_of, split_slot
from harness.nvtx_ranges import RangeRecorder, range_name, run_range_name
from harness.results import RunFile, row_key
from harness.timing.gpu import GpuTimingSettings

# The peak a kernel's FLOPs are measured against (a DeviceSpec attribute "<kind>_flops"): tensor-core kernels use the
# dense tensor-core peak of their input type, everything else the fp32 CUDA-core peak.
PEAK_FLOPS_KIND = {"grouped_gemm": "bf16_dense", "layer": "bf16_dense", "grouped_gemm_fp8": "fp8_dense",
                   "layer[fp8]": "fp8_dense"}
GEMM_LIKE = ("grouped_gemm", "layer", "grouped_gemm_fp8")  # kernels whose FLOPs run on tensor cores


def peak_flops_kind(kernel: str, variant: str | None = None) -> str:
    """The peak a row's FLOPs are measured against: by "kernel[variant]" first (the fp8 layer), then by kernel."""
    return PEAK_FLOPS_KIND.get(f"{kernel}[{variant}]", PEAK_FLOPS_KIND.get(kernel, "fp32"))


@dataclass(frozen=True)
class Item:
    """One (kernel, variant, preset, skew) cell; it has one row per implementation (and per rung of a laddered
    kernel, `ladders`) and one verdict per pair."""

    kernel: str
    variant: str | None
    preset: str
    skew: str
    ladders: tuple[Ladder, ...] = ()  # the kernel's ladders among the implementations asked for

    def slots(self, impls) -> tuple[str, ...]:
        """The rows of this cell for `impls`, in run order: each implementation, then its ladder's lower rungs
        (lowest first) when it has one for this kernel."""
        out: list[str] = []
        for impl in impls:
            out.append(impl)
            ladder = self.ladder(impl)
            if ladder is not None:
                out.extend(ladder.slots()[:-1])
        return tuple(out)

    def ladder(self, impl: str) -> Ladder | None:
        return next((lad for lad in self.ladders if lad.impl == impl), None)

    def rung(self, slot: str) -> dict | None:
        """The rung record ({number, name, of, top}) of a row slot of a laddered kernel, else None."""
        ladder = self.ladder(split_slot(slot)[0])
        return ladder.rung(slot) if ladder is not None else None

    @property
    def label(self) -> str:
        return f"{self.kernel}[{self.variant}]" if self.variant else self.kernel

    @property
    def verdict_key(self) -> str:
        return f"{self.label}/{self.preset}/{self.skew}"

    def key(self, impl: str) -> str:
        """The row key of an implementation or a lower rung's slot: "grouped_gemm_fp8[up]/ptx.r1/tiny/balanced"."""
        return row_key(self.kernel, self.variant, impl, self.preset, self.skew)

    def pair_key(self, pair: Pair) -> str:
        """The key of one pair's verdict: "gate/tiny/balanced/ptx-vs-cpp"."""
        return f"{self.verdict_key}/{pair.name}"

    @property
    def params(self) -> dict:
        return {"variant": self.variant} if self.variant else {}


@dataclass(frozen=True)
class CompareSettings:
    backend: str  # resolved: "sim" or "gpu"
    presets: tuple[str, ...]
    skews: tuple[str, ...]
    kernels: tuple[str, ...]
    seed: int
    impls: tuple[str, ...] = IMPL_ORDER
    static: bool = True
    timing: GpuTimingSettings = field(default_factory=GpuTimingSettings)
    model_device: str = "H200 SXM"
    sanitize: tuple[str, ...] = ()  # sim only: ptxsim sanitizers on every launch (findings fail the row)
    model_estimate: bool = True  # gpu only: also record the timing model's estimate (sampled ptxsim run)
    sample: str = "auto"  # sim only: --sample auto|off|N (harness.sampling)

    def as_dict(self) -> dict:
        return {"backend": self.backend, "presets": list(self.presets), "skews": list(self.skews),
                "kernels": list(self.kernels), "seed": self.seed, "impls": list(self.impls), "static": self.static,
                "timing": vars(self.timing).copy(), "model_device": self.model_device,
                "sanitize": list(self.sanitize), "model_estimate": self.model_estimate, "sample": self.sample}


def plan(settings: CompareSettings) -> list[Item]:
    """The cells of a sweep in run order (grouped_gemm expands to its up and down variants), each with the ladders
    the implementations asked for register for its kernel."""
    from contract.kernels import get_kernel
    from harness.implementations import implementation_ladders

    ladders = {impl: implementation_ladders(impl) for impl in settings.impls}
    items: list[Item] = []
    # NOTE: each name once (a run.json written before the CLI removed repeats may hold "gate,gate")
    for preset in dict.fromkeys(settings.presets):
        for skew in dict.fromkeys(settings.skews):
            for kernel in dict.fromkeys(settings.kernels):
                variants = get_kernel(kernel).variants or (None,)
                found = tuple(ladders[i][kernel] for i in settings.impls if kernel in ladders[i])
                items.extend(Item(kernel, v, preset, skew, found) for v in variants)
    return items


def item_seed(base_seed: int, item: Item) -> int:
    """The seed of one cell: the base seed mixed with the cell's name (every path shares it)."""
    return (int(base_seed) + zlib.crc32(item.verdict_key.encode())) % 2**32


def _find_run(impl: str, kernel: str) -> tuple[Callable | None, str]:
    """(run function, "") or (None, why it is missing: "not implemented in cpp (...)"); a lower rung's slot
    ("ptx.r2") gives the implementation's run function with rung=2."""
    from functools import partial

    from harness.implementations import implementation_table, missing_reason

    impl, rung = split_slot(impl)
    table, problem = implementation_table(impl)
    if problem:
        return None, missing_reason(impl, kernel, problem)
    if kernel not in table:
        return None, missing_reason(impl, kernel)
    return (table[kernel] if rung is None else partial(table[kernel], rung=rung)), ""


# ---------------------------------------------------------------------------------------------------- throughput
def device_spec_for(backend_name: str, gpu_name: str | None, model_device: str):
    try:
        from ptxsim.model.devices import get_device

        return get_device(gpu_name if backend_name == "gpu" and gpu_name else model_device)
    except Exception:  # noqa: BLE001 - an unknown GPU has no peaks; throughput is still reported
        return None


def throughput(kernel: str, min_bytes: int, flops: int, time_us: float | None, spec, variant: str | None = None
               ) -> dict:
    """Achieved GB/s and TFLOP/s from the kernel's byte/FLOP counts, and % of the device's peaks."""
    out = {"min_bytes": int(min_bytes), "flops": int(flops), "time_us": time_us, "achieved_gbps": None,
           "achieved_tflops": None, "pct_peak_bandwidth": None, "pct_peak_flops": None, "peak_flops_kind":
           peak_flops_kind(kernel, variant), "device": getattr(spec, "name", None)}
    if not time_us or time_us <= 0:
        return out
    seconds = time_us * 1e-6
    out["achieved_gbps"] = min_bytes / seconds / 1e9
    out["achieved_tflops"] = flops / seconds / 1e12
    if spec is not None:
        out["pct_peak_bandwidth"] = 100.0 * min_bytes / seconds / spec.memory_bandwidth
        peak = getattr(spec, f"{out['peak_flops_kind']}_flops")
        out["pct_peak_flops"] = 100.0 * flops / seconds / peak
    return out


# ----------------------------------------------------------------------------------------------------- one row
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


def _sampled_blocks(policy, preset) -> int | None:
    """Routing blocks a sampled GEMM launch of the row simulates (the memory estimate's bound), None = all."""
    from contract.presets import get_preset

    if policy is None or policy.off:
        return None
    return policy.for_preset(get_preset(preset)).live_blocks_bound()


def _row_sample_policy(settings: CompareSettings, preset):
    policy = sample_policy(settings)
    return policy.for_preset(preset) if policy is not None else None


def sampling_summary(records, check_errors: dict, policy) -> dict:
    """run.json's row["sampling"]: the policy, whether any launch ran a subset of its CTAs, the smallest simulated
    fraction of any launch, and the share of the output the check covered (1.0 for a full run)."""
    from harness.verify import was_sampled

    fractions = [float(getattr(getattr(r, "stats", None), "sample_fraction", 1.0)) for r in records]
    sampled = was_sampled(records)
    coverage = check_errors.get("coverage") if isinstance(check_errors, dict) else None
    out = {"policy": None if policy is None else policy.text, "sampled": sampled,
           "simulated_fraction": min(fractions) if fractions else 1.0,
           "coverage": float(coverage) if coverage is not None else (None if sampled else 1.0)}
    stages = check_errors.get("stages") if isinstance(check_errors, dict) else None
    if isinstance(stages, dict) and stages:  # a layer checked stage by stage (harness.verify.check_layer_stages)
        checked = {name: s for name, s in stages.items() if s.get("checked")}
        out["stages"] = {"checked": sorted(checked), "not_covered": sorted(set(stages) - set(checked)),
                         "least_checked_coverage": min((float(s["coverage"]) for s in checked.values()),
                                                       default=0.0)}
    return out


def _launch_summary(records) -> list[dict]:
    return [{"name": r.name, "impl": r.impl, "grid": list(r.grid), "block": list(r.block),
             "shared_bytes": r.shared_bytes, "host_seconds": r.host_seconds} for r in records]


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


STAGES = ("gate", "align", "permute", "act_quant", "grouped_gemm", "grouped_gemm_fp8", "swiglu", "combine")
GEMM_STAGES = ("grouped_gemm", "grouped_gemm_fp8")  # numbered .up/.down when a row launches two


def stage_names(launch_names: list[str]) -> list[str]:
    """The kernels.md stage of each launch, in launch order: the stage name found in the launch name (longest
    match, so "grouped_gemm_fp8[...]" is grouped_gemm_fp8; another "gemm" counts as grouped_gemm), the launches of
    each GEMM stage numbered "<stage>.up" then "<stage>.down" (the layer's order) when there are two; unmatched names
    are kept as they are."""
    found = []
    for name in launch_names:
        low = name.lower()
        hits = [s for s in STAGES if s in low] or (["grouped_gemm"] if "gemm" in low else [])
        found.append(max(hits, key=len) if hits else name)
    for stage in GEMM_STAGES:
        gemms = [i for i, s in enumerate(found) if s == stage]
        if len(gemms) == 2:
            found[gemms[0]], found[gemms[1]] = f"{stage}.up", f"{stage}.down"
    return found


def stage_times(timing: dict) -> dict[str, float]:
    """Per-stage µs (sum of per-launch times grouped by stage_names) from a sim or gpu timing dict."""
    if timing.get("basis") == "modelled":
        pairs = [(launch["name"], launch["modelled_s"] * 1e6) for launch in timing.get("launches", [])
                 if launch.get("modelled_s") is not None]
    else:
        pairs = [(name, us) for name, us in timing.get("launch_us", [])]
    out: dict[str, float] = {}
    for stage, (_, us) in zip(stage_names([n for n, _ in pairs]), pairs, strict=True):
        out[stage] = out.get(stage, 0.0) + us
    return out


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


# -------------------------------------------------------------------------------------------------------- sweep
def _verdict(item: Item, pair: Pair, rows: dict[str, dict], basis: str) -> dict:
    """One pair's verdict of one cell: speedup = baseline time / impl time, its interval and the call, or a reason.

    `rows` maps row slots (implementations, lower rungs "ptx.r1") to rows; a pair whose side is a rung of a laddered
    kernel gets `rung` / `baseline_rung` records ({number, name, of, top}).
    """
    from harness.implementations import HEADLINE_PAIR
    from harness.timing import stats

    out: dict[str, Any] = {
        "key": item.pair_key(pair), "cell": item.verdict_key, "kernel": item.kernel, "variant": item.variant,
        "preset": item.preset, "skew": item.skew, "pair": pair.name, "impl": pair.impl, "baseline": pair.baseline,
        "headline": pair == HEADLINE_PAIR, "basis": basis, "speedup": None, "ci_lo": None, "ci_hi": None,
        "verdict": None, "reason": None}
    for field_name, slot in (("rung", pair.impl), ("baseline_rung", pair.baseline)):
        if (rung := item.rung(slot)) is not None:
            out[field_name] = rung
    base, impl = rows.get(pair.baseline), rows.get(pair.impl)
    if not base or not impl:
        out["reason"] = "a path has no row"
        return out
    bad = [(slot, r) for slot, r in ((pair.baseline, base), (pair.impl, impl)) if r.get("status") != "ok"]
    if bad:
        out["reason"] = "no verdict: " + "; ".join(f"{slot} {r.get('status')}" + (f" ({r['reason']})" if
                                                                                   r.get("reason") else "")
                                                   for slot, r in bad)
        return out
    if basis == "modelled":
        a, b = base["timing"].get("modelled_us"), impl["timing"].get("modelled_us")
        if not a or not b:
            out["reason"] = "no modelled time: " + (base["timing"].get("error") or impl["timing"].get("error") or "?")
            return out
        v = stats.compare_modelled(a, b, stats.modelled_band(base["timing"], impl["timing"]))
    else:
        v = stats.compare(base["timing"]["device_time_us"], impl["timing"]["device_time_us"], basis="measured")
    out.update(v.as_dict())
    return out


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


def run_cell(backend, settings: CompareSettings, item: Item, impls, device_spec, recorder: RangeRecorder,
             on_start: Callable[[str, int], None] | None = None, memory_share: int = 1) -> Iterator[tuple[str, dict]]:
    """Run `impls` of one cell, yielding (impl, row) as each finishes; the inputs are drawn once for them all.

    Big inputs are drawn lazy where the backend takes them (draw_inputs). A row whose estimated memory
    (harness.row_memory, from contract.footprint) exceeds this machine's free memory / `memory_share` (the
    processes running rows at once) is not run: it gets status "skipped" and a one-line reason. Only KeyboardInterrupt
    escapes: any other exception becomes that row's "error" row.
    """
    from contract.footprint import wants_lazy
    from harness.row_memory import available_bytes, memory_skip_reason

    seed = item_seed(settings.seed, item)
    policy = sample_policy(settings)
    lazy = bool(getattr(backend, "lazy_inputs", False)) and _wants_lazy(wants_lazy, item)
    cell_inputs: dict | None = None  # drawn once per cell, shared by every path (same seed anyway)
    for impl in impls:
        run, why = _find_run(impl, item.kernel)
        if run is None:
            yield impl, _plain_row(settings, item, impl, seed, "missing", why)
            continue
        free = available_bytes()
        if free is not None and cell_inputs is not None:  # the cell's inputs are already held: this row reuses them
            free += sum(int(a.nbytes) for a in cell_inputs.values() if isinstance(a, np.ndarray))
        too_big = memory_skip_reason(item.kernel, item.preset, item.variant, settings.backend,
                                     None if free is None else free // max(1, memory_share), lazy=lazy,
                                     sample_blocks=_sampled_blocks(policy, item.preset))
        if too_big:
            yield impl, _plain_row(settings, item, impl, seed, "skipped", too_big)
            continue
        if on_start is not None:
            on_start(impl, seed)
        t_row = time.perf_counter()
        try:
            if cell_inputs is None:
                cell_inputs = draw_inputs(backend, item, seed)
            row = run_row(backend, settings, item, impl, run, seed, recorder, device_spec, inputs=cell_inputs)
        except KeyboardInterrupt:
            raise
        except TooSlowToSimulate as exc:  # a launch sim cannot sample (harness.sampling): the reason, not an error
            row = _plain_row(settings, item, impl, seed, "skipped", str(exc))
            row["elapsed_s"] = time.perf_counter() - t_row
        except Exception as exc:  # noqa: BLE001 - one broken path must not stop the sweep
            row = _plain_row(settings, item, impl, seed, "error", f"{type(exc).__name__}: {exc}")
            row["traceback"] = traceback.format_exc(limit=8)[-4000:]
            row["elapsed_s"] = time.perf_counter() - t_row
            row["static"] = _static_quietly(backend, settings)
            row["sticky_cuda_error"] = _sticky_code(exc)
        yield impl, row


def cell_pairs(item: Item, rows) -> tuple[Pair, ...]:
    """The pairs of one cell whose two row slots are in `rows`: the PAIRS among the implementations, then each
    ladder's rung pairs (every rung against the rung below it, against cpp, against numba)."""
    return pairs_of(rows) + tuple(p for ladder in item.ladders for p in ladder.pairs(rows))


def set_verdicts(run_file: RunFile, settings: CompareSettings, item: Item, rows: dict[str, dict]) -> None:
    basis = "modelled" if settings.backend == "sim" else "measured"
    for pair in cell_pairs(item, rows):
        run_file.set_verdict(_verdict(item, pair, rows, basis), save=False)
    run_file.save()


def record_row(run_file: RunFile, summary: dict, row: dict, progress, ranges: list[dict]) -> None:
    """Save one finished row (and its NVTX ranges), count it in `summary`, print its progress line."""
    key = row["key"]
    summary["ran"] += 1
    if row["status"] == "missing":
        summary["missing"].append(f"{key}: {row['reason']}")
    elif row["status"] == "skipped":
        summary.setdefault("too_big", []).append(f"{key}: {row['reason']}")
    elif row["status"] != "ok":
        reason = row.get("reason") or row.get("correctness", {}).get("message", "")
        summary["failed"].append(f"{key}: {row['status']}: {reason}")
    run_file.add_ranges(ranges)
    run_file.add_row(row)
    seconds = row.get("elapsed_s")
    progress.end(key, f"{_row_status(row)}" + (f" ({seconds:.1f}s)" if seconds is not None else ""), seconds)
    for finding in (row.get("sanitizer") or {}).get("findings", [])[:SHOW_FINDINGS]:
        progress.note(f"{finding['text']} [launch {finding['launch']}]")
    if row.get("sticky_cuda_error"):
        _stop_after_sticky(run_file, row, summary)


def make_progress(settings: CompareSettings, items: list[Item], stream=None, concurrency: int = 1):
    """The sweep's Progress, with every row's predicted cost (harness.progress.predicted_cost) and class, for
    `concurrency` rows running at once."""
    from harness.progress import Progress, predicted_cost, row_class

    sample = sample_policy(settings)
    slots = [(item, slot) for item in items for slot in item.slots(settings.impls)]
    costs = {item.key(slot): predicted_cost(item.kernel, item.preset, item.variant, sample) for item, slot in slots}
    classes = {item.key(slot): row_class(item.kernel) for item, slot in slots}
    return Progress(costs, stream if stream is not None else sys.stderr, classes=classes,
                    concurrency=max(1, concurrency))


def pending(run_file: RunFile, settings: CompareSettings, items: list[Item], summary: dict, progress
            ) -> list[tuple[Item, dict[str, dict], list[str]]]:
    """(item, rows done in a resumed run, impls still to run) per cell; done rows are counted and reported."""
    out = []
    for item in items:
        done: dict[str, dict] = {}
        todo: list[str] = []
        for impl in item.slots(settings.impls):
            key = item.key(impl)
            row = run_file.row(key)
            if row is not None and run_file.is_done(key):
                done[impl] = row
                summary["skipped"] += 1
                progress.end(key, "done in the resumed run, skipped", None)
            else:
                todo.append(impl)
        out.append((item, done, todo))
    return out


def run_sweep(backend, settings: CompareSettings, run_file: RunFile, progress=None, parallel=None) -> dict:
    """Run every row not already done in `run_file`; returns {"failed": [...], "missing": [...], "ran": n, ...}.

    `parallel` (harness.parallel.ParallelSettings) runs the cells on Dask when it asks for more than one worker and
    more than one cell has rows to run; otherwise the rows run here, one after another, on `backend`.
    """
    from harness.parallel import run_parallel, wants_parallel

    items = plan(settings)
    concurrency = 1 if parallel is None or parallel.scheduler else parallel.local_workers
    progress = make_progress(settings, items, progress, concurrency)
    summary = {"failed": [], "missing": [], "too_big": [], "ran": 0, "skipped": 0}
    cells = pending(run_file, settings, items, summary, progress)
    if wants_parallel(parallel, sum(1 for _, _, todo in cells if todo)):
        run_parallel(settings, run_file, cells, summary, progress, parallel)
        run_file.doc["rows"].sort(key=_plan_order(items, settings))
    else:
        _run_serial(backend, settings, run_file, cells, summary, progress)
    run_file.doc["missing"] = summary["missing"]
    run_file.save()
    return summary


def _plan_order(items: list[Item], settings: CompareSettings):
    order = {item.key(slot): i for i, (item, slot) in enumerate((it, sl) for it in items
                                                                 for sl in it.slots(settings.impls))}
    return lambda row: order.get(row.get("key"), len(order))


def _run_serial(backend, settings: CompareSettings, run_file: RunFile, cells, summary: dict, progress) -> None:
    device_spec = device_spec_for(settings.backend, run_file.doc["environment"].get("gpu", {}).get("name"),
                                  settings.model_device)
    recorder = RangeRecorder()
    with recorder.range(run_range_name(run_file.doc["run_id"]), phase="run"):
        for item, rows, todo in cells:
            def started(impl: str, seed: int, item=item) -> None:
                progress.start(item.key(impl), f"running (seed {seed})")

            for impl, row in run_cell(backend, settings, item, todo, device_spec, recorder, on_start=started):
                rows[impl] = row
                record_row(run_file, summary, row, progress, recorder.drain())
            set_verdicts(run_file, settings, item, rows)
    run_file.add_ranges(recorder.drain())


def _sticky_code(exc: BaseException) -> str | None:
    """The CUresult name when `exc` is a sticky CUDA error (the context is unusable), else None."""
    from harness.backends.cuda_api import error_code, is_sticky

    return error_code(exc) if is_sticky(exc) else None


def _stop_after_sticky(run_file, row: dict, summary: dict) -> None:
    """Save what ran and stop the sweep: after a sticky error every later row would fail with this row's error."""
    from harness.backends.cuda_api import GpuError

    run_file.doc["missing"] = summary["missing"]
    run_file.save()
    raise GpuError(f"row {row['key']} hit {row['sticky_cuda_error']}, a sticky CUDA error: the CUDA context is "
                   f"unusable, so the sweep stops here ({summary['ran']} rows ran, saved in {run_file.run_dir}; "
                   f"later rows were not run). Fix that kernel, or leave it out with --kernels, and run again.",
                   row["sticky_cuda_error"])


def _sampling_text(sampling: dict | None) -> str:
    """", sampled: 0.33% of CTAs, check covers 0.33% of the output" for a sampled row, "" for a full one."""
    if not sampling or not sampling.get("sampled"):
        return ""
    coverage = sampling.get("coverage")
    stages = sampling.get("stages")
    if stages:  # a layer: its outputs' coverage is the least covered stage's (0 when combine had no whole token)
        names = len(stages["checked"]) + len(stages["not_covered"])
        missing = f"; not covered: {', '.join(stages['not_covered'])}" if stages["not_covered"] else ""
        return (f", sampled: {sampling['simulated_fraction']:.2%} of CTAs, checked stage by stage: "
                f"{len(stages['checked'])} of {names} stages, the sampled ones on >= "
                f"{stages['least_checked_coverage']:.2%} of their output{missing}")
    return (f", sampled: {sampling['simulated_fraction']:.2%} of CTAs"
            + (f", check covers {coverage:.2%} of the output" if coverage is not None else ""))


def _row_status(row: dict) -> str:
    if row["status"] == "missing":
        return f"MISSING ({row['reason']})"
    if row["status"] == "error":
        return f"ERROR ({row['reason'][:200]})"
    if row["status"] == "skipped":
        return f"SKIPPED ({row['reason'][:300]})"
    text = "ok" if row["status"] == "ok" else f"FAILED ({(row.get('reason') or row['correctness']['message'])[:200]})"
    timing = row.get("timing") or {}
    if timing.get("basis") == "modelled":
        t = timing.get("modelled_us")
        # three significant digits: the model's error is several per cent (run.json keeps the full numbers)
        text += f", modelled {t:.3g} us" if t else f", no modelled time ({timing.get('error')})"
        if t and timing.get("interval_us") and timing.get("launch_us") is not None:
            lo, hi = timing["interval_us"]
            text += f" [{lo:.3g}, {hi:.3g}] + launch {timing['launch_us']:.2g} us"
        text += f", sim wall {timing.get('sim_wall_s', 0):.1f}s"
        text += _sampling_text(row.get("sampling"))
    elif timing.get("device"):
        text += f", median {timing['device']['median_us']:.2f} us (n={timing['device']['n']})"
    return text
