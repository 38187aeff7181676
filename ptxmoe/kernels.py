"""Your kernels, described once and launched the same way on every backend: Numba, CUDA C++ (NVRTC) or PTX text.

Each kernel spec is a frozen dataclass with the launch geometry as values or as functions of the inputs (the dict
`make_inputs` returned), and `args`: the names of the inputs in the kernel's parameter order. `prepare(inputs, owner,
tag)` resolves the geometry and checks the arguments once, then returns a launcher, `launcher(backend, device_args)
-> LaunchRecord`, that only calls the backend's `launch_numba` or `launch_ptx` (harness.backends.base.Backend), so
timed GPU calls pay for no Python checking. Nothing heavy is imported here.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar

from ptxmoe.errors import KernelSpecError

Geometry = int | tuple | Callable[[Mapping[str, Any]], Any]  # a value, or a function of the inputs
Launcher = Callable[[Any, Mapping[str, Any]], Any]  # (backend, device_args) -> LaunchRecord

# PTX .param scalar type -> NumPy type name it is passed as (b-types pass as the unsigned int of that width)
PTX_SCALAR_TYPES = {
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "b8": "uint8", "b16": "uint16", "b32": "uint32", "b64": "uint64",
    "f32": "float32", "f64": "float64",
}
POINTER_TYPES = ("u64", "b64", "s64")  # a device pointer is a 64-bit .param
# arrays of a type Numba has none for (ml_dtypes bfloat16, float8_e4m3fn, float8_e5m2) reach a Numba kernel as bits
BITS_VIEWS = {1: "uint8", 2: "uint16"}
_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.DOTALL)
_PARAM_RE = re.compile(r"\.param\s+\.(\w+)\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?([\w$]+)")


def resolve(owner: str, what: str, value, inputs: Mapping[str, Any]):
    """`value`, or `value(inputs)` when it is callable; a function that raises is reported naming `owner`."""
    if not callable(value):
        return value
    try:
        return value(inputs)
    except Exception as exc:  # the user's function: reported with the implementation named
        raise KernelSpecError(f"{owner}: the {what} function raised {type(exc).__name__}: {exc}") from exc


def entry_params(ptx: str) -> dict[str, tuple[str, ...]]:
    """{entry name: PTX .param types ("u64", "f32", ...)} of every .entry in a PTX module's text."""
    return {m.group(1): tuple(p.group(1) for p in _PARAM_RE.finditer(m.group(2))) for m in _ENTRY_RE.finditer(ptx)}


def ordered_args(owner: str, names, inputs: Mapping[str, Any]) -> list:
    """The inputs named by `names` (all of them, in their order, when None), each present."""
    names = list(inputs) if names is None else list(names)
    missing = [n for n in names if n not in inputs]
    if missing:
        raise KernelSpecError(f"{owner}: argument(s) {', '.join(missing)} not among the inputs; make_inputs returned "
                              f"{', '.join(inputs) or 'nothing'}")
    return names


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "shape", ()) != ()


def launch_shape(owner: str, kernel, inputs: Mapping[str, Any]) -> tuple[tuple, tuple, int]:
    """(grid, block, shared_bytes) of a spec for these inputs, checked against what CUDA accepts."""
    from contract.errors import InputError
    from contract.launch import MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, dim3

    try:
        grid = dim3(owner, "grid", resolve(owner, "grid", kernel.grid, inputs))
        block = dim3(owner, "block", resolve(owner, "block", kernel.block, inputs))
    except InputError as exc:
        raise KernelSpecError(str(exc)) from None
    raw_shared = resolve(owner, "shared_bytes", kernel.shared_bytes, inputs)
    threads = block[0] * block[1] * block[2]
    if not 1 <= threads <= MAX_THREADS_PER_BLOCK:
        raise KernelSpecError(f"{owner}: block {block} has {threads} threads; expected 1..{MAX_THREADS_PER_BLOCK}")
    try:
        shared = -1 if isinstance(raw_shared, bool) else operator.index(raw_shared)
    except TypeError:
        shared = -1
    if not 0 <= shared <= MAX_SHARED_BYTES:
        raise KernelSpecError(f"{owner}: shared_bytes = {raw_shared!r}; expected an int in 0..{MAX_SHARED_BYTES}")
    return grid, block, shared


