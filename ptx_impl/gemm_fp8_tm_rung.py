"""The four things every token-major rung (6 and up) says the same way about its GEMM kernel, written once.

A rung module binds them from its template flags and the rung below it:

    FEATURES = {**r9.FEATURES, "wide": True}
    path, ptx_source, ptx_modules, default_sms = gemm_fp8_tm_rung.kernel(FEATURES, below=r9)

- path(): the checked-in PTX file, gemm_fp8_tm_template.path(**FEATURES);
- ptx_source(wait_bound=0): that file's text, or with wait_bound > 0 the variant whose mbarrier waits trap after that
  many failed tries (gemm_fp8_tm_template.render(wait_bound, **FEATURES)); cached per wait_bound;
- ptx_modules(): {module name: PTX text} for static analysis: this rung's GEMM, then the helper modules of `below`
  (its modules but its own GEMM), then `extra` (a rung's new helper modules: {name: zero-argument source function});
- default_sms(backend): the persistent grid a GPU backend's persistent_ctas gives for this kernel's clusters, or
  gemm_fp8_r4.SMS (132) on a backend without it (the simulator).
"""
from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Callable, NamedTuple

from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_tm_template as template


class RungKernel(NamedTuple):
    path: Callable[[], Path]
    ptx_source: Callable[..., str]
    ptx_modules: Callable[[], dict[str, str]]
    default_sms: Callable[[object], int]


def kernel(features: dict, below: ModuleType | None = None,
           extra: dict[str, Callable[[], str]] | None = None) -> RungKernel:
    """The rung's path, ptx_source, ptx_modules and default_sms (the module docstring says what each returns).

    Args:
        features: gemm_fp8_tm_template's flags of the rung (tma_scales, tma_store, raster, overlap, wide).
        below: the rung module it builds on, whose helper PTX modules (not its GEMM) it also launches; None for none.
        extra: helper PTX modules this rung adds, {module name: function returning the text}.
    """
    features = dict(features)

    def path() -> Path:
        return template.path(**features)

    @functools.cache
    def ptx_source(wait_bound: int = 0) -> str:
        """The GEMM's PTX module text: the checked-in file, or with wait_bound > 0 the variant whose waits trap."""
        return template.render(wait_bound, **features) if wait_bound else path().read_text(encoding="utf-8")

    def ptx_modules() -> dict[str, str]:
        """{module name: PTX text}, for static analysis."""
        helpers = {} if below is None else {k: v for k, v in below.ptx_modules().items() if k != below.path().stem}
        return {path().stem: ptx_source(), **helpers, **{name: text() for name, text in (extra or {}).items()}}

    def default_sms(backend) -> int:
        ask = getattr(backend, "persistent_ctas", None)
        if ask is None:
            return r4.SMS
        return int(ask(ptx_source(), template.entry(**features), (template.THREADS, 1, 1),
                       template.shared_bytes(**features), template.CLUSTER_CTAS))

    return RungKernel(path, ptx_source, ptx_modules, default_sms)
