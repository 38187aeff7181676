"""Run one implementation of one kernel on a backend with fresh inputs and poisoned outputs, then check it.

Backends that accept lazy tensors (`backend.lazy_inputs`, the sim backend) get the big inputs as keyed tensors whose
pages are produced only when a simulated CTA touches them; a sampled simulation (ptxsim `sample_ctas`) is checked on
exactly the output elements its CTAs wrote, and the check says how much of the output that covered. A sampled layer
(bf16 or fp8) is checked stage by stage on the intermediates it produced (check_layer_stages).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from contract.checks import CheckResult
from contract.footprint import wants_lazy
from contract.generators import BF16
from contract.kernels import POISON_BYTE, get_kernel
from contract.presets import Preset, get_preset


def to_device(backend, array):
    """A device copy of an input: lazy tensors stay lazy where the backend supports it, else are materialised."""
    if isinstance(array, np.ndarray) or not backend.lazy_inputs:
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
            lazy = backend.lazy_inputs and wants_lazy(kernel, preset, params.get("variant", "up"))
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
@dataclass(frozen=True)
class Stage:
    """One launch of the layer, as its stage check sees it.

    name: the stage (a kernel used twice is "kernel.up" / "kernel.down"); kernel: its contract kernel, whose check
    runs; ins / outs: {kernel argument: layer array} (the layer's inputs, outputs and intermediates,
    contract.layer.intermediate_specs); views: {layer array: dtype} arrays the kernel reads or writes as another
    element type, the last axis rescaled (the fp8 payload and its scales move through permute as bf16 pairs);
    fed_by: layer arrays written by a sampled GEMM upstream: only the output rows whose rows in all of these came from
    simulated CTAs are checked, the others (computed from poison) are set back to unwritten first; per_token: the
    layer array mapping each output row to its K input rows (combine: a token needs all K of them); bounded: the
    kernel works on the rows below total_padded (the fp8 layer's second act_quant): its check sees those, and the
    outputs' rows from total_padded on must stay unwritten (the kernel's own check has no total_padded to know it by).
    """

    name: str
    kernel: str
    ins: Mapping[str, str]
    outs: Mapping[str, str]
    views: Mapping[str, np.dtype] = field(default_factory=dict)
    fed_by: tuple[str, ...] = ()
    per_token: str | None = None
    bounded: bool = False

    @property
    def sampled(self) -> bool:
        """True when the stage's outputs are partial in a sampled run (a GEMM, or a stage fed by one)."""
        return self.kernel.startswith("grouped_gemm") or bool(self.fed_by)


def _gemm(name: str, kernel: str, a: str, w: str, c: str, scales: tuple[str, str] | None = None,
          fed: bool = False) -> Stage:
    """A grouped GEMM stage c = a @ w[expert].T (scales: a's and w's, the fp8 GEMM's); fed: a (and its scales) come
    from a sampled GEMM upstream."""
    ins = {"a": a, "w": w, "block_expert": "block_expert", "total_padded": "total_padded"}
    if scales:
        ins |= {"a_scale": scales[0], "w_scale": scales[1]}
    fed_by = (a, scales[0]) if scales else (a,)
    return Stage(name, kernel, ins, {"c": c}, fed_by=fed_by if fed else ())


_ROUTING = (
    Stage("gate", "gate", {"logits": "logits", "bias": "bias"}, {"topk_ids": "topk_ids", "topk_w": "topk_w"}),
    Stage("align", "align", {"topk_ids": "topk_ids"},
          {k: k for k in ("counts", "offsets", "total_padded", "sorted_ids", "block_expert", "inverse")}),
)
_SWIGLU = Stage("swiglu", "swiglu", {"h": "h", "total_padded": "total_padded"}, {"a": "a"}, fed_by=("h",))
_COMBINE = Stage("combine", "combine", {"y": "y", "topk_w": "topk_w", "inverse": "inverse"}, {"out": "out"},
                 fed_by=("y",), per_token="inverse")