# ------------------------------------------------------------------------------------------------------- Numba
def numba_signature(owner: str, names, inputs: Mapping[str, Any]) -> str:
    """A Numba signature for these inputs: C-contiguous arrays of their dtypes, scalars of theirs (Python int ->
    int64, float -> float64, as Numba types them)."""
    import numpy as np
    from numba.np.numpy_support import from_dtype

    parts = []
    for name in names:
        value = inputs[name]
        dtype = np.asarray(value).dtype
        if dtype.kind == "V" and dtype.itemsize in BITS_VIEWS and _is_array(value):
            dtype = np.dtype(BITS_VIEWS[dtype.itemsize])  # bf16 / fp8 (ml_dtypes): Numba has no type; their bits
        try:
            base = str(from_dtype(dtype))
        except Exception:  # noqa: BLE001 - numba raises NotImplementedError and others for unsupported dtypes
            raise KernelSpecError(f"{owner}: argument {name} has dtype {dtype}, which Numba has no type for; pass "
                                  f"signature= explicitly") from None
        if _is_array(value):
            ndim = len(value.shape)
            parts.append(f"{base}[{', '.join([':'] * (ndim - 1) + ['::1'])}]")
        else:
            parts.append(base)
    return f"void({', '.join(parts)})"


def check_numba_signature(owner: str, signature: str, names, inputs: Mapping[str, Any]) -> str:
    """Each array argument's dtype against a declared Numba signature (NOTE: the launch itself checks only the
    itemsize: a float32 signature runs an int32 array as bits)."""
    import numpy as np
    from numba.core import sigutils, types
    from numba.np import numpy_support

    try:
        arg_types, _ = sigutils.normalize_signature(signature)
    except Exception as exc:  # noqa: BLE001 - Numba raises TypeError and its own errors for a bad signature string
        raise KernelSpecError(f"{owner}: signature {signature!r} is not a Numba signature: {exc}") from None
    if len(arg_types) != len(names):
        raise KernelSpecError(f"{owner}: signature {signature!r} has {len(arg_types)} arguments; {len(names)} given "
                              f"({', '.join(names)})")
    checked = []
    for name, declared in zip(names, arg_types, strict=True):
        value = inputs[name]
        if not isinstance(declared, types.Array) or not _is_array(value):
            continue
        want = np.dtype(numpy_support.as_dtype(declared.dtype))
        if np.dtype(value.dtype) != want:
            raise KernelSpecError(f"{owner}: argument {name} is a {value.dtype} array; Numba's signature "
                                  f"{signature!r} says {want}")
        checked.append(name)
    return f"argument types checked against Numba's signature: {', '.join(checked) or 'no arrays'}"


