"""The kernel contract of ptxmoe, in code: what every implementation must compute and how it is checked.

It imports nothing else of the project, and the implementations (cuda_impl, cpp_impl, ptx_impl) import nothing but
it, so the house reads one way: contract -> implementations -> harness -> results -> dashboard.

Modules:
    presets     problem sizes (kernels.md "Shapes and presets") and routing skews
    generators  seeded input generators (fresh random inputs, never all-zero)
    reference   float64 NumPy references for every kernel
    checks      checkers with kernels.md's tolerances
    kernels     the registry of kernels: outputs, inputs, reference, checker, minimum bytes and useful FLOPs
    device      what an implementation may use of a backend (DeviceArray, LaunchRecord, KernelBackend)
    launch      PTX entry signatures and launch-shape checks, shared by the PTX-text paths
    registry    how an implementation package registers itself (Implementation)
    errors      the root of the exception hierarchy and the contract's errors
"""
