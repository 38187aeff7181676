"""Published PAIRED measurements: ratios of two variants of one experiment (fewer SMs, padded vs conflicted shared
memory, more ILP, vector vs scalar loads, one STREAM kernel vs another), each set beside the ratio the model gives
for the same two kernels (pair_benches.py) run on ptxsim. The headline of ptxmoe is a ratio of two paths; these rows
measure the model on exactly that kind of quantity.

Every figure is quoted from its source (docs/model-validation.md, "Paired rows", gives the table and conditions);
`figures` are the two published values, `value` their ratio. All are PREDICTED: no model constant was set from any
of them (costs.FITTED_FROM names only absolute rows; a test checks that no pair is named there).

The error of a pair is its modelled ratio over its published one; `same_limiter` says whether the model put both
variants on the same bound (their error largely cancels) or on different ones (intervals.py fits the two apart).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ptxsim.model import pair_benches as pb
from ptxsim.model.published import FIT, PREDICTED
from ptxsim.model.published import S1 as _S1
from ptxsim.model.published import S5 as _S5

_MB = 1 << 20

# Variant name -> the bench that runs it (built on first use: the PTX text is generated).
VARIANTS: dict[str, Callable[[], object]] = {
    **{f"copy_v4_{b}": functools.partial(pb.copy_bench, "v4", b, 256 * _MB) for b in (32, 64, 132, 528)},
    **{f"copy_cg_l2_{b}": functools.partial(pb.copy_bench, "cg", b, 16 * _MB, 8) for b in (16, 64, 132, 528)},
    "copy_cg_hbm_528": functools.partial(pb.copy_bench, "cg", 528, 256 * _MB),
    "transpose_basic": functools.partial(pb.transpose_bench, "basic"),
    "transpose_padded": functools.partial(pb.transpose_bench, "padded"),
    **{f"ilp_fma_{n}": functools.partial(pb.ilp_bench, "fma", n) for n in (1, 4, 16, 128)},
    **{f"ilp_iadd_{n}": functools.partial(pb.ilp_bench, "iadd", n) for n in (1, 8)},
    **{f"ilp_imul_{n}": functools.partial(pb.ilp_bench, "imul", n) for n in (8, 128)},
    **{f"ilp_sin_{n}": functools.partial(pb.ilp_bench, "sin", n) for n in (1, 16, 128)},
    **{f"stream_{k}": functools.partial(pb.stream_bench, k) for k in ("copy", "add", "triad", "dot")},
}


@functools.cache
def variant_bench(name: str):
    """The microbench.Bench of a variant (cached: its PTX is built once)."""
    return VARIANTS[name]()


@dataclass(frozen=True)
class PublishedPair:
    """A published ratio: the quantity of `numerator` over that of `denominator` (both in `unit`)."""

    name: str
    numerator: str
    denominator: str
    figures: tuple[float, float]
    unit: str
    device: str
    source: str
    conditions: str
    role: str = PREDICTED

    @property
    def value(self) -> float:
        return self.figures[0] / self.figures[1]


def _s1_copy(blocks: int, figure: float) -> PublishedPair:
    return PublishedPair(f"hbm_copy_{blocks}_vs_132_blocks", f"copy_v4_{blocks}", "copy_v4_132", (figure, 1992.0),
                         "GB/s", "H100 SXM", _S1, f"section 3b table: {blocks} vs 132 'SMs' (blocks of 256 threads), "
                         "copy_kernel<float4, 4>, 256 MB, 2 x bytes / time, CUDA events over 20 launches")


def _s1_l2(blocks: int, figure: float) -> PublishedPair:
    return PublishedPair(f"l2_copy_{blocks}_vs_132_blocks", f"copy_cg_l2_{blocks}", "copy_cg_l2_132", (figure, 3223.0),
                         "GB/s", "H100 SXM", _S1, f"section 3c table: {blocks} vs 132 'SMs' (blocks of 256 threads), "
                         "copy_l2<8> (__ldcg/__stcg floats), 16 MB L2-resident after 20 warm-up launches")


def _s1_ilp(op: str, label: str, a: int, b: int, fa: float, fb: float) -> PublishedPair:
    return PublishedPair(f"ilp_{op}_{a}_vs_{b}", f"ilp_{op}_{a}", f"ilp_{op}_{b}", (fa, fb), "clk", "H100 SXM", _S1,
                         f"section 2 table, row {label}: ILP={a} vs ILP={b} clocks per warp-instruction, one warp "
                         "<<<1, 32>>>, inst_lat.cu, clock64() around 100000 steps")


def _s5(gpu: str, device: str, kind: str, figure: float, copy: float) -> PublishedPair:
    return PublishedPair(f"stream_{kind}_vs_copy_{gpu.lower()}", f"stream_{kind}", "stream_copy", (figure, copy),
                         "TB/s", device, _S5.format(gpu=gpu),
                         f"'HBM Bandwidth' table (BabelStream): {kind.capitalize()} {figure} vs Copy {copy} TB/s on "
                         f"Azure ND {gpu} v5 (CUDA 12.6): both stream DRAM at large arrays")


PAIRS: tuple[PublishedPair, ...] = (
    _s1_copy(32, 1183.0), _s1_copy(64, 1722.0),
    PublishedPair("hbm_copy_528_vs_132_blocks", "copy_v4_528", "copy_v4_132", (2034.0, 1992.0), "GB/s", "H100 SXM",
                  _S1, "section 3b table: '528 blocks (4x SMs) 2,034 GB/s' vs '132 SMs (all) 1,992 GB/s', "
                  "copy_kernel<float4, 4>, 256 MB"),
    _s1_l2(16, 323.0), _s1_l2(64, 2252.0),
    PublishedPair("l2_copy_528_vs_132_blocks", "copy_cg_l2_528", "copy_cg_l2_132", (3574.0, 3223.0), "GB/s",
                  "H100 SXM", _S1, "section 3c table: '528 blocks (4x SMs) 3,574 GB/s' vs '132 SMs (all) 3,223 GB/s'"),
    PublishedPair("l2_vs_hbm_copy_528_blocks", "copy_cg_l2_528", "copy_cg_hbm_528", (3574.0, 887.0), "GB/s",
                  "H100 SXM", _S1, "section 3c table: the same copy_l2<8> at 528 blocks on 16 MB (L2-resident) vs "
                  "'HBM (256 MB, doesn't fit L2) 887 GB/s' (its 'L2 / HBM ratio 4.0x')"),
    PublishedPair("hbm_copy_float4_vs_float_528_blocks", "copy_v4_528", "copy_cg_hbm_528", (2034.0, 887.0), "GB/s",
                  "H100 SXM", _S1, "sections 3b and 3c: 256 MB copied by 528 blocks of 256 threads with float4 loads "
                  "unrolled 4x (copy_kernel<float4, 4>, 2,034 GB/s) vs float __ldcg/__stcg unrolled 8x "
                  "(copy_l2<8>, 887 GB/s)"),
    PublishedPair("transpose_unpadded_vs_padded", "transpose_basic", "transpose_padded", (1224.0, 1904.0), "GB/s",
                  "H100 SXM", _S1, "section 4 table: 'Basic' (32x8 threads, unpadded 32x32 tile: 32-way conflicts) "
                  "1,224 GB/s vs 'Vectorized' (8x32 threads, float4, tile padded to 33) 1,904 GB/s; 32768^2 floats "
                  "(modelled at 8192^2), 2 x matrix bytes / time"),
    _s1_ilp("fma", "FMA", 1, 4, 29.0, 7.3), _s1_ilp("fma", "FMA", 4, 16, 7.3, 2.4),
    _s1_ilp("fma", "FMA", 16, 128, 2.4, 1.2), _s1_ilp("iadd", "IADD", 1, 8, 29.0, 3.9),
    _s1_ilp("imul", "IMUL", 8, 128, 3.9, 2.1), _s1_ilp("sin", "__sinf", 1, 16, 29.0, 9.6),
    _s1_ilp("sin", "__sinf", 16, 128, 9.6, 9.1),
    _s5("H100", "H100 SXM", "add", 2.97, 2.90), _s5("H100", "H100 SXM", "triad", 2.97, 2.90),
    _s5("H100", "H100 SXM", "dot", 3.18, 2.90),
    _s5("H200", "H200 SXM", "add", 4.15, 4.01), _s5("H200", "H200 SXM", "triad", 4.15, 4.01),
    _s5("H200", "H200 SXM", "dot", 4.48, 4.01),
)


@dataclass(frozen=True)
class PairRow:
    """One paired row: the modelled and published ratios and what limits each variant in the model."""

    name: str
    numerator: str
    denominator: str
    modelled: float               # modelled quantity ratio numerator / denominator
    published: float
    error_ratio: float            # modelled / published
    limiters: tuple[str, str]     # the model's kernel limiter of each variant
    device: str
    source: str
    conditions: str
    role: str = PREDICTED

    @property
    def same_limiter(self) -> bool:
        return self.limiters[0] == self.limiters[1]


def _limiter(result) -> str:
    return "/".join(sorted(set(result.kernel_limiters or result.limiters)))


def validate_pairs(constants: Mapping[str, float] | None = None, names=None, static_facts=None,
                   model: str = "v1") -> list[PairRow]:
    """Run both variants of every pair (or those in `names`) on ptxsim with the model of the pair's device, at the
    clock its source states it measured at (published.stated_clock_hz), else the device's under-load clock."""
    from ptxsim.model.microbench import run_on_sim
    from ptxsim.model.published import stated_clock_hz

    results: dict[tuple, object] = {}

    def run(variant: str, device: str, clock_hz: float | None):
        if (variant, device, clock_hz) not in results:
            results[variant, device, clock_hz] = run_on_sim(variant_bench(variant), device, constants, static_facts,
                                                            model=model, clock_hz=clock_hz)
        return results[variant, device, clock_hz]

    rows = []
    for pair in PAIRS:
        if names and pair.name not in names:
            continue
        clock = stated_clock_hz(pair.source)     # the source's stated clock (published.STATED_CLOCK_HZ), if any
        num, den = run(pair.numerator, pair.device, clock), run(pair.denominator, pair.device, clock)
        modelled = num.quantity / den.quantity
        rows.append(PairRow(pair.name, pair.numerator, pair.denominator, modelled, pair.value,
                            modelled / pair.value, (_limiter(num), _limiter(den)), pair.device, pair.source,
                            pair.conditions, pair.role))
    return rows


