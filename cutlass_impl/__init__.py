"""cutlass_impl: CUTLASS 3.x's sm90 kernels, compiled from the `nvidia-cutlass` wheel's headers by NVRTC for sm_90a,
their Params built host-side by CUTLASS's own code (a small g++ shim against the same headers) and their tensor maps
encoded by the project's encoder. Today: the TMA warp-specialised cooperative bf16 GEMM runs unmodified on ptxsim
(build.py; the simulator driver is tests/cutlass_impl/cutlass_sim.py, since an implementation package does not
import the simulator; issue 28 item 3). Not yet a contract implementation (no `IMPLEMENTATION`): docs/cutlass.md."""
