"""The paired variants' kernels (harness/calibrate_pairs.py) assemble without spills and, on ptxsim at tiny sizes,
the two sides of a pair compute the same thing (only the cost differs)."""
import numpy as np
import pytest

from harness.calibrate_pairs import PAIRS, _copy_ptx, _transpose_ptx


def test_every_side_assembles_without_spills():
    from harness.toolchain import assemble

    sides = {s.entry: s.ptx for p in PAIRS.values() for s in (p.numerator, p.denominator)}
    for entry, ptx in sides.items():
        _, usage = assemble(ptx, "sm_90a" if ".target sm_90a" in ptx else "sm_90", name=f"{entry}.ptx")
        assert usage[entry].spills == 0, entry


@pytest.mark.sim
def test_both_transposes_and_both_copies_compute_the_same():
    from harness.backends.sim import SimBackend

    sim = SimBackend()
    want = 32 * (1 + 2 * np.arange(32))  # sum over 2 reps and 32 rows of what row j stored in column t: rep + t
    for stride in (32, 33):
        out = sim.empty((32,), np.uint32)
        sim.launch_ptx(_transpose_ptx(f"t{stride}", stride), f"t{stride}", 1, 32, [out, np.uint32(2)])
        np.testing.assert_array_equal(sim.to_host(out), want)
    data = np.random.default_rng(3).integers(0, 2**32, 1000, dtype=np.uint32)
    for vector in (True, False):
        src, dst = sim.to_device(data), sim.empty((1000,), np.uint32)
        sim.launch_ptx(_copy_ptx("c", vector), "c", 2, 64, [src, dst, np.uint64(250 if vector else 1000)])
        np.testing.assert_array_equal(sim.to_host(dst), data)
