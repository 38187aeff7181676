"""Run one implementation of one kernel on a backend with fresh inputs and poisoned outputs, then check it."""
from __future__ import annotations

from typing import Callable

import numpy as np

from contract.checks import CheckResult
from contract.kernels import POISON_BYTE, get_kernel
from contract.presets import Preset, get_preset


def run_kernel(run: Callable, backend, kernel: str, preset: Preset | str, skew: str, seed: int, inputs=None,
               **params) -> tuple[dict, dict, list]:
    """Returns (host inputs, host outputs, launch records). `inputs` may be given to run two paths on the same data."""
    preset = get_preset(preset)
    spec = get_kernel(kernel)
    if inputs is None:
        inputs = spec.make_inputs(preset, skew, seed, **params)
    args = {name: backend.to_device(np.ascontiguousarray(arr)) for name, arr in inputs.items()}
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
                  **params) -> CheckResult:
    """Fresh seeded inputs, poisoned outputs, run, check against kernels.md. Never raises on a wrong answer."""
    preset = get_preset(preset)
    inputs, outputs, _ = run_kernel(run, backend, kernel, preset, skew, seed, **params)
    check_params = {k: v for k, v in params.items() if k != "variant"}
    return get_kernel(kernel).check(outputs, inputs, preset, **check_params)
