"""A CUTLASS kernel's one launch parameter, its `Params` struct, as CUTLASS's own host code builds it: the g++ shim of
the configuration (cutlass_impl.build.shim) runs GemmKernel::to_underlying_arguments for the device addresses given
and prints the launch shape and every cuTensorMapEncodeTiled call it made, leaving marker n in the first 8 bytes of
descriptor n's slot. The result is a contract StructArg whose tensor maps the backend encodes at launch (ptxsim's
encoder on sim, the driver's on a GPU: the same recorded arguments either way)."""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from contract.device import EncodeTiled, StructArg
from contract.errors import BuildError, InputError
from cutlass_impl.build import shim


@dataclass(frozen=True)
class HostParams:
    """What the host shim gives for one problem: the Params struct (tensor maps to encode), the launch shape."""

    struct: StructArg
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    extra: str = ""  # the shim's other lines (the FP8 GEMM's scale layout)


def parse_encode(line: str) -> EncodeTiled:
    """One `encode dtype rank addr dims.. strides.. box.. estr.. il sw l2 oob` line of the shim's output."""
    f = [int(x) for x in line.split()[1:]]
    dtype, rank, addr = f[:3]
    if len(f) != 7 + 4 * rank - 1:
        raise BuildError(f"CUTLASS host shim: malformed tensor-map line {line!r}")
    dims, strides = f[3:3 + rank], f[3 + rank:2 + 2 * rank]
    box, estr = f[2 + 2 * rank:2 + 3 * rank], f[2 + 3 * rank:2 + 4 * rank]
    il, sw, l2, oob = f[2 + 4 * rank:]
    return EncodeTiled(dtype, rank, addr, tuple(dims), tuple(strides), tuple(box), tuple(estr), il, sw, l2, oob)


def struct_of(raw: bytes, lines: list[str], where: str) -> StructArg:
    """The StructArg of Params bytes `raw` whose n-th recorded map (1-based marker n) is `lines[n - 1]`."""
    maps = []
    for n, line in enumerate(lines):
        marker = (n + 1).to_bytes(8, "little") + bytes(120)
        at = [o for o in range(0, len(raw) - 127, 64) if raw[o:o + 128] == marker]
        if len(at) != 1:
            raise BuildError(f"{where}: tensor map {n + 1} found at byte offsets {at}; expected one 64-aligned slot")
        maps.append((at[0], parse_encode(line)))
    return StructArg(bytes(raw), tuple(maps))