@dataclass(frozen=True)
class NumbaKernel:
    """A Numba CUDA kernel: a plain Python function or a `@cuda.jit` one (its Python function is used).

    Args:
        fn: the kernel function.
        grid, block: launch shape, each an int, a 1-3 tuple, or a function of the inputs returning one.
        shared_bytes: dynamic shared memory (int or function of the inputs).
        args: input names in the function's parameter order; default the function's parameter names.
        signature: a Numba signature string; default inferred from the inputs (C-contiguous arrays; a bf16 or fp8
            array, which Numba has no type for, arrives as its bits: uint16 / uint8).
    """

    fn: Callable
    _: KW_ONLY
    grid: Geometry
    block: Geometry
    shared_bytes: Geometry = 0
    args: tuple[str, ...] | None = None
    signature: str | None = None

    language: ClassVar[str] = "numba"

    @property
    def pyfunc(self) -> Callable:
        return getattr(self.fn, "py_func", self.fn)

    @property
    def title(self) -> str:
        return getattr(self.pyfunc, "__name__", "kernel")

    def arg_names(self, owner: str, inputs: Mapping[str, Any]) -> list[str]:
        import inspect

        names = self.args
        if names is None:
            try:
                names = tuple(inspect.signature(self.pyfunc).parameters)
            except (TypeError, ValueError):
                raise KernelSpecError(f"{owner}: cannot read the parameters of {self.fn!r}; pass args=") from None
        return ordered_args(owner, names, inputs)

    def prepare(self, inputs: Mapping[str, Any], owner: str, tag: str) -> Launcher:
        """A launcher for these inputs: `launcher(backend, device_args)` (DeviceArrays and scalars by input name)."""
        if not callable(self.pyfunc):
            raise KernelSpecError(f"{owner}: fn = {self.fn!r}; expected a Python function or a @cuda.jit kernel")
        names = self.arg_names(owner, inputs)
        grid, block, shared = launch_shape(owner, self, inputs)
        if self.signature is None:
            signature = numba_signature(owner, names, inputs)
            arg_types = "argument types: Numba compiles the kernel for the inputs' dtypes"
        else:
            signature = self.signature
            arg_types = check_numba_signature(owner, signature, names, inputs)
        pyfunc = self.pyfunc

        def launcher(backend, device_args):
            return backend.launch_numba(pyfunc, signature, grid, block, [device_args[n] for n in names],
                                        shared_bytes=shared, tag=tag)
        launcher.arg_types = arg_types  # type: ignore[attr-defined]
        return launcher

    def launch(self, backend, device_args: Mapping[str, Any], inputs: Mapping[str, Any], owner: str, tag: str):
        """Prepare and launch once; returns the LaunchRecord."""
        return self.prepare(inputs, owner, tag)(backend, device_args)


# ------------------------------------------------------------------------------------------------- PTX text
def pack_ptx_params(owner: str, entry: str, ptx: str, names, values: Mapping[str, Any]) -> list:
    """Arguments for `launch_ptx`: arrays (as given: DeviceArrays, or host arrays when planning) for 64-bit pointer
    params, scalars cast to the entry's declared .param type (range-checked)."""
    import numpy as np

    from contract.device import DeviceArray

    entries = entry_params(ptx)
    if entry not in entries:
        raise KernelSpecError(f"{owner}: no .entry {entry!r} in the PTX; it has {', '.join(entries) or 'none'} "
                              f"(CUDA C++ kernels need extern \"C\" for unmangled names)")
    types = entries[entry]
    if len(types) != len(names):
        raise KernelSpecError(f"{owner}: .entry {entry} takes {len(types)} parameters; {len(names)} arguments given "
                              f"({', '.join(names)}); pass args= with the input names in parameter order")
    packed = []
    for i, (name, ptype) in enumerate(zip(names, types, strict=True)):
        value = values[name]
        where = f"{owner}: argument {name} (.param {i} of {entry}, .{ptype})"
        if isinstance(value, DeviceArray) or _is_array(value):
            if ptype not in POINTER_TYPES:
                raise KernelSpecError(f"{where}: got an array; an array passes as a 64-bit pointer (.u64)")
            packed.append(value)
            continue
        if ptype not in PTX_SCALAR_TYPES:
            raise KernelSpecError(f"{where}: .param type .{ptype} is not supported; expected one of "
                                  f"{', '.join('.' + t for t in PTX_SCALAR_TYPES)}")
        target = np.dtype(PTX_SCALAR_TYPES[ptype])
        packed.append(_cast_scalar(where, value, target))
    return packed


def _cast_scalar(where: str, value, target):
    import numpy as np

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise KernelSpecError(f"{where}: got {value!r}; expected a number")
    if target.kind == "f":
        return target.type(value)
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise KernelSpecError(f"{where}: got {value!r}; expected an integer")
    info = np.iinfo(target)
    if not info.min <= int(value) <= info.max:
        raise KernelSpecError(f"{where}: got {int(value)}; expected an integer in [{info.min}, {info.max}]")
    return target.type(int(value))


