"""CUTLASS's sm90 GEMMs on ptxsim, run unmodified (their NVRTC PTX, their own Params): the bf16 GEMM D = A @ B^T and
the FP8 blockwise-scaled one D = sum over 128-deep k blocks of (A_k @ B_k^T) x SFA[m, k] x SFB[n // 128, k]."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from contract.device import StructArg
from contract.errors import InputError
from cutlass_impl.build import load_ptx
from cutlass_impl.grouped_gemm import entry_of
from cutlass_impl.params import HostParams, host_params

NAME = "gemm_bf16_sm90"
FP8_NAME = "gemm_fp8_blockwise_sm90"


def _launch(backend, name: str, hp: HostParams, struct: StructArg | None = None, grid=None, **launch_options):
    """Launch kernel `name` straight on the ptxsim device with its Params (tensor maps encoded by the sim backend's
    struct_bytes, the path launch_ptx takes), on the shim's grid or `grid`."""
    from harness.backends.sim import struct_bytes

    ptx = load_ptx(name)
    kernel = backend.module(ptx).kernel(entry_of(name))
    raw = struct_bytes(hp.struct if struct is None else struct, 0)
    return backend.device.launch(kernel, grid or hp.grid, hp.block, [raw], shared_bytes=hp.shared_bytes,
                                 **launch_options)


def swap_first_two_maps(struct: StructArg) -> StructArg:
    """The same Params with the first two tensor maps' calls swapped (A's and B's): a deliberately wrong launch."""
    (o1, c1), (o2, c2), *rest = struct.tensor_maps
    return replace(struct, tensor_maps=((o1, c2), (o2, c1), *rest))


def run_gemm_bf16(backend, a: np.ndarray, b: np.ndarray, transform=None, **launch_options):
    """D (bf16, M x N) = a (bf16 M x K) @ b (bf16 N x K)^T on a SimBackend; returns (D, ptxsim launch stats).
    `transform` (StructArg -> StructArg) alters the Params before the launch (the test that the check can fail)."""
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    (M, K), (N, Kb) = a.shape, b.shape  # noqa: N806
    if a.dtype != bf16 or b.dtype != bf16 or K != Kb:
        raise InputError(f"CUTLASS {NAME}: a {a.dtype}{a.shape}, b {b.dtype}{b.shape}; expected bf16 M x K and N x K")
    da, db = backend.to_device(np.ascontiguousarray(a)), backend.to_device(np.ascontiguousarray(b))
    dc = backend.to_device(np.zeros((M, N), bf16))
    dd = backend.empty((M, N), bf16, fill_byte=0xFF)
    hp = host_params(NAME, M, N, K, (da.addr, db.addr, dc.addr, dd.addr))
    stats = _launch(backend, NAME, hp, transform(hp.struct) if transform else None, **launch_options)
    return backend.to_host(dd), stats