@lru_cache(maxsize=4096)
def host_params(name: str, M: int, N: int, K: int, addrs: tuple[int, ...]) -> HostParams:  # noqa: N803
    """The Params of CUTLASS kernel `name` for an M x N x K problem at device addresses `addrs` (A, B, C, D, and for
    the FP8 kernel SFA, SFB). Cached: the timing loop runs the same launches again."""
    where = f"CUTLASS {name} {M}x{N}x{K}"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "params.bin"
        done = subprocess.run([str(shim(name)), str(M), str(N), str(K), *(hex(a) for a in addrs), str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise InputError(f"{where}: {done.stderr.strip() or done.stdout.strip()}")
        raw = out.read_bytes()
    head = re.search(r"params (\d+) grid (\d+) (\d+) (\d+) block (\d+) (\d+) (\d+) smem (\d+)", done.stdout)
    if head is None:
        raise BuildError(f"{where}: the host shim printed no launch line:\n{done.stdout[-2000:]}")
    v = [int(x) for x in head.groups()]
    if v[0] != len(raw):
        raise BuildError(f"{where}: the shim says Params is {v[0]} bytes and wrote {len(raw)}")
    lines = done.stdout.splitlines()
    struct = struct_of(raw, [ln for ln in lines if ln.startswith("encode ")], where)
    extra = "\n".join(ln for ln in lines if not ln.startswith(("encode ", "params ")))
    return HostParams(struct, (v[1], v[2], v[3]), (v[4], v[5], v[6]), v[7], extra)


@dataclass(frozen=True)
class GroupedParams:
    """What the grouped (pointer-array) kernel's shim gives: the launch, and the bytes of the problem-shape array and
    of the A, B, C and D stride arrays, to copy to the addresses the Params name."""

    host: HostParams
    shapes: bytes
    strides: tuple[bytes, bytes, bytes, bytes]
    workspace_bytes: int
    scale_layouts: tuple[bytes, ...] = ()  # the FP8 kernel's SFA and SFB layout arrays


_GROUPED_HEAD = re.compile(r"params (\d+) grid (\d+) (\d+) (\d+) block (\d+) (\d+) (\d+) smem (\d+) workspace (\d+) "
                           r"strides (\d+) (\d+) (\d+) (\d+) shape (\d+)(?: sf (\d+) (\d+))?")


@lru_cache(maxsize=1024)
def grouped_host_params(name: str, shapes: tuple[tuple[int, int, int], ...], addrs: tuple[int, ...],
                        workspace: int, workspace_bytes: int, scales: tuple[int, ...] = (),
                        shapes_on_device: bool = False) -> GroupedParams:
    """The Params of grouped CUTLASS kernel `name` for groups of (M, N, K) `shapes` whose device arrays are at
    `addrs` (shapes, ptr A, stride A, ptr B, stride B, ptr C, stride C, ptr D, stride D), with `workspace_bytes` of
    zeroed workspace at `workspace` (the per-SM tensor maps the kernel rewrites); for the FP8 kernel `scales` =
    (ptr SFA, layout SFA, ptr SFB, layout SFB arrays). shapes_on_device: CUTLASS gets no host copy of the shapes
    (the kernel reads them from the device only, on a grid of SM count CTAs; the Params then do not depend on the
    groups' rows: the layer's, whose shapes are written on the device, cutlass_impl/device_args.py)."""
    where = f"CUTLASS {name} {len(shapes)} groups"
    with tempfile.TemporaryDirectory() as tmp:
        out, arrays = Path(tmp) / "params.bin", Path(tmp) / "arrays.bin"
        groups = -len(shapes) if shapes_on_device else len(shapes)  # negative: no host copy (the shim's head)
        cmd = [str(shim(name)), str(groups), *(hex(a) for a in addrs), hex(workspace), str(workspace_bytes), str(out),
               str(arrays), *(hex(a) for a in scales), *(str(v) for s in shapes for v in s)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise InputError(f"{where}: {done.stderr.strip() or done.stdout.strip()}")
        raw, arr = out.read_bytes(), arrays.read_bytes()
    head = _GROUPED_HEAD.search(done.stdout)
    if head is None:
        raise BuildError(f"{where}: the host shim printed no launch line:\n{done.stdout[-2000:]}")
    v = [int(x) for x in head.groups() if x is not None]
    g = len(shapes)
    sizes = [v[13] * g] + [s * g for s in v[9:13]] + [s * g for s in v[14:]]
    if v[0] != len(raw) or sum(sizes) != len(arr):
        raise BuildError(f"{where}: the shim wrote {len(raw)} Params bytes ({v[0]} said) and {len(arr)} array bytes "
                         f"({sum(sizes)} expected)")
    cuts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    parts = [arr[cuts[i]:cuts[i + 1]] for i in range(len(sizes))]
    lines = done.stdout.splitlines()
    struct = struct_of(raw, [ln for ln in lines if ln.startswith("encode ")], where)
    extra = "\n".join(ln for ln in lines if not ln.startswith(("encode ", "params ")))
    host = HostParams(struct, (v[1], v[2], v[3]), (v[4], v[5], v[6]), v[7], extra)
    return GroupedParams(host, parts[0], (parts[1], parts[2], parts[3], parts[4]), v[8], tuple(parts[5:]))
