"""Launching a PTX entry from an implementation: its parameter list as data, values type-checked before launch.

Both PTX-text paths use this: ptx_impl (hand-written .ptx files) and cpp_impl (CUDA C++ compiled to PTX by NVRTC),
each kernel described by one `TextKernel` (they differ only in how the PTX is made).
An `EntrySignature` names the entry and its parameters in PTX order; `launch` checks every value against its
declared PTX type and the launch shape against what CUDA accepts, then calls `backend.launch_ptx`.
The shape helpers (`require`, `check_array`, `reject_params`) raise contract.errors.InputError naming the kernel,
the offending value and what was expected.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from contract.device import DeviceArray
from contract.errors import InputError

# PTX parameter type -> NumPy scalar type it is passed as
SCALAR_TYPES = {
    ".u32": np.uint32,
    ".s32": np.int32,
    ".u64": np.uint64,
    ".f32": np.float32,
}
POINTER = ".ptr"  # a .u64 parameter that must be a DeviceArray (its address is passed)
MAX_THREADS_PER_BLOCK = 1024
MAX_SHARED_BYTES = 227 * 1024  # sm_90's opt-in dynamic shared memory per block


def require(kernel: str, ok: bool, what: str, value, expected: str) -> None:
    """Raise InputError naming the kernel, the offending value and the expectation unless `ok`."""
    if not ok:
        raise InputError(f"{kernel}: {what} = {value!r}, expected {expected}")


def check_array(kernel: str, args: Mapping, name: str, shape, dtype) -> None:
    """The argument `name` exists with exactly this shape and dtype."""
    require(kernel, name in args, "argument", name, f"one of the arguments ({', '.join(sorted(args))} given)")
    arr = args[name]
    require(kernel, tuple(arr.shape) == tuple(shape), f"{name}.shape", tuple(arr.shape), f"{tuple(shape)}")
    require(kernel, np.dtype(arr.dtype) == np.dtype(dtype), f"{name}.dtype", str(np.dtype(arr.dtype)),
            str(np.dtype(dtype)))


def gemm_sizes(kernel: str, args: Mapping, preset) -> tuple[int, int, int, int, int]:
    """(P_max, Kd, N, E, BM) of a grouped GEMM's arguments (kernels.md: a [P_max, Kd], w [E, N, Kd]; BM the
    preset's), after checking that a and w are there with those ranks. `kernel` is what errors name ("cpp
    grouped_gemm", "ptx grouped_gemm_fp8 rung 4")."""
    for arg in ("a", "w"):
        require(kernel, arg in args, "argument", arg, f"one of the arguments ({', '.join(sorted(args))} given)")
    require(kernel, len(args["a"].shape) == 2, "a.shape", tuple(args["a"].shape), "(P_max, Kd)")
    require(kernel, len(args["w"].shape) == 3, "w.shape", tuple(args["w"].shape), "(E, N, Kd)")
    P_max, Kd = (int(x) for x in args["a"].shape)
    E, N = int(args["w"].shape[0]), int(args["w"].shape[1])
    return P_max, Kd, N, E, int(preset.BM)


