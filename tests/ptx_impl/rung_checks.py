"""What the tests of the token-major FP8 rungs (6 on) share: run a rung's kernel through kernels.md's check, make a
rung launch a mutated module, assemble a rung once per session, and rung 9's raster-group shape."""
import functools

from contract.presets import Preset
from harness.verify import run_and_check

# four experts of about 256 rows: 2 token tiles each, a raster group of 2 aligned groups (8 blocks of 32), 36 blocks:
# groups of 8, 8, 8, 8 and 4 blocks
RASTER = Preset("fp8-raster", T=512, H=256, E=4, K=2, G=2, TG=1, I=256, BM=32)


def rung_result(backend, preset, skew, seed, variant, run, **params):
    return run_and_check(functools.partial(run, **params), backend, "grouped_gemm_fp8", preset, skew, seed,
                         variant=variant)


def rung_check(backend, preset, skew, seed, variant, run, **params):
    result = rung_result(backend, preset, skew, seed, variant, run, **params)
    assert result.ok, f"{getattr(preset, 'name', preset)} {skew} {variant} {params} seed={seed}: {result.message}"
    return result


def launch_mutant(monkeypatch, rung_module, old: str, new: str) -> None:
    """Make the rung launch its module with `old` (which must occur exactly once) replaced by `new`."""
    good = rung_module.ptx_source()
    assert good.count(old) == 1, old
    bad = good.replace(old, new)
    monkeypatch.setattr(rung_module, "ptx_source", lambda wait_bound=0: bad)


@functools.cache
def assembled(rung_module) -> tuple:
    """(cubin, {entry: usage}) of the rung's unmutated module for sm_90a, assembled once (the zero-spill test and a
    rung's SASS checks share it)."""
    from harness.toolchain import assemble

    return assemble(rung_module.ptx_source(), "sm_90a", name=rung_module.path().name)
