"""What every token-major PTX rung of the FP8 grouped GEMM (rungs 6 on, gemm_fp8_tm_template) must do, one test per
check parametrised over RUNGS: pass kernels.md's check through ptxsim (tiny at every skew and variant on a small
persistent grid, the full grid through the ladder, the rung's other shapes: an odd N-tile count, BM 32 and 64, raster
groups of two token tiles; small), stay bit-identical to the rung below, run clean under ptxsim's sanitizers and
assemble for sm_90a with zero spills. Each rung's own checks (its PTX shape, the mutants that prove a path runs) stay
in tests/ptx_impl/test_gemm_fp8_r<N>.py.

A new rung is one `Rung(...)` entry at the end of RUNGS (the last entry is the ladder's top rung, or a rung above it
that grouped_gemm_fp8.EXTRA_RUNGS holds)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import pytest

from contract.presets import SKEWS, get_preset
from ptx_impl import (
    gemm_fp8_r5,
    gemm_fp8_r6,
    gemm_fp8_r7,
    gemm_fp8_r8,
    gemm_fp8_r9,
    gemm_fp8_r10,
    gemm_fp8_r11,
    gemm_fp8_r12,
)
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import RASTER, assembled, rung_check
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED

ALL_SANITIZERS = ("asynccheck", "racecheck", "memcheck", "initcheck", "synccheck")
BM32, BM64 = (RAGGED_BM[bm] for bm in sorted(RAGGED_BM))


@dataclass(frozen=True)
class Rung:
    """One rung's cases. shapes: (id, preset, sms) run at both variants with the seed's skew; below: the rung it must
    match bit for bit and on what (preset, variants, sms); small_grid: whether tiny at every skew and variant on 7 SMs
    runs (rung 9 runs tiny among its shapes instead)."""

    number: int
    module: ModuleType
    features: dict
    shapes: tuple[tuple[str, object, int], ...]
    sanitized: tuple[tuple[str, object], ...] = (("tiny", "tiny"), ("odd-n-tiles", RAGGED))
    sanitizers: tuple[str, ...] = ALL_SANITIZERS
    below: tuple[ModuleType, object, tuple[str, ...], int] | None = None
    small_grid: bool = True

    @property
    def transposes(self) -> bool:
        """Rungs 7 on launch scale_transpose before the GEMM (a_scale MN-major for the scales' TMA)."""
        return bool(self.features.get("tma_scales"))

    @property
    def shared(self) -> int:
        return template.shared_bytes(**self.features)


_ODD_AND_BM = (("odd-n-tiles", RAGGED, 7), ("bm32", BM32, 7), ("bm64", BM64, 7))
RUNGS = (
    Rung(6, gemm_fp8_r6, {}, (("odd-n-tiles", RAGGED, 12), ("bm32", BM32, 7), ("bm64", BM64, 7)),
         sanitizers=("asynccheck", "racecheck", "memcheck", "initcheck"), below=(gemm_fp8_r5, "tiny", ("down",), 9)),
    Rung(7, gemm_fp8_r7, {"tma_scales": True}, _ODD_AND_BM, below=(gemm_fp8_r6, "tiny", ("up",), 9)),
    Rung(8, gemm_fp8_r8, gemm_fp8_r8.FEATURES, _ODD_AND_BM, below=(gemm_fp8_r7, "tiny", ("down",), 9)),
    Rung(9, gemm_fp8_r9, gemm_fp8_r9.FEATURES, (("tiny", "tiny", 7), ("bm32", BM32, 7), ("bm64", BM64, 7),
                                                ("raster", RASTER, 6)),
         sanitized=(("raster", RASTER),), below=(gemm_fp8_r8, RASTER, ("up",), 6), small_grid=False),
    Rung(10, gemm_fp8_r10, gemm_fp8_r10.FEATURES, (*_ODD_AND_BM, ("raster", RASTER, 7)),
         below=(gemm_fp8_r9, "tiny", ("up", "down"), 9)),
    Rung(11, gemm_fp8_r11, gemm_fp8_r11.FEATURES, (*_ODD_AND_BM, ("raster", RASTER, 7)),
         below=(gemm_fp8_r10, "tiny", ("up", "down"), 9)),
    # rung 12 matches rung 11 where its pairs share the weights (RASTER: two token tiles an expert) and at tiny,
    # where a pair's blocks mostly belong to two experts (each CTA alone, or idle beside a lone head)
    Rung(12, gemm_fp8_r12, gemm_fp8_r12.FEATURES, (*_ODD_AND_BM, ("raster", RASTER, 7)),
         sanitized=(("tiny", "tiny"), ("odd-n-tiles", RAGGED), ("raster", RASTER)),
         below=(gemm_fp8_r11, RASTER, ("up", "down"), 9)),
)


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("rung", [r for r in RUNGS if r.small_grid], ids=lambda r: f"r{r.number}")
def test_tiny_on_a_small_persistent_grid(backend, rung, skew, variant, seed):
    """sms=7 rounds down to 3 clusters for 31 items (one per routing block: N = 256 is one pair of N tiles): the ring
    wraps across items, heads, non-heads and multi-block runs occur at every skew; rungs 7 on refill their
    weight-scale areas each item, rung 8 on reuse each warpgroup's store buffer, rung 10 drains odd and even groups
    (rung 11: one 256-column tile, a pair's rank 1 past N)."""
    rung_check(backend, "tiny", skew, seed, variant, rung.module.run, sms=7)
    gemm = backend.records[-1]
    assert tuple(gemm.grid) == (6, 1, 1) and gemm.shared_bytes == rung.shared <= template.SMEM_LIMIT
    if rung.transposes:
        assert backend.records[-2].name.startswith("scale_transpose")


@pytest.mark.sim
@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: f"r{r.number}")
def test_tiny_on_the_full_grid_through_the_ladder(backend, rung, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(rung.number).module == rung.module.__name__ == f"ptx_impl.gemm_fp8_r{rung.number}"
    assert rung.module.RUNG == rung.number
    if rung.number == ladder.RUNGS[-1].number:  # the top rung is the ladder's default
        assert ladder.get_rung(None).module == rung.module.__name__
    assert ladder.RUNGS[-1].number in {r.number for r in RUNGS}  # the ladder's top rung is among those tested here
    rung_check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], ladder.run,
               rung=rung.number)
    p = get_preset("tiny")  # N = 256 at both variants: 31 routing blocks x 1 N-tile pair (rung 12: 16 slots x 1)
    items = (gemm_fp8_r12.slots((p.P_max, 0, 256, p.BM, p.E)) if rung.number == 12 else p.n_blocks)
    assert items == (16 if rung.number == 12 else 31) and backend.records[-1].grid[0] == 2 * items  # < 66 clusters


