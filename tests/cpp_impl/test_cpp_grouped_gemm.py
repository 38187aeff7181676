"""cpp_impl.grouped_gemm: the NVRTC build of grouped_gemm.cu has the intended instruction mix and assembles clean, the
descriptor enforces its assumptions, and the kernel matches the float64 reference (and the PTX and Numba grouped
GEMMs) on ptxsim, and on a GPU when one is visible."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import PRESETS, SKEWS
from cpp_impl import grouped_gemm as gg

BF16 = np.dtype(ml_dtypes.bfloat16)
TILES = list(gg.TILES.values())
TILE_IDS = [t.tag for t in TILES]


def _fragments(tile: gg.CppTile) -> tuple[int, int]:
    """(FM, FN): m16 x n16 wmma fragments per warp, as the .cu lays out its 4 warps."""
    wm = 2 if tile.tm >= 32 else 1
    return tile.tm // wm // 16, tile.tn // (4 // wm) // 16


def _count(ptx: str, pattern: str) -> int:
    return len(re.findall(r"^\s+(?:@%\w+ )?" + pattern, ptx, re.MULTILINE))


# ----------------------------------------------------------------------------------------------- static: the PTX itself
def test_source_is_plain_cuda_cpp_without_inline_asm():
    from cpp_impl.nvrtc import KERNEL_DIR

    code = re.sub(r"//.*", "", (KERNEL_DIR / gg.DESCRIPTOR.file).read_text())
    assert not re.search(r"\basm\b", code), "the C++ baseline must not use inline PTX"
    for needed in ("nvcuda", "wmma::mma_sync", "__pipeline_memcpy_async", "__pipeline_wait_prior",
                   'extern "C" __global__', "__launch_bounds__"):
        assert needed in code, needed


@pytest.mark.parametrize("tile", TILES, ids=TILE_IDS)
def test_ptx_instruction_mix(tile):
    ptx = gg.DESCRIPTOR.source(**tile.defines)
    assert re.search(r"^\.target sm_90$", ptx, re.MULTILINE) and f".visible .entry {gg.ENTRY}(" in ptx
    assert re.search(r"^\.maxntid 128, 1, 1$", ptx, re.MULTILINE)  # __launch_bounds__(128)
    fm, fn = _fragments(tile)
    k16 = gg.BK // 16
    assert _count(ptx, r"wmma\.mma\.sync\.aligned\.row\.col\.m16n16k16\.f32\.bf16\.bf16\.f32") == fm * fn * k16
    assert _count(ptx, r"wmma\.load\.a\.sync\.aligned\.row\.m16n16k16(\.shared)?\.bf16") == fm * k16
    assert _count(ptx, r"wmma\.load\.b\.sync\.aligned\.col\.m16n16k16(\.shared)?\.bf16") == fn * k16
    assert _count(ptx, r"wmma\.store\.d\.sync\.aligned\.row\.m16n16k16(\.shared)?\.f32") == fm * fn
    # A + B copy slots of one slab, issued once per prologue stage and once in the loop
    slots = -(-tile.tm * gg.BK // 8 // gg.NTHREADS) + tile.tn * gg.BK // 8 // gg.NTHREADS
    assert _count(ptx, r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, 16;") == slots * tile.stages
    assert _count(ptx, r"cp\.async\.commit_group") == tile.stages
    assert _count(ptx, rf"cp\.async\.wait_group {tile.stages - 2};") == 1
    assert _count(ptx, r"st\.global\.v4\.[ub]32") == tile.tm * tile.tn // 8 // gg.NTHREADS
    assert not re.search(r"st\.global\.(u16|b16|u32|b32|f32)\b", ptx)  # only whole 16-byte output stores


@pytest.mark.parametrize("tile", TILES, ids=TILE_IDS)
def test_assembles_for_sm90_without_spills_on_tensor_cores(tile):
    from harness.toolchain import assemble, sass_histogram

    cubin, usage = assemble(gg.DESCRIPTOR.source(**tile.defines), "sm_90", name=f"grouped_gemm_{tile.tag}.ptx")
    res = usage[gg.ENTRY]
    assert res.spills == 0 and res.stack_frame_bytes == 0, res
    assert res.registers <= 128, res  # 4 CTAs of 128 threads per SM still fit the register file
    assert res.shared_bytes == tile.smem_bytes <= gg.STATIC_SHARED_LIMIT
    sass = sass_histogram(cubin)
    fm, fn = _fragments(tile)
    assert sass.get("HMMA.16816.F32.BF16", 0) == 2 * fm * fn * gg.BK // 16, sass  # one wmma = two m16n8k16
    assert sass.get("LDGSTS.E.BYPASS.128", 0) > 0, sass  # cp.async.cg 16 B
    assert sass.get("STG.E.128", 0) == tile.tm * tile.tn // 8 // gg.NTHREADS, sass
    assert sass.get("F2FP.BF16.F32.PACK_AB", 0) == tile.tm * tile.tn // 2 // gg.NTHREADS, sass


def test_ptx_modules_builds_every_tile():
    mods = gg.ptx_modules()
    assert sorted(mods) == sorted(f"grouped_gemm_{t.tag}" for t in TILES)
    assert len(set(mods.values())) == len(TILES)  # the -D constants really change the build


# ---------------------------------------------------------------------------------------------- descriptor / contract
def test_tile_choice_matches_the_ptx_path_and_rejects_others():
    assert [gg.tile_for(bm).tm for bm in (16, 32, 48, 64, 128, 192)] == [16, 32, 16, 64, 64, 64]
    assert [gg.tile_for(bm, n).tn for bm, n in ((16, 256), (32, 512), (64, 192), (64, 256), (128, 7168))] == [
        64, 64, 64, 128, 128]
    for bad in (0, 8, 24, 100, -16):
        with pytest.raises(InputError, match=rf"cpp grouped_gemm: BM={bad}"):
            gg.tile_for(bad)


def test_shared_memory_of_every_tile_fits_static_limit():
    for t in TILES:
        ring = t.stages * (t.tm + t.tn) * (gg.BK + gg.SKEW) * 2
        assert t.smem_bytes == max(ring, t.tm * (t.tn + 8) * 4) <= gg.STATIC_SHARED_LIMIT, t
        assert t.stages >= 3, t  # at least two slabs in flight behind the one being multiplied


def test_launch_config_per_preset():
    tiny = PRESETS["tiny"]
    up = gg.launch_config(tiny, "up")
    assert up.grid == (2 * tiny.I // 64, tiny.P_max // 16, 1) and up.block == (128, 1, 1) and up.shared_bytes == 0
    assert gg.launch_config(tiny, "down").grid == (tiny.H // 64, tiny.P_max // 16, 1)
    for name, p in PRESETS.items():
        for variant in ("up", "down"):
            cfg = gg.launch_config(name, variant)
            assert cfg.tile.tm == min(p.BM, 64)
            assert cfg.grid[0] * cfg.tile.tn == (2 * p.I if variant == "up" else p.H)
    with pytest.raises(InputError, match=r"variant = 'sideways', expected 'up' or 'down'"):
        gg.launch_config(tiny, "sideways")


@pytest.mark.parametrize("field,value,match", [
    ("Kd", 48, r"Kd=48 is not a positive multiple of 32"),
    ("N", 100, r"N=100 is not a positive multiple of 64"),
    ("BM", 24, r"BM=24 is not supported"),
    ("P_max", 40, r"P_max=40 rows is not a positive multiple of BM=16"),
    ("P_max", 16 * 65536, r"needs 65536 row tiles of 16; the grid's y dimension allows at most 65535"),
])
def test_shape_assumptions_raise_input_error(field, value, match):
    shapes = {"P_max": 64, "Kd": 64, "N": 64, "E": 2, "BM": 16}
    shapes[field] = value
    with pytest.raises(InputError, match=match):
        gg.launch_config(gg.GemmShapes(**shapes))


class _RecordingBackend:
    """Captures launch_ptx calls (no simulation) to check what run() passes."""

    def __init__(self):
        self.calls = []

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        self.calls.append((ptx, entry, grid, block, params, shared_bytes))
        return "record"


def _fake_args(P_max, Kd, N, E, BM, c_dtype=BF16):
    from contract.device import DeviceArray

    i32 = np.dtype(np.int32)
    return {"a": DeviceArray((P_max, Kd), BF16, 0x1000), "w": DeviceArray((E, N, Kd), BF16, 0x2000),
            "block_expert": DeviceArray((P_max // BM,), i32, 0x3000), "total_padded": DeviceArray((1,), i32, 0x4000),
            "c": DeviceArray((P_max, N), c_dtype, 0x5000)}


def test_run_passes_parameters_in_kernel_order():
    tiny = PRESETS["tiny"]
    be = _RecordingBackend()
    args = _fake_args(tiny.P_max, tiny.I, tiny.H, tiny.E, tiny.BM)
    assert gg.run(be, args, tiny, variant="down") == ["record"]
    ptx, entry, grid, block, params, shared = be.calls[0]
    assert entry == gg.ENTRY and f".visible .entry {entry}(" in ptx
    assert [p.addr for p in params[:5]] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]
    assert [int(p) for p in params[5:]] == [tiny.I, tiny.H, tiny.BM] and all(p.dtype == np.uint32 for p in params[5:])
    assert grid == (tiny.H // 64, tiny.P_max // 16, 1) and block == (128, 1, 1) and shared == 0
    decl = re.search(rf"\.entry {entry}\((.*?)\)", ptx, re.DOTALL).group(1)
    assert re.findall(r"\.param \.(u64|u32) ", decl) == ["u64"] * 5 + ["u32"] * 3


def test_run_rejects_bad_arguments_with_named_errors():
    tiny = PRESETS["tiny"]
    be = _RecordingBackend()
    bad = _fake_args(tiny.P_max, tiny.I, tiny.H, tiny.E, tiny.BM, c_dtype=np.dtype(np.float32))
    with pytest.raises(InputError, match=r"cpp grouped_gemm: c\.dtype = 'float32', expected bfloat16"):
        gg.run(be, bad, tiny)
    args = _fake_args(tiny.P_max, 40, tiny.H, tiny.E, tiny.BM)
    with pytest.raises(InputError, match=r"Kd=40"):
        gg.run(be, args, tiny)
    with pytest.raises(InputError, match=r"unknown parameter\(s\) \['tile'\]"):
        gg.run(be, _fake_args(tiny.P_max, tiny.I, tiny.H, tiny.E, tiny.BM), tiny, tile=3)
    del args["w"]
    with pytest.raises(InputError, match=r"argument = 'w'"):
        gg.run(be, args, tiny)
    assert be.calls == []


# ----------------------------------------------------------------------------------------------------- on the simulator
@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny_matches_float64_reference_on_ptxsim(skew, variant, seed):
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    result = run_and_check(gg.run, SimBackend(), "grouped_gemm", "tiny", skew, seed, variant=variant)
    assert result.ok, result.message


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("skew,variant", [("balanced", "down"), ("imbalanced", "up"), ("extreme", "down")])
def test_small_matches_float64_reference_on_ptxsim(skew, variant, seed):
    """small takes ~10 s per launch on ptxsim: every skew once, both variants between them."""
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    result = run_and_check(gg.run, SimBackend(), "grouped_gemm", "small", skew, seed, variant=variant)
    assert result.ok, result.message


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_clean_under_every_ptxsim_sanitizer(variant, seed):
    """racecheck sees fragment loads of a slab whose cp.async has not been waited for (waiting one group too few
    fails here), initcheck reads of unwritten shared memory, memcheck out-of-bounds tiles, synccheck divergent
    barriers."""
    from contract.kernels import get_kernel
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    backend = SimBackend(sanitize="all")
    skew = SKEWS[seed % len(SKEWS)]
    inputs, out, _ = run_kernel(gg.run, backend, "grouped_gemm", "tiny", skew, seed, variant=variant)
    assert backend.sanitizer_findings() == []
    result = get_kernel("grouped_gemm").check(out, inputs, PRESETS["tiny"])
    assert result.ok, result.message


def _ragged_inputs(rng, BM, E, Kd, N, n_blocks, total_blocks):
    """Hand-made routing: experts owning no rows, a block of -1 below total_padded, total_padded < P_max."""
    from contract.generators import random_bf16

    P_max = n_blocks * BM
    block_expert = np.full(n_blocks, -1, np.int32)
    owners = np.sort(rng.choice(E, size=total_blocks, replace=True))
    block_expert[:total_blocks] = owners
    block_expert[1] = -1  # a hole: skipped (left poisoned) although it lies below total_padded
    a = random_bf16(rng, (P_max, Kd))
    a[(total_blocks - 1) * BM + BM // 2: total_blocks * BM] = 0  # padding rows of the last block are zeros
    w = random_bf16(rng, (E, N, Kd), std=1.0 / np.sqrt(Kd))
    return {"a": a, "w": w, "block_expert": block_expert, "total_padded": np.array([total_blocks * BM], np.int32)}


@pytest.mark.sim
@pytest.mark.parametrize("BM,N,Kd", [(16, 128, 96), (32, 128, 64), (64, 128, 160), (128, 128, 64), (64, 192, 64)])
def test_ragged_blocks_holes_and_untouched_tail_on_ptxsim(BM, N, Kd, rng):
    """Every tile (64x128 twice: BM 64 and 128), K depths that leave the ring part-filled (96: 3 slabs < 4 stages)
    or wrap it (160: 5 slabs); holes and the tail past total_padded stay poisoned."""
    from contract.presets import Preset
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    E, n_blocks = 4, 4
    preset = Preset("ragged", T=8, H=Kd, E=E, K=2, G=2, TG=1, I=N // 2, BM=BM)
    inputs = _ragged_inputs(rng, BM, E, Kd, N, n_blocks, total_blocks=3)
    _, out, records = run_kernel(gg.run, SimBackend(), "grouped_gemm", preset, "balanced", 0, inputs=inputs)
    raw = out["c"].view(np.uint16)
    assert np.all(raw[BM: 2 * BM] == 0xFFFF), "block with expert -1 below total_padded was written"
    assert np.all(raw[3 * BM:] == 0xFFFF), "rows >= total_padded were written"
    for b in (0, 2):
        rows = slice(b * BM, (b + 1) * BM)
        ref = inputs["a"][rows].astype(np.float64) @ inputs["w"][inputs["block_expert"][b]].astype(np.float64).T
        err = np.linalg.norm(out["c"][rows].astype(np.float64) - ref) / np.linalg.norm(ref)
        assert err <= 1e-2, (b, err)
    tile = gg.tile_for(BM, N)
    assert len(records) == 1 and records[0].grid == (N // tile.tn, n_blocks * BM // tile.tm, 1)


@pytest.mark.sim
@pytest.mark.parametrize("BM,N", [(16, 128), (32, 128), (64, 128), (64, 192)])
def test_ptxsim_counts_no_shared_bank_conflicts(BM, N, rng):
    """Fragment loads of the skewed slabs, the accumulator staging and the reordered epilogue reads: zero bank
    conflicts in ptxsim's counters; the static shared memory is what the descriptor says."""
    import ptxsim

    Kd, E, P = 64, 2, 2 * BM
    shapes = gg.GemmShapes(P, Kd, N, E, BM)
    cfg = gg.launch_config(shapes)
    a = rng.standard_normal((P, Kd)).astype(BF16)
    w = rng.standard_normal((E, N, Kd)).astype(BF16)
    c = np.full((P, N), 0xFFFF, np.uint16).view(BF16)
    args = [a, w, np.array([1, -1], np.int32), np.array([P], np.int32), c, np.uint32(Kd), np.uint32(N), np.uint32(BM)]
    stats = ptxsim.launch(ptxsim.load_ptx(gg.ptx_source(shapes)).kernel(gg.ENTRY), cfg.grid, cfg.block, args)
    ref = a[:BM].astype(np.float64) @ w[1].astype(np.float64).T
    assert np.linalg.norm(c[:BM].astype(np.float64) - ref) / np.linalg.norm(ref) <= 1e-2
    assert np.all(c[BM:].view(np.uint16) == 0xFFFF)  # block of expert -1 untouched
    m = stats.metrics
    fm, fn = _fragments(cfg.tile)
    active_ctas = (N // cfg.tile.tn) * (BM // cfg.tile.tm)  # block 0 only; block 1 (expert -1) exits at once
    # every active warp issues fm*fn wmma per 16-deep K step; each counts as two m16n8k16 MMAs
    assert m["ptxsim__inst_executed_tensor.sum"] == active_ctas * 4 * fm * fn * (Kd // 16) * 2
    assert m["ptxsim__inst_executed_st_shared.sum"] > 0
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] == 0, m
    assert m["launch__shared_mem_per_block_static"] == cfg.tile.smem_bytes


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_agrees_with_the_ptx_and_numba_grouped_gemms(variant, seed):
    """Differential: the three implementations on the same inputs; per written block within kernels.md's tolerance
    of each other, and the same rows left untouched."""
    from contract.kernels import get_kernel
    from cuda_impl import grouped_gemm as numba_gg
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel
    from ptx_impl import grouped_gemm as ptx_gg

    tiny = PRESETS["tiny"]
    skew = SKEWS[seed % len(SKEWS)]
    inputs = get_kernel("grouped_gemm").make_inputs(tiny, skew, seed, variant=variant)
    outs = {name: run_kernel(run, SimBackend(), "grouped_gemm", tiny, skew, seed, inputs=inputs,
                             variant=variant)[1]["c"]
            for name, run in (("cpp", gg.run), ("ptx", ptx_gg.run), ("numba", numba_gg.run))}
    written = {name: np.any(c.view(np.uint16) != 0xFFFF, axis=1) for name, c in outs.items()}
    assert np.array_equal(written["cpp"], written["ptx"]) and np.array_equal(written["cpp"], written["numba"])
    assert written["cpp"].any() and not written["cpp"].all()  # some blocks computed, padding tail untouched
    for b, e in enumerate(inputs["block_expert"]):
        rows = slice(b * tiny.BM, (b + 1) * tiny.BM)
        if e < 0 or not written["cpp"][rows].any():
            continue
        cpp = outs["cpp"][rows].astype(np.float64)
        for other in ("ptx", "numba"):
            ref = outs[other][rows].astype(np.float64)
            err = np.linalg.norm(cpp - ref) / max(np.linalg.norm(ref), 1e-30)
            assert err <= 1e-2, (other, b, err)


# ------------------------------------------------------------------------------------------------------------ on a GPU
# tiny, small, and small with the 64- and 128-row blocks of the dsv3 presets (and I=96 for the 64x64 tile), so every
# tile runs on the GPU without drawing dsv3's weights on the host.
_GPU_PRESETS = {"tiny": {}, "small": {}, "small-bm64": {"BM": 64}, "small-bm128": {"BM": 128},
                "small-bm64-i96": {"BM": 64, "I": 96}}


def _gpu_preset(name):
    from dataclasses import replace

    return replace(PRESETS[name] if name in PRESETS else PRESETS["small"], name=name, **_GPU_PRESETS[name])


@pytest.mark.gpu
@pytest.mark.parametrize("preset", list(_GPU_PRESETS))
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", ["balanced", "extreme"])
def test_matches_float64_reference_on_gpu(preset, variant, skew, seed):
    from harness.backends.gpu import GpuBackend
    from harness.verify import run_and_check

    p = _gpu_preset(preset)
    assert gg.launch_config(p, variant).tile in TILES
    result = run_and_check(gg.run, GpuBackend(), "grouped_gemm", p, skew, seed, variant=variant)
    assert result.ok, result.message


def test_gpu_presets_cover_every_tile():
    used = {gg.launch_config(_gpu_preset(name), v).tile for name in _GPU_PRESETS for v in ("up", "down")}
    assert used == set(TILES)
