"""Run one implementation of one kernel on a backend with fresh inputs and poisoned outputs, then check it.

Backends that accept lazy tensors (`backend.lazy_inputs`, the sim backend) get the big inputs as keyed tensors whose
pages are produced only when a simulated CTA touches them; a sampled simulation (ptxsim `sample_ctas`) is checked on
exactly the output elements its CTAs wrote, and the check says how much of the output that covered.
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
