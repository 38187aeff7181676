"""The under-load clock kernel (harness/calibrate_clock.py) assembles without spills, and on ptxsim thread 0 of
every CTA stores its [clock64, globaltimer] before and after the loop where calibrate reads them, after filling
the wgmma operands with non-zero values (ptxsim's
globaltimer runs at 32 ns a clock, so the "clock" it gives is 1/32 GHz: the plumbing, not a measurement)."""
import numpy as np
import pytest

from harness.calibrate_clock import BLOCK, CTAS_PER_SM, ENTRY, clock_of_counters, clock_ptx


def test_the_clock_kernel_assembles_without_spills_and_its_ctas_fit_one_wave():
    from harness.toolchain import assemble
    from ptxsim.model.devices import get_device

    _, usage = assemble(clock_ptx(), "sm_90a", name=f"{ENTRY}.ptx")
    assert usage[ENTRY].spills == 0
    # every CTA of the grid resident at once (CTAS_PER_SM per SM): a second wave would leave SMs idle at its end
    regs = get_device("H200 SXM").registers_per_sm
    assert usage[ENTRY].registers * BLOCK * CTAS_PER_SM <= regs


@pytest.mark.sim
def test_every_cta_stores_its_counters_at_its_own_row():
    from harness.backends.sim import SimBackend

    sim = SimBackend()
    grid = 3
    out, acc = sim.empty((grid * 4,), np.uint64, fill_byte=0), sim.empty((1,), np.float32, fill_byte=0)
    sim.launch_ptx(clock_ptx(), ENTRY, grid, 256, [acc, np.uint32(3), out])
    rows = sim.to_host(out).reshape(grid, 4)
    # the operands were filled with +-[1, 2) bf16 values (zeros would draw less power and sum to 0): 3 iterations x
    # 4 chained wgmma x K = 16 products of magnitude 1-4 each
    total = float(sim.to_host(acc)[0])
    assert np.isfinite(total) and 0 < abs(total) <= 3 * 4 * 16 * 4
    assert np.all(rows[:, 2] > rows[:, 0]) and np.all(rows[:, 3] > rows[:, 1])  # every row written, advancing
    assert clock_of_counters(rows) == pytest.approx([1e9 / 32] * grid)
