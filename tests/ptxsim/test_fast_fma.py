"""The all-lanes fma.rn.f32 handler (ptxsim/ops/fast.py `_fma`) against numerics.fma_f32, bitwise, on lane vectors
built to hit every branch: a GEMM's bf16 products into f32 sums (exact ties, no tiny sum), f64 sums that land
inexactly on an f32 tie (double-rounding traps, both sides of the tie), sums below 2^-126 (exact and inexact in
f64), zeros of both signs, infinities, NaNs, products past f32's range and random bit patterns; with each operand
a register or an immediate, and the destination one of the sources."""
import re

import numpy as np
import pytest
from ptxkit import HEADER

import ptxsim
from ptxsim import numerics as nm
from ptxsim.device import Device, Launch
from ptxsim.state import FULL, ExecState

F32 = np.float32
LANES = 1024
FORMS = """
  fma.rn.f32 %f1, %f2, %f3, %f4; fma.rn.f32 %f4, %f2, %f3, %f4; fma.rn.f32 %f2, %f2, %f3, %f4;
  fma.rn.f32 %f3, %f2, %f3, %f3; mad.rn.f32 %f5, %f2, %f3, %f4; fma.rn.f32 %f6, %f2, 0f3F7FF001, %f4;
  fma.rn.f32 %f7, 0fB3800800, %f3, %f4; fma.rn.f32 %f8, %f2, %f3, 0f00800000; fma.f32 %f9, %f2, %f3, 0fC9800000;
  fma.rn.f32 %f10, 0f3F800001, 0f33800000, %f4;
"""


def _program():
    text = HEADER + f"\n.visible .entry k()\n{{\n  .reg .f32 %f<12>;\n{FORMS}\n  ret;\n}}\n"
    prog = ptxsim.load_ptx(text).kernel("k").program
    return prog, {n: i for i, n in enumerate(prog.reg_names)}


def _f32(bits):
    return np.asarray(bits, np.uint32).view(F32)


def _bf16(v):
    return (np.asarray(v, F32).view(np.uint32) & np.uint32(0xFFFF0000)).view(F32)


def _gemm(rng, n):
    """bf16 x bf16 products into f32 accumulators of a GEMM's magnitudes."""
    x = _bf16(rng.standard_normal(n) * 0.05)
    y = _bf16(rng.standard_normal(n))
    z = (rng.standard_normal(n) * 0.1).astype(F32)
    return x, y, z


def _traps(rng, n):
    """f64 sums that land inexactly on an f32 tie, so that rounding twice goes the wrong way on about half the lanes.

    Accumulator-dominated: 2^a (1 + 2^-12) * 2^b (1 - 2^-12 + 2^-24) = 2^(a+b) (1 + 2^-36) added to
    z = +-2^c (1 + m 2^-23), c = a + b + 24: the sum rounds onto the tie z + 2^(c-24) (the exact sum above it, or
    with the product's sign flipped below it). Product-dominated (every other lane): 2^a (1 + 2^-12) * 2^b (1 + k 2^-12)
    with k odd is an f32 tie itself, and z = +-2^(a+b-60) r is lost in its f64 rounding.
    """
    c = rng.integers(-95, 100, n)
    a = rng.integers(-30, 30, n)
    x = (np.ldexp(1 + 2.0**-12, a) * rng.choice([-1, 1], n)).astype(F32)
    y = np.ldexp(1 - 2.0**-12 + 2.0**-24, c - 24 - a).astype(F32)
    z = (np.ldexp(1 + rng.integers(0, 1 << 23, n) * 2.0**-23, c) * rng.choice([-1, 1], n)).astype(F32)
    odd = slice(1, None, 2)
    k = rng.integers(0, 1 << 10, n)[odd] * 2 + 1
    y[odd] = np.ldexp(1 + k * 2.0**-12, c[odd] - a[odd]).astype(F32)
    z[odd] = (np.ldexp(rng.uniform(1, 2, k.size), c[odd] - 60) * rng.choice([-1, 1], k.size)).astype(F32)
    return x, y, z


def _tiny(rng, n):
    """Sums below 2^-126: cancellation of a product by its own f32 rounding (exact), products of ~2^-150 with 48 bits
    added to ~2^-127 (inexact in f64), subnormal accumulators, and traps on the subnormal grid: 2^-150 (1 + 2^-36)
    added to z = +-m 2^-149 rounds in f64 onto the midpoint z + 2^-150."""
    x = (rng.uniform(1, 2, n) * 2.0**-100 * rng.choice([-1, 1], n)).astype(F32)
    y = (rng.uniform(1, 2, n) * 2.0**-50).astype(F32)
    z = (rng.uniform(-1, 1, n) * 2.0**-126).astype(F32)
    q = n // 4
    x[:q] = (rng.uniform(1, 2, q) * 2.0**-60).astype(F32)
    y[:q] = (rng.uniform(1, 2, q) * 2.0**-66).astype(F32)
    z[:q] = -(x[:q].astype(np.float64) * y[:q]).astype(F32)
    z[q:2 * q] = _f32(rng.integers(1, 1 << 23, q))  # subnormal accumulators
    t = slice(2 * q, 3 * q)
    x[t] = (np.float64(2.0**-75 * (1 + 2.0**-12)) * rng.choice([-1, 1], q)).astype(F32)
    y[t] = F32(2.0**-75 * (1 - 2.0**-12 + 2.0**-24))
    z[t] = _f32(rng.integers(1 << 20, 1 << 23, q)) * rng.choice([-1, 1], q).astype(F32)
    return x, y, z


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38, 1.1754944e-38,
                     1e-45, -1e-45, 1.0, -1.0, 2.0**-24, 2.0**64], F32)


