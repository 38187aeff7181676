"""What an implementation may use of a backend: device arrays, workspaces, launch records and the launch calls.

An implementation module (cuda_impl/<kernel>.py, cpp_impl/<kernel>.py, ptx_impl/<kernel>.py) exposes

    def run(backend: KernelBackend, args: dict[str, DeviceArray], preset: Preset, **params) -> list[LaunchRecord]

where `args` holds every input and output of the kernel by its kernels.md name (outputs pre-poisoned by the caller).
The Numba path calls `backend.launch_numba(pyfunc, signature, ...)` with the plain (undecorated) Python kernel
function and an explicit Numba signature; the PTX and CUDA C++ paths call `backend.launch_ptx(ptx_text, entry, ...)`
with raw pointers. The harness's backends (harness.backends.sim / .gpu) implement this protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence

import numpy as np


@dataclass(frozen=True)
class DeviceArray:
    """A C-contiguous array in device memory (simulated or real)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    addr: int  # device address: a ptxsim address on `sim`, a CUdeviceptr value on `gpu`
    handle: Any = field(default=None, compare=False, repr=False)  # the backend's owner object

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class LiveRows(DeviceArray):
    """A grouped GEMM's `total_padded` argument (a DeviceArray like any other: every backend passes its address),
    marked with what the sim backend needs to sample the launch (harness.sampling): the token rows a grid row (grid.y)
    computes, `rows_per_grid_row` (for a persistent launch, with a WorkItems, the routing block BM), and the launch's
    `block_expert` array. Grid rows from ceil(total_padded / rows_per_grid_row) on are the routing blocks past the
    padded total, whose CTAs exit at once; before it, each run of blocks of one expert reads that expert's weights.
    The sim backend reads both arrays at launch and samples whole runs of experts and that dead tail as strata; the
    kernel sees nothing different. Make one with `LiveRows.of(args["total_padded"], rows, args["block_expert"])`."""

    rows_per_grid_row: int = 1
    block_expert: DeviceArray | None = field(default=None, compare=False)

    @classmethod
    def of(cls, total_padded: DeviceArray, rows_per_grid_row: int, block_expert: DeviceArray) -> LiveRows:
        from contract.errors import InputError

        if isinstance(rows_per_grid_row, bool) or not isinstance(rows_per_grid_row, (int, np.integer)) \
                or rows_per_grid_row < 1:
            raise InputError(f"LiveRows.rows_per_grid_row = {rows_per_grid_row!r}: expected a positive int")
        if tuple(total_padded.shape) != (1,):
            raise InputError(f"LiveRows: total_padded has shape {tuple(total_padded.shape)}; expected (1,)")
        if not isinstance(block_expert, DeviceArray) or len(block_expert.shape) != 1:
            raise InputError(f"LiveRows: block_expert is a {type(block_expert).__name__} of shape "
                             f"{tuple(getattr(block_expert, 'shape', ()))}; expected the launch's 1-D DeviceArray of "
                             f"each routing block's expert")
        return cls(tuple(total_padded.shape), total_padded.dtype, total_padded.addr, total_padded.handle,
                   int(rows_per_grid_row), block_expert)


@dataclass(frozen=True)
class LaunchRecord:
    """One kernel launch as the backend saw it."""

    name: str  # PTX entry or Python function name
    impl: str  # implementation name (contract.registry)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    host_seconds: float  # wall time of the launch call on the host (sim: the whole simulation)
    stats: Any = field(default=None, compare=False, repr=False)  # ptxsim LaunchStats on `sim`


@dataclass(frozen=True)
class TensorMapArg:
    """A tiled tensor map (CUDA's CUtensorMap) over a DeviceArray, for `cp.async.bulk.tensor`: pass it to launch_ptx
    for a `.param .align 64 .b8 name[128]` kernel parameter (by value, as `const __grid_constant__ CUtensorMap`).

    shape and box are in NumPy order (outermost first, as array.shape); the backend hands the driver (or ptxsim's
    host helper) the same map innermost first.
    """

    array: DeviceArray
    shape: tuple[int, ...]  # the view of `array` the map describes (its shape, or a re-view of the same bytes)
    box: tuple[int, ...]  # elements per TMA copy along each dimension
    swizzle: int  # shared-memory swizzle span in bytes: 0, 32, 64 or 128
    oob_fill: str  # "zero" or "nan": what a box reads past the tensor's edge
    raw: bytes = field(default=b"", compare=False, repr=False)  # the 128 bytes where the backend has them (sim)
    handle: Any = field(default=None, compare=False, repr=False)  # the backend's object (gpu: the CUtensorMap)


