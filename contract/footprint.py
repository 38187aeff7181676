"""Memory a row will spend, known before it is spent: tensor sizes from the preset alone (nothing is drawn), and the
host and simulated-device bytes of one kernel run with or without lazy inputs, sampling and sanitizers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.errors import UnknownNameError
from contract.generators import BF16, BLOCK_CACHE_BYTES, E4M3
from contract.layer import intermediate_specs
from contract.presets import Preset, get_preset

I32, F32 = np.dtype(np.int32), np.dtype(np.float32)
PAGE = 1 << 16  # ptxsim's lazy page (ptxsim.memory.PAGE; not imported: contract stays free of ptxsim)
LAZY_MIN_BYTES = 256 << 20  # run_kernel makes inputs lazy (on backends that take them) from this total size on
SECTOR_TABLE_BYTES = 13  # ptxsim's per-sector counter tables (ptxsim.counters.MemCounters, ptxsim.model.l2.WaveL2)
PROCESS_BASE = 256 << 20  # Python and NumPy (~50 MiB) plus Numba when a row compiles kernels (peak RSS ~240 MiB, tiny)


def _gemm_kd_n(p: Preset, variant: str) -> tuple[int, int]:
    if variant not in ("up", "down"):
        raise UnknownNameError("grouped_gemm variant", variant, ("up", "down"))
    return (p.H, 2 * p.I) if variant == "up" else (p.I, p.H)


def _gemm(p: Preset, v: str):
    kd, n = _gemm_kd_n(p, v)
    return ({"a": ((p.P_max, kd), BF16), "w": ((p.E, n, kd), BF16), "block_expert": ((p.n_blocks,), I32),
             "total_padded": ((1,), I32)}, {"c": ((p.P_max, n), BF16)})


def _gemm_fp8(p: Preset, v: str):
    kd, n = _gemm_kd_n(p, v)
    block = 128  # 1x128 activation groups, 128x128 weight blocks
    return ({"a": ((p.P_max, kd), E4M3), "a_scale": ((p.P_max, kd // block), F32), "w": ((p.E, n, kd), E4M3),
             "w_scale": ((p.E, n // block, kd // block), F32), "block_expert": ((p.n_blocks,), I32),
             "total_padded": ((1,), I32)}, {"c": ((p.P_max, n), BF16)})


def _layer(p: Preset, v: str | None):
    """The layer's inputs and outputs; variant "fp8" (DeepSeek-V3's): e4m3 weights with 128x128 block scales; any
    other (None, "bf16", or the callers' default "up") the bf16 layer."""
    weights = {"W1": ((p.E, 2 * p.I, p.H), BF16), "W2": ((p.E, p.H, p.I), BF16)}
    if v == "fp8":
        weights = {"W1": ((p.E, 2 * p.I, p.H), E4M3), "W1_scale": ((p.E, 2 * p.I // 128, p.H // 128), F32),
                   "W2": ((p.E, p.H, p.I), E4M3), "W2_scale": ((p.E, p.H // 128, p.I // 128), F32)}
    return ({"logits": ((p.T, p.E), F32), "bias": ((p.E,), F32), "x": ((p.T, p.H), BF16), **weights},
            {"out": ((p.T, p.H), BF16), "q": ((p.T, p.H), E4M3), "scale": ((p.T, p.H // 128), F32)})


# kernel -> (preset, variant) -> ({input: (shape, dtype)}, {output: (shape, dtype)}); keyed (lazy-able) inputs below
SHAPES = {
    "gate": lambda p, v: ({"logits": ((p.T, p.E), F32), "bias": ((p.E,), F32)},
                          {"topk_ids": ((p.T, p.K), I32), "topk_w": ((p.T, p.K), F32)}),
    "align": lambda p, v: ({"topk_ids": ((p.T, p.K), I32)},
                           {"counts": ((p.E,), I32), "offsets": ((p.E + 1,), I32), "total_padded": ((1,), I32),
                            "sorted_ids": ((p.P_max,), I32), "block_expert": ((p.n_blocks,), I32),
                            "inverse": ((p.T, p.K), I32)}),
    "permute": lambda p, v: ({"x": ((p.T, p.H), BF16), "sorted_ids": ((p.P_max,), I32), "total_padded": ((1,), I32)},
                             {"xp": ((p.P_max, p.H), BF16)}),
    "act_quant": lambda p, v: ({"a": ((p.T, p.H), BF16)},
                               {"q": ((p.T, p.H), E4M3), "scale": ((p.T, p.H // 128), F32)}),
    "grouped_gemm": _gemm,
    "grouped_gemm_fp8": _gemm_fp8,
    "swiglu": lambda p, v: ({"h": ((p.P_max, 2 * p.I), BF16), "total_padded": ((1,), I32)},
                            {"a": ((p.P_max, p.I), BF16)}),
    "combine": lambda p, v: ({"y": ((p.P_max, p.H), BF16), "topk_w": ((p.T, p.K), F32), "inverse": ((p.T, p.K), I32)},
                             {"out": ((p.T, p.H), BF16)}),
    "layer": lambda p, v: _layer(p, v),
}
LAZY_INPUTS = {"permute": ("x",), "grouped_gemm": ("a", "w"), "grouped_gemm_fp8": ("a", "w"), "swiglu": ("h",),
               "combine": ("y",), "layer": ("W1", "W2")}


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def tensor_bytes(kernel: str, preset: Preset | str, variant: str = "up") -> tuple[dict[str, int], dict[str, int]]:
    """({input: bytes}, {output: bytes}) of a kernel at a preset, from the shapes alone."""
    if kernel not in SHAPES:
        raise UnknownNameError("kernel", kernel, SHAPES)
    ins, outs = SHAPES[kernel](get_preset(preset), variant)
    return ({k: _nbytes(*v) for k, v in ins.items()}, {k: _nbytes(*v) for k, v in outs.items()})


def wants_lazy(kernel: str, preset: Preset | str, variant: str = "up") -> bool:
    """True when a kernel's inputs at a preset are big enough that drawing them whole is worth avoiding."""
    ins, _ = tensor_bytes(kernel, preset, variant)
    return sum(ins.values()) >= LAZY_MIN_BYTES


@dataclass(frozen=True)
class MemoryEstimate:
    """Estimated bytes of one row. host: arrays in this process (inputs, outputs copied back, poison copies for the
    untouched checks, the float64 reference); sim: committed simulated global memory (pages, shadows, counters)."""

    kernel: str
    preset: str
    host_bytes: int
    sim_bytes: int
    input_bytes: int  # the inputs' full size, lazy or not
    output_bytes: int
    lazy: bool

    @property
    def total_bytes(self) -> int:
        return PROCESS_BASE + self.host_bytes + self.sim_bytes


# Temporaries of drawing a kernel's inputs whole (make_inputs), beyond the inputs themselves: the fp8 GEMM draws its
# weights as bf16 and scales them in float32 before quantising (6 bytes per weight at the peak).
DRAW_TEMPORARIES = {"grouped_gemm_fp8": ("w", 6)}


def _draw_bytes(kernel: str, p: Preset, variant: str, lazy: tuple[str, ...]) -> int:
    """Peak temporaries of drawing the non-lazy inputs (0 when the drawn input is lazy or needs none)."""
    name, per_element = DRAW_TEMPORARIES.get(kernel, (None, 0))
    if name is None or name in lazy:
        return 0
    shape, _ = SHAPES[kernel](p, variant)[0][name]
    return int(np.prod(shape, dtype=np.int64)) * per_element


def _touched_inputs(kernel: str, p: Preset, variant: str, ins: dict[str, int], lazy: tuple[str, ...],
                    ctas: int | None) -> int:
    """Upper bound on the lazy input bytes the simulated CTAs touch (all of them without sampling)."""
    if ctas is None or not lazy:
        return sum(ins[k] for k in lazy)
    if kernel in ("grouped_gemm", "grouped_gemm_fp8"):
        # a CTA (a persistent launch's window: an item) works on one routing block: BM rows of a and (at most) one
        # expert's weights, bf16 or e4m3 (the fp8 GEMM fell to the elementwise bound below: all 7.5 GB of dsv3's up
        # weights, so two Dask workers skipped its rows as not fitting)
        a_row, w_expert = ins["a"] // p.P_max, ins["w"] // p.E
        return min(ins["a"], ctas * (p.BM * a_row + PAGE)) + min(ins["w"], ctas * (w_expert + PAGE))
    if kernel == "layer":
        # the GEMM launches sample runs of one expert's routing blocks (harness.sampling), so `ctas` sampled blocks
        # hold about ctas / (blocks per expert) experts, each GEMM its own (a launch without LiveRows samples equal
        # strata: one expert a block at worst, which is the bound of a preset with a block per expert). Counting a
        # block an expert put dsv3-prefill's weights at 3 GB, against the ~0.2 GB its two GEMMs read. Each GEMM reads
        # its own matrix (W1 up, W2 down), so `experts` bounds both: an expert's W1 and W2 once, not twice.
        experts = min(p.E, -(-ctas // max(1, round(p.n_blocks / p.E))))
        per_expert = (ins["W1"] + ins["W2"]) // p.E
        return min(ins["W1"] + ins["W2"], experts * (per_expert + 2 * PAGE))
    return sum(ins[k] for k in lazy)  # elementwise kernels: grid-stride loops may touch every page


def estimate_memory(kernel: str, preset: Preset | str, variant: str = "up", *, lazy: bool | None = None,
                    sample_ctas: int | None = None, sanitizers: tuple[str, ...] = ()) -> MemoryEstimate:
    """Host and simulated memory of one sim row (kernel, preset, variant), before anything is allocated.

    Args:
        lazy: inputs as keyed lazy tensors (None: as run_kernel decides, by size).
        sample_ctas: ptxsim's sampled simulation (per launch); None = every CTA.
        sanitizers: ptxsim sanitizer names; initcheck keeps a byte of shadow per heap byte, nc two.
    """
    p = get_preset(preset)
    ins, outs = tensor_bytes(kernel, p, variant)
    lazy = wants_lazy(kernel, p, variant) if lazy is None else lazy
    lazy_names = LAZY_INPUTS.get(kernel, ()) if lazy else ()
    in_total, out_total = sum(ins.values()), sum(outs.values())
    host_inputs = in_total - sum(ins[k] for k in lazy_names)
    reference = _reference_bytes(kernel, p, variant, outs, sample_ctas)
    touched = _touched_inputs(kernel, p, variant, ins, lazy_names, sample_ctas)
    # NOTE: the keyed generators keep the blocks they last drew (contract.generators, for the check's reference to
    # reuse), a second copy of the lazy bytes the simulator filled, up to their cache's size: the cutlass bf16 up
    # GEMM at dsv3-decode rose 0.72 GB in its launch: its 5 experts' weight pages (0.29 GB), the cache's 0.26 GB of
    # the same blocks, the counters over them (0.12 GB)
    drawn_cache = min(BLOCK_CACHE_BYTES, touched) if lazy_names else 0
    host = host_inputs + 2 * out_total + reference + _draw_bytes(kernel, p, variant, lazy_names) + drawn_cache
    # the layer's intermediates live on the device too (its stages write them whole, but for the sampled GEMMs' rows)
    middle = sum(_nbytes(*v) for v in _layer_intermediates(p, variant).values()) if kernel == "layer" else 0
    heap = in_total + out_total + middle
    committed_in = host_inputs + touched
    committed = committed_in + out_total + middle  # outputs are read back whole
    # NOTE: ptxsim's counters keep 13 bytes per touched 32-byte sector (L1 owner int64, L2 wave int32, written flag),
    # committed only where touched (ptxsim.model.l2.lazy_zeros); plus the lazy page table
    sim = committed + SECTOR_TABLE_BYTES * committed // 32 + 4 * heap // PAGE
    if "initcheck" in sanitizers:
        sim += heap
    if "nc" in sanitizers:
        sim += 2 * heap
    return MemoryEstimate(kernel, p.name, int(host), int(sim), int(in_total), int(out_total), bool(lazy))


def _layer_intermediates(p: Preset, variant: str):
    return intermediate_specs(p, "fp8" if variant == "fp8" else "bf16")


# Kernels whose whole check builds its reference a chunk of rows at a time (contract.checks.exact_by_rows,
# compare_float_rows, exact_many_by_rows): at most a chunk's float64 reference and temporaries at once, however big
# the output. Measured before they were chunked, at dsv3-prefill: swiglu 5.2 GB, combine 3.9 GB of peak RSS.
CHUNKED_CHECKS = ("permute", "act_quant", "swiglu", "combine")
# combine's chunk is the widest: FLOAT_CHUNK_ELEMENTS output elements gather K rows of y each in float64 (268 MB at
# dsv3's K=8), with the einsum's output and the rows' indices beside it
CHUNK_REFERENCE_BYTES = 320 << 20


def _reference_bytes(kernel: str, p: Preset, variant: str, outs: dict[str, int], ctas: int | None) -> int:
    """The float64 reference (4x a bf16 output; a chunk of it for CHUNKED_CHECKS) and, for the GEMMs, one expert's
    weights in float64 at a time."""
    ref = 4 * sum(outs.values())
    if kernel in CHUNKED_CHECKS:
        return min(ref, CHUNK_REFERENCE_BYTES)
    if kernel in ("grouped_gemm", "grouped_gemm_fp8"):
        # the fp8 reference dequantises an expert's weights into one float64 array (reference.dequant_blocks, in
        # place), as the bf16 one widens them: it fell to 4x the whole output before (5.85 GB for the sampled
        # dsv3-prefill down GEMM, whose check builds the sampled blocks only)
        kd, n = _gemm_kd_n(p, variant)
        block = (p.BM * kd + n * kd) * 8
        ref = block + (min(ctas, p.n_blocks) if ctas else p.n_blocks) * p.BM * n * 8
    elif kernel == "layer" and ctas:
        # a sampled layer is checked stage by stage on views of its intermediates (SimBackend.done_with_workspace:
        # no host copies); its whole stages' references are built a chunk of rows at a time (CHUNKED_CHECKS), and its
        # GEMM stages' as the sampled GEMM rows' are, one expert's weights in float64 at a time (the larger GEMM's:
        # 235 MB for dsv3's up projection, which the cutlass bf16 layer's check rose by)
        ref += CHUNK_REFERENCE_BYTES + max(_reference_bytes(gemm, p, v, {}, ctas) for v in ("up", "down")
                                           for gemm in ("grouped_gemm_fp8" if variant == "fp8" else "grouped_gemm",))
    elif kernel == "layer":  # the whole layer in float64: its widest intermediates twice and an expert's weights
        ref += 2 * p.P_max * max(2 * p.I, p.H) * 8 + 2 * p.I * p.H * 8
    return ref
