"""Run one rung of the PTX FP8 ladder, unmodified or with one mutation, on ptxsim with every sanitizer on, and say
what (if anything) caught it.

The shape: Kd = 1664 (13 slabs of 128: every stage of the 4-stage ring is filled at least three times, so refilled at
least twice, in every item, and the last slab sits in stage 0, which rungs 2 and 3 reuse for the epilogue), N = 128
(one weight tile), 8 token tiles of 16 rows. The values (tokens, weights, both scales) are fresh random data from the
seed; the routing layout is fixed so that every path of every rung runs on every seed: rung 5's
pair items are two multicast pairs (tiles 0, 1 of expert 0 and 4, 5 of expert 3), a pair of two experts (2, 3), and
a pair whose rank 1 is past total_padded (6, 7: a dead CTA that only arrives on its full barriers); rungs 2 and 3
see a CTA that exits at once; rungs 4, 5 and 6 run persistent grids whose CTAs walk several items (the ring runs on
across items). Rung 6's tiles start at the head blocks 0, 2, 3 and 4 (runs of 2, 1, 1 and 3 blocks: its second
warpgroup is idle in every tile); its shape has N = 384 (PRESET_N384), so its first N-tile pair has both ranks
computing and its second a rank 1 past the last N tile that only multicasts tokens.
"""
from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass

import numpy as np

from contract.presets import Preset
from tests.mutations.edits import apply_edits
from tests.mutations.table import MUTATIONS, Mutation

KERNEL = "grouped_gemm_fp8"
PRESET = Preset("mutations-k13", T=32, H=1664, E=4, K=2, G=1, TG=1, I=64, BM=16)  # up: Kd = 1664, N = 128
# rungs 6 and 7's shape: N = 384, three 128-column N tiles, so the first N-tile pair has both ranks computing (a peer
# reads each multicast stage) and the second has rank 1 past the last tile (tokens only); same routing layout
PRESET_N384 = Preset("mutations-k13-n384", T=32, H=1664, E=4, K=2, G=1, TG=1, I=192, BM=16)
# rung 11's (256-column tiles): N = 640, a pair of whole tiles, then a narrow tile (its upper half past N) beside a
# rank 1 past the last tile (tokens only)
PRESET_N640 = Preset("mutations-k13-n640", T=32, H=1664, E=4, K=2, G=1, TG=1, I=320, BM=16)
# rung 12's (pairs of token tiles sharing the weight tile): rung 11's N = 640 at BM = 64, so R = 2 blocks make a tile
# and the 8 blocks four aligned groups, with its own layout (BLOCK_EXPERT_R12): its slots pair blocks (0, 2) (two
# experts' heads: each CTA alone), (1, 3) (rank 1's block a continuation: idle beside a lone head), (4, 6) (two heads
# of expert 3: the weight multicast, rank 1's run one block, so its second warpgroup idles) and (5, 7) (no head:
# skipped); one cluster walks them
PRESET_N640_BM64 = Preset("mutations-k13-n640-bm64", T=128, H=1664, E=4, K=2, G=1, TG=1, I=320, BM=64)
BLOCK_EXPERT_R12 = (0, 1, 2, 2, 3, 3, 3, -1)
VARIANT = "up"
BLOCK_EXPERT = (0, 0, 1, 2, 3, 3, 3, -1)  # 8 routing blocks (BM = 16: 8 token tiles, P_max = 128)
TOTAL_PADDED_BLOCKS = 7  # block 7 lies past total_padded: never computed, never written
SANITIZE = "all"
# NOTE: a hang is a launch past its warp-instruction budget, which no machine load can change. The slowest unmutated
# launch, rung 12's at N = 640 and BM = 64, runs 262,036 warp-instructions on every seed (rung 11's at N = 640:
# 175,472; rung 9's at N = 384: 124,028; rungs 2-5: 47,233-57,513; the control flow does not depend on the data);
# BUDGET_MARGIN times that leaves room for a mutant that legitimately runs longer (retries, extra waits) to be caught
# by what it breaks rather than as a hang. __main__ fails a run whose clean launches come within the margin of BUDGET.
BUDGET_MARGIN = 8
BUDGET = 2_500_000  # warp-instructions per launch (>= BUDGET_MARGIN x the slowest clean launch, below)
# The wall-clock limit is only a safety net (a launch whose simulation stalls on something the budget does not count):
# a mutant it stops is reported as `wall-clock`, never as caught, since its outcome would depend on the machine's load.
BACKSTOP_S = 1800.0
RUNGS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
WALL_CLOCK = "wall-clock"


@dataclass(frozen=True)
class Target:
    """What one rung launches: its module text, the entry the suite's shape picks, and how to run it."""

    rung: int
    ptx: str
    entry: str
    run: object  # run(backend, args, preset) -> [LaunchRecord]
    preset: Preset = PRESET
    block_expert: tuple[int, ...] = BLOCK_EXPERT


