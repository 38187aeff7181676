"""Backends run both kernel paths: `sim` (ptxsim on the CPU) and `gpu` (numba-cuda + cuda-python driver API)."""
