"""The Numba kernels' sources per preset, for static analysis (harness.impl_static compiles and assembles them).

Kernels are specialised per preset (tile shapes and sizes are compile-time constants), so `kernel_sources` takes a
preset (default DEFAULT_PRESET, the GPU-sized prefill shape).
"""
from __future__ import annotations

from contract.errors import UnknownNameError

DEFAULT_PRESET = "dsv3-prefill"


def source_modules() -> dict:
    """{kernel: (its module,)}, and "layer": every module of the bf16 layer (imported now)."""
    import importlib

    from cuda_impl.names import KERNEL_NAMES, LAYER_KERNELS

    mods = {k: (importlib.import_module(f"cuda_impl.{k}"),) for k in KERNEL_NAMES}
    mods["layer"] = tuple(mods[k][0] for k in LAYER_KERNELS)
    return mods


def kernel_sources(kernel: str, preset=DEFAULT_PRESET) -> list:
    """[(pyfunc, signature)] compiled for `kernel` at `preset` ("layer" lists every kernel of the layer)."""
    from contract.presets import get_preset

    SOURCE_MODULES = source_modules()  # noqa: N806 - the package's table of the same name

    if kernel not in SOURCE_MODULES:
        raise UnknownNameError("cuda kernel", kernel, SOURCE_MODULES)
    preset = get_preset(preset)
    out = []
    for module in SOURCE_MODULES[kernel]:
        for pair in module.sources(preset):
            if pair not in out:
                out.append(pair)
    return out
