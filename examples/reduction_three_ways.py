"""One reduction (sum of a float32 vector) written three ways: Numba, CUDA C++ (NVRTC) and hand PTX.

The same algorithm in each language, so the comparison is about the code each toolchain emits: a grid-stride loop
accumulates per thread, a butterfly of warp shuffles sums each warp, and lane 0 of each warp adds its sum to the
output with one atomic. The check compares with NumPy's float64 sum.

    python examples/reduction_three_ways.py        # sim backend (times modelled)
    python examples/reduction_three_ways.py gpu    # on a GPU (times measured)
"""
import sys

import numpy as np
from numba import cuda

import ptxmoe

BLOCKS, THREADS = 8, 256


@cuda.jit
def reduce_sum(x, out, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = np.float32(0)
    while i < n:
        acc += x[i]
        i += stride
    for offset in (16, 8, 4, 2, 1):
        acc += cuda.shfl_xor_sync(0xFFFFFFFF, acc, offset)
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(out, 0, acc)


REDUCE_CU = r"""
extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, unsigned n)
{
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc += x[i];
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, acc);
}
"""

REDUCE_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry reduce_sum(.param .u64 x, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %nctaid.x;
    mad.lo.s32 %r6, %r3, %r4, %r2;
    mul.lo.s32 %r7, %r4, %r5;
    mov.f32 %f1, 0f00000000;
LOOP:
    setp.ge.u32 %p1, %r6, %r1;
    @%p1 bra WARP;
    mul.wide.u32 %rd3, %r6, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.nc.f32 %f2, [%rd4];
    add.f32 %f1, %f1, %f2;
    add.s32 %r6, %r6, %r7;
    bra LOOP;
WARP:
    shfl.sync.bfly.b32 %f2, %f1, 16, 31, -1;
    add.f32 %f1, %f1, %f2;
    shfl.sync.bfly.b32 %f2, %f1, 8, 31, -1;
    add.f32 %f1, %f1, %f2;
    shfl.sync.bfly.b32 %f2, %f1, 4, 31, -1;
    add.f32 %f1, %f1, %f2;
    shfl.sync.bfly.b32 %f2, %f1, 2, 31, -1;
    add.f32 %f1, %f1, %f2;
    shfl.sync.bfly.b32 %f2, %f1, 1, 31, -1;
    add.f32 %f1, %f1, %f2;
    and.b32 %r8, %r2, 31;
    setp.ne.u32 %p2, %r8, 0;
    @%p2 bra DONE;
    red.global.add.f32 [%rd2], %f1;
DONE:
    ret;
}
"""


def make_inputs(rng, n=1 << 14):
    return {"x": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(1, np.float32), "n": np.uint32(n)}


def check(outputs, inputs):
    expected = float(np.sum(inputs["x"], dtype=np.float64))
    got = float(outputs["out"][0])
    return abs(got - expected) <= 1e-3 * np.sqrt(inputs["x"].size), f"sum {got:.6g}, expected {expected:.6g}"


def main(backend="sim", cases=None):
    shape = {"grid": BLOCKS, "block": THREADS}
    result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(reduce_sum, **shape),
                             "cpp": ptxmoe.CppKernel(REDUCE_CU, "reduce_sum", **shape),
                             "ptx": ptxmoe.PtxKernel(REDUCE_PTX, "reduce_sum", **shape)},
                            make_inputs, check=check, outputs=["out"], name="reduce_sum", backend=backend,
                            cases=cases or {"n=16k": {"n": 1 << 14}},
                            min_bytes=lambda inputs: inputs["x"].nbytes + 4, flops=lambda inputs: inputs["x"].size)
    print(result)
    for impl in result.impls:
        totals = result.static(impl).totals
        print(f"{impl}: {totals.registers_max} registers, {totals.sass_instructions} SASS instructions")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sim")
