"""The hand-written PTX module texts, for static analysis (harness.impl_static assembles them with ptxas)."""
from __future__ import annotations

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
