"""Timing: pure-NumPy statistics (stats), the GPU sampling loop (gpu), the simulator's modelled times (sim)."""
