"""CUTLASS's grouped GEMM driven by routing made on the device (the cutlass layer's GEMMs): no host read of the
routing, so no synchronisation inside a timed layer call (docs/cutlass.md, "The layer").

What the serving stacks do (vLLM's cutlass_moe, SGLang's sm90 FP8 blockwise MoE): a small device kernel turns the
routing into CUTLASS's grouped arguments in device memory, and the grouped kernel reads them there. Here:

- **On the host, once per (configuration, N, Kd, G)** and cached on the backend: the argument arrays (problem shapes,
  A / B / C-D pointer arrays, for FP8 the SFA / SFB pointer arrays; the stride arrays, which depend on N and K only,
  written once from CUTLASS's own host code) and the workspace, and the `Params` from CUTLASS's
  `to_underlying_arguments` with G = n_blocks groups and **no host copy of the problem shapes**
  (GroupProblemShape's host pointer null: cutlass_impl.params.grouped_host_params(shapes_on_device=True)). With it
  null, CUTLASS's grouped scheduler reads the shapes from the device as it walks the groups, its grid is the
  persistent SM count (132 CTAs), its mainloop and epilogue tensor maps are placeholders rewritten per group on the
  device (tensormap.replace) before any copy, and can_implement skips the per-group alignment check (which the host
  makes for every group instead: N and Kd are the same for all, and every group starts at a BM-row block). The Params
  so depend on the arrays' addresses only, not on the routing or on the layer's tensors.
- **On the device, every call**: `cutlass_group_args` (kernels/grouped_args.cu, CUDA C++ by NVRTC) writes group b
  as the run of consecutive blocks of one expert starting at block b (cutlass_impl.grouped_gemm.expert_runs, at the
  index of each run's first block), every other group empty (M = 0), from block_expert and total_padded and the
  base addresses of a, w, c (and a_scale, w_scale); then the grouped GEMM launches with the fixed Params.

The FP8 kernel gets null SFA / SFB layout arrays: its device code rebuilds each group's scale layouts from the
group's shape (load_init, gemm_fp8_blockwise_grouped_sm90.h) and never reads them; a read would be a memcheck
finding on the simulator (tests/cutlass_impl/test_cutlass_layer.py runs it under memcheck).

On the simulator, where the backend samples (dsv3-decode), the grouped launch carries a GroupSubsets mark like the
standalone GEMM's (a cluster candidate's subsets on whole clusters, as there): the groups are read back from the
arrays the args kernel just wrote (the sim backend runs launches in order, so the read is of this call's routing; the
GPU backend never builds the mark and reads nothing) and a subset is the same launch with the other groups' M set
to 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.errors import InputError
from contract.launch import TextKernel, ceil_div
from cutlass_impl import build
from cutlass_impl.group_subsets import Keep, group_subsets
from cutlass_impl.grouped_gemm import (
    GROUPED,
    WORKSPACE_BYTES,
    _check_args,
    _check_grouped_scale_steps,
    choices,
    config_for,
    entry_of,
    is_grouped,
    shape_key,
)
from cutlass_impl.params import GroupedParams, HostParams, grouped_host_params

ARGS_BLOCK = 256  # cutlass_group_args' __launch_bounds__


def _compile(file: str, constants) -> str:
    from cpp_impl import nvrtc  # the project's one NVRTC driver (cached by source digest)

    return nvrtc.compile_source((build.KERNEL_DIR / file).read_text(), name=file)


ARGS_KERNEL = TextKernel(
    "grouped_args.cu", "cutlass_group_args",
    (("block_expert", ".ptr"), ("total_padded", ".ptr"), ("shapes", ".ptr"), ("ptr_a", ".ptr"), ("ptr_b", ".ptr"),
     ("ptr_d", ".ptr"), ("ptr_sfa", ".u64"), ("ptr_sfb", ".u64"), ("a", ".u64"), ("w", ".u64"), ("c", ".u64"),
     ("a_scale", ".u64"), ("w_scale", ".u64"), ("n_blocks", ".u32"), ("bm", ".u32"), ("n", ".u32"), ("kd", ".u32"),
     ("a_bytes", ".u32"), ("n_experts", ".u32"), ("with_scales", ".u32")),
    make_ptx=_compile, language="cutlass")


@dataclass(frozen=True)
class DeviceGroups:
    """The grouped launch's argument arrays (written by cutlass_group_args each call; strides by the host once), its
    workspace and its Params, for one (configuration, G, N, Kd) on one backend."""

    name: str
    groups: int
    arrays: dict  # name -> DeviceArray: shapes, ptr_a, ptr_b, ptr_d, ptr_sfa, ptr_sfb (FP8), stride_*, work
    params: GroupedParams


def _probe(name: str, G: int, N: int, Kd: int, M: int, fp8: bool) -> GroupedParams:  # noqa: N803
    return grouped_host_params(name, ((M, N, Kd),) * G, (0,) * 9, 0, WORKSPACE_BYTES, (0,) * 4 if fp8 else (),
                               shapes_on_device=True)


def device_groups(kernel: str, name: str, backend, G: int, N: int, Kd: int) -> DeviceGroups:  # noqa: N803
    """The arrays and Params for `G` groups of N x Kd on `backend`, made on first use and kept on the backend (on a
    sim backend, on its current device), so a timing loop's calls allocate nothing (the first, untimed warm-up call
    makes them)."""
    # NOTE: kept per simulated device, not per backend: the sim backend starts a fresh device each row
    # (reset_memory), and every array made on the old one is gone with it
    device = getattr(backend, "device", None)
    owner = device if device is not None and hasattr(device, "__dict__") else backend
    cache = owner.__dict__.setdefault("_cutlass_device_groups", {})
    key = (kernel, name, G, N, Kd)
    if key in cache:
        return cache[key]
    fp8 = kernel == "grouped_gemm_fp8"
    tile_m = build.CONFIGS[name].tile_m
    probe, other = _probe(name, G, N, Kd, tile_m, fp8), _probe(name, G, N, Kd, 2 * tile_m, fp8)
    if probe.strides != other.strides or len(probe.shapes) != 12 * G:
        raise InputError(f"cutlass {name}: CUTLASS's grouped stride arrays depend on the groups' rows, or a problem "
                         f"shape is not 3 int32 ({len(probe.shapes)} bytes for {G} groups); the device-built "
                         f"arguments (cutlass_group_args) assume neither")
    arrays = {"shapes": backend.empty((G, 3), np.int32)}
    for p in ("ptr_a", "ptr_b", "ptr_d", *(("ptr_sfa", "ptr_sfb") if fp8 else ())):
        arrays[p] = backend.empty((G,), np.uint64)  # poisoned: cutlass_group_args writes every entry each call
    for s, raw in zip(("stride_a", "stride_b", "stride_c", "stride_d"), probe.strides, strict=True):
        arrays[s] = backend.to_device(np.frombuffer(raw, np.uint8))
    arrays["work"] = backend.empty((WORKSPACE_BYTES,), np.uint8, fill_byte=0)  # a memset on the stream, no copy
    addrs = (arrays["shapes"].addr, arrays["ptr_a"].addr, arrays["stride_a"].addr, arrays["ptr_b"].addr,
             arrays["stride_b"].addr, arrays["ptr_d"].addr, arrays["stride_c"].addr, arrays["ptr_d"].addr,
             arrays["stride_d"].addr)  # C's pointers are D's: beta 0, C never read
    # NOTE: the FP8 layout arrays are null: the grouped collective rebuilds each group's scale layouts from its shape
    scales = (arrays["ptr_sfa"].addr, 0, arrays["ptr_sfb"].addr, 0) if fp8 else ()
    gp = grouped_host_params(name, ((tile_m, N, Kd),) * G, addrs, arrays["work"].addr, WORKSPACE_BYTES, scales,
                             shapes_on_device=True)
    if gp.strides != probe.strides:
        raise InputError(f"cutlass {name}: the grouped shim's stride arrays changed with their addresses")
    if fp8:
        _check_grouped_scale_steps(gp.host.extra, Kd, name)
    out = cache[key] = DeviceGroups(name, G, arrays, gp)
    return out


def run(kernel: str, backend, args: dict, preset, **params) -> list:
    """grouped_gemm / grouped_gemm_fp8 (kernels.md) as two launches, neither needing the host to know the routing:
    cutlass_group_args (the groups from block_expert and total_padded), then CUTLASS's grouped kernel with the fixed
    Params. `variant` is accepted (the shapes say up or down)."""
    params.pop("variant", None)
    if params:
        raise InputError(f"cutlass {kernel} (device-built groups): unknown parameter(s) {sorted(params)}; expected "
                         f"'variant'")
    P_max, Kd, N, E, BM = _check_args(kernel, args, preset)  # noqa: N806
    fp8 = kernel == "grouped_gemm_fp8"
    key = shape_key(P_max, N, Kd, BM)
    name = config_for(kernel, key)
    how = "swept" if key in choices().get(kernel, {}) else "default, not swept"
    if not is_grouped(name):  # a per-expert choice needs the runs on the host: not here
        name, how = GROUPED[kernel], "default: the committed choice is per-expert"
    G = P_max // BM  # noqa: N806 - one group per routing block: every run of them fits
    dg = device_groups(kernel, name, backend, G, N, Kd)
    arr = dg.arrays
    a, w, c = args["a"], args["w"], args["c"]
    values = {"block_expert": args["block_expert"], "total_padded": args["total_padded"], "shapes": arr["shapes"],
              "ptr_a": arr["ptr_a"], "ptr_b": arr["ptr_b"], "ptr_d": arr["ptr_d"],
              "ptr_sfa": arr["ptr_sfa"].addr if fp8 else 0, "ptr_sfb": arr["ptr_sfb"].addr if fp8 else 0,
              "a": a.addr, "w": w.addr, "c": c.addr, "a_scale": args["a_scale"].addr if fp8 else 0,
              "w_scale": args["w_scale"].addr if fp8 else 0, "n_blocks": G, "bm": BM, "n": N, "kd": Kd,
              "a_bytes": np.dtype(a.dtype).itemsize, "n_experts": E, "with_scales": int(fp8)}
    config = build.CONFIGS[name]
    records = [ARGS_KERNEL.launch(backend, (ceil_div(G, ARGS_BLOCK), 1, 1), (ARGS_BLOCK, 1, 1), values,
                                  tag=f"cutlass group args [{N}x{Kd}], {G} groups (for {kernel})")]
    hp = dg.params.host
    tag = (f"{kernel}[{N}x{Kd}] cutlass grouped {config.label} ({how}), {G} groups from the device's routing in "
           f"one launch")
    marks = _sim_marks(kernel, backend, dg, N, Kd)
    try:
        records.append(backend.launch_ptx(build.load_ptx(name), entry_of(name), hp.grid, hp.block,
                                          [hp.struct, *marks], shared_bytes=hp.shared_bytes, tag=tag))
    finally:  # the sampled phases' shape arrays (the sim backend ran them inside the launch)
        for buf in backend.__dict__.pop("_cutlass_subset_shapes", []):
            backend.free(buf)
    return records


def _sampling(backend) -> bool:
    sample = getattr(backend, "sample", None)  # a harness SamplePolicy; set only by the sim backend's rows
    return getattr(backend, "name", "") == "sim" and sample is not None and not getattr(sample, "off", False)


def _sim_marks(kernel: str, backend, dg: DeviceGroups, N: int, Kd: int) -> list:  # noqa: N803
    """[GroupSubsets] where the sim backend samples (module docstring), else []. The groups are read back from the
    shapes the args kernel just wrote: only the simulator, which has run it by now, gets here."""
    if not _sampling(backend):
        return []
    config = build.CONFIGS[dg.name]
    shapes = np.asarray(backend.to_host(dg.arrays["shapes"])).reshape(dg.groups, 3)
    real = [int(g) for g in np.flatnonzero(shapes[:, 0] > 0)]
    if not real:
        return []

    def launch_groups(keep: Keep) -> HostParams:
        """The same launch with only the non-empty groups `keep` (indices into them) doing work: the others' M set
        to 0, the pointer and stride arrays the whole launch's."""
        kept = {real[i] for i in keep}
        sub_shapes = shapes.copy()
        sub_shapes[[g for g in range(dg.groups) if g not in kept], 0] = 0
        buf = backend.to_device(np.ascontiguousarray(sub_shapes))
        backend.__dict__.setdefault("_cutlass_subset_shapes", []).append(buf)  # freed after the launch (run)
        arr = dg.arrays
        addrs = (buf.addr, arr["ptr_a"].addr, arr["stride_a"].addr, arr["ptr_b"].addr, arr["stride_b"].addr,
                 arr["ptr_d"].addr, arr["stride_c"].addr, arr["ptr_d"].addr, arr["stride_d"].addr)
        fp8 = "ptr_sfa" in arr
        scales = (arr["ptr_sfa"].addr, 0, arr["ptr_sfb"].addr, 0) if fp8 else ()
        return grouped_host_params(dg.name, ((config.tile_m, N, Kd),) * dg.groups, addrs, arr["work"].addr,
                                   WORKSPACE_BYTES, scales, shapes_on_device=True).host

    return [group_subsets([int(shapes[g, 0]) for g in real], N, Kd, config, launch_groups, f"cutlass {kernel}",
                          windows=False)]