def check_gemm_arrays(kernel: str, args: Mapping, P_max: int, Kd: int, N: int, E: int, BM: int,  # noqa: N803
                      fp8: bool) -> None:
    """Every argument of grouped_gemm (fp8=False: bf16 a, w) or grouped_gemm_fp8 (e4m3 a, w and their f32 1x128 /
    128x128 scales a_scale, w_scale) at the sizes gemm_sizes gave, in kernels.md's order: block_expert [P_max / BM]
    and total_padded [1] int32, c [P_max, N] bf16."""
    from contract.generators import BF16, E4M3

    group = 128  # FP8 scale groups: 1 x 128 of a row of a, 128 x 128 of a weight
    check_array(kernel, args, "a", (P_max, Kd), E4M3 if fp8 else BF16)
    if fp8:
        check_array(kernel, args, "a_scale", (P_max, Kd // group), np.float32)
    check_array(kernel, args, "w", (E, N, Kd), E4M3 if fp8 else BF16)
    if fp8:
        check_array(kernel, args, "w_scale", (E, N // group, Kd // group), np.float32)
    check_array(kernel, args, "block_expert", (P_max // BM,), np.int32)
    check_array(kernel, args, "total_padded", (1,), np.int32)
    check_array(kernel, args, "c", (P_max, N), BF16)


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def reject_params(kernel: str, params: Mapping) -> None:
    """Unknown keyword parameters are an error, not silently ignored."""
    require(kernel, not params, "parameters", sorted(params), "none beyond the documented ones")


def dim3(entry: str, what: str, dims) -> tuple[int, int, int]:
    """A grid or block shape as three positive integers within CUDA's limits."""
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    require(entry, 1 <= len(dims) <= 3 and all(isinstance(d, (int, np.integer)) and d >= 1 for d in dims),
            what, dims, "1 to 3 positive integers")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    require(entry, dims[0] < 2**31 and dims[1] < 65536 and dims[2] < 65536, what, dims,
            "x < 2^31, y and z < 65536")
    return dims


def _pack_scalar(entry: str, name: str, ptype: str, value):
    if ptype not in SCALAR_TYPES:
        raise InputError(f"{entry}: parameter {name} has unknown PTX type {ptype!r}; "
                         f"expected one of {POINTER}, {', '.join(SCALAR_TYPES)}")
    np_type = SCALAR_TYPES[ptype]
    if ptype == ".f32":
        require(entry, isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool),
                f"parameter {name}", value, "a real number for .f32")
        return np_type(value)
    require(entry, isinstance(value, (int, np.integer)) and not isinstance(value, bool),
            f"parameter {name}", value, f"an integer for {ptype}")
    info = np.iinfo(np_type)
    require(entry, info.min <= int(value) <= info.max, f"parameter {name}", int(value),
            f"an integer in [{info.min}, {info.max}] for {ptype}")
    return np_type(int(value))


@dataclass(frozen=True)
class EntrySignature:
    """A PTX entry point and its parameter list.

    params: (name, type) in PTX order; type is one of ".ptr" (a DeviceArray, passed as its .u64 address), ".u32",
    ".s32", ".u64", ".f32".
    """

    entry: str
    params: tuple[tuple[str, str], ...]

    def pack(self, values: Mapping) -> list:
        """Values by parameter name -> the positional list launch_ptx takes, each checked against its PTX type."""
        names = [n for n, _ in self.params]
        missing = [n for n in names if n not in values]
        extra = [n for n in values if n not in names]
        require(self.entry, not missing and not extra, "parameters",
                f"missing {missing}, unexpected {extra}", f"exactly {names}")
        packed = []
        for name, ptype in self.params:
            value = values[name]
            if ptype == POINTER:
                require(self.entry, isinstance(value, DeviceArray), f"parameter {name}", type(value).__name__,
                        "a DeviceArray (.u64 device pointer)")
                packed.append(value)
            else:
                packed.append(_pack_scalar(self.entry, name, ptype, value))
        return packed

    def launch(self, backend, ptx: str, grid, block, values: Mapping, shared_bytes: int = 0, tag: str = ""):
        """Type-check `values` and the launch shape, then launch this entry of PTX text `ptx` on `backend`;
        returns its LaunchRecord."""
        grid3 = dim3(self.entry, "grid", grid)
        block3 = dim3(self.entry, "block", block)
        threads = block3[0] * block3[1] * block3[2]
        require(self.entry, 1 <= threads <= MAX_THREADS_PER_BLOCK, "threads per block", threads,
                f"1..{MAX_THREADS_PER_BLOCK}")
        require(self.entry, 0 <= shared_bytes <= MAX_SHARED_BYTES, "shared_bytes", shared_bytes,
                f"0..{MAX_SHARED_BYTES} (sm_90)")
        return backend.launch_ptx(ptx, self.entry, grid3, block3, self.pack(values),
                                  shared_bytes=int(shared_bytes), tag=tag or self.entry)


Constants = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class TextKernel:
    """The one descriptor of a kernel whose PTX is made from a text file: an entry of `file`, its parameter list
    ((name, type) in order: ".ptr" a DeviceArray passed as its address, ".u32", ".s32", ".u64", ".f32"), its
    compile-time constants with their defaults, and how the PTX is made (`make_ptx(file, constants)`: NVRTC for CUDA
    C++ (cpp_impl.descriptor.cuda_entry), the unrolled file for hand PTX (ptx_impl.descriptor.ptx_entry)). `language`
    names it in messages ("cpp", "ptx"). CUDA C++ and PTX differ only in `make_ptx`.

    Not ptxmoe.CppKernel / ptxmoe.PtxKernel: those describe a user's kernel for ptxmoe.compare.
    """

    file: str
    entry: str
    params: tuple[tuple[str, str], ...]
    make_ptx: Callable[[str, Constants], str] = field(compare=False, repr=False)
    language: str = "ptx"
    constants: Constants = ()
    constants_are: str = "compile-time constants"  # what messages call them ("tile constants" in hand PTX)

    @property
    def signature(self) -> EntrySignature:
        return EntrySignature(self.entry, self.params)

    @property
    def ptx(self) -> str:
        """The PTX with the default constants (what static analysis reads)."""
        return self.source()

    def source(self, **constants: int) -> str:
        """The PTX for these constants (missing ones take their defaults; an unknown one is an InputError)."""
        merged = dict(self.constants)
        unknown = sorted(set(constants) - set(merged))
        require(f"{self.language} {self.entry}", not unknown, self.constants_are, unknown,
                f"a subset of {sorted(merged)}")
        merged.update({k: int(v) for k, v in constants.items()})
        return self.make_ptx(self.file, tuple(sorted(merged.items())))

    def pack(self, values: Mapping) -> list:
        """Values by parameter name -> the positional list launch_ptx takes, each checked against its PTX type."""
        return self.signature.pack(values)

    def launch(self, backend, grid, block, values: Mapping, shared_bytes: int = 0, tag: str = "",
               constants: Mapping[str, int] | None = None):
        """Type-check `values` against the parameter list and launch on `backend` the PTX made for `constants`
        (cached by the maker); returns its LaunchRecord."""
        return self.signature.launch(backend, self.source(**(constants or {})), grid, block, values,
                                     shared_bytes=shared_bytes, tag=tag)
