"""The layer on the `cutlass` path (issue 28 item 2; docs/cutlass.md "The layer"): CUTLASS's grouped GEMMs with their
groups built on the device from the routing (cutlass_impl/device_args.py), the other stages the cpp path's. The args
kernel against expert_runs on hand-made routing (every entry written, runs that are not one per expert, blocks past
total_padded, -1 and out-of-range experts); the bf16 and fp8 layers against the float64 reference at tiny on ptxsim
under every sanitizer (small in the long tier); an args kernel that drops a run fails the layer's check."""
from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pytest

from contract.kernels import get_kernel
from contract.presets import get_preset
from cutlass_impl import device_args
from cutlass_impl import grouped_gemm as cg

needs_host = pytest.mark.skipif(
    shutil.which("g++") is None or importlib.util.find_spec("cutlass_library") is None,
    reason="needs g++ and the nvidia-cutlass wheel (make install) to build CUTLASS's host shim")


def _run_args_kernel(block_expert, total_padded, BM, N, Kd, E, fp8):  # noqa: N803
    """The args kernel alone on ptxsim, its outputs poisoned first: (shapes [G, 3], {pointer array: values})."""
    from harness.backends.sim import SimBackend

    backend = SimBackend(sanitize="all")
    G = len(block_expert)  # noqa: N806
    be = backend.to_device(np.asarray(block_expert, np.int32))
    tp = backend.to_device(np.array([total_padded], np.int32))
    out = {"shapes": backend.empty((G, 3), np.int32)}
    for p in ("ptr_a", "ptr_b", "ptr_d", "ptr_sfa", "ptr_sfb"):
        out[p] = backend.empty((G,), np.uint64)
    base = {"a": 0x10000, "w": 0x7000000, "c": 0x20000000, "a_scale": 0x30000000, "w_scale": 0x40000000}
    values = {"block_expert": be, "total_padded": tp, "shapes": out["shapes"], "ptr_a": out["ptr_a"],
              "ptr_b": out["ptr_b"], "ptr_d": out["ptr_d"], "ptr_sfa": out["ptr_sfa"].addr,
              "ptr_sfb": out["ptr_sfb"].addr, **base, "n_blocks": G, "bm": BM, "n": N, "kd": Kd,
              "a_bytes": 1 if fp8 else 2, "n_experts": E, "with_scales": int(fp8)}
    device_args.ARGS_KERNEL.launch(backend, (1, 1, 1), (device_args.ARGS_BLOCK, 1, 1), values)
    assert backend.sanitizer_findings() == []
    got = {k: np.asarray(backend.to_host(v)) for k, v in out.items()}
    return got.pop("shapes").reshape(G, 3), got, base