@dataclass(frozen=True)
class EncodeTiled:
    """The arguments of one cuTensorMapEncodeTiled call, innermost dimension first, as the driver takes them (strides
    in bytes, of dimensions 1..rank-1; the enums as their integer codes)."""

    data_type: int
    rank: int
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


@dataclass(frozen=True)
class StructArg:
    """A by-value struct kernel parameter (`.param .align 64 .b8 name[N]`, N = len(raw)), such as the one `Params`
    struct a CUTLASS kernel takes: its bytes, and the tensor maps inside it, each as the byte offset of its 128-byte
    slot and the cuTensorMapEncodeTiled call that makes it. The backend encodes them at launch (ptxsim's encoder on
    sim, the driver's on a GPU) and writes each over its slot."""

    raw: bytes
    tensor_maps: tuple[tuple[int, EncodeTiled], ...] = ()


@dataclass(frozen=True)
class WorkItems:
    """The item range of a persistent kernel: stands for two `.u32` kernel parameters (item_begin, item_end), its
    CTAs (thread-block clusters, with clusters) taking items item_begin + i, + grid, ... below item_end: any grid
    runs the same items. A backend flattens it: (0, count), the whole work, on a GPU; the sim backend may instead run
    windows of it (harness.sampling), which is why it says how items map to routing blocks.

    Items are ordered by routing block: the items of blocks [b0, b1), for b0 and b1 multiples of
    `blocks_per_group` (or b1 = blocks), are `items_of(b0, b1)`. `blocks_per_group` is the fewest whole routing
    blocks whose items are whole items (1 when an item lies inside one block; 2 for a rung-5 pair item of two
    one-block token tiles), `group_items` the items of such a group (0: count * blocks_per_group // blocks).

    `tiles` is the launch's work in tiles of one routing block by 128 output columns (a plain grid GEMM's CTA: small's
    GEMMs are 95 blocks x 8 such tiles), which harness.sampling's threshold counts instead of items, so a kernel with
    few large items (rung 11's 128 x 512) is sampled where one with many small items over the same work is (0: one
    tile an item).
    """

    count: int  # items of the whole launch
    blocks: int  # routing blocks they cover
    blocks_per_group: int = 1
    group_items: int = 0
    tiles: int = 0

    def __post_init__(self):
        from contract.errors import InputError

        for name in ("count", "blocks", "blocks_per_group"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"WorkItems.{name} = {value!r}: expected a positive int")
        for name in ("group_items", "tiles"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise InputError(f"WorkItems.{name} = {value!r}: expected an int >= 0 (0: derived)")

    @property
    def work_tiles(self) -> int:
        """The launch's work in (routing block x 128 columns) tiles: `tiles`, or one an item."""
        return self.tiles or self.count

    @property
    def items_per_group(self) -> int:
        return self.group_items or self.count * self.blocks_per_group // self.blocks

    def items_of(self, b0: int, b1: int) -> tuple[int, int]:
        """[begin, end) of the items of routing blocks [b0, b1), widened to whole groups."""
        g, per = self.blocks_per_group, self.items_per_group
        return min(self.count, b0 // g * per), min(self.count, -(-b1 // g) * per)

    def params(self) -> tuple[np.uint32, np.uint32]:
        """The two kernel parameters of the whole work: (0, count)."""
        return np.uint32(0), np.uint32(self.count)


@dataclass(frozen=True)
class FamilyShare:
    """Not a kernel parameter: a mark that this launch is member `index` of `family`, the len(shapes) independent
    launches of one kernel an implementation makes for one call (one launch per expert run, say), member i solving a
    problem of shape shapes[i] (any tuple of ints) on ctas[i] CTAs and writing outputs no other member writes.
    Members are launched in index order, and members of one shape run the same instructions on other data (a GEMM
    whose loops depend on its shape only). A GPU runs every member; the sim backend, where it samples, may simulate
    one member of each shape and charge every other member as that one (harness.family_sampling). `family` names the
    family within the call (the kernel and its shape, say)."""

    family: str
    index: int
    shapes: tuple[tuple[int, ...], ...]
    ctas: tuple[int, ...]

    def __post_init__(self):
        from contract.errors import InputError

        if len(self.shapes) != len(self.ctas) or not 0 <= self.index < len(self.shapes) \
                or any(int(c) < 1 for c in self.ctas):
            raise InputError(f"FamilyShare {self.family!r}: index {self.index} of {len(self.shapes)} shapes and "
                             f"{len(self.ctas)} CTA counts; expected 0 <= index < members, one positive CTA count "
                             f"per shape")


@dataclass(frozen=True)
class GroupSubsets:
    """Not a kernel parameter: a mark that this launch runs len(shapes) independent problems (groups) in one grid (a
    grouped GEMM's persistent kernel walking every group's tiles), group i of shape shapes[i] in tiles[i] work
    tiles (the CTAs a plain grid would launch for it), writing outputs no other group writes; and that
    `subset(indices)` makes the same kernel's launch of just those groups, as (grid, params), with the same block
    and shared memory (params without this mark). Groups of one shape run the same instructions on other data. A GPU
    runs the launch as given; the sim backend, where it samples, may instead run a subset of each shape's groups as
    ptxsim phases and weight each by the groups it stands for (harness.family_sampling)."""

    shapes: tuple[tuple[int, ...], ...]
    tiles: tuple[int, ...]
    subset: Any = field(compare=False, repr=False)  # (indices: tuple[int, ...]) -> (grid, params)
    # each group's rows of tiles (tiles[i] a multiple of it), given when subset() also takes an entry (i, first, end):
    # tile rows [first, end) of group i alone (a long group's windows); () when it does not
    tile_rows: tuple[int, ...] = ()

    def __post_init__(self):
        from contract.errors import InputError

        if len(self.shapes) != len(self.tiles) or not self.shapes or any(int(t) < 1 for t in self.tiles) \
                or not callable(self.subset) or (self.tile_rows and (
                    len(self.tile_rows) != len(self.tiles)
                    or any(int(r) < 1 or int(t) % int(r) for r, t in zip(self.tile_rows, self.tiles, strict=False)))):
            raise InputError(f"GroupSubsets: {len(self.shapes)} shapes, {len(self.tiles)} tile counts, subset "
                             f"{self.subset!r:.60}, tile rows {self.tile_rows!r:.60}; expected one positive tile "
                         f"count per shape, a callable, and no tile rows or one per shape dividing its tiles")


LAUNCH_MARKS = (FamilyShare, GroupSubsets)  # launch parameters that are marks for the backend, not kernel parameters

LaunchArg = DeviceArray | np.generic | TensorMapArg | StructArg | WorkItems | FamilyShare | GroupSubsets

# What a launch's grid stands for, as its parameters declare it: "rows" (its grid rows are routing blocks: it passes
# total_padded as a LiveRows), "items" (a persistent kernel's item range: a WorkItems), or "plain" (CTAs with no
# routing structure). Sampling (harness.sampling) follows this declaration: rows and items of a big launch may be
# sampled, a plain grid always runs whole.
GridMeaning = Literal["plain", "rows", "items"]


def grid_meaning(params) -> GridMeaning:
    """The meaning a launch's parameters declare for its grid (GridMeaning): items before rows, as a persistent
    kernel's items are themselves routing blocks' tiles."""
    if any(isinstance(p, WorkItems) for p in params):
        return "items"
    if any(isinstance(p, LiveRows) for p in params):
        return "rows"
    return "plain"



class KernelBackend(Protocol):
    """The calls an implementation makes on a backend (and nothing else)."""

    name: str

    def to_device(self, host: np.ndarray) -> DeviceArray: ...

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A new device array with every byte set to `fill_byte` (poison: unwritten elements are detectable)."""
        ...

    def free(self, array: DeviceArray) -> None: ...

    def workspace(self, owner: str, specs: dict) -> dict[str, DeviceArray]:
        """Poisoned arrays {name: (shape, dtype)} for `owner`'s intermediates; kept across the calls of a timing loop
        (no allocation inside a timed window). Give them back with `done_with_workspace`."""
        ...

    def done_with_workspace(self, arrays: dict[str, DeviceArray]) -> None: ...

    def tensor_map(self, array: DeviceArray, box: Sequence[int], swizzle: int = 128, shape: Sequence[int] | None = None,
                   oob_fill: str = "zero") -> TensorMapArg:
        """A tiled tensor map over `array` viewed as `shape` (default its own; NumPy order), copying `box` elements
        per dimension into shared memory with the given swizzle span (cuTensorMapEncodeTiled on a GPU)."""
        ...

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        """Launch entry `entry` of PTX module text `ptx` (cached per text); DeviceArray params pass their address."""
        ...

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        """Launch a Numba CUDA kernel given as a plain Python function plus its explicit Numba signature."""
        ...