def fit_pairs() -> list[PublishedPair]:
    """Pairs marked FIT (none today; a test keeps costs.FITTED_FROM from naming a predicted one)."""
    return [pair for pair in PAIRS if pair.role == FIT]


def _gpu_pair_name(pair: PublishedPair) -> str:
    """The published pair's name without its device suffix ("stream_add_vs_copy_h100" -> "stream_add_vs_copy"):
    measured on one GPU, the H100 and H200 rows of one experiment are the same two kernels."""
    for suffix in ("_h100", "_h200", "_h800"):
        if pair.name.endswith(suffix):
            return pair.name[: -len(suffix)]
    return pair.name


# The paired variants `ptxmoe calibrate` times on a GPU and a device profile carries ("pairs"): every published pair
# above, once per distinct (numerator, denominator), named as its published row without a device suffix (the rows of
# one experiment on H100 and on H200 run the same two kernels; a test checks that they do).
GPU_PAIRS: dict[str, tuple[str, str]] = {_gpu_pair_name(p): (p.numerator, p.denominator) for p in PAIRS}


def pair_unit(name: str) -> str:
    """The unit of the quantities a pair's ratio is of (a published pair's name, or its GPU_PAIRS name): what
    orients its ratio (a time: larger is slower; a throughput: larger is faster)."""
    from ptxsim.model.errors import ModelArgumentError

    for pair in PAIRS:
        if name in (pair.name, _gpu_pair_name(pair)):
            return pair.unit
    raise ModelArgumentError(f"paired row {name!r} is not a published pair or a GPU pair; expected one of "
                             f"{', '.join(GPU_PAIRS)}")