@pytest.mark.sim
@pytest.mark.parametrize("fp8", [False, True])
def test_the_args_kernel_writes_expert_runs_at_their_first_block_and_every_other_group_empty(fp8):
    # expert 3 twice (not one run an expert), -1 inside, a 9 >= E (treated as empty), blocks past total_padded
    be = [0, 0, 3, -1, 3, 9, 5, 5, 2, 2, 2, 7]
    BM, N, Kd, E, total = 16, 256, 384, 8, 10 * 16  # noqa: N806 - blocks 10 and 11 are past total_padded
    shapes, ptrs, base = _run_args_kernel(be, total, BM, N, Kd, E, fp8)
    runs = {g.row0 // BM: g for g in cg.expert_runs(np.array(be), total, BM) if g.expert < E}
    assert sorted(runs) == [0, 2, 4, 6, 8]
    esize = 1 if fp8 else 2
    poison = np.uint64(0xFFFFFFFFFFFFFFFF)
    for b in range(len(be)):
        g = runs.get(b)
        assert tuple(shapes[b]) == ((g.rows if g else 0), N, Kd), b
        if g is None:  # an empty group: its pointers are never read, but written (no poison left behind)
            assert all(ptrs[p][b] != poison for p in ptrs if fp8 or p in ("ptr_a", "ptr_b", "ptr_d")), b
            continue
        assert ptrs["ptr_a"][b] == base["a"] + b * BM * Kd * esize
        assert ptrs["ptr_b"][b] == base["w"] + g.expert * N * Kd * esize
        assert ptrs["ptr_d"][b] == base["c"] + b * BM * N * 2
        if fp8:
            assert ptrs["ptr_sfa"][b] == base["a_scale"] + b * BM * (Kd // 128) * 4
            assert ptrs["ptr_sfb"][b] == base["w_scale"] + g.expert * (N // 128) * (Kd // 128) * 4
    if not fp8:  # no scale pointers to write: the arrays keep their poison
        assert (ptrs["ptr_sfa"] == poison).all()
    assert tuple(shapes[9]) == (0, N, Kd) and runs[8].rows == 2 * BM  # the run stops at total_padded


def _check_layer(variant, preset="tiny", sanitize="all"):
    from cutlass_impl import layer
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    backend = SimBackend(sanitize=sanitize)
    preset = get_preset(preset)
    inputs, outputs, records = run_kernel(layer.run, backend, "layer", preset, "imbalanced", 11, variant=variant)
    return get_kernel("layer").check(outputs, inputs, preset), backend, records


def _scale_word_reads_only(findings) -> bool:
    """The grouped FP8 kernel's one kind of finding at partial tiles (docs/cutlass.md; test_cutlass_grouped_gemm)."""
    return all(f["tool"] == "initcheck" and f["space"] == "shared" and f["instruction"].startswith("ld.shared.f32 ")
               for f in findings)


@needs_host
@pytest.mark.sim
@pytest.mark.parametrize("variant", ["bf16", "fp8"])
def test_the_layer_matches_the_reference_with_cutlass_gemms_and_cpp_elsewhere(variant):
    """tiny, imbalanced, every sanitizer: memcheck clean also says the FP8 kernel never reads the null scale-layout
    arrays it is given (device_args' docstring)."""
    result, backend, records = _check_layer(variant)
    assert result.ok, result.message
    names = [r.name for r in records]
    gemm = "grouped_gemm_fp8" if variant == "fp8" else "grouped_gemm"
    cutlass = [n for n in names if "cutlass" in n]
    assert len(cutlass) == 4 and cutlass[0].startswith("cutlass group args [256x256], 31 groups") \
        and cutlass[2].startswith("cutlass group args [256x128]"), names
    assert all(n.startswith(f"{gemm}[") and "from the device's routing in one launch" in n for n in cutlass[1::2])
    # each args launch right before its GEMM; every other launch is the cpp path's
    assert all(names[names.index(n) + 1].startswith(gemm) for n in cutlass[0::2])
    assert all(n.startswith("cpp_") for n in names if n not in cutlass), names
    assert len(names) == (12 if variant == "fp8" else 10)
    findings = backend.sanitizer_findings()
    assert (_scale_word_reads_only(findings) if variant == "fp8" else findings == []), findings[:2]


@needs_host
@pytest.mark.sim
@pytest.mark.long
@pytest.mark.parametrize("variant", ["bf16", "fp8"])
def test_the_layer_matches_at_small_too(variant):
    """small: 95 groups (32 runs) in each grouped launch (long tier: 38 s bf16, 24 s fp8 on the shared machine)."""
    result, _, records = _check_layer(variant, "small", sanitize=None)
    assert result.ok, result.message
    assert sum("from the device's routing" in r.name for r in records) == 2


@needs_host
@pytest.mark.sim
def test_an_args_kernel_that_drops_a_run_fails_the_layers_check(monkeypatch):
    """Every routed row must be computed: with the first block's run left out (its group empty), its rows of h keep
    the poison and the layer's output is wrong."""
    import dataclasses

    def dropping(file, constants):
        src = (device_args.build.KERNEL_DIR / file).read_text()
        cut = src.replace("(b == 0 || block_expert[b - 1] != e)", "(b != 0 && block_expert[b - 1] != e)")
        assert cut != src
        from cpp_impl import nvrtc

        return nvrtc.compile_source(cut, name=file)

    monkeypatch.setattr(device_args, "ARGS_KERNEL", dataclasses.replace(device_args.ARGS_KERNEL, make_ptx=dropping))
    result, _, _ = _check_layer("bf16", sanitize=None)
    assert not result.ok


@needs_host
@pytest.mark.sim
@pytest.mark.parametrize("kernel", [pytest.param("grouped_gemm", marks=pytest.mark.long), "grouped_gemm_fp8"])
def test_the_device_built_grouped_launch_sampled_is_within_tolerance(kernel):
    """The layer's GEMM (args kernel + grouped launch on the device's groups) with sampling forced on, against the
    same launch whole: 24 groups of 16 rows x 8 column tiles (192 tiles on 132 CTAs, K = 128, as in
    test_cutlass_sampled), the groups read back from the args kernel's shapes and a subset their M zeroed. Tensor
    instructions exact (a group counted twice or left out would be off by 1/24), DRAM bytes within 1 %,
    instructions within 2 %, modelled time within 3 % (the standalone launch's tolerances). bf16 in the long tier
    (10 s; the same args kernel and subsets as FP8's)."""
    from dataclasses import replace

    from contract.presets import gemm_shape
    from harness.backends.sim import SimBackend
    from harness.sampling import parse_sample
    from harness.timing.sim import model_launch
    from harness.verify import run_and_check

    shape = gemm_shape(24, 16, 1024, 128)

    def go(policy):
        backend = SimBackend(sample=policy)
        result = run_and_check(lambda b, a, p, **kw: device_args.run(kernel, b, a, p, **kw), backend, kernel, shape,
                               "imbalanced", 7, variant="up")
        assert result.ok, result.message
        (gemm,) = [r for r in backend.records if r.name.startswith(kernel)]
        return result, gemm, model_launch(gemm, backend.sources[gemm.name])

    whole, full, full_model = go(None)
    sampled, part, part_model = go(replace(parse_sample("auto"), min_ctas=1))
    assert not whole.errors.get("sampled") and sampled.errors["sampled"] and 0 < sampled.errors["coverage"] < 1
    assert part.stats.waves["groups"] == 24 and part.stats.waves["groups_simulated"] < 24
    for metric, rel in {"ptxsim__inst_executed_tensor.sum": 1e-9, "dram__bytes_read.sum": 0.01,
                        "smsp__inst_executed.sum": 0.02}.items():
        assert float(part.stats.metrics[metric]) == pytest.approx(float(full.stats.metrics[metric]), rel=rel), metric
    assert part_model["modelled_s"] == pytest.approx(full_model["modelled_s"], rel=0.03)


@needs_host
def test_the_arrays_and_params_are_kept_per_simulated_device():
    """Made once per (configuration, G, N, Kd) and reused; a sim backend's fresh device (reset_memory, each row of a
    sweep) gets its own: the old arrays are gone with the old device."""
    from harness.backends.sim import SimBackend

    backend = SimBackend()
    name = cg.GROUPED["grouped_gemm"]
    first = device_args.device_groups("grouped_gemm", name, backend, 8, 256, 128)
    assert device_args.device_groups("grouped_gemm", name, backend, 8, 256, 128) is first
    assert first.params.host.grid[0] * first.params.host.grid[1] == 132  # the persistent SM-count grid, no host shapes
    backend.reset_memory()
    again = device_args.device_groups("grouped_gemm", name, backend, 8, 256, 128)
    assert again is not first and set(again.arrays) == set(first.arrays)
