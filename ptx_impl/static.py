"""Static views of the hand-written PTX: the module texts and what ptxas makes of them (for the dashboard)."""
from __future__ import annotations

import functools

# kernel name -> module of the kernels this package writes itself (grouped_gemm has one module per tile).
MODULES = ("gate", "align", "permute", "act_quant", "swiglu", "combine")


def _gemm_sources() -> dict[str, str]:
    try:
        from ptx_impl.gemm_template import KERNEL_DIR, TILES
    except ImportError:
        return {}
    return {f"grouped_gemm_m{tm}": (KERNEL_DIR / tile.filename).read_text() for tm, tile in sorted(TILES.items())}


def ptx_sources() -> dict[str, str]:
    """{kernel: PTX text} for every ptx_impl kernel (grouped_gemm as one entry per tile module)."""
    import importlib

    # each at its default tile constants (gate: NJ=8 for E=256, combine: K=8), i.e. DeepSeek-V3's sizes
    out = {name: importlib.import_module(f"ptx_impl.{name}").KERNEL.ptx for name in MODULES}
    out.update(_gemm_sources())
    return out


@functools.lru_cache(maxsize=None)
def _assemble(name: str, text: str):
    from harness.toolchain import assemble

    return assemble(text, "sm_90", name=f"{name}.ptx")


def resource_reports(arch: str = "sm_90") -> dict[str, dict]:
    """{kernel: {entry: ResourceUsage}} from ptxas -v for sm_90 (registers, spills, shared, constant)."""
    if arch != "sm_90":
        from harness.toolchain import assemble

        return {name: assemble(text, arch, name=f"{name}.ptx")[1] for name, text in ptx_sources().items()}
    return {name: _assemble(name, text)[1] for name, text in ptx_sources().items()}


def cubins() -> dict[str, bytes]:
    """{kernel: sm_90 cubin} (for SASS histograms)."""
    return {name: _assemble(name, text)[0] for name, text in ptx_sources().items()}