def _dtype_name(dtype) -> str:
    import numpy as np

    return np.dtype(dtype).name


def declared_dtypes(owner: str, declared: Mapping[str, Any] | None, names, inputs: Mapping[str, Any]) -> list[str]:
    """The arrays whose dtype a declared signature ({argument: dtype}) fixes, each checked against its input."""
    import numpy as np

    if declared is None:
        return []
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise KernelSpecError(f"{owner}: dtypes= names {', '.join(map(str, unknown))}, not among the arguments "
                              f"({', '.join(names)})")
    checked = []
    for name, want in declared.items():
        value = inputs[name]
        if not _is_array(value):
            continue
        try:
            want = np.dtype(want)
        except TypeError:
            raise KernelSpecError(f"{owner}: dtypes[{name!r}] = {want!r} is not a NumPy dtype") from None
        if np.dtype(value.dtype) != want:
            raise KernelSpecError(f"{owner}: argument {name} is a {value.dtype} array; the declared signature "
                                  f"(dtypes=) says {want}")
        checked.append(name)
    return checked


def check_pointer_types(owner: str, ptx: str, entry: str, names, inputs: Mapping[str, Any],
                        declared: Mapping[str, Any] | None = None) -> str:
    """Check each array argument's dtype before launch: against the declared signature (`dtypes`) when given, else
    against the element type the PTX's loads and stores through its pointer name (harness.pointer_types). Raises
    KernelSpecError naming the argument, the dtype given and the type expected; returns what was checked and what
    could not be (\"argument types unchecked: ...\")."""
    from harness.pointer_types import expected_element, pointer_accesses

    by_declared = declared_dtypes(owner, declared, names, inputs)
    params = entry_body_params(ptx, entry)
    accesses = pointer_accesses(ptx, entry) or {}
    by_flow, unchecked = [], []
    for name, param in zip(names, params, strict=False):
        value = inputs[name]
        if not _is_array(value) or name in by_declared:
            continue
        expected = expected_element(accesses.get(param, []))
        if expected is None:
            unchecked.append(name)
            continue
        if not expected.matches(value.dtype):
            raise KernelSpecError(f"{owner}: argument {name} is a {_dtype_name(value.dtype)} array, but the kernel "
                                  f"uses it as {expected}; pass {expected.dtype or 'an integer array of that width'}"
                                  f" (or declare dtypes= if the PTX moves it as another type on purpose)")
        by_flow.append(name)
    parts = []
    if by_declared:
        parts.append(f"argument types checked against the declared signature: {', '.join(by_declared)}")
    if by_flow:
        parts.append(f"argument types checked against the PTX's loads and stores: {', '.join(by_flow)}")
    if unchecked:
        parts.append(f"argument types unchecked: {', '.join(unchecked)} (no typed load or store reaches them)")
    return "; ".join(parts) or "no array arguments"


def entry_body_params(ptx: str, entry: str) -> list[str]:
    """The .param names of `entry`, in order."""
    from harness.pointer_types import entry_body

    found = entry_body(ptx, entry)
    return found[0] if found is not None else []


def ptx_launcher(kernel, ptx: str, inputs: Mapping[str, Any], owner: str, tag: str) -> Launcher:
    """The launcher of a PTX entry: parameters checked and scalars cast once, array dtypes checked
    (check_pointer_types; the launcher's `arg_types` says what was); arrays taken from device_args."""
    names = ordered_args(owner, kernel.args, inputs)
    grid, block, shared = launch_shape(owner, kernel, inputs)
    planned = pack_ptx_params(owner, kernel.entry, ptx, names, inputs)
    arg_types = check_pointer_types(owner, ptx, kernel.entry, names, inputs, kernel.dtypes)
    pointers = [_is_array(inputs[n]) for n in names]
    entry = kernel.entry

    def launcher(backend, device_args):
        params = [device_args[n] if ptr else value for n, ptr, value in zip(names, pointers, planned, strict=True)]
        return backend.launch_ptx(ptx, entry, grid, block, params, shared_bytes=shared, tag=tag)
    launcher.arg_types = arg_types  # type: ignore[attr-defined]
    return launcher


