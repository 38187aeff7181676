"""What the toolchain makes of each implementation's sources, without a GPU (for tests and the dashboard).

The implementations only hand over their sources (cuda_impl.static.kernel_sources: Numba (pyfunc, signature)
pairs; ptx_impl.static.ptx_sources: PTX texts); compiling them (numba.cuda.compile_ptx, shared with the sim
backend's cache) and assembling them (ptxas from the wheel) is the harness's job.
"""
from __future__ import annotations

import functools


def numba_ptx_texts(kernel: str, preset: str | None = None) -> list[str]:
    """The PTX module text of every (pyfunc, signature) of Numba kernel `kernel` at `preset`."""
    from cuda_impl import static
    from harness.backends.numba_abi import compile_numba

    preset = preset or static.DEFAULT_PRESET
    return [compile_numba(fn, sig).ptx for fn, sig in static.kernel_sources(kernel, preset)]


def numba_resource_report(kernel: str, preset: str | None = None, arch: str = "sm_90") -> dict:
    """{PTX entry: harness.toolchain.ResourceUsage} (registers, spills, stack, shared) from `ptxas -v`."""
    from harness.toolchain import assemble

    report = {}
    for ptx in numba_ptx_texts(kernel, preset):
        _, usage = assemble(ptx, arch)
        report.update(usage)
    return report


@functools.lru_cache(maxsize=None)
def _assemble(name: str, text: str, arch: str):
    from harness.toolchain import assemble

    return assemble(text, arch, name=f"{name}.ptx")


def ptx_resource_reports(arch: str = "sm_90") -> dict[str, dict]:
    """{kernel: {entry: ResourceUsage}} of the hand-written PTX from ptxas -v (registers, spills, shared, constant)."""
    from ptx_impl.static import ptx_sources

    return {name: _assemble(name, text, arch)[1] for name, text in ptx_sources().items()}


def ptx_cubins(arch: str = "sm_90") -> dict[str, bytes]:
    """{kernel: cubin} of the hand-written PTX (for SASS histograms)."""
    from ptx_impl.static import ptx_sources

    return {name: _assemble(name, text, arch)[0] for name, text in ptx_sources().items()}
