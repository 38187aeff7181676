"""Every PTX file generated from a template, in one registry, and the one way to regenerate them.

TEMPLATE_MODULES (shaped like harness.cli.COMMAND_MODULES) lists the template modules; `generated()` maps each file
of ptx_impl/kernels/ a template renders to the call that renders it. `make ptx` (`python -m ptx_impl.generated`)
rewrites them all; `python -m ptx_impl.generated --check` lists the stale ones (exit 1), and
tests/ptx_impl/test_generated_ptx.py is the one test that renders each and compares it with the checked-in file.
The other .ptx files there are written by hand.
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"

TEMPLATE_MODULES = (
    "ptx_impl.gemm_template",  # the bf16 grouped GEMM, one file per tile
    "ptx_impl.gemm_fp8_template",  # FP8 ladder rung 1 (mma.sync)
    "ptx_impl.gemm_fp8_wgmma_template",  # FP8 rungs 2 (wgmma) and 3 (+TMA, mbarriers)
    "ptx_impl.gemm_fp8_ws_template",  # FP8 rungs 4 (warp-specialised) and 5 (+clusters, multicast)
    "ptx_impl.gemm_fp8_tm_template",  # FP8 rungs 6 (token-major 128 x 128 tiles, 7 stages), 7 (+scales by TMA), 8-12
)


_WIDE = {"tma_scales": True, "tma_store": True, "raster": True}  # rungs 11, 12: rung 9's flags with wide=True


def _files(module) -> dict[str, Callable[[], str]]:
    """{file name: render call} of one template module, read from the tables each template already keeps."""
    name = module.__name__
    if name == "ptx_impl.gemm_template":
        return {tile.filename: partial(module.render, tile) for tile in module.TILES.values()}
    if name == "ptx_impl.gemm_fp8_template":
        return {module.PATH.name: module.render}
    if name == "ptx_impl.gemm_fp8_wgmma_template":
        return {path.name: partial(module.render, rung) for rung, path in module.FILES.items()}
    if name == "ptx_impl.gemm_fp8_ws_template":
        return {module.path(cluster, tokens).name: partial(module.render, cluster, tokens)
                for cluster in (False, True) for tokens in module.TOKEN_TILES}
    if name == "ptx_impl.gemm_fp8_tm_template":
        rungs = {module.path(ts, to, rs, ov).name:
                 partial(module.render, tma_scales=ts, tma_store=to, raster=rs, overlap=ov)
                 for ts, to, rs, ov in ((False, False, False, False), (True, False, False, False),
                                        (True, True, False, False), (True, True, True, False),
                                        (True, True, True, True))}
        return rungs | {module.path(wide=True, mcw=mc, **_WIDE).name: partial(module.render, wide=True, mcw=mc, **_WIDE)
                        for mc in (False, True)}
    raise KeyError(f"{name}: a template module without an entry in ptx_impl.generated._files")


def generated() -> dict[str, tuple[str, Callable[[], str]]]:
    """{file name in ptx_impl/kernels: (template module, render call)} for every generated file."""
    out: dict[str, tuple[str, Callable[[], str]]] = {}
    for module_name in TEMPLATE_MODULES:
        for file_name, render in _files(importlib.import_module(module_name)).items():
            if file_name in out:
                raise KeyError(f"{file_name} is rendered by both {out[file_name][0]} and {module_name}")
            out[file_name] = (module_name, render)
    return out


def stale(directory: Path = KERNEL_DIR) -> list[str]:
    """The generated files whose checked-in text is not what their template renders (or that are missing)."""
    out = []
    for file_name, (_, render) in generated().items():
        path = directory / file_name
        if not path.is_file() or path.read_text() != render():
            out.append(file_name)
    return out


def write_all(directory: Path = KERNEL_DIR) -> list[Path]:
    """Render every generated file into `directory`, each written atomically (temporary file, then rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, (_, render) in generated().items():
        target = directory / file_name
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=file_name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(render())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the checked-in file is an ordinary readable source
        os.replace(tmp, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        old = stale()
        for name in old:
            print(f"stale: {name} (run `make ptx`)")
        return 1 if old else 0
    if args:
        print("usage: python -m ptx_impl.generated [--check]", file=sys.stderr)
        return 2
    for path in write_all():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
