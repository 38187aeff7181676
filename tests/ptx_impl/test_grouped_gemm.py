"""ptx_impl.grouped_gemm: the PTX assembles clean, the fragment layout is right (NumPy model), the descriptor enforces
its assumptions, and the kernel matches the float64 reference on ptxsim (and on a GPU when one is visible)."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from harness.errors import InputError
from ptx_impl import gemm_template as gt
from ptx_impl import grouped_gemm as gg

BF16 = np.dtype(ml_dtypes.bfloat16)
TILES = list(gt.TILES.values())


def _has_ptxsim() -> bool:
    try:
        import ptxsim

        return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")
    except ImportError:
        return False


def _ptxsim_gap() -> str | None:
    """Why ptxsim cannot run these kernels yet (None when it can): missing API or an instruction it cannot decode."""
    if not _has_ptxsim():
        return "ptxsim.Device / ptxsim.load_ptx not landed yet"
    import ptxsim

    for tile in gt.TILES.values():
        try:
            ptxsim.load_ptx(gt.render(tile)).kernel(tile.entry)
        except (ptxsim.UnsupportedInstruction, ptxsim.DecodeError) as exc:
            return f"ptxsim lacks an instruction {tile.entry} uses: {exc}"
    return None


_GAP = _ptxsim_gap()
needs_ptxsim = pytest.mark.skipif(_GAP is not None, reason=str(_GAP))

CVT_BF16X2_PTX = """
.version 8.4
.target sm_90
.address_size 64
.visible .entry cvt_bf16x2(.param .u64 out)
{
    .reg .b32 %r;
    .reg .f32 %hi, %lo;
    .reg .b64 %p;
    ld.param.u64 %p, [out];
    cvta.to.global.u64 %p, %p;
    mov.f32 %hi, 0f3FC00000;
    mov.f32 %lo, 0fC0000000;
    cvt.rn.bf16x2.f32 %r, %hi, %lo;
    st.global.b32 [%p], %r;
    ret;
}
"""


@pytest.mark.skipif(not _has_ptxsim(), reason="ptxsim.Device / ptxsim.load_ptx not landed yet")
def test_ptxsim_runs_cvt_rn_bf16x2_f32():
    """The epilogue's packing, alone: ptxsim once decoded it as a float -> int cvt (fixed in 7f10cdf)."""
    import ptxsim

    out = np.zeros(1, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(CVT_BF16X2_PTX).kernel("cvt_bf16x2"), 1, 1, [out])
    assert int(out[0]) == 0x3FC0C000  # bf16(1.5) in the high half, bf16(-2.0) in the low half


