"""PTX rung 4 of the FP8 grouped GEMM (warp-specialised, persistent): passes kernels.md's check through ptxsim (tiny at
every skew and variant on a small persistent grid, the full grid, a ragged preset, BM = 32 and 64 (the 32- and 64-token
tiles), small), runs clean under ptxsim's four sanitizers, every token tile assembles for sm_90a with zero spills
under its .maxnreg and has the PTX shape its header promises, and bad arguments raise InputError."""
import functools
import re

import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS, Preset
from harness.verify import run_and_check
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_ws_template as template
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED

# ragged sizes at the routing blocks that pick the 32- and 64-token tiles (dsv3-prefill's BM is 64)
RAGGED_BM = {bm: Preset(f"ragged-bm{bm}", T=67, H=256, E=16, K=4, G=4, TG=2, I=128, BM=bm) for bm in (32, 64)}


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant, run=r4.run, **params):
    result = run_and_check(functools.partial(run, **params), backend, "grouped_gemm_fp8", preset, skew, seed,
                           variant=variant)
    assert result.ok, f"{getattr(preset, 'name', preset)} {skew} {variant} {params} seed={seed}: {result.message}"
    return result


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny_on_a_small_persistent_grid(backend, skew, variant, seed):
    """5 CTAs for 62 (up) or 31 (down) items: every CTA walks many items and the 4-stage ring wraps across them."""
    _check(backend, "tiny", skew, seed, variant, sms=5)
    record = backend.records[-1]
    assert tuple(record.grid) == (5, 1, 1) and tuple(record.block) == (384, 1, 1)