def target(rung: int) -> Target:
    from ptx_impl import (
        gemm_fp8_r2,
        gemm_fp8_r3,
        gemm_fp8_r4,
        gemm_fp8_r5,
        gemm_fp8_r6,
        gemm_fp8_r7,
        gemm_fp8_r8,
        gemm_fp8_r9,
        gemm_fp8_r10,
        gemm_fp8_r11,
        gemm_fp8_r12,
    )
    from ptx_impl import gemm_fp8_tm_template as tm
    from ptx_impl import gemm_fp8_ws_template as ws

    tt = PRESET.BM  # BM = 16: the 16-token entries
    if rung == 2:
        return Target(2, gemm_fp8_r2.ptx_source(), gemm_fp8_r2.ENTRIES[tt], gemm_fp8_r2.run)
    if rung == 3:
        return Target(3, gemm_fp8_r3.ptx_source(), gemm_fp8_r3.ENTRIES[tt], gemm_fp8_r3.run)
    if rung == 4:  # 2 CTAs walk the 8 items: 4 items x 12 slabs each through one ring
        return Target(4, gemm_fp8_r4.ptx_source(tt), ws.entry(False, tt), functools.partial(gemm_fp8_r4.run, sms=2))
    if rung == 5:  # 2 clusters walk the 4 pair items
        return Target(5, gemm_fp8_r5.ptx_source(tt), ws.entry(True, tt), functools.partial(gemm_fp8_r5.run, sms=4))
    if rung == 6:  # 2 clusters walk the 16 (block, N-tile pair) items; live heads: blocks 0, 2, 3, 4
        return Target(6, gemm_fp8_r6.ptx_source(), tm.ENTRY, functools.partial(gemm_fp8_r6.run, sms=4), PRESET_N384)
    if rung == 7:  # rung 6's walk; the transpose launch before it runs unmutated
        return Target(7, gemm_fp8_r7.ptx_source(), tm.ENTRY7, functools.partial(gemm_fp8_r7.run, sms=4), PRESET_N384)
    if rung == 8:  # rung 7's walk; each consumer warpgroup stores its run's 16-row boxes through its buffer
        return Target(8, gemm_fp8_r8.ptx_source(), tm.entry(**gemm_fp8_r8.FEATURES),
                      functools.partial(gemm_fp8_r8.run, sms=4), PRESET_N384)
    if rung == 9:  # rung 8's; its raster group is the 8 blocks (one aligned group): pairs walk slowest
        return Target(9, gemm_fp8_r9.ptx_source(), tm.entry(**gemm_fp8_r9.FEATURES),
                      functools.partial(gemm_fp8_r9.run, sms=4), PRESET_N384)
    if rung == 10:  # rung 9's; 13 K groups, so each item drains an even group
        return Target(10, gemm_fp8_r10.ptx_source(), tm.entry(**gemm_fp8_r10.FEATURES),
                      functools.partial(gemm_fp8_r10.run, sms=4), PRESET_N384)
    if rung == 11:  # rung 9's walk over 512-column pairs: whole tiles, then a narrow tile and a tokens-only rank
        return Target(11, gemm_fp8_r11.ptx_source(), tm.entry(**gemm_fp8_r11.FEATURES),
                      functools.partial(gemm_fp8_r11.run, sms=4), PRESET_N640)
    if rung == 12:  # 1 cluster walks the 4 slots x 3 N tiles: alone, idle beside alone, multicast, skipped
        return Target(12, gemm_fp8_r12.ptx_source(), tm.entry(**gemm_fp8_r12.FEATURES),
                      functools.partial(gemm_fp8_r12.run, sms=2), PRESET_N640_BM64, BLOCK_EXPERT_R12)
    raise ValueError(f"rung={rung!r}; the mutation suite covers rungs {RUNGS}")


def mutated_ptx(mutation: Mutation) -> str:
    """The mutation's rung module with its edits applied to the launched entry (MutationError if they do not apply
    exactly as the table says)."""
    t = target(mutation.rung)
    return apply_edits(t.ptx, t.entry, mutation.edits, mutation.name)