def measured_pair_rows(spec, measured: Mapping[str, float], constants: Mapping[str, float] | None = None,
                       static_facts=None, model: str = "v1") -> list[PairRow]:
    """PairRows of pairs measured on a GPU (a device profile's "pairs": {GPU_PAIRS name: measured ratio}): the ratio
    the model gives for both variants on `spec` (a DeviceSpec, e.g. DeviceProfile.spec() with its measured clock)
    beside the measured one, so intervals.fit_by_limiter fits bias and spread on them as on the published rows.

    Raises:
        ModelArgumentError: a name that is not a GPU pair, or a ratio that is not a finite number > 0.
    """
    import math

    from ptxsim.model.errors import ModelArgumentError
    from ptxsim.model.microbench import run_on_sim

    results: dict[str, object] = {}

    def run(variant: str):
        if variant not in results:
            results[variant] = run_on_sim(variant_bench(variant), spec, constants, static_facts, model=model)
        return results[variant]

    rows = []
    for name, ratio in measured.items():
        if name not in GPU_PAIRS:
            raise ModelArgumentError(f"measured pair {name!r} is not a paired variant; expected one of "
                                     f"{', '.join(GPU_PAIRS)}")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or ratio <= 0:
            raise ModelArgumentError(f"measured pair {name!r} has ratio {ratio!r}; expected a finite number > 0")
        numerator, denominator = GPU_PAIRS[name]
        num, den = run(numerator), run(denominator)
        modelled = num.quantity / den.quantity
        rows.append(PairRow(name, numerator, denominator, modelled, float(ratio), modelled / float(ratio),
                            (_limiter(num), _limiter(den)), spec.name, f"measured on {spec.name} (device profile)",
                            "ptxmoe calibrate: median of the timed launches of each variant", PREDICTED))
    return rows