_ROUTE = {"sorted_ids": "sorted_ids", "total_padded": "total_padded"}
LAYER_STAGES = (  # the bf16 layer (contract.layer._launch_bf16)
    Stage("act_quant", "act_quant", {"a": "x"}, {"q": "q", "scale": "scale"}),
    *_ROUTING,
    Stage("permute", "permute", {"x": "x", **_ROUTE}, {"xp": "xp"}),
    _gemm("grouped_gemm.up", "grouped_gemm", "xp", "W1", "h"),
    _SWIGLU,
    _gemm("grouped_gemm.down", "grouped_gemm", "a", "W2", "y", fed=True),
    _COMBINE,
)
FP8_LAYER_STAGES = (  # the fp8 layer (contract.layer._launch_fp8)
    *_ROUTING,
    Stage("act_quant", "act_quant", {"a": "x"}, {"q": "q", "scale": "scale"}),
    Stage("permute", "permute", {"x": "q", **_ROUTE}, {"xp": "xq"}, views={"q": BF16, "xq": BF16}),
    Stage("permute_scales", "permute", {"x": "scale", **_ROUTE}, {"xp": "xs"}, views={"scale": BF16, "xs": BF16}),
    _gemm("grouped_gemm_fp8.up", "grouped_gemm_fp8", "xq", "W1", "h", scales=("xs", "W1_scale")),
    _SWIGLU,
    Stage("act_quant.down", "act_quant", {"a": "a"}, {"q": "aq", "scale": "as"}, fed_by=("a",), bounded=True),
    _gemm("grouped_gemm_fp8.down", "grouped_gemm_fp8", "aq", "W2", "y", scales=("as", "W2_scale"), fed=True),
    _COMBINE,
)
STAGE_TABLES = {"bf16": LAYER_STAGES, "fp8": FP8_LAYER_STAGES}
PADDED = frozenset({"xp", "xq", "xs", "h", "a", "aq", "as", "y"})  # P_max rows, of which those past total_padded unused
ALIASES = {"act": "a"}  # an implementation's own names of the contract's intermediates (the Numba layer's "act")


def _repoison_rows(arr: np.ndarray, keep: np.ndarray, rows_per_chunk: int = 4096) -> np.ndarray:
    """`arr` with its first-axis entries outside `keep` reading as unwritten (poison bytes): `arr` itself when none of
    those holds a written byte (a sampled down GEMM wrote just the rows its sampled up GEMM defined), else a copy.
    NOTE: the copy of the down GEMM's y took 0.7 GB (1.05 GB fp8) at dsv3-prefill, to re-poison no row."""
    from contract.coverage import written

    drop = np.flatnonzero(~np.asarray(keep, bool))
    for lo in range(0, drop.size, rows_per_chunk):
        if written(arr[drop[lo: lo + rows_per_chunk]]).any():
            break
    else:
        return arr
    out = np.array(arr, copy=True)
    out.view(np.uint8).reshape(out.shape[0], -1)[drop] = POISON_BYTE
    return out


def _seen(arrays: dict, name: str, views: Mapping[str, np.dtype]) -> np.ndarray:
    """Layer array `name` as the stage's kernel sees it (Stage.views). NOTE: the others are passed as they are: the
    weights are lazy tensors at dsv3 (14 GiB materialised), of which the checks produce only the experts they use."""
    if name not in views:
        return arrays[name]
    return np.ascontiguousarray(arrays[name]).view(views[name])


def _whole_rows(arr: np.ndarray, rows_per_chunk: int = 4096) -> np.ndarray:
    """Per row of `arr`: every element written (a chunk of rows at a time: the mask of dsv3-prefill's whole xp is
    0.35 GB)."""
    from contract.coverage import written

    out = np.zeros(arr.shape[0], bool)
    for lo in range(0, arr.shape[0], rows_per_chunk):
        mask = written(arr[lo: lo + rows_per_chunk])
        out[lo: lo + rows_per_chunk] = mask.reshape(mask.shape[0], -1).all(axis=1)
    return out


def _past_total_written(stage: Stage, got: dict, total: int) -> list[str]:
    """Stage.bounded: a message per output holding written rows from total_padded on."""
    from contract.coverage import written

    out = []
    for name, arr in got.items():
        mask = written(arr[total:])
        rows = np.flatnonzero(mask.any(axis=tuple(range(1, mask.ndim))))  # no rows when total_padded == P_max
        if rows.size:
            out.append(f"{stage.outs[name]}: {rows.size} rows at or past total_padded={total} written (first "
                       f"{total + int(rows[0])}); expected them untouched")
    return out