# ----------------------------------------------------------------------------------------------- static: the PTX itself
@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"m{t.tm}n{t.tn}")
def test_ptx_header_and_instruction_mix(tile):
    ptx = gt.render(tile)
    version = re.search(r"^\.version (\d+)\.(\d+)$", ptx, re.M)
    assert version and (int(version.group(1)), int(version.group(2))) <= (8, 4)
    assert re.search(r"^\.target sm_90$", ptx, re.M) and re.search(r"^\.address_size 64$", ptx, re.M)
    count = lambda pat: len(re.findall(r"^ +(?:@%\w+ )?" + pat, ptx, re.M))  # noqa: E731 - instruction lines only
    k16_steps = tile.bk // 16
    assert count(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32") == tile.mf * tile.nf * k16_steps
    assert count(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16") == (tile.mf + tile.nf // 2) * k16_steps
    # A and B copy slots, issued once per prologue stage and once in the loop.
    slots = max(1, tile.a_chunks // gt.NTHREADS) + tile.b_chunks // gt.NTHREADS
    assert count(r"cp\.async\.cg\.shared\.global \[%t0\], \[%g[ab]\d+\], 16;") == slots * tile.stages
    assert count(r"cp\.async\.commit_group") == tile.stages
    assert count(rf"cp\.async\.wait_group {tile.stages - 2};") == 1
    assert count(r"cvt\.rn\.bf16x2\.f32") == 2 * tile.mf * tile.nf
    assert count(r"st\.global\.v4\.b32") == tile.tm * tile.tn // 8 // gt.NTHREADS
    assert "st.global.b32" not in ptx and "st.global.b16" not in ptx  # only full 16-byte stores


@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"m{t.tm}n{t.tn}")
def test_assembles_for_sm90_without_spills_and_uses_tensor_cores(tile):
    from harness.toolchain import assemble, sass_histogram

    cubin, usage = assemble(gt.render(tile), "sm_90", name=tile.filename)
    res = usage[tile.entry]
    assert res.spills == 0 and res.stack_frame_bytes == 0, res
    assert res.registers <= 128, res  # leaves room for 4 CTAs of 128 threads per SM
    assert res.shared_bytes == tile.smem_bytes
    sass = sass_histogram(cubin)
    steps = tile.bk // 16
    assert sass.get("HMMA.16816.F32.BF16", 0) == tile.mf * tile.nf * steps, sass
    assert sass.get("LDSM.16.M88.4", 0) == (tile.mf + tile.nf // 2) * steps, sass
    assert any(k.startswith("LDGSTS") and k.endswith(".128") for k in sass), sass
    assert sass.get("STG.E.128", 0) == tile.tm * tile.tn // 8 // gt.NTHREADS, sass
    assert sass.get("F2FP.BF16.F32.PACK_AB", 0) == 2 * tile.mf * tile.nf, sass


# --------------------------------------------------------------------- NumPy model of the kernel's data movement/layout
def _ldmatrix_x4(smem: np.ndarray, lane_addr: np.ndarray) -> np.ndarray:
    """ldmatrix.m8n8.x4.b16 (non-trans): lanes 8j..8j+7 give matrix j's row addresses; lane l receives, per matrix j,
    the 32-bit word holding row l>>2, elements 2*(l&3) and 2*(l&3)+1. Returns uint32[32 lanes, 4 regs]."""
    assert np.all(lane_addr % 16 == 0), "ldmatrix rows must be 16-byte aligned"
    rows = smem[lane_addr[:, None] + np.arange(16)].view(np.uint32)  # [32 row addresses, 4 words]
    lane = np.arange(32)
    return np.stack([rows[8 * j + (lane >> 2), lane & 3] for j in range(4)], axis=1)


def _bf16_pair(word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = (word & 0xFFFF).astype(np.uint16).view(BF16).astype(np.float64)
    hi = (word >> 16).astype(np.uint16).view(BF16).astype(np.float64)
    return lo, hi


def _mma_m16n8k16(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """mma.m16n8k16.row.col with the ptx-notes fragment layouts; a_regs [32,4], b_regs [32,2], acc [32,4] float64."""
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    A = np.full((16, 16), np.nan)
    B = np.full((16, 8), np.nan)
    for i in range(8):
        row = g + (0 if i in (0, 1, 4, 5) else 8)
        col = 2 * t + (i & 1) + (8 if i >= 4 else 0)
        lo, hi = _bf16_pair(a_regs[:, i // 2])
        A[row, col] = hi if i & 1 else lo
    for i in range(4):
        lo, hi = _bf16_pair(b_regs[:, i // 2])
        B[2 * t + (i & 1) + (8 if i >= 2 else 0), g] = hi if i & 1 else lo
    assert not np.isnan(A).any() and not np.isnan(B).any(), "fragment layout leaves holes"
    D = A @ B
    out = acc.copy()
    for i in range(4):
        out[:, i] += D[g + (8 if i >= 2 else 0), 2 * t + (i & 1)]
    return out


# Shared-memory addresses the kernel computes (byte offsets from gg_smem), re-derived here from the layout rules.
LANE = np.arange(32)


def fill_slots(tile: gt.GemmTile, kind: str, slot: int):
    """cp.async slot `slot` of the A or B slab: (threads, slab row, source chunk, shared address) for active threads."""
    n_chunks, region = (tile.a_chunks, 0) if kind == "A" else (tile.b_chunks, tile.a_bytes)
    tx = np.arange(gt.NTHREADS)
    c = tx + slot * gt.NTHREADS
    active = c < n_chunks
    tx, c = tx[active], c[active]
    row, ch = c // tile.chunks_per_row, c % tile.chunks_per_row
    return tx, row, ch, region + row * tile.srow + (ch ^ ((row >> 1) & 3)) * 16  # XOR-swizzled 16-byte chunk


def ldmatrix_rows(tile: gt.GemmTile, kind: str, warp: int, kk: int, frag: int) -> np.ndarray:
    """The 32 lane row addresses of one ldmatrix.x4: A fragment `frag` (mi) or B fragment pair `frag` (nj)."""
    wm, wn = warp // tile.wn, warp % tile.wn
    if kind == "A":  # lanes 0-15 rows 0-15 at k 0, lanes 16-31 rows 0-15 at k 8
        row, half, region = wm * tile.warp_m + frag * 16 + (LANE & 15), LANE >> 4, 0
    else:  # lanes 0-7 n 0-7 k 0, 8-15 n 0-7 k 8, 16-23 n 8-15 k 0, 24-31 n 8-15 k 8
        row = wn * tile.warp_n + frag * 16 + (LANE & 7) + ((LANE >> 4) << 3)
        half, region = (LANE >> 3) & 1, tile.a_bytes
    return region + row * tile.srow + ((2 * kk + half) ^ ((row >> 1) & 3)) * 16


def staging_word(tile: gt.GemmTile, warp: int, mi: int, ni: int) -> np.ndarray:
    """Where lane (g, t) of `warp` stores its packed row-g pair of C fragment (mi, ni) in the staging tile."""
    wm, wn = warp // tile.wn, warp % tile.wn
    g, t = LANE >> 2, LANE & 3
    return (wm * tile.warp_m + mi * 16 + g) * tile.crow + (wn * tile.warp_n + ni * 8 + 2 * t) * 2


def staging_chunks(tile: gt.GemmTile, j: int):
    """Output pass j: (tile row, 16-byte column chunk, staging address) per thread."""
    c = np.arange(gt.NTHREADS) + j * gt.NTHREADS
    row, ch = c // tile.c_chunks_per_row, c % tile.c_chunks_per_row
    return row, ch, row * tile.crow + ch * 16


def model_cta(tile: gt.GemmTile, a_rows: np.ndarray, w_rows: np.ndarray) -> np.ndarray:
    """What one CTA computes, following the kernel's address arithmetic step by step (float64 accumulation).

    a_rows bf16[tm, Kd], w_rows bf16[tn, Kd] -> bf16[tm, tn]. Each stage: 16-byte copy slots -> swizzled shared slab;
    per warp and k16 step, ldmatrix lane addresses -> fragments -> mma; then the packed epilogue through shared.
    """
    Kd = a_rows.shape[1]
    acc = {(w, mi, ni): np.zeros((32, 4)) for w in range(gt.WARPS) for mi in range(tile.mf) for ni in range(tile.nf)}
    src = {"A": a_rows.view(np.uint8).reshape(tile.tm, Kd * 2), "B": w_rows.view(np.uint8).reshape(tile.tn, Kd * 2)}
    for k0 in range(0, Kd, tile.bk):
        smem = np.full(tile.stage_bytes, 0xAB, np.uint8)  # garbage: any byte not copied poisons the result
        for kind, n_chunks in (("A", tile.a_chunks), ("B", tile.b_chunks)):
            for slot in range(max(1, n_chunks // gt.NTHREADS)):
                _, row, ch, dst = fill_slots(tile, kind, slot)
                for byte in range(16):
                    smem[dst + byte] = src[kind][row, k0 * 2 + ch * 16 + byte]
        for w in range(gt.WARPS):
            for kk in range(tile.bk // 16):
                fa = [_ldmatrix_x4(smem, ldmatrix_rows(tile, "A", w, kk, mi)) for mi in range(tile.mf)]
                fb = [_ldmatrix_x4(smem, ldmatrix_rows(tile, "B", w, kk, nj)) for nj in range(tile.nf // 2)]
                for mi in range(tile.mf):
                    for ni in range(tile.nf):
                        b = fb[ni // 2][:, 2 * (ni % 2): 2 * (ni % 2) + 2]
                        acc[w, mi, ni] = _mma_m16n8k16(fa[mi], b, acc[w, mi, ni])
    # epilogue: cvt.rn.bf16x2 (high = col 2t+1) -> st.shared.b32 at the staging address -> 16-byte row chunks
    cs = np.full(tile.tm * tile.crow, 0xAB, np.uint8)
    for (w, mi, ni), d in acc.items():
        cst = staging_word(tile, w, mi, ni)
        for half, addr in ((0, cst), (1, cst + 8 * tile.crow)):
            lo = d[:, 2 * half].astype(np.float32).astype(BF16).view(np.uint16).astype(np.uint32)
            hi = d[:, 2 * half + 1].astype(np.float32).astype(BF16).view(np.uint16).astype(np.uint32)
            word = (hi << 16) | lo
            for byte in range(4):
                cs[addr + byte] = (word >> (8 * byte)) & 0xFF
    out = np.full((tile.tm, tile.tn * 2), 0xCD, np.uint8)
    for j in range(tile.tm * tile.c_chunks_per_row // gt.NTHREADS):
        row, ch, addr = staging_chunks(tile, j)
        for byte in range(16):
            out[row, ch * 16 + byte] = cs[addr + byte]
    return out.view(BF16)


def wavefronts(addrs: np.ndarray, width: int) -> int:
    """Shared-memory wavefronts of one warp access: 32 banks of 4 bytes; a bank serves one distinct word per
    wavefront. `width`-byte accesses are split into phases as the hardware does (8 B: half-warps, 16 B: quarters)."""
    lanes_per_phase = {4: 32, 8: 16, 16: 8}[width]
    total = 0
    for p in range(0, addrs.size, lanes_per_phase):
        words = {int(a) // 4 + j for a in addrs[p: p + lanes_per_phase] for j in range(width // 4)}
        per_bank = np.bincount([w % 32 for w in words], minlength=32)
        total += int(per_bank.max())
    return total


@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"m{t.tm}n{t.tn}")
def test_shared_memory_accesses_are_bank_conflict_free(tile):
    ideal16 = 4  # 32 lanes x 16 B = 512 B = 4 wavefronts of 128 B
    for kind, n_chunks in (("A", tile.a_chunks), ("B", tile.b_chunks)):
        for slot in range(max(1, n_chunks // gt.NTHREADS)):
            tx, _, _, dst = fill_slots(tile, kind, slot)
            for w in range(0, tx.size, 32):
                assert wavefronts(dst[w: w + 32], 16) == dst[w: w + 32].size // 8, (kind, slot, w)
    for w in range(gt.WARPS):
        for kk in range(tile.bk // 16):
            for kind, frags in (("A", tile.mf), ("B", tile.nf // 2)):
                for f in range(frags):
                    # ldmatrix.x4: each 8-lane phase reads one 8x8 matrix (8 rows of 16 B)
                    assert wavefronts(ldmatrix_rows(tile, kind, w, kk, f), 16) == ideal16, (kind, w, kk, f)
            for mi in range(tile.mf):
                for ni in range(tile.nf):
                    assert wavefronts(staging_word(tile, w, mi, ni), 4) == 1, ("st.shared", w, mi, ni)
    for j in range(tile.tm * tile.c_chunks_per_row // gt.NTHREADS):
        _, _, addr = staging_chunks(tile, j)
        for w in range(0, gt.NTHREADS, 32):
            assert wavefronts(addr[w: w + 32], 16) == ideal16, ("ld.shared.v4", j, w)


def test_bank_model_sees_the_conflicts_padding_would_leave():
    # Unswizzled 64-byte rows: an ldmatrix phase hits 4 rows in the same banks (4-way); 80-byte padded rows fix
    # reads but a fill phase (2 rows x 4 chunks) still collides 2-way. The swizzle is there for both.
    rows = np.arange(32) % 8
    assert wavefronts(rows * 64, 16) == 4 * 4
    assert wavefronts(rows * 80, 16) == 4
    c = np.arange(32)
    assert wavefronts((c // 4) * 80 + (c % 4) * 16, 16) == 8


@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"m{t.tm}n{t.tn}")
def test_fragment_model_reproduces_the_tile_product(tile, rng):
    Kd = 2 * tile.bk  # two pipeline stages exercise the k-offsets
    a = (rng.standard_normal((tile.tm, Kd)) * 2).astype(BF16)
    w = rng.standard_normal((tile.tn, Kd)).astype(BF16)
    got = model_cta(tile, a, w).astype(np.float64)
    exact = a.astype(np.float64) @ w.astype(np.float64).T
    # float64 accumulation then one bf16 rounding: within half a bf16 ulp (plus fp32 pre-rounding slack)
    ulp = np.spacing(np.abs(exact).astype(BF16).astype(np.float32)).astype(np.float64) * 2**16
    assert np.all(np.abs(got - exact) <= 0.51 * ulp + 1e-30), np.max(np.abs(got - exact) / ulp)


# ---------------------------------------------------------------------------------------------- descriptor / contract
def test_tile_choice_follows_bm_and_rejects_others():
    assert [gg.tile_for(bm).tm for bm in (16, 32, 48, 64, 128, 192)] == [16, 32, 16, 64, 64, 64]
    assert [gg.tile_for(bm, n).tn for bm, n in ((16, 256), (32, 512), (64, 192), (64, 256), (128, 7168))] == [
        64, 64, 64, 128, 128]
    for bad in (0, 8, 24, 100, -16):
        with pytest.raises(InputError, match=rf"grouped_gemm: BM={bad}"):
            gg.tile_for(bad)


def test_ptx_modules_lists_every_tile_file():
    mods = gg.ptx_modules()
    assert sorted(mods) == sorted(f"grouped_gemm_m{tag}" for tag in gt.TILES)
    assert all(f".visible .entry {t.entry}(" in mods[f"grouped_gemm_m{t.tag}"] for t in gt.TILES.values())


def test_launch_config_per_preset():
    from contract.presets import PRESETS

    tiny = PRESETS["tiny"]
    up = gg.launch_config(tiny, "up")
    assert up.grid == (2 * tiny.I // 64, tiny.P_max // 16, 1) and up.block == (128, 1, 1)
    assert up.entry == "grouped_gemm_bf16_m16n64k32s4" and up.path.endswith("grouped_gemm_m16n64.ptx")
    down = gg.launch_config(tiny, "down")
    assert down.grid == (tiny.H // 64, tiny.P_max // 16, 1)
    for name in PRESETS:  # every preset, both variants, has a valid config and PTX text
        for variant in ("up", "down"):
            cfg = gg.launch_config(name, variant)
            assert cfg.tile.tm == min(PRESETS[name].BM, 64)
            assert cfg.grid[0] * cfg.tile.tn == (2 * PRESETS[name].I if variant == "up" else PRESETS[name].H)
            assert f".visible .entry {cfg.entry}(" in gg.ptx_source(name, variant)


@pytest.mark.parametrize("field,value,match", [
    ("Kd", 48, r"Kd=48 is not a positive multiple of 32"),
    ("N", 100, r"N=100 is not a positive multiple of 64"),
    ("BM", 24, r"BM=24 is not supported"),
    ("P_max", 40, r"P_max=40 rows is not a positive multiple of BM=16"),
    ("P_max", 16 * 65536, r"needs 65536 row tiles of 16; the grid's y dimension allows at most 65535"),
])
def test_shape_assumptions_raise_input_error(field, value, match):
    shapes = dict(P_max=64, Kd=64, N=64, E=2, BM=16)
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
    from harness.backends.base import DeviceArray

    i32 = np.dtype(np.int32)
    return {"a": DeviceArray((P_max, Kd), BF16, 0x1000), "w": DeviceArray((E, N, Kd), BF16, 0x2000),
            "block_expert": DeviceArray((P_max // BM,), i32, 0x3000), "total_padded": DeviceArray((1,), i32, 0x4000),
            "c": DeviceArray((P_max, N), c_dtype, 0x5000)}


def test_run_passes_parameters_in_kernel_order():
    from contract.presets import PRESETS

    tiny = PRESETS["tiny"]
    be = _RecordingBackend()
    args = _fake_args(tiny.P_max, tiny.I, tiny.H, tiny.E, tiny.BM)
    assert gg.run(be, args, tiny, variant="down") == ["record"]
    ptx, entry, grid, block, params, shared = be.calls[0]
    assert [p.addr for p in params[:5]] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]
    assert [int(p) for p in params[5:]] == [tiny.I, tiny.H, tiny.BM] and all(p.dtype == np.uint32 for p in params[5:])
    assert grid == (tiny.H // 64, tiny.P_max // 16, 1) and block == (128, 1, 1) and shared == 0
    names = re.findall(r"\.param \.(u64|u32) (\w+)", ptx)
    assert [ty for ty, _ in names] == [ty for _, ty in gg.PARAMS]


def test_run_rejects_bad_arguments_with_named_errors():
    from contract.presets import PRESETS

    tiny = PRESETS["tiny"]
    be = _RecordingBackend()
    bad = _fake_args(tiny.P_max, tiny.I, tiny.H, tiny.E, tiny.BM, c_dtype=np.dtype(np.float32))
    with pytest.raises(InputError, match=r"argument c has dtype float32; expected bf16"):
        gg.run(be, bad, tiny)
    args = _fake_args(tiny.P_max, 40, tiny.H, tiny.E, tiny.BM)
    with pytest.raises(InputError, match=r"Kd=40"):
        gg.run(be, args, tiny)
    del args["w"]
    with pytest.raises(InputError, match=r"missing argument\(s\) w"):
        gg.run(be, args, tiny)
    assert be.calls == []


# ----------------------------------------------------------------------------------------------------- on the simulator
@needs_ptxsim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", ["balanced", "imbalanced", "extreme"])
def test_tiny_matches_float64_reference_on_ptxsim(skew, variant, seed):
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    result = run_and_check(gg.run, SimBackend(), "grouped_gemm", "tiny", skew, seed, variant=variant)
    assert result.ok, result.message


def _ragged_inputs(rng, BM, E, Kd, N, n_blocks, total_blocks):
    """Hand-made routing: some experts own zero rows, blocks of -1 mid-range, total_padded < P_max."""
    from contract.generators import random_bf16

    P_max = n_blocks * BM
    block_expert = np.full(n_blocks, -1, np.int32)
    owners = rng.choice(E, size=total_blocks, replace=True)
    owners.sort()
    block_expert[:total_blocks] = owners
    if total_blocks > 2:
        block_expert[1] = -1  # a hole: must be skipped (left poisoned) even though it lies below total_padded
    a = random_bf16(rng, (P_max, Kd))
    a[(total_blocks - 1) * BM + BM // 2: total_blocks * BM] = 0  # padding rows of the last block are zeros
    w = random_bf16(rng, (E, N, Kd), std=1.0 / np.sqrt(Kd))
    return {"a": a, "w": w, "block_expert": block_expert, "total_padded": np.array([total_blocks * BM], np.int32)}


@needs_ptxsim
@pytest.mark.parametrize("BM,N", [(16, 128), (32, 128), (64, 128), (128, 128), (64, 192)])
def test_ragged_blocks_holes_and_untouched_tail_on_ptxsim(BM, N, rng):
    from contract.presets import Preset
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    Kd, E, n_blocks = 64, 4, 4
    preset = Preset("ragged", T=8, H=Kd, E=E, K=2, G=2, TG=1, I=N // 2, BM=BM)
    inputs = _ragged_inputs(rng, BM, E, Kd, N, n_blocks, total_blocks=3)
    _, out, records = run_kernel(gg.run, SimBackend(), "grouped_gemm", preset, "balanced", 0, inputs=inputs)
    c = out["c"]
    raw = c.view(np.uint16)
    assert np.all(raw[BM: 2 * BM] == 0xFFFF), "block with expert -1 below total_padded was written"
    assert np.all(raw[3 * BM:] == 0xFFFF), "rows >= total_padded were written"
    for b in (0, 2):
        e = inputs["block_expert"][b]
        rows = slice(b * BM, (b + 1) * BM)
        ref = inputs["a"][rows].astype(np.float64) @ inputs["w"][e].astype(np.float64).T
        err = np.linalg.norm(c[rows].astype(np.float64) - ref) / np.linalg.norm(ref)
        assert err <= 1e-2, (b, err)
    tn = 128 if BM % 64 == 0 and N % 128 == 0 else 64
    assert len(records) == 1 and records[0].grid == (N // tn, n_blocks * BM // min(BM, 64), 1)


@needs_ptxsim
@pytest.mark.parametrize("BM,N", [(16, 128), (32, 128), (64, 192), (64, 128)])
def test_ptxsim_counts_no_shared_bank_conflicts(BM, N, rng):
    """ldmatrix reads of the swizzled slabs and the staging-tile traffic: zero bank conflicts in ptxsim's counters."""
    import ptxsim

    Kd, E, P = 64, 2, 2 * BM
    shapes = gg.GemmShapes(P, Kd, N, E, BM)
    cfg = gg.launch_config(shapes)
    a = rng.standard_normal((P, Kd)).astype(BF16)
    w = rng.standard_normal((E, N, Kd)).astype(BF16)
    c = np.full((P, N), 0xFFFF, np.uint16).view(BF16)
    args = [a, w, np.array([1, -1], np.int32), np.array([P], np.int32), c, np.uint32(Kd), np.uint32(N), np.uint32(BM)]
    stats = ptxsim.launch(ptxsim.load_ptx(gg.ptx_source(shapes)).kernel(cfg.entry), cfg.grid, cfg.block, args)
    ref = a[:BM].astype(np.float64) @ w[1].astype(np.float64).T
    assert np.linalg.norm(c[:BM].astype(np.float64) - ref) / np.linalg.norm(ref) <= 1e-2
    assert np.all(c[BM:].view(np.uint16) == 0xFFFF)  # block of expert -1 untouched
    m = stats.metrics
    assert m["ptxsim__inst_executed_ld_shared.sum"] > 0 and m["ptxsim__inst_executed_st_shared.sum"] > 0
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] == 0, m
    assert m["launch__shared_mem_per_block_static"] == cfg.static_shared_bytes


# ------------------------------------------------------------------------------------------------------------ on a GPU
# small's sizes with the 64- and 128-row blocks of the dsv3 presets (and I=96 for the 64x64 tile), so every tile runs
# on the GPU without drawing dsv3's 15 GB of weights on the host.
_GPU_PRESETS = {"tiny": {}, "small": {}, "small-bm64": {"BM": 64}, "small-bm128": {"BM": 128},
                "small-bm64-i96": {"BM": 64, "I": 96}}


def _gpu_preset(name):
    from dataclasses import replace

    from contract.presets import PRESETS

    base = PRESETS[name] if name in PRESETS else PRESETS["small"]
    return replace(base, name=name, **_GPU_PRESETS[name]) if _GPU_PRESETS[name] else base


@pytest.mark.gpu
@pytest.mark.parametrize("preset", list(_GPU_PRESETS))
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", ["balanced", "extreme"])
def test_matches_float64_reference_on_gpu(preset, variant, skew, seed):
    from harness.backends.gpu import GpuBackend
    from harness.verify import run_and_check

    result = run_and_check(gg.run, GpuBackend(), "grouped_gemm", _gpu_preset(preset), skew, seed, variant=variant)
    assert result.ok, result.message
