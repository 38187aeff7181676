"""Device-side primitives shared by the Numba kernels: bit casts, bf16/e4m3 rounding, warp collectives.

Numba sees bf16 as uint16 bits and e4m3 as uint8 bits. numba-cuda's own `numba.cuda.bf16` was tried first
(numba-cuda 0.30, compile_ptx for cc 9.0, no GPU; `cuda_fp8` is generated the same way, from C++ shims). It lowers
to calls of shim functions (`_ZL19__float2bfloat16_rnf_nbst`, `_ZL20__ushort_as_bfloat16t_nbst`, ...) that are
linked in only at JIT time, so the PTX compile_ptx returns has unresolved extern calls (ptxas: "Unresolved extern
function"; ptxsim cannot run it) and passes every value through a local-memory stack frame for the call ABI.
Everything here is therefore plain integer/fp32 arithmetic, which ptxas turns into a few ALU instructions:

- bf16 -> f32 is a 16-bit shift of the bits (exact);
- f32 -> bf16 is the round-to-nearest-even bit trick `(b + 0x7FFF + ((b >> 16) & 1)) >> 16`, NaN-safe (quiet NaN);
- f32 -> e4m3fn is integer RNE on the exponent/mantissa with saturation to +-448 (what
  `cvt.rn.satfinite.e4m3x2.f32` does in one instruction on the PTX path).

Warp collectives (`shfl.sync.bfly`, `match.sync.any`, `%lanemask_lt`) come from numba.cuda. Numba's CUDA simulator
implements none of them, so under NUMBA_ENABLE_CUDASIM=1 this module swaps in shared-memory emulations that need every
thread of the block to call them together (the kernels are written so they do: inactive lanes still take part).
The same kernel source therefore runs on the GPU, through ptxsim (compile_ptx) and under the simulator.

Numba at its best also means the two things numba-cuda does offer beyond plain indexing and libdevice:
- cache-hinted loads (numba-cuda's `cuda.ldcs`, `ld.global.cs`: cache-streaming, evict first), used as `ld_stream`
  for data a kernel reads exactly once, where the PTX path uses `ld.global.nc.L1::no_allocate`;
- fast math where kernels.md's tolerances allow it, as `fast_exp` / `fast_div` (libdevice `__nv_fast_expf` ->
  `ex2.approx.f32`, `__nv_fast_fdividef` -> `div.approx.f32`, what the PTX path writes by hand). NOTE: this is done
  per call site rather than with `fastmath=True`: in numba-cuda 0.30 fastmath is a kernel-wide compile option (set
  where the backends compile, outside the kernel source), and a `fastmath` flag on a device function changes nothing
  in the PTX (checked: div.rn.f32 and libdevice expf stay). Per call site also keeps it out of the kernels whose
  rounding is exact (act_quant) and out of comparisons.
The simulator implements neither (`cuda.ldcs` is None there, libdevice is absent), so it gets plain equivalents.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32, uint32, uint64
from numba.cuda.core import config

SIMULATOR = bool(config.ENABLE_CUDASIM)
SHARED_ALIGN = None if SIMULATOR else 16  # 16-byte aligned shared tiles let NVVM merge loads into ld.shared.v4 (the
# simulator rejects any alignment argument)
FULL_MASK = 0xFFFFFFFF

if SIMULATOR:  # NOTE: plain-Python bit casts; the simulator runs device code as Python on NumPy scalars.

    @cuda.jit(device=True)
    def f32_bits(x):
        return np.float32(x).view(np.uint32)

    @cuda.jit(device=True)
    def f32_from_bits(u):
        return np.uint32(u).view(np.float32)

    @cuda.jit(device=True)
    def shfl_xor_f32(v, lane_mask):
        buf = cuda.shared.array(1024, float32)
        tid = cuda.threadIdx.x
        cuda.syncthreads()
        buf[tid] = v
        cuda.syncthreads()
        r = buf[tid ^ lane_mask]
        cuda.syncthreads()
        return r

    @cuda.jit(device=True)
    def shfl_xor_i32(v, lane_mask):
        buf = cuda.shared.array(1024, int32)
        tid = cuda.threadIdx.x
        cuda.syncthreads()
        buf[tid] = v
        cuda.syncthreads()
        r = buf[tid ^ lane_mask]
        cuda.syncthreads()
        return r

    @cuda.jit(device=True)
    def shfl_up_i32(v, delta):
        buf = cuda.shared.array(1024, int32)
        tid = cuda.threadIdx.x
        cuda.syncthreads()
        buf[tid] = v
        cuda.syncthreads()
        r = buf[tid - delta] if tid % 32 >= delta else v
        cuda.syncthreads()
        return r

    @cuda.jit(device=True)
    def match_any_i32(v):
        buf = cuda.shared.array(1024, int32)
        tid = cuda.threadIdx.x
        base = tid - tid % 32
        cuda.syncthreads()
        buf[tid] = v
        cuda.syncthreads()
        mask = np.uint32(0)
        for j in range(32):
            if buf[base + j] == v:
                mask |= np.uint32(1 << j)
        cuda.syncthreads()
        return mask

    @cuda.jit(device=True)
    def lanemask_lt():
        return np.uint32((1 << (cuda.threadIdx.x % 32)) - 1)

    @cuda.jit(device=True)
    def ld_stream(array, index):
        return array[index]

    @cuda.jit(device=True)
    def fast_exp(x):
        return math.exp(x)

    @cuda.jit(device=True)
    def fast_div(x, y):
        return x / y

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True, inline=True)
    def f32_bits(x):
        return uint32(libdevice.float_as_int(x))

    @cuda.jit(device=True, inline=True)
    def f32_from_bits(u):
        return libdevice.int_as_float(int32(u))

    @cuda.jit(device=True, inline=True)
    def shfl_xor_f32(v, lane_mask):
        return cuda.shfl_xor_sync(FULL_MASK, v, lane_mask)

    @cuda.jit(device=True, inline=True)
    def shfl_xor_i32(v, lane_mask):
        return cuda.shfl_xor_sync(FULL_MASK, v, lane_mask)

    @cuda.jit(device=True, inline=True)
    def shfl_up_i32(v, delta):
        return cuda.shfl_up_sync(FULL_MASK, v, delta)

    @cuda.jit(device=True, inline=True)
    def match_any_i32(v):
        return uint32(cuda.match_any_sync(FULL_MASK, v))

    @cuda.jit(device=True, inline=True)
    def lanemask_lt():
        return uint32(cuda.lanemask_lt())

    # read-once data: ld.global.cs (numba-cuda's cache-hint loads; any 8..64-bit int/float element, tuple index).
    # NOTE: the intrinsic behind `cuda.ldcs`: the public name is an @overload whose wrapper numba-cuda compiles with
    # compile_device, which asks the driver for the current device, so compile_ptx without a GPU (ptxsim, static
    # analysis) fails with "CUDA driver library cannot be found"; the intrinsic emits the same ld.global.cs.
    from numba.cuda import cache_hints

    ld_stream = cache_hints.ldcs_intrinsic
    # ex2.approx.f32 with a log2(e) pre-scale: relative error ~2^-21 for the |x| of sigmoid/SiLU arguments
    fast_exp = libdevice.fast_expf
    # div.approx.f32: at most 2 ulp (fp32), far below the 1e-5 / bf16 tolerances where it is used
    fast_div = libdevice.fast_fdividef


@cuda.jit(device=True, inline=True)
def bf16_lo(w):
    """The bf16 in the low half of a uint32 word, as float32 (exact)."""
    return f32_from_bits(uint32(w) << uint32(16))


@cuda.jit(device=True, inline=True)
def bf16_hi(w):
    """The bf16 in the high half of a uint32 word, as float32 (exact)."""
    return f32_from_bits(uint32(w) & uint32(0xFFFF0000))


@cuda.jit(device=True, inline=True)
def bf16_to_f32(h):
    """A bf16 given as uint16 bits, as float32 (exact)."""
    return f32_from_bits(uint32(h) << uint32(16))


@cuda.jit(device=True, inline=True)
def bf16_rn(x):
    """float32 -> bf16 bits (in a uint32) with round-to-nearest-even; NaN stays a quiet NaN of the same sign."""
    b = f32_bits(x)
    if (b & uint32(0x7FFFFFFF)) > uint32(0x7F800000):
        return (b >> uint32(16)) | uint32(0x40)
    return (b + uint32(0x7FFF) + ((b >> uint32(16)) & uint32(1))) >> uint32(16)


@cuda.jit(device=True, inline=True)
def pack_bf16x2(lo, hi):
    """Two float32 -> one uint32 holding bf16_rn(lo) in bits 15:0 and bf16_rn(hi) in bits 31:16."""
    return bf16_rn(lo) | (bf16_rn(hi) << uint32(16))


@cuda.jit(device=True, inline=True)
def lo32(w):
    return uint32(w & uint64(0xFFFFFFFF))


@cuda.jit(device=True, inline=True)
def hi32(w):
    return uint32(w >> uint64(32))


@cuda.jit(device=True, inline=True)
def join64(lo, hi):
    return uint64(lo) | (uint64(hi) << uint64(32))


@cuda.jit(device=True, inline=True)
def e4m3_rn_sat(x):
    """float32 -> float8_e4m3fn bits (in a uint32): RNE, |x| >= 448 saturates to +-448, NaN -> 0x7F | sign."""
    b = f32_bits(x)
    sign = (b >> uint32(24)) & uint32(0x80)
    a = b & uint32(0x7FFFFFFF)
    if a > uint32(0x7F800000):
        return sign | uint32(0x7F)
    if a >= uint32(0x43E00000):  # 448.0 and above (and +inf): satfinite
        return sign | uint32(0x7E)
    if a < uint32(0x3C800000):  # below 2^-6: subnormal e4m3, steps of 2^-9
        # |x| * 2^9 is exact; adding 2^23 rounds it to an integer with RNE (the sum is below 2^24).
        t = f32_from_bits(a) * float32(512.0) + float32(8388608.0)
        return sign | (f32_bits(t) - uint32(0x4B000000))
    # normal: keep 3 mantissa bits with RNE on the bits; a carry rolls into the exponent as it should.
    r = (a + uint32(0x7FFFF) + ((a >> uint32(20)) & uint32(1))) >> uint32(20)
    return sign | (r - uint32(960))  # rebias the exponent: (127 - 7) << 3


@cuda.jit(device=True, inline=True)
def e4m3_to_f32(byte):
    """float8_e4m3fn bits (the low 8 bits of `byte`) -> float32, exact; the NaN codes 0x7F/0xFF are not decoded."""
    b = uint32(byte) & uint32(0xFF)
    sign = (b & uint32(0x80)) << uint32(24)
    mag = b & uint32(0x7F)
    if mag < uint32(8):  # subnormal: mag * 2^-9, exact in fp32
        return f32_from_bits(f32_bits(float32(mag) * float32(0.001953125)) | sign)
    return f32_from_bits(sign | ((mag + uint32(960)) << uint32(20)))  # rebias the exponent: (127 - 7) << 3
