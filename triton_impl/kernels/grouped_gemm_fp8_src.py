"""The Triton source of triton_impl's grouped_gemm_fp8 (compiled by triton_impl.generate, never imported at run time).

Written the way vLLM's fused-MoE Triton kernel does block-FP8 w8a8 (vllm/model_executor/layers/fused_moe/
fused_moe.py, `fused_moe_kernel` with `block_shape` [128, 128]): one program per (N tile, row tile); the row tile's
expert read from the routing map; A and W tiles of depth BK = 128 (one scale group) loaded through a software pipeline
(num_stages), their product `tl.dot` in FP8 on the tensor cores, promoted to the FP32 accumulator each k step times
the row's 1x128 activation scale and the N tile's 128x128 weight scale. Differences from vLLM's kernel: the rows are
already permuted (kernels.md's `a` is grouped by expert in BM-row blocks), so there is no sorted_token_ids gather,
no top-k weight multiply and no grouped (swizzled) program order; a row tile past `total_padded` or of a block with
expert -1 writes nothing (the contract leaves those rows untouched).
"""
import triton
import triton.language as tl


@triton.jit
def grouped_gemm_fp8_triton(a, a_scale, w, w_scale, block_expert, total_padded, c, N, Kd, BM,
                            TM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    if pid_m * TM >= tl.load(total_padded):
        return
    e = tl.load(block_expert + (pid_m * TM) // BM).to(tl.int64)
    if e < 0:
        return
    ks = Kd // BK  # scale groups along K (BK is the 128-wide group)
    offs_m = pid_m * TM + tl.arange(0, TM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a + offs_m[:, None].to(tl.int64) * Kd + offs_k[None, :]
    w_ptrs = w + e * N * Kd + offs_n[None, :].to(tl.int64) * Kd + offs_k[:, None]  # W^T tile, [BK, BN]
    as_ptrs = a_scale + offs_m.to(tl.int64) * ks
    ws_ptrs = w_scale + (e * (N // BK) + pid_n * BN // BK) * ks
    acc = tl.zeros((TM, BN), dtype=tl.float32)
    for k in range(0, ks):
        a_tile = tl.load(a_ptrs)
        w_tile = tl.load(w_ptrs)
        sa = tl.load(as_ptrs + k)
        sw = tl.load(ws_ptrs + k)
        acc += tl.dot(a_tile, w_tile) * sa[:, None] * sw
        a_ptrs += BK
        w_ptrs += BK
    c_ptrs = c + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16))
