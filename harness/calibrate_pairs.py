"""Paired variants for `ptxmoe calibrate`: two kernels that differ in one thing, timed back to back on the GPU, and
their time ratio. One GPU run then bounds the model's ratios (what the PTX-vs-C++ question is made of) as well as its
absolute constants: a ratio cancels the clock, the launch overhead and most of what the model gets wrong in both.

    pair                          numerator / denominator                     what the ratio shows
    transpose_conflict_vs_padded  32-way bank-conflicted column stores        the shared-memory conflict cost
                                  / the same stores into a 33-word padded row
    wgmma_wait0_vs_wait1          4 chained m64n256k16 wgmma, wait_group 0     what keeping one wgmma group in flight
                                  / the same with wait_group 1                 buys
    copy_20_vs_all_sms            a grid-stride copy of 256 MiB on 20 CTAs     how much bandwidth 20 SMs reach (the
                                  / the same on one CTA per SM                 comm kernels' share)
    scalar_vs_vector_loads        the copy with 4-byte loads and stores        what 16-byte accesses buy
                                  / the same with 16-byte ones

Each side's time is the median of `repeat` event-timed launches after two warm-ups, on the gpu backend (so the fake
driver of tests/harness/fakegpu drives all of it on a CPU).
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

_HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
TRANSPOSE_REPS = 256
COPY_BYTES = 256 * 2**20
COPY_THREADS = 1024
FEW_SMS = 20
WGMMA_ITERS = 256


def _transpose_ptx(entry: str, stride: int) -> str:
    """One warp per CTA: `reps` times, thread t stores 32 words down its own row of a 32 x `stride` tile (column j
    of every thread at once: 32-way conflicted when stride = 32, conflict-free at 33), then reads its column back."""
    return _HEAD + f"""
.visible .entry {entry}(.param .u64 dst, .param .u32 reps)
{{
  .reg .pred %p<3>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  .shared .align 16 .b32 tile[{32 * stride}];
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [reps];
  mov.u32 %r0, %tid.x; mov.u32 %r1, tile;
  mul.lo.u32 %r2, %r0, {4 * stride}; add.u32 %r2, %r2, %r1;
  shl.b32 %r3, %r0, 2; add.u32 %r3, %r3, %r1;
  mov.u32 %r7, 0; mov.u32 %r8, 0;
REP:
  mov.u32 %r4, 0;
COL:
  shl.b32 %r5, %r4, 2; add.u32 %r5, %r5, %r2;
  add.u32 %r6, %r7, %r4; st.shared.u32 [%r5], %r6;
  add.u32 %r4, %r4, 1; setp.lt.u32 %p1, %r4, 32;
  @%p1 bra COL;
  bar.warp.sync -1;
  mov.u32 %r4, 0;
ROW:
  mul.lo.u32 %r5, %r4, {4 * stride}; add.u32 %r5, %r5, %r3;
  ld.shared.u32 %r6, [%r5]; add.u32 %r8, %r8, %r6;
  add.u32 %r4, %r4, 1; setp.lt.u32 %p1, %r4, 32;
  @%p1 bra ROW;
  bar.warp.sync -1;
  add.u32 %r7, %r7, 1; setp.lt.u32 %p2, %r7, %r9;
  @%p2 bra REP;
  mov.u32 %r10, %ctaid.x; shl.b32 %r10, %r10, 5; add.u32 %r10, %r10, %r0;
  mul.wide.u32 %rd2, %r10, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r8;
  ret;
}}
"""


def _copy_ptx(entry: str, vector: bool) -> str:
    """Grid-stride copy of `n` units (16-byte vectors, or 4-byte words) from src to dst."""
    unit, ld, st = ((16, "ld.global.v4.u32 {%r10, %r11, %r12, %r13}",
                     "st.global.v4.u32 [%rd6], {%r10, %r11, %r12, %r13}") if vector else
                    (4, "ld.global.u32 %r10", "st.global.u32 [%rd6], %r10"))
    return _HEAD + f"""