@dataclass(frozen=True)
class PtxKernel:
    """A kernel written in PTX: the module text and the .entry to launch.

    Args:
        text: the PTX module text.
        entry: the .entry name.
        grid, block, shared_bytes: as for NumbaKernel.
        args: input names in .param order; default every input in the order make_inputs returned them.
        dtypes: a declared signature, {argument name: NumPy dtype}, checked before launch; arrays not named in it
            are checked against the element type the PTX loads and stores through their pointer.
    """

    text: str
    entry: str
    _: KW_ONLY
    grid: Geometry
    block: Geometry
    shared_bytes: Geometry = 0
    args: tuple[str, ...] | None = None
    dtypes: Mapping[str, Any] | None = None

    language: ClassVar[str] = "ptx"

    @property
    def title(self) -> str:
        return self.entry

    def ptx(self, owner: str) -> str:
        if not isinstance(self.text, str) or ".entry" not in self.text:
            raise KernelSpecError(f"{owner}: text has no .entry; expected PTX module text")
        return self.text

    def prepare(self, inputs: Mapping[str, Any], owner: str, tag: str) -> Launcher:
        """A launcher for these inputs (see NumbaKernel.prepare)."""
        return ptx_launcher(self, self.ptx(owner), inputs, owner, tag)

    def launch(self, backend, device_args: Mapping[str, Any], inputs: Mapping[str, Any], owner: str, tag: str):
        """Prepare and launch once; returns the LaunchRecord."""
        return self.prepare(inputs, owner, tag)(backend, device_args)


@dataclass(frozen=True)
class CppKernel:
    """A CUDA C++ kernel compiled to PTX by NVRTC (cpp_impl.nvrtc; cached per source), then launched as PTX.

    Args:
        source: the CUDA C++ source; the kernel must be `extern "C" __global__` so its entry name is `entry`.
        entry: the kernel's name.
        grid, block, shared_bytes, args, dtypes: as for PtxKernel (an extern "C" name carries no types: without
            dtypes, arrays are checked against the loads and stores of the PTX NVRTC makes).
        options: extra NVRTC options, e.g. ("-DTILE=128", "--use_fast_math").
    """

    source: str
    entry: str
    _: KW_ONLY
    grid: Geometry
    block: Geometry
    shared_bytes: Geometry = 0
    args: tuple[str, ...] | None = None
    dtypes: Mapping[str, Any] | None = None
    options: tuple[str, ...] = ()

    language: ClassVar[str] = "cpp"

    @property
    def title(self) -> str:
        return self.entry

    def ptx(self, owner: str) -> str:
        """The PTX NVRTC makes of the source (BuildError, with NVRTC's log and the kernel named, on failure)."""
        from contract.errors import BuildError
        from cpp_impl.nvrtc import compile_source

        try:
            return compile_source(self.source, name=f"{self.entry}.cu", options=tuple(self.options))
        except BuildError as exc:
            raise BuildError(f"{owner}: {exc}") from None

    def prepare(self, inputs: Mapping[str, Any], owner: str, tag: str) -> Launcher:
        """Compile (once per source); a launcher for these inputs (see NumbaKernel.prepare)."""
        return ptx_launcher(self, self.ptx(owner), inputs, owner, tag)

    def launch(self, backend, device_args: Mapping[str, Any], inputs: Mapping[str, Any], owner: str, tag: str):
        """Prepare and launch once; returns the LaunchRecord."""
        return self.prepare(inputs, owner, tag)(backend, device_args)


KERNEL_TYPES = (NumbaKernel, PtxKernel, CppKernel)
