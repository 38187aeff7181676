"""Helpers for hand-written PTX tests: a one-kernel template and exact-rounding references."""
from fractions import Fraction

import numpy as np

import ptxsim

HEADER = """.version 8.8
.target sm_90
.address_size 64
"""

TEMPLATE = HEADER + """
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .pred %p<8>; .reg .b16 %h<8>; .reg .b32 %r<16>; .reg .b64 %rd<20>; .reg .f32 %f<16>; .reg .f64 %fd<16>;
  ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; ld.param.u64 %rd4, [pd];
  mov.u32 %r0, %tid.x; mov.u32 %r15, %ctaid.x; mov.u32 %r14, %ntid.x; mad.lo.u32 %r0, %r15, %r14, %r0;
  mul.wide.u32 %rd5, %r0, 4; mul.wide.u32 %rd6, %r0, 8;
  add.s64 %rd7, %rd1, %rd5; add.s64 %rd8, %rd2, %rd5; add.s64 %rd9, %rd3, %rd5; add.s64 %rd10, %rd4, %rd5;
  add.s64 %rd11, %rd1, %rd6; add.s64 %rd12, %rd2, %rd6; add.s64 %rd13, %rd3, %rd6; add.s64 %rd14, %rd4, %rd6;
BODY
  ret;
}
"""


def kernel(body: str):
    """A kernel k(a, b, c, d): per thread i, %rd7..%rd10 = &a[i]..&d[i] (4-byte), %rd11..%rd14 (8-byte)."""
    return ptxsim.load_ptx(TEMPLATE.replace("BODY", body)).kernel("k")


def run(body: str, *arrays, threads=None, **kw):
    given = len(arrays)
    arrays = list(arrays) + [np.zeros(1, np.uint32) for _ in range(4 - len(arrays))]
    n = threads or len(arrays[0])
    if n > 1024 and n % 128:
        raise ValueError("run(): more than 1024 threads must be a multiple of 128")
    grid, block = (1, n) if n <= 1024 else (n // 128, 128)
    ptxsim.launch(kernel(body), grid, block, arrays, **kw)
    return arrays[:given]


def round_exact(value: Fraction, dt, mode: str = "rn"):
    """The correctly rounded dt (np.float32/np.float64) value of an exact Fraction."""
    inf = dt(np.inf)
    with np.errstate(all="ignore"):
        x = dt(float(value))
    if not np.isfinite(x):
        return x
    cands = [c for c in (np.nextafter(np.nextafter(x, -inf), -inf), np.nextafter(x, -inf), x, np.nextafter(x, inf),
                         np.nextafter(np.nextafter(x, inf), inf)) if np.isfinite(c)]
    fr = [(Fraction(float(c)), c) for c in cands]
    if mode == "rn":
        best = min(fr, key=lambda p: (abs(p[0] - value), int(np.array(p[1]).view(np.uint64 if dt is np.float64
                                                                                    else np.uint32)) & 1))
        return best[1]
    if mode == "rm":
        return max((p for p in fr if p[0] <= value), key=lambda p: p[0])[1]
    if mode == "rp":
        return min((p for p in fr if p[0] >= value), key=lambda p: p[0])[1]
    if mode == "rz":
        return (round_exact(value, dt, "rm") if value >= 0 else round_exact(value, dt, "rp"))
    raise ValueError(mode)


def fp8_table(kind: str) -> np.ndarray:
    """Values of the finite non-negative codes of e4m3 (0..0x7E) or e5m2 (0..0x7B), by code."""
    eb, mb, bias, top = (4, 3, 7, 0x7E) if kind == "e4m3" else (5, 2, 15, 0x7B)
    vals = []
    for code in range(top + 1):
        e, m = code >> mb, code & ((1 << mb) - 1)
        vals.append(m / (1 << mb) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << mb)) * 2.0 ** (e - bias))
    return np.array(vals)


def fp8_ref(x: np.ndarray, kind: str) -> np.ndarray:
    """Round-to-nearest-even satfinite f32 -> fp8 code, from first principles (no ml_dtypes)."""
    tab = fp8_table(kind)
    out = np.zeros(len(x), np.uint8)
    for i, v in enumerate(np.asarray(x, np.float64)):
        if np.isnan(v):
            out[i] = 0x7F
            continue
        a = min(abs(v), tab[-1])
        j = int(np.searchsorted(tab, a))
        if j == len(tab) or (j > 0 and (a - tab[j - 1] < tab[j] - a or (a - tab[j - 1] == tab[j] - a and
                                                                        (j - 1) % 2 == 0))):
            j -= 1
        out[i] = j | (0x80 if np.signbit(v) else 0)
    return out