.visible .entry {entry}(.param .u64 src, .param .u64 dst, .param .u64 n)
{{
  .reg .pred %p<2>; .reg .b32 %r<16>; .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u64 %rd3, [n];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mov.u32 %r4, %nctaid.x;
  mad.lo.s32 %r5, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r5;
  mul.lo.s32 %r6, %r4, %r2; cvt.u64.u32 %rd7, %r6;
  setp.ge.u64 %p1, %rd4, %rd3;
  @%p1 bra DONE;
LOOP:
  mul.lo.u64 %rd8, %rd4, {unit}; add.s64 %rd5, %rd1, %rd8; add.s64 %rd6, %rd2, %rd8;
  {ld}, [%rd5];
  {st};
  add.s64 %rd4, %rd4, %rd7; setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra LOOP;
DONE:
  ret;
}}
"""


@dataclass(frozen=True)
class Side:
    """One kernel launch of a pair: PTX, entry, grid (an int, or a function of the device's SM count), block,
    `args(alloc, grid) -> list` (alloc(nbytes) gives a device buffer; grid: the CTAs this launch has)."""

    ptx: str
    entry: str
    grid: int | Callable[[int], int]
    block: int
    args: Callable


@dataclass(frozen=True)
class Pair:
    name: str
    what: str
    numerator: Side
    denominator: Side


def _transpose_args(alloc, grid: int):
    return [alloc(4 * 32 * grid), np.uint32(TRANSPOSE_REPS)]  # one word a thread


def _copy_args(unit: int):
    def make(alloc, grid: int):
        return [alloc(COPY_BYTES), alloc(COPY_BYTES), np.uint64(COPY_BYTES // unit)]
    return make


def _wgmma_args(alloc, grid: int):
    return [alloc(4), np.uint32(WGMMA_ITERS)]


def _wgmma(entry: str, wait: int) -> str:
    from ptxsim.model import hopper_benches as hb

    return hb._wgmma_kernel(entry, hb.WGMMA_TP_N, "bf16", hb.WGMMA_TP_PER_GROUP, wait)


def _all(sms: int) -> int:
    return sms


_VEC = _copy_ptx("pair_copy_v4", vector=True)
PAIRS = {p.name: p for p in (
    Pair("transpose_conflict_vs_padded", "32-way bank-conflicted column stores / the same into 33-word padded rows",
         Side(_transpose_ptx("pair_transpose_conflict", 32), "pair_transpose_conflict", _all, 32, _transpose_args),
         Side(_transpose_ptx("pair_transpose_padded", 33), "pair_transpose_padded", _all, 32, _transpose_args)),
    Pair("wgmma_wait0_vs_wait1", "m64n256k16 wgmma groups with wait_group 0 / with wait_group 1 (one in flight)",
         Side(_wgmma("pair_wgmma_wait0", 0), "pair_wgmma_wait0", lambda sms: 2 * sms, 256, _wgmma_args),
         Side(_wgmma("pair_wgmma_wait1", 1), "pair_wgmma_wait1", lambda sms: 2 * sms, 256, _wgmma_args)),
    Pair("copy_20_vs_all_sms", f"a 256 MiB grid-stride copy on {FEW_SMS} CTAs / on one CTA per SM",
         Side(_VEC, "pair_copy_v4", FEW_SMS, COPY_THREADS, _copy_args(16)),
         Side(_VEC, "pair_copy_v4", _all, COPY_THREADS, _copy_args(16))),
    Pair("scalar_vs_vector_loads", "the 256 MiB copy with 4-byte accesses / with 16-byte ones, one CTA per SM",
         Side(_copy_ptx("pair_copy_u32", vector=False), "pair_copy_u32", _all, COPY_THREADS, _copy_args(4)),
         Side(_VEC, "pair_copy_v4", _all, COPY_THREADS, _copy_args(16))),
)}


def grid_of(side: Side, sms: int) -> int:
    return int(side.grid(sms) if callable(side.grid) else side.grid)


def _seconds(backend, side: Side, sms: int, repeat: int) -> float:
    def alloc(nbytes: int):
        return backend.empty((int(nbytes),), np.uint8, fill_byte=0)

    grid = grid_of(side, sms)
    args = side.args(alloc, grid)
    times = []
    for i in range(repeat + 2):
        record = backend.launch_ptx(side.ptx, side.entry, grid, side.block, args)
        if i >= 2:
            times.append(record.stats.elapsed_ms() * 1e-3)
    backend.records.clear()
    return statistics.median(times)


def measure_pairs(backend, repeat: int, names=None) -> dict[str, dict]:
    """{pair: {"ratio", "numerator_us", "denominator_us", "what", "sms"}} measured on a GpuBackend (events)."""
    sms = int(backend.sm_count()) if hasattr(backend, "sm_count") else 132
    out = {}
    for name in names or PAIRS:
        pair = PAIRS[name]
        top, bottom = _seconds(backend, pair.numerator, sms, repeat), _seconds(backend, pair.denominator, sms, repeat)
        out[name] = {"ratio": top / bottom if bottom > 0 else None, "numerator_us": top * 1e6,
                     "denominator_us": bottom * 1e6, "what": pair.what, "sms": sms}
    return out


def check_ratios(ratios, where: str) -> dict:
    """A ratios object from a measurement file: {known pair: {"ratio": positive number, ...}}; ValueError naming the
    bad entry otherwise."""
    if not isinstance(ratios, dict):
        raise ValueError(f"{where}: 'ratios' must be an object of pair name -> {{ratio, ...}}, got {ratios!r}")
    for name, entry in ratios.items():
        if name not in PAIRS:
            raise ValueError(f"{where}: unknown pair {name!r}; expected one of {', '.join(PAIRS)}")
        value = entry.get("ratio") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{where}: pair {name!r} has ratio {value!r}; expected a positive number")
    return ratios