def _special(rng, n):
    """Specials in any operand (NaN payloads too), products past f32's range, zero sums of both signs."""
    x, y, z = (rng.choice(SPECIALS, n) for _ in range(3))
    x[: n // 4] = _f32(rng.integers(0x7F800001, 0x80000000, n // 4))  # NaNs with payloads
    q = slice(n // 4, n // 2)
    x[q], y[q] = rng.choice([-1, 1], n // 4).astype(F32) * F32(2.0**100), F32(2.0**100)
    z[q] = rng.choice(SPECIALS, n // 4)
    h = slice(n // 2, 3 * n // 4)
    x[h], y[h], z[h] = F32(3.0), F32(-0.5), F32(1.5) * rng.choice([-1, 1], n // 4).astype(F32)  # +-1.5 - 1.5
    return x, y, z


def _random_bits(rng, n):
    return tuple(_f32(rng.integers(0, 1 << 32, n, dtype=np.uint64)) for _ in range(3))


def _mix(rng, makers):
    """LANES lanes, dealt round-robin from `makers`, then shuffled."""
    parts = [m(rng, LANES // len(makers) + 1) for m in makers]
    x, y, z = (np.concatenate([p[k] for p in parts])[:LANES] for k in range(3))
    order = rng.permutation(LANES)
    return x[order], y[order], z[order]


CASES = {
    "gemm": [_gemm],  # exact ties only, no tiny sum: the handler's common case
    "gemm+traps": [_gemm, _traps],
    "everything": [_gemm, _traps, _tiny, _special, _random_bits],
    "tiny": [_tiny],
    "specials": [_special],
}


def _state(prog):
    dev = Device()
    L = Launch((1, 1, 1), (LANES, 1, 1), 0, dev.gmem, np.zeros(64, np.uint8), {}, [])
    return ExecState(prog, L, np.array([0]))


def _operands(source, regs, names):
    """The f32 lane values of a, b, c as the instruction written `source` reads them: a register, or the immediate
    spelled 0fXXXXXXXX (decoded here from the source, not by the simulator)."""
    tokens = re.findall(r"%f\d+|0f[0-9A-Fa-f]{8}", source)[1:]
    return [regs[names[t]].view(F32).copy() if t in names else np.full(LANES, _f32(int(t[2:], 16)), F32)
            for t in tokens]


@pytest.mark.parametrize("case", sorted(CASES))
@np.errstate(all="ignore")  # as ptxsim.launch runs handlers
def test_fast_fma_equals_fma_f32(rng, case):
    prog, names = _program()
    fmas = [i for i in prog.instrs if i.op in ("fma", "mad")]
    assert len(fmas) == 10 and all(hasattr(i.handler, "generic") for i in fmas)  # every form takes the fast path
    st = _state(prog)
    for ins, source in zip(fmas, [t for t in FORMS.split(";") if t.strip()], strict=True):
        x, y, z = _mix(rng, CASES[case])
        for reg, v in zip(("%f2", "%f3", "%f4"), (x, y, z), strict=True):
            st.regs[names[reg]][:] = v.view(np.uint32)
        before = [r.copy() for r in st.regs]
        a, b, c = _operands(source, st.regs, names)
        want = nm.fma_f32(a, b, c)
        ins.handler(st, ins, FULL)
        dst = names[ins.ops[0].name]
        got = st.regs[dst].view(F32)
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert bad.size == 0, (f"`{ins.text}` lane {bad[0]}: {a[bad[0]]!r} * {b[bad[0]]!r} + {c[bad[0]]!r} gave "
                               f"{got[bad[0]]!r}, fma_f32 {want[bad[0]]!r}")
        for k, (r, w) in enumerate(zip(st.regs, before, strict=True)):
            assert k == dst or r.tobytes() == w.tobytes(), f"`{ins.text}` changed {prog.reg_names[k]}"


@np.errstate(all="ignore")
def test_cases_reach_every_branch(rng):
    """The inputs are adversarial: double rounding would be wrong on some trap lanes, some sums are tiny and inexact
    in f64, and the GEMM case has exact ties but no tiny sum (the handler's shortcut)."""
    x, y, z = _traps(rng, LANES)
    twice = (x.astype(np.float64) * y + z).astype(F32) != nm.fma_f32(x, y, z)
    assert np.count_nonzero(twice[0::2]) > LANES // 8 and np.count_nonzero(twice[1::2]) > LANES // 8
    x, y, z = _tiny(rng, LANES)
    p = x.astype(np.float64) * y
    s = p + z
    inexact = (s - p != z) | (s - z != p)
    assert np.count_nonzero(inexact & (np.abs(s) < nm.F32_TINY)) > LANES // 10
    twice = s.astype(F32) != nm.fma_f32(x, y, z)
    assert np.count_nonzero(twice[2 * (LANES // 4):3 * (LANES // 4)]) > LANES // 16
    x, y, z = _gemm(rng, LANES)
    s = x.astype(np.float64) * y + z
    ties = (s.view(np.uint64) & nm._BELOW_F32) == nm._F32_TIE
    assert np.count_nonzero(ties) > 5 and np.abs(s).min() >= nm.F32_TINY