def _check_stage(stage: Stage, arrays: dict, defined: dict, preset: Preset, total: int) -> dict:
    """One stage's verdict {ok, checked, coverage, message}; records the rows it defined in `defined`."""
    from contract.coverage import written

    got = {k: _seen(arrays, v, stage.views) for k, v in stage.outs.items()}
    problems = _past_total_written(stage, got, total) if stage.bounded else []
    if stage.fed_by:
        rows = np.logical_and.reduce([defined[src] for src in stage.fed_by])
        if stage.per_token:
            rows = rows[np.asarray(arrays[stage.per_token])].all(axis=1)
        got = {name: _repoison_rows(arr, rows) for name, arr in got.items()}
    ins = {k: _seen(arrays, v, stage.views) for k, v in stage.ins.items()}
    if stage.bounded:  # the kernel's check on the rows it works on, so its coverage counts rows < total_padded
        result = get_kernel(stage.kernel).check({k: v[:total] for k, v in got.items()},
                                                {k: v[:total] if stage.ins[k] in PADDED else v for k, v in ins.items()},
                                                preset, sampled=stage.sampled)
    else:
        result = get_kernel(stage.kernel).check(got, ins, preset, sampled=stage.sampled)
    coverage = float(result.errors.get("coverage", 1.0)) if isinstance(result.errors, dict) else 1.0
    nothing = stage.sampled and coverage == 0.0 and not any(written(a).any() for a in got.values())
    for name, arr in got.items():  # rows this stage produced from defined inputs, for the stages after it
        whole = _whole_rows(arr)
        if stage.outs[name] in PADDED:
            whole[total:] = False
        defined[stage.outs[name]] = whole
    if problems:
        return {"ok": False, "checked": True, "coverage": coverage, "message": "; ".join(problems)}
    return {"ok": bool(result.ok) or nothing, "checked": not nothing, "coverage": coverage,
            "message": "not covered: no row had all its inputs from simulated CTAs" if nothing else result.message}


def check_layer_stages(outputs: dict, inputs: dict, intermediates: dict, preset: Preset) -> CheckResult:
    """The layer after a sampled run (its big GEMM launches simulated a few routing blocks), checked stage by stage:
    each stage's contract check on the arrays it actually read and wrote, by the variant's table (STAGE_TABLES; the
    fp8 layer's inputs hold W1_scale). Stages before the GEMMs ran whole and are checked whole; a GEMM on the elements
    its simulated CTAs wrote; the stages after it (swiglu, the fp8 layer's re-quantisation, the down GEMM, combine) on
    the rows whose inputs were all produced by simulated CTAs (their other rows are computed from poison and are set
    back to unwritten before the check). A stage with no such row is reported as not covered, not failed: at
    DeepSeek-V3 decode no token has all K of its expert rows in the sampled blocks, so combine is not covered there.

    Returns a CheckResult whose errors hold each stage's ok/coverage and `coverage`, the least any stage covered.
    """
    from contract.kernels import is_fp8_layer

    table = STAGE_TABLES["fp8" if is_fp8_layer(inputs) else "bf16"]
    arrays = {**inputs, **{ALIASES.get(k, k): v for k, v in intermediates.items()}, **outputs}
    needed = {v for s in table for v in (*s.ins.values(), *s.outs.values())}
    if needed - set(arrays):
        return CheckResult(False, "layer", f"sampled layer: the run kept no {', '.join(sorted(needed - set(arrays)))} "
                           f"among its intermediates ({', '.join(sorted(intermediates))}), so it cannot be checked "
                           f"stage by stage; expected contract.layer.intermediate_specs' names",
                           {"coverage": 0.0, "sampled": True})
    total = int(np.asarray(arrays["total_padded"]).reshape(-1)[0])
    defined: dict[str, np.ndarray] = {}  # layer array -> rows whose every element came from simulated CTAs
    stages = {s.name: _check_stage(s, arrays, defined, preset, total) for s in table}
    failures = [f"{name}: {s['message']}" for name, s in stages.items() if not s["ok"]]
    first_gemm = next(s.name for s in table if s.kernel.startswith("grouped_gemm"))
    if not stages[first_gemm]["checked"] and not failures:
        failures.append(f"{first_gemm}: the simulated CTAs wrote no row of h (simulate more rows: --sample N)")
    coverage = min(s["coverage"] for s in stages.values())
    summary = ", ".join(f"{name} {'ok' if s['ok'] else 'FAILED'}" + ("" if s["checked"] else " (not covered)")
                        for name, s in stages.items())
    errors = {"stages": stages, "coverage": coverage, "sampled": True,
              "stages_checked": sum(s["checked"] for s in stages.values())}
    if failures:
        return CheckResult(False, "layer", "sampled layer, stage by stage: " + "; ".join(failures), errors)
    return CheckResult(True, "layer", f"sampled layer, stage by stage: {summary}", errors)
