"""A user's own saxpy, once in Numba and once in hand-written PTX, compared on the simulator (or a GPU).

    python examples/saxpy_numba_vs_ptx.py            # sim backend: times modelled by ptxsim
    python examples/saxpy_numba_vs_ptx.py gpu        # the same script on a GPU: times measured
"""
import sys

import numpy as np
from numba import cuda

import ptxmoe


@cuda.jit
def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


SAXPY_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r1, [n];
    setp.ge.u32 %p1, %r4, %r1;
    @%p1 bra DONE;
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u64 %rd3, [out];
    mul.wide.u32 %rd4, %r4, 4;
    add.s64 %rd5, %rd1, %rd4;
    add.s64 %rd6, %rd2, %rd4;
    add.s64 %rd7, %rd3, %rd4;
    ld.global.f32 %f2, [%rd5];
    ld.global.f32 %f3, [%rd6];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f4;
DONE:
    ret;
}
"""


def make_inputs(rng, n=4096):
    return {"a": np.float32(2.5), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.int32(n)}


def check(outputs, inputs):
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6, atol=1e-6)


def grid(inputs):
    return (int(inputs["n"]) + 255) // 256


def main(backend="sim"):
    result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(saxpy, grid=grid, block=256),
                             "ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=grid, block=256)},
                            make_inputs, check=check, outputs=["out"], name="saxpy", backend=backend)
    print(result)
    print(result.verdict("ptx", "numba"))
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sim")
