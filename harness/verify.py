"""Run one implementation of one kernel on a backend with fresh inputs and poisoned outputs, then check it.

Backends that accept lazy tensors (`backend.lazy_inputs`, the sim backend) get the big inputs as keyed tensors whose
pages are produced only when a simulated CTA touches them; a sampled simulation (ptxsim `sample_ctas`) is checked on
exactly the output elements its CTAs wrote, and the check says how much of the output that covered. A sampled layer
is checked stage by stage on the intermediates it produced (check_layer_stages).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from contract.checks import CheckResult
from contract.footprint import wants_lazy
from contract.kernels import POISON_BYTE, get_kernel
from contract.presets import Preset, get_preset


def to_device(backend, array):
    """A device copy of an input: lazy tensors stay lazy where the backend supports it, else are materialised."""
    if isinstance(array, np.ndarray) or not getattr(backend, "lazy_inputs", False):
        return backend.to_device(np.ascontiguousarray(array))
    return backend.to_device(array)


def was_sampled(records) -> bool:
    """True when some launch simulated only a subset of its CTAs (its outputs are partial)."""
    return any(getattr(getattr(r, "stats", None), "sample_fraction", 1.0) < 1.0 for r in records)


def run_kernel(run: Callable, backend, kernel: str, preset: Preset | str, skew: str, seed: int, inputs=None,
               lazy: bool | None = None, **params) -> tuple[dict, dict, list]:
    """Returns (host inputs, host outputs, launch records). `inputs` may be given to run two paths on the same data.

    lazy: draw the big inputs as keyed lazy tensors (same values as materialised ones); None = when the backend takes
    them and the inputs are big (contract.footprint.wants_lazy).
    """
    preset = get_preset(preset)
    spec = get_kernel(kernel)
    if inputs is None:
        if lazy is None:
            lazy = bool(getattr(backend, "lazy_inputs", False)) and wants_lazy(kernel, preset,
                                                                               params.get("variant", "up"))
        inputs = spec.make_inputs(preset, skew, seed, lazy=lazy, **params)
    args = {name: to_device(backend, arr) for name, arr in inputs.items()}
    out_specs = spec.output_specs(preset, inputs)
    for out in out_specs:
        args[out.name] = backend.empty(out.shape, out.dtype, fill_byte=POISON_BYTE)
    run_params = {k: v for k, v in params.items() if k != "variant"}
    try:
        records = run(backend, args, preset, **run_params)
        backend.synchronize()
        outputs = {out.name: backend.to_host(args[out.name]) for out in out_specs}
    finally:
        for arr in args.values():
            backend.free(arr)
    return inputs, outputs, list(records or [])


def run_and_check(run: Callable, backend, kernel: str, preset: Preset | str, skew: str, seed: int,
                  lazy: bool | None = None, **params) -> CheckResult:
    """Fresh seeded inputs, poisoned outputs, run, check against kernels.md (on the written part when the simulation
    was sampled). Never raises on a wrong answer."""
    preset = get_preset(preset)
    inputs, outputs, records = run_kernel(run, backend, kernel, preset, skew, seed, lazy=lazy, **params)
    check_params = {k: v for k, v in params.items() if k != "variant"}
    return get_kernel(kernel).check(outputs, inputs, preset, sampled=was_sampled(records), **check_params)


# ------------------------------------------------------------------------------------------------ the sampled layer
# (stage, its contract kernel, {kernel input: layer array}, {kernel output: layer array}); layer arrays are the layer's
# inputs, its outputs and its intermediates (contract.layer.intermediate_specs)
LAYER_STAGES = (
    ("act_quant", "act_quant", {"a": "x"}, {"q": "q", "scale": "scale"}),
    ("gate", "gate", {"logits": "logits", "bias": "bias"}, {"topk_ids": "topk_ids", "topk_w": "topk_w"}),
    ("align", "align", {"topk_ids": "topk_ids"},
     {k: k for k in ("counts", "offsets", "total_padded", "sorted_ids", "block_expert", "inverse")}),
    ("permute", "permute", {"x": "x", "sorted_ids": "sorted_ids", "total_padded": "total_padded"}, {"xp": "xp"}),
    ("grouped_gemm.up", "grouped_gemm", {"a": "xp", "w": "W1", "block_expert": "block_expert",
                                         "total_padded": "total_padded"}, {"c": "h"}),
    ("swiglu", "swiglu", {"h": "h", "total_padded": "total_padded"}, {"a": "a"}),
    ("grouped_gemm.down", "grouped_gemm", {"a": "a", "w": "W2", "block_expert": "block_expert",
                                           "total_padded": "total_padded"}, {"c": "y"}),
    ("combine", "combine", {"y": "y", "topk_w": "topk_w", "inverse": "inverse"}, {"out": "out"}),
)
DOWNSTREAM = {"swiglu": "h", "grouped_gemm.down": "a", "combine": "y"}  # stages fed by a sampled GEMM's rows
ALIASES = {"act": "a"}  # an implementation's own names of the contract's intermediates (the Numba layer's "act")


def _repoison_rows(arr: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """A copy of `arr` whose first-axis entries outside `keep` read as unwritten (poison bytes)."""
    out = np.array(arr, copy=True)
    out.view(np.uint8).reshape(out.shape[0], -1)[~keep] = POISON_BYTE
    return out


def check_layer_stages(outputs: dict, inputs: dict, intermediates: dict, preset: Preset) -> CheckResult:
    """The layer after a sampled run (its big GEMM launches simulated a few routing blocks), checked stage by stage:
    each stage's contract check on the arrays it actually read and wrote. Stages before the GEMMs ran whole and are
    checked whole; a GEMM on the elements its simulated CTAs wrote; swiglu, the down GEMM and combine on the rows
    whose inputs were all produced by simulated CTAs (their other rows are computed from poison and are set back to
    unwritten before the check). A stage with no such row is reported as not covered, not failed: at DeepSeek-V3
    decode no token has all K of its expert rows in the sampled blocks, so combine is not covered there.

    Returns a CheckResult whose errors hold each stage's ok/coverage and `coverage`, the least any stage covered.
    """
    from contract.coverage import written

    arrays = {**inputs, **{ALIASES.get(k, k): v for k, v in intermediates.items()}, **outputs}
    needed = {v for _, _, ins, outs in LAYER_STAGES for v in (*ins.values(), *outs.values())}
    if needed - set(arrays):
        return CheckResult(False, "layer", f"sampled layer: the run kept no {', '.join(sorted(needed - set(arrays)))} "
                           f"among its intermediates ({', '.join(sorted(intermediates))}), so it cannot be checked "
                           f"stage by stage; expected contract.layer.intermediate_specs' names",
                           {"coverage": 0.0, "sampled": True})
    total = int(np.asarray(arrays["total_padded"]).reshape(-1)[0])
    defined: dict[str, np.ndarray] = {}  # array -> rows whose every element came from simulated CTAs
    stages: dict[str, dict] = {}
    failures: list[str] = []
    for stage, kernel, ins, outs in LAYER_STAGES:
        got = {k: arrays[v] for k, v in outs.items()}
        sampled = stage.startswith("grouped_gemm") or stage in DOWNSTREAM
        if stage in DOWNSTREAM:
            src = DOWNSTREAM[stage]
            rows = defined[src]
            if stage == "combine":  # a token needs all K of its rows
                rows = rows[np.asarray(arrays["inverse"])].all(axis=1)
            ((name, arr),) = got.items()
            got = {name: _repoison_rows(arr, rows)}
        result = get_kernel(kernel).check(got, {k: arrays[v] for k, v in ins.items()}, preset, sampled=sampled)
        coverage = float(result.errors.get("coverage", 1.0)) if isinstance(result.errors, dict) else 1.0
        nothing = sampled and coverage == 0.0 and not any(written(a).any() for a in got.values())
        stages[stage] = {"ok": bool(result.ok) or nothing, "checked": not nothing, "coverage": coverage,
                         "message": "not covered: no row had all its inputs from simulated CTAs" if nothing
                         else result.message}
        if not result.ok and not nothing:
            failures.append(f"{stage}: {result.message}")
        for name, arr in got.items():  # rows this stage produced from defined inputs, for the stages after it
            layer_name = outs[name]
            mask = written(arr)
            whole = np.asarray(mask.reshape(mask.shape[0], -1).all(axis=1))
            if layer_name in ("h", "a", "y"):
                whole[total:] = False
            defined[layer_name] = whole
    checked = [s for s in stages.values() if s["checked"]]
    coverage = min(s["coverage"] for s in stages.values()) if stages else 0.0
    gemm_checked = stages["grouped_gemm.up"]["checked"]
    if not gemm_checked and not failures:
        failures.append("grouped_gemm.up: the simulated CTAs wrote no row of h (simulate more rows: --sample N)")
    summary = ", ".join(f"{name} {'ok' if s['ok'] else 'FAILED'}" + ("" if s["checked"] else " (not covered)")
                        for name, s in stages.items())
    errors = {"stages": stages, "coverage": coverage, "sampled": True, "stages_checked": len(checked)}
    if failures:
        return CheckResult(False, "layer", "sampled layer, stage by stage: " + "; ".join(failures), errors)
    return CheckResult(True, "layer", f"sampled layer, stage by stage: {summary}", errors)