def run_gemm_fp8_blockwise(backend, a: np.ndarray, b: np.ndarray, sfa: np.ndarray, sfb: np.ndarray,
                           **launch_options):
    """D (bf16, M x N) of e4m3 a (M x K) and b (N x K) with DeepSeek-V3's scales sfa (f32 M x K/128: 1 x 128 per row)
    and sfb (f32 N/128 x K/128: 128 x 128 blocks) on a SimBackend; returns (D, ptxsim launch stats)."""
    import ml_dtypes

    e4m3, bf16 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.bfloat16)
    (M, K), (N, Kb) = a.shape, b.shape  # noqa: N806
    if a.dtype != e4m3 or b.dtype != e4m3 or K != Kb or K % 128 or N % 128:
        raise InputError(f"CUTLASS {FP8_NAME}: a {a.dtype}{a.shape}, b {b.dtype}{b.shape}; expected e4m3 M x K and "
                         f"N x K, K and N multiples of 128")
    if sfa.shape != (M, K // 128) or sfb.shape != (N // 128, K // 128):
        raise InputError(f"CUTLASS {FP8_NAME}: scales {sfa.shape} and {sfb.shape}; expected {(M, K // 128)} and "
                         f"{(N // 128, K // 128)}")
    da, db = backend.to_device(np.ascontiguousarray(a)), backend.to_device(np.ascontiguousarray(b))
    dc = backend.to_device(np.zeros((M, N), bf16))
    dd = backend.empty((M, N), bf16, fill_byte=0xFF)
    # scale buffers as CUTLASS's ScaleConfig lays them out (SFA M-major, M floats a k block): the shim says the
    # index step of each axis
    probe = host_params(FP8_NAME, M, N, K, (da.addr, db.addr, dc.addr, dd.addr, 0, 0, M))
    sa_n, sa_m, sa_k, sb_n, sb_nb, sb_k = (int(x) for x in re.findall(r"-?\d+", probe.extra))
    flat_a = np.zeros(sa_n, np.float32)
    m, kb = np.meshgrid(np.arange(M), np.arange(K // 128), indexing="ij")
    flat_a[m * sa_m + kb * sa_k] = sfa
    flat_b = np.zeros(sb_n, np.float32)
    nb, kb = np.meshgrid(np.arange(N // 128), np.arange(K // 128), indexing="ij")
    flat_b[nb * sb_nb + kb * sb_k] = sfb
    dsa, dsb = backend.to_device(flat_a), backend.to_device(flat_b)
    hp = host_params(FP8_NAME, M, N, K, (da.addr, db.addr, dc.addr, dd.addr, dsa.addr, dsb.addr, M))
    stats = _launch(backend, FP8_NAME, hp, **launch_options)
    return backend.to_host(dd), stats


GROUPED_NAME = "gemm_bf16_grouped_sm90"
WORKSPACE_BYTES = 1 << 18


def run_grouped_gemm_bf16(backend, a_list, b_list, transform=None, **launch_options):
    """D_g (bf16, M_g x N) = a_g (bf16 M_g x K) @ b_g (bf16 N x K)^T for every group g in ONE launch of CUTLASS's
    grouped (pointer-array) kernel on a SimBackend; returns ([D_g], ptxsim launch stats). `transform`
    (GroupedParams -> GroupedParams) alters what the launch is given (the tests that it can fail)."""
    import ml_dtypes

    from cutlass_impl.params import grouped_host_params

    bf16 = np.dtype(ml_dtypes.bfloat16)
    g = len(a_list)
    da = [backend.to_device(np.ascontiguousarray(a)) for a in a_list]
    db = [backend.to_device(np.ascontiguousarray(b)) for b in b_list]
    dc = [backend.to_device(np.zeros((a.shape[0], b.shape[0]), bf16)) for a, b in zip(a_list, b_list, strict=True)]
    dd = [backend.empty((a.shape[0], b.shape[0]), bf16, fill_byte=0xFF) for a, b in zip(a_list, b_list, strict=True)]
    ptrs = [backend.to_device(np.array([x.addr for x in xs], np.uint64)) for xs in (da, db, dc, dd)]
    shapes_buf = backend.to_device(np.zeros(4 * g, np.int32))
    strides = [backend.to_device(np.zeros(g, np.uint64)) for _ in range(4)]
    work = backend.to_device(np.zeros(WORKSPACE_BYTES, np.uint8))
    shapes = tuple((int(a.shape[0]), int(b.shape[0]), int(a.shape[1])) for a, b in zip(a_list, b_list, strict=True))
    addrs = (shapes_buf.addr, ptrs[0].addr, strides[0].addr, ptrs[1].addr, strides[1].addr, ptrs[2].addr,
             strides[2].addr, ptrs[3].addr, strides[3].addr)
    gp = grouped_host_params(GROUPED_NAME, shapes, addrs, work.addr, WORKSPACE_BYTES)
    if transform is not None:
        gp = transform(gp)
    for buf, raw in zip((shapes_buf, *strides), (gp.shapes, *gp.strides), strict=True):
        backend.device.copy_in(buf.handle, np.frombuffer(raw, np.uint8))
    stats = _launch(backend, GROUPED_NAME, gp.host, **launch_options)
    return [backend.to_host(d) for d in dd], stats


GROUPED_FP8_NAME = "gemm_fp8_blockwise_grouped_sm90"


def run_grouped_gemm_fp8(backend, a_list, b_list, sfa_list, sfb_list, name=GROUPED_FP8_NAME, grid=None,
                         **launch_options):
    """D_g (bf16, M_g x N) of e4m3 a_g (M_g x K) and b_g (N x K) with K-major scales sfa_g (f32 M_g x K/128) and
    sfb_g (f32 N/128 x K/128), every group in ONE launch of CUTLASS's grouped FP8 blockwise kernel `name` (a
    grouped FP8 candidate) on a SimBackend (each group's tensors in buffers of their own: the kernel reads only the
    pointers), on the shim's grid or `grid` (its persistent scheduler strides by gridDim: fewer CTAs run more tiles
    each); returns ([D_g], stats)."""
    import ml_dtypes

    from cutlass_impl.params import grouped_host_params

    bf16 = np.dtype(ml_dtypes.bfloat16)
    g = len(a_list)
    shapes = tuple((int(a.shape[0]), int(b.shape[0]), int(a.shape[1])) for a, b in zip(a_list, b_list, strict=True))
    da = [backend.to_device(np.ascontiguousarray(a)) for a in a_list]
    db = [backend.to_device(np.ascontiguousarray(b)) for b in b_list]
    dd = [backend.empty((m, n), bf16, fill_byte=0xFF) for m, n, _ in shapes]
    dsa = [backend.to_device(np.ascontiguousarray(s, np.float32)) for s in sfa_list]
    dsb = [backend.to_device(np.ascontiguousarray(s, np.float32)) for s in sfb_list]
    ptrs = [backend.to_device(np.array([x.addr for x in xs], np.uint64)) for xs in (da, db, dd, dd, dsa, dsb)]
    probe = grouped_host_params(name, shapes, (0,) * 9, 0, WORKSPACE_BYTES, (0,) * 4)
    shapes_buf, *strides = (backend.to_device(np.frombuffer(raw, np.uint8)) for raw in (probe.shapes, *probe.strides))
    layouts = [backend.to_device(np.frombuffer(raw, np.uint8)) for raw in probe.scale_layouts]
    work = backend.to_device(np.zeros(WORKSPACE_BYTES, np.uint8))
    addrs = (shapes_buf.addr, ptrs[0].addr, strides[0].addr, ptrs[1].addr, strides[1].addr, ptrs[2].addr,
             strides[2].addr, ptrs[3].addr, strides[3].addr)
    gp = grouped_host_params(name, shapes, addrs, work.addr, WORKSPACE_BYTES,
                             (ptrs[4].addr, layouts[0].addr, ptrs[5].addr, layouts[1].addr))
    if g and "scale steps" not in gp.host.extra:
        raise InputError(f"CUTLASS {name}: the shim printed no scale steps")
    stats = _launch(backend, name, gp.host, grid=grid, **launch_options)
    return [backend.to_host(d) for d in dd], stats