@pytest.mark.sim
def test_tiny_on_the_full_grid_and_through_the_ladder(backend, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(4).module == "ptx_impl.gemm_fp8_r4"
    skew, variant = SKEWS[seed % len(SKEWS)], ("up", "down")[seed // 3 % 2]
    _check(backend, "tiny", skew, seed, variant, run=ladder.run, rung=4)
    P_max, N = 496, 256  # tiny: P_max = 64*4 + 16*15; N = 2I (up) = H (down) = 256
    assert backend.records[-1].grid[0] == min(r4.SMS, P_max // 16 * N // 128) == 62


@pytest.mark.sim
def test_ragged(backend, seed):
    for variant in ("up", "down"):
        _check(backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, variant, sms=7)


@pytest.mark.sim
@pytest.mark.parametrize("bm", sorted(RAGGED_BM))
def test_token_tile_follows_bm(backend, bm, seed):
    """BM 32 and 64 run the m32 / m64 kernels (one expert per tile, fewer weight reloads), both variants."""
    assert template.token_tile(bm) == bm and template.token_tile(16) == 16 and template.token_tile(48) == 16
    for variant in ("up", "down"):
        _check(backend, RAGGED_BM[bm], SKEWS[seed % len(SKEWS)], seed, variant, sms=7)
        ptx, entry = backend.launched_sources()[backend.records[-1].name]
        assert entry == f"grouped_gemm_fp8_ws_m{bm}n128" and ptx == r4.ptx_source(bm)


@pytest.mark.sim
def test_sanitizers_find_nothing(seed):
    """asynccheck (wgmma accumulators, bulk copies), racecheck (the ring's shared memory), memcheck, initcheck."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=("asynccheck", "racecheck", "memcheck", "initcheck"))
    _check(sim, "tiny", SKEWS[seed % len(SKEWS)], seed, "up", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
@pytest.mark.slow
def test_small(backend, seed):
    """One variant per run (the seed picks it and the skew), on the default grid: about a minute on a busy ptxsim
    host, most of it in ptxsim's wgmma descriptor reads and tensor-map box copies."""
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.parametrize("tokens", template.TOKEN_TILES)
def test_assembles_for_sm90a_with_zero_spills(tokens):
    from harness.toolchain import assemble

    _, usage = assemble(r4.ptx_source(tokens), "sm_90a", name=r4.path(tokens).name)
    u = usage[template.entry(False, tokens)]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    # setmaxnreg needs the launch count fixed: .maxnreg makes ptxas allocate exactly what the producer / consumers split
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u  # all shared memory is dynamic
    assert template.THREADS * template.MAXNREG == 128 * template.PRODUCER_REGS + 256 * template.CONSUMER_REGS <= 65536


def _count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("tokens", template.TOKEN_TILES)
def test_ptx_shape_matches_the_header(tokens):
    ptx = re.sub(r"//[^\n]*", "", r4.ptx_source(tokens))
    wgmma = re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{tokens}k32\.f32\.e4m3\.e4m3 \{{([^}}]*)\}}", ptx)
    assert len(wgmma) == 4 and all(len(w.split(",")) == tokens // 2 for w in wgmma)  # 4 k32 steps; T/2 accumulators
    assert _count(ptx, r"%p_zero, 1, 1;") == 1  # scale-d false on a stage's first step: partial sums start at 0
    assert _count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier") == 2  # weights, tokens
    assert "multicast" not in ptx and ".reqnctapercluster" not in ptx and "barrier.cluster" not in ptx
    assert _count(ptx, r"setmaxnreg\.dec\.sync\.aligned\.u32 40;") == 1
    assert _count(ptx, r"setmaxnreg\.inc\.sync\.aligned\.u32 232;") == 1
    assert _count(ptx, r"mbarrier\.init\.shared::cta\.b64 \[%sfull\+\d+\], 1;") == template.STAGES
    # empty: lane 0 of each of the 8 consumer warps, after its own wgmma.wait_group
    assert _count(ptx, r"mbarrier\.init\.shared::cta\.b64 \[%sempty\+\d+\], 8;") == template.STAGES
    assert _count(ptx, r"setp\.eq\.u32\s+%p_lead, %lane, 0;") == 1
    assert re.search(r"wgmma\.wait_group\.sync\.aligned 0;\n\$C_release:\n.*\n\s+@%p_lead mbarrier\.arrive", ptx)
    # the dynamic base aligned up to 1024 in code, with the slack for it
    assert re.search(r"mov\.u32\s+%sbase, smem;\n\s+add\.u32\s+%sbase, %sbase, 1023;\n"
                     r"\s+and\.b32\s+%sbase, %sbase, 0xFFFFFC00;", ptx)
    expect = template.stage_bytes(tokens)
    assert expect == 16384 + 128 * tokens and expect % 1024 == 0  # every tile of the ring 1024-aligned
    assert template.shared_bytes(tokens) == template.STAGES * expect + 64 + 1024
    assert _count(ptx, rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 %tok, \[%bar\], {expect};") == 1
    assert _count(ptx, r"fma\.rn\.f32\s+%acc") == tokens // 2  # promotion: every accumulator, every 128 of K
    assert _count(ptx, r"ld\.global\.nc\.f32") == tokens // 4 + 1  # the token scales + the block's weight scale
    assert _count(ptx, r"st\.global\.b16") == tokens // 2
    assert "mma.sync" not in ptx and "cp.async.cg" not in ptx and ".e4m3x2" not in ptx  # no dequantisation
    assert "%nctaid.x" in ptx  # persistent: items stride by the grid
    params = re.findall(r"\.param (?:\.align 64 )?\.(\w+) gf_(\w+)(\[128\])?", ptx)
    assert [t + (n and "[128]") for t, _, n in params] == [t for _, t in r4.PARAMS]


def test_rejects_bad_arguments():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    sim = SimBackend()
    args = {k: sim.to_device(v) for k, v in inputs.items()}
    args["c"] = sim.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    with pytest.raises(InputError, match="a_scale"):
        r4.run(sim, dict(args, a_scale=sim.to_device(inputs["a_scale"][:, :1])), preset)
    with pytest.raises(InputError, match=r"\bw\b"):
        r4.run(sim, dict(args, w=sim.to_device(inputs["w"].astype(BF16))), preset)
    with pytest.raises(InputError, match="BM"):
        r4.run(sim, args, Preset("odd", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=8))
    with pytest.raises(InputError, match=r"sms.*1\.\.1024"):
        r4.run(sim, args, preset, sms=0)
    with pytest.raises(InputError, match="tile"):
        r4.run(sim, args, preset, tile=3)
    with pytest.raises(InputError, match="variant"):
        r4.run(sim, args, preset, variant="sideways")
    assert sim.records == []  # nothing launched


@pytest.mark.fakegpu
@pytest.mark.parametrize("rung", [4, 5])
def test_gpu_backend_launch_against_the_fake_driver(monkeypatch, rung):
    """The gpu backend's path without a GPU: two tensor maps by value, the dynamic shared memory opted into, the grid
    from `sms` (whole clusters for rung 5, whose cluster shape is the PTX's .reqnctapercluster)."""
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.gpu import GpuBackend
    from ptx_impl import grouped_gemm_fp8 as ladder
    from tests.harness.fakegpu.fakes import install

    gpu = install(monkeypatch)
    backend = GpuBackend()
    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    args = {k: backend.to_device(v) for k, v in inputs.items()}
    args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    (record,) = ladder.run(backend, args, preset, rung=rung, sms=7)
    assert gpu.errors == [] and [launch["name"] for launch in gpu.launches] == [template.entry(rung == 5, 16)]
    assert gpu.launches[0]["shared"] == template.shared_bytes(16) > 48 * 1024
    assert template.shared_bytes(16) in gpu.attributes.values()
    assert tuple(record.grid) == ((6 if rung == 5 else 7), 1, 1) and tuple(record.block) == (384, 1, 1)
    # the item range (a WorkItems) reaches the driver as the whole work: (0, items) as two u32 (rung 5: pair items)
    tiles, nt = preset.P_max // 16, 2 * preset.I // 128
    assert gpu.launches[0]["values"][-2:] == (0, (tiles if rung == 4 else -(-tiles // 2)) * nt)
