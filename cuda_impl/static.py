"""Static facts of the Numba kernels for the dashboard: the PTX Numba generates and what ptxas makes of it.

Everything here works without a GPU: `numba.cuda.compile_ptx(pyfunc, signature, cc=(9, 0))` and ptxas from the wheel.
Kernels are specialised per preset (tile shapes and sizes are compile-time constants), so every function takes a
preset (default DEFAULT_PRESET, the GPU-sized prefill shape).
"""
from __future__ import annotations

from harness.errors import UnknownNameError

DEFAULT_PRESET = "dsv3-prefill"


def kernel_sources(kernel: str, preset=DEFAULT_PRESET) -> list:
    """[(pyfunc, signature)] compiled for `kernel` at `preset` ("layer" lists every kernel of the layer)."""
    from cuda_impl import SOURCE_MODULES
    from harness.presets import get_preset

    if kernel not in SOURCE_MODULES:
        raise UnknownNameError("cuda kernel", kernel, SOURCE_MODULES)
    preset = get_preset(preset)
    out = []
    for module in SOURCE_MODULES[kernel]:
        for pair in module.sources(preset):
            if pair not in out:
                out.append(pair)
    return out


def _compile(pyfunc, signature) -> str:
    """compile_ptx once per (pyfunc, signature), sharing the sim backend's cache (same cc, same text)."""
    from harness.backends.numba_abi import compile_numba

    return compile_numba(pyfunc, signature).ptx


def ptx_texts(kernel: str, preset=DEFAULT_PRESET) -> list[str]:
    """The PTX module text of every (pyfunc, signature) of `kernel` at `preset`."""
    return [_compile(fn, sig) for fn, sig in kernel_sources(kernel, preset)]


def ptx_for(kernel: str, preset=DEFAULT_PRESET) -> str:
    """The PTX Numba generated for `kernel`'s main entry (act_quant: pow2_scale=False; layer: the gate's)."""
    return ptx_texts(kernel, preset)[0]


def resource_report(kernel: str, preset=DEFAULT_PRESET, arch: str = "sm_90") -> dict:
    """{PTX entry: harness.toolchain.ResourceUsage} (registers, spills, stack, shared) from `ptxas -v`."""
    from harness.toolchain import assemble

    report = {}
    for ptx in ptx_texts(kernel, preset):
        _, usage = assemble(ptx, arch)
        report.update(usage)
    return report