def assemble_notes(mutation: Mutation) -> tuple[str, tuple[str, ...]]:
    """ptxas -arch=sm_90a on the mutant: ('', the codes of its info / warning lines, e.g. C7519 where ptxas injects a
    warpgroup.arrive the PTX lacks) when it assembles, (ptxas's error text, ()) when it does not; ('', ('no ptxas',))
    without a ptxas."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    from harness.errors import ToolchainError
    from harness.toolchain import ptxas_path

    try:
        ptxas = str(ptxas_path())
    except ToolchainError:
        return "", ("no ptxas",)
    with tempfile.TemporaryDirectory(prefix="ptxmoe-mutant-") as tmp:
        src = Path(tmp) / f"{mutation.name}.ptx"
        src.write_text(mutated_ptx(mutation))
        proc = subprocess.run([ptxas, "-arch=sm_90a", str(src), "-o", str(src.with_suffix(".cubin"))],
                              capture_output=True, text=True, check=False)
    if proc.returncode:
        return proc.stderr.strip() or f"ptxas exited with {proc.returncode}", ()
    return "", tuple(sorted(set(re.findall(r"\((C\d+)\)", proc.stderr + proc.stdout))))


def inputs(seed: int, preset: Preset = PRESET, block_expert: tuple[int, ...] = BLOCK_EXPERT) -> dict:
    """Fresh random values for the seed, with the fixed routing layout (`block_expert`, TOTAL_PADDED_BLOCKS)."""
    from contract.kernels import get_kernel

    got = get_kernel(KERNEL).make_inputs(preset, "balanced", seed, variant=VARIANT)
    if got["block_expert"].shape != (len(block_expert),):
        raise ValueError(f"{preset.name}: {got['block_expert'].shape[0]} routing blocks; its layout has "
                         f"{len(block_expert)}")
    got["block_expert"] = np.array(block_expert, np.int32)
    got["total_padded"] = np.array([TOTAL_PADDED_BLOCKS * preset.BM], np.int32)
    return got


@dataclass(frozen=True)
class Outcome:
    """What a run caught: `caught` names the mechanisms that fired, in order (sanitizer tools, `deadlock`, `hang`: past
    BUDGET, `fault`, `mbarrier`, `error:<class>`, `check`; `wall-clock`: the BACKSTOP_S safety net, which __main__
    reports as a failure, not a catch); `crash` is a Python exception that is not ptxsim's (a simulator bug, never a
    catch); `detail` the first message of each; `warp_instructions` the most any of its completed launches ran."""

    name: str
    rung: int
    seed: int
    caught: tuple[str, ...]
    detail: str
    crash: str = ""
    seconds: float = 0.0
    warp_instructions: int = 0

    @property
    def silent(self) -> bool:
        return not self.caught and not self.crash


def _backend(original: str, replacement: str | None):
    from harness.backends.sim import SimBackend

    class MutantBackend(SimBackend):
        """A SimBackend that launches `replacement` wherever the rung launches its own module text."""

        swapped = 0

        def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
            if replacement is not None and ptx == original:
                ptx = replacement
                self.swapped += 1
            return super().launch_ptx(ptx, entry, grid, block, params, shared_bytes=shared_bytes, tag=tag)

    return MutantBackend(sanitize=SANITIZE, time_limit=BACKSTOP_S, budget=BUDGET)


def _exception_mechanism(exc: BaseException) -> str:
    from ptxsim import errors as e

    if isinstance(exc, e.DeadlockError):
        return "deadlock"
    if isinstance(exc, e.TimeLimitExceeded):  # before its base class: the backstop, not a catch
        return WALL_CLOCK
    if isinstance(exc, e.InstructionBudgetExceeded):
        return "hang"
    if isinstance(exc, e.MemoryFault):
        return "fault"
    if isinstance(exc, e.MbarrierError):
        return "mbarrier"
    if isinstance(exc, e.SanitizerError):
        return type(exc).__name__.removesuffix("Error").lower()
    return f"error:{type(exc).__name__}"


def run(rung: int, mutation: Mutation | None, seed: int) -> Outcome:
    """Run `rung` (mutated by `mutation`, or as committed when None) once on the suite's shape with data from `seed`;
    never raises for what the run catches."""
    import time

    from contract.kernels import get_kernel
    from harness.verify import run_kernel
    from ptxsim.errors import PtxSimError

    t = target(rung)
    name = mutation.name if mutation else f"r{rung}-clean"
    replacement = mutated_ptx(mutation) if mutation else None
    backend = _backend(t.ptx, replacement)
    t0 = time.perf_counter()
    caught: list[str] = []
    details: list[str] = []
    crash = ""
    data = inputs(seed, t.preset, t.block_expert)
    try:
        _, outputs, records = run_kernel(t.run, backend, KERNEL, t.preset, "balanced", seed, inputs=data,
                                         variant=VARIANT)
    except PtxSimError as exc:
        caught.append(_exception_mechanism(exc))
        details.append(str(exc).splitlines()[0][:300])
        outputs = None
    except Exception as exc:  # noqa: BLE001 - anything else is a simulator (or harness) crash, reported as such
        crash = f"{type(exc).__name__}: {str(exc)[:300]}\n{traceback.format_exc(limit=-3)}"
        outputs = None
    if replacement is not None and backend.swapped != 1:
        crash = crash or f"the mutant was launched {backend.swapped} times; expected exactly once"
    for finding in backend.sanitizer_findings():
        if finding["tool"] not in caught:
            caught.append(finding["tool"])
            details.append(finding["text"].splitlines()[0][:300])
    if outputs is not None:
        result = get_kernel(KERNEL).check(outputs, data, t.preset, sampled=False)
        if not result.ok:
            caught.append("check")
            details.append(result.message[:300])
    most = max((r.stats.warp_instructions for r in backend.records if r.stats is not None), default=0)
    return Outcome(name, rung, seed, tuple(caught), " | ".join(details), crash, time.perf_counter() - t0, most)


def run_by_name(name: str, seed: int) -> Outcome:
    """run() of the mutation called `name`, or of rung N unmutated for `rN-clean` (picklable for worker pools)."""
    if name.endswith("-clean"):
        return run(int(name[1:name.index("-")]), None, seed)
    return run(MUTATIONS_BY_NAME[name].rung, MUTATIONS_BY_NAME[name], seed)


MUTATIONS_BY_NAME = {m.name: m for m in MUTATIONS}
