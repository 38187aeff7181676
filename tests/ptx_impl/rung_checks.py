"""What the tests of the token-major FP8 rungs (6 and 7) share: run a rung's kernel through kernels.md's check, and
make a rung launch a mutated module."""
import functools

from harness.verify import run_and_check


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