@pytest.mark.sim
@pytest.mark.parametrize("rung, preset, sms", [pytest.param(r, preset, sms, id=f"r{r.number}-{name}")
                                              for r in RUNGS for name, preset, sms in r.shapes])
def test_other_shapes(backend, rung, preset, sms, seed):
    """RAGGED's down GEMM has N = 384: the last pair's rank 1 has no N tile, multicasts its token half and idles (rung
    8 on: stores nothing); BM 32 and 64: R = 4 and 2 routing blocks a tile (store boxes of 32 and 64 rows), at BM 64 a
    one-block run leaves the second warpgroup idle; RASTER: raster groups of two aligned groups and a short last one."""
    for variant in ("up", "down"):
        rung_check(backend, preset, SKEWS[seed % len(SKEWS)], seed, variant, rung.module.run, sms=sms)
        assert backend.records[-1].shared_bytes == rung.shared


@pytest.mark.sim
@pytest.mark.parametrize("rung, preset", [pytest.param(r, preset, id=f"r{r.number}-{name}")
                                          for r in RUNGS for name, preset in r.sanitized])
def test_sanitizers_find_nothing(rung, preset, seed):
    """asynccheck (no operand rewritten while an async copy, wgmma or bulk store uses it), racecheck (the barriers
    around the weight-scale areas and store buffers), memcheck (clamped a_scale rows, predicated stores), initcheck
    (every transposed scale the TMA reads was written), synccheck (rungs 7 on)."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=rung.sanitizers)
    rung_check(sim, preset, SKEWS[seed % len(SKEWS)], seed, "down", rung.module.run, sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: f"r{r.number}")
def test_small(backend, rung, seed):
    """One variant per run (the seed picks it and the skew), on the default grid."""
    rung_check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], rung.module.run)


@pytest.mark.sim
@pytest.mark.parametrize("rung, variant", [pytest.param(r, v, id=f"r{r.number}-{v}")
                                           for r in RUNGS if r.below for v in r.below[2]])
def test_bit_identical_to_the_rung_below(backend, rung, variant, seed):
    """The same k32 steps and the same promotion (partial x (a_scale x w_scale), fma into fp32) per output, summed in
    the same order: the tile shape, multicast, scale paths, store path, raster order or overlap a rung adds must not
    change a single bit (rung 10 at both variants: tiny up has 2 K groups an item, down 1, so both drains run)."""
    from harness.verify import run_kernel

    below, preset, _, sms = rung.below
    skew = SKEWS[seed % len(SKEWS)]
    old, new = (run_kernel(functools.partial(run, sms=sms), backend, "grouped_gemm_fp8", preset, skew, seed,
                           variant=variant)[1]["c"] for run in (below.run, rung.module.run))
    assert np.array_equal(old.view(np.uint16), new.view(np.uint16))


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: f"r{r.number}")
def test_assembles_for_sm90a_with_zero_spills(rung):
    _, usage = assembled(rung.module)
    u = usage[template.entry(**rung.features)]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u
