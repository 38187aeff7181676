"""Published hardware measurements the timing model is validated against (docs/model-validation.md cites each).

One entry per microbenchmark in microbench.BENCHES, or a tuple of entries when several sources publish the quantity
(each becomes a row, run with the model of its own device): the value, its unit (the bench's), the device it was
measured on, the source and the conditions. `None` means no published figure was found for that quantity: the
validation row says so instead of inventing one.

Each figure has a `role`: FIT when a model constant (costs.MODEL_CONSTANTS) or a kernel choice of the benches was set
from it (costs.FITTED_FROM and microbench.FITTED_FROM name the (bench, source tag) of each such row;
role_problems() checks that the two agree both ways), PREDICTED otherwise. A fit row checks the machinery, not the
model: the error the model is judged by is that of the predicted rows alone (validation.error_figure(rows, PREDICTED)).
"""
from __future__ import annotations

from dataclasses import dataclass

FIT, PREDICTED = "fit", "predicted"
ROLES = (FIT, PREDICTED)


@dataclass(frozen=True)
class Published:
    value: float | None
    device: str
    source: str
    conditions: str
    gap: str = ""      # when the model is out of band: why, and what would close it
    role: str = PREDICTED   # FIT: a model constant or kernel choice was set from this figure (see the docstring)

    @property
    def tag(self) -> str:
        """The source's short tag ("[S1]"), which with the bench name identifies the row."""
        return self.source.split("]", 1)[0] + "]" if self.source.startswith("[") else self.source


# Sources (full references in docs/model-validation.md):
_S1 = "[S1] ahmadsharif1/cuda_study README 'CUDA Performance Study - NVIDIA H100 SXM5'"
_S2 = "[S2] markdewing/AI_kernels latency/README.md"
_S3 = "[S3] simveit/effective-reduction-mojo README"
_S4 = "[S4] mredenti/PowerCapping configuration/OpenCL_benchmark.md (ProjectPhysX OpenCL-Benchmark on GH200)"
_S5 = "[S5] samuel-bohman/AI-benchmarking-guide Azure_Results/ND_{gpu}_v5_results.md (Azure ND {gpu} v5)"
S1, S5 = _S1, _S5   # paired.py quotes the same sources

# The SM clock a source states its measurements were taken at (a condition of the experiment, like its device): the
# model runs that source's rows at it instead of the device's one under-load clock, as a device profile's measured
# clock would. S1: "All measurements taken at the observed boost clock of 1.98 GHz with CUDA 12.8" (README, top).
# Sources that do not state an observed clock (S2 "clocks not locked", S4's reported maximum, S5, S6-S9) keep the
# under-load clock.
STATED_CLOCK_HZ: dict[str, float] = {_S1: 1.98e9}


def stated_clock_hz(source: str) -> float | None:
    """The SM clock `source` states it measured at (STATED_CLOCK_HZ), or None."""
    return STATED_CLOCK_HZ.get(source)
_S6 = "[S6] Luo et al., 'Benchmarking and Dissecting the Nvidia Hopper GPU Architecture' (arXiv 2402.13499)"
_S7 = "[S7] Luo et al., 'Dissecting the NVIDIA Hopper Architecture through Microbenchmarking' (arXiv 2501.12084)"
_S8 = "[S8] Jarmusch & Chandrasekaran, arXiv 2512.02189, as quoted by a public notes file (table not read directly)"
_S9 = "[S9] deepseek-ai/DeepGEMM README news entry of 2025-04-18"
_NONE = "none found"
# [S6] measured an H800 PCIe (114 SMs; dense peaks 756.5 TFLOP/s FP16, 1513 FP8: [DS] H100/H800 PCIe sparsity figures
# halved). Its rates are quoted as the same fraction of the validated device's dense peak (H100 SXM: 989.4 / 1978.9).
_H800_PCIE_FP16, _H800_PCIE_FP8 = 756.5, 1513.0
_H100_BF16, _H100_FP8 = 989.4, 1978.9

PUBLISHED: dict[str, Published] = {
    "dram_read": (
        Published(3134.26, "H100 SXM", _S3, "one-pass reduction of 2^30 floats (best kernel one_pass_4)"),
        Published(3180.0, "H100 SXM", _S5.format(gpu="H100"), "HBM bandwidth 'Dot' (a read-only reduction), 3.18 TB/s, "
                  "NVIDIA H100 80GB HBM3, CUDA 12.6"),
        Published(4480.0, "H200 SXM", _S5.format(gpu="H200"), "HBM bandwidth 'Dot', 4.48 TB/s, NVIDIA H200 141GB, "
                  "CUDA 12.6"),
    ),
    "dram_copy": (
        Published(2900.0, "H100 SXM", _S5.format(gpu="H100"), "HBM bandwidth 'Copy', 2.90 TB/s, NVIDIA H100 80GB "
                  "HBM3 (STREAM-style copy, read + write bytes)"),
        Published(4010.0, "H200 SXM", _S5.format(gpu="H200"), "HBM bandwidth 'Copy', 4.01 TB/s, NVIDIA H200 141GB"),
        Published(1992.0, "H100 SXM", _S1, "256 MB float4 copy on 132 SMs, 2 x bytes / time, CUDA events",
                           "S1 reaches 59% of the 3.35 TB/s peak with a copy while S3 reads at 94%; the model "
                           "charges reads and writes alike at 90%. A copy measured on the target GPU "
                           "(ptxmoe calibrate) settles it for that part; S5's copies on H100 and H200 (2.90 and 4.01 "
                           "TB/s) are within band"),
    ),
    "l2_copy": Published(3574.0, "H100 SXM", _S1, "16 MB __ldcg/__stcg copy, 528 blocks, data L2-resident",
                         "the model's L2 bandwidth is an estimate (devices.py [EST], 32 B/clk/SM); S1's only figure "
                         "is from the same run whose HBM copy is 40% under peak. ptxmoe calibrate fits "
                         "l2_achievable_fraction from the l2_copy bench"),
    "shared_bw": Published(None, "H100 SXM", _NONE, "no measured Hopper shared-memory bandwidth found"),
    "shared_conflict": Published(None, "H100 SXM", _NONE, "no measured bank-conflicted bandwidth found"),
    "fp32_fma": Published(62.961, "H100 SXM", _S4, "GH200 (132 SMs at 1980 MHz, the H100 SXM SM configuration); "
                          "the throughput kernels were unrolled 4x to match this figure",
                          "the model runs every bound at the one under-load clock, 1.6 GHz (devices.py [FM]: "
                          "FlashMLA on H800 SXM5 at its power limit); S4's GH200 reports 1980 MHz and reaches 94% of "
                          "the 1.98 GHz peak, so FMA-only work there runs well above 1.6 GHz. ptxmoe calibrate reads "
                          "the target's clock",
                          role=FIT),
    "int32_mad": Published(32.971, "H100 SXM", _S4, "GH200, OpenCL INT32 compute (assumed 2 ops per multiply-add)"),
    "sfu_sin": Published(9.6, "H100 SXM", _S1, "__sinf, one warp, ILP=16, clock64(), clocks per warp-instruction",
                         "the model charges the programming guide's 16 MUFU results/clk/SM (8 clk); S1 measures "
                         "9.1-9.6. ptxmoe calibrate fits sfu_achievable_fraction from the sfu_sin bench"),
    "mma_bf16": Published(round(494.4 / _H800_PCIE_FP16 * _H100_BF16, 1), "H100 SXM", _S6,
                          "mma.sync m16n8k16 FP16 dense: 494.4 TFLOP/s on H800 PCIe = 65.4% of its 756.5 peak, quoted "
                          "as that fraction of H100 SXM's 989.4 (mma_sync_fraction_of_peak 0.65 is this figure)",
                          role=FIT),
    "wgmma_bf16": Published(round(728.5 / _H800_PCIE_FP16 * _H100_BF16, 1), "H100 SXM", _S7,
                            "wgmma m64n256k16 FP16 -> FP32, SS, zero-filled inputs: 728.5 TFLOP/s on H800 PCIe = 96.3% "
                            "of 756.5, quoted as that fraction of 989.4 (wgmma_fraction_of_peak 0.96 is this figure)",
                            role=FIT),
    "wgmma_fp8": (
        Published(round(1448.4 / _H800_PCIE_FP8 * _H100_FP8, 1), "H100 SXM", _S6,
                  "wgmma m64n256k32 FP8, SS, zero-filled inputs: 1448.4 TFLOP/s on H800 PCIe = 95.7% of 1513, quoted "
                  "as that fraction of 1978.9 (wgmma_fraction_of_peak 0.96 was set from it with S6's FP16 figure)",
                  role=FIT),
        Published(1550.0, "H800 SXM", _S9, "'up to 1550 TFLOPS' FP8 on H800 for a whole GEMM (no shape named): TMA "
                  "loads, fine-grained scaling promoted on CUDA cores, epilogue, real data at the power limit",
                  "not the same quantity: a whole FP8 GEMM on real data against the bare wgmma stream of zeros; "
                  "[S6] shows random inputs throttle the clock at the power limit. The model charges the instruction "
                  "rate (wgmma_fraction_of_peak 0.96); a GEMM modelled with it is optimistic by up to this ratio. "
                  "ptxmoe calibrate on the target GPU fits the fraction from wgmma_bf16"),
    ),
    "wgmma_latency": (
        Published(128.0, "H100 SXM", _S7, "H800 PCIe, dense wgmma: 'with N set to 128, the latency for all data "
                  "types is 128.0' cycles (128.0 for m64n256 too); issue to result usable (wgmma_latency_clk)",
                  role=FIT),
        Published(64.0, "H100 SXM", _S8, "H200, m64n128k16: 64 cycles (32 for n64, 128 for n256)",
                  "[S8] gives the pipe time N/2 as the latency where [S7] measures 128 clk at N = 128; the model "
                  "follows [S7] (wgmma_latency_clk 128). Only the exposed part of a drain depends on it"),
    ),
    "tma_read": Published(None, "H100 SXM", _NONE, "no published TMA read bandwidth found ([S7] reports only that a "
                          "TMA access takes ~170 clk longer than a regular load)"),
    # S2 quotes SM clock cycles with unlocked clocks; converted here at the 1.98 GHz boost clock (an assumption).
    "chase_l1": (
        Published(20.3, "H100 SXM", _S1, "8 KB random cycle, <<<1,1>>>, 40.2 clk at 1.98 GHz (l1_latency_s)", role=FIT),
        Published(40 / 1.98, "H100 SXM", _S2, "40 clk, converted at 1.98 GHz"),
    ),
    "chase_l2": (
        Published(131.3, "H100 SXM", _S1, "4 MB random cycle with __ldcg, 259.9 clk (l2_latency_s)", role=FIT),
        Published(291 / 1.98, "H100 SXM", _S2, "291 clk, converted at 1.98 GHz"),
    ),
    "chase_dram": (
        Published(288.1, "H100 SXM", _S1, "256 MB, 128 B apart, L2 flushed, 570.5 clk (dram_latency_s)", role=FIT),
        Published(700 / 1.98, "H100 SXM", _S2, "700 clk, converted at 1.98 GHz",
                  "the model's DRAM latency is S1's 570.5 clk; S2 measures 700 clk on another H100 SXM with unlocked "
                  "clocks (its note: locking lowers it). ptxmoe calibrate fits dram_latency_s on the target GPU"),
    ),
    "launch_gap": Published(None, "H100 SXM", _NONE, "no published back-to-back launch gap on Hopper found"),
    "atomic_add": Published(None, "H100 SXM", _NONE, "no published global atomicAdd throughput on Hopper found"),
}


def entries(name: str) -> tuple[Published, ...]:
    """The published figures for one bench (one or more)."""
    pub = PUBLISHED[name]
    return pub if isinstance(pub, tuple) else (pub,)


def role_problems(fitted_from: dict[str, tuple[tuple[str, str], ...]], pair_names=()) -> list[str]:
    """What is wrong with the fit/predicted split, given {what was set: ((bench, source tag), ...)} (costs.FITTED_FROM
    and microbench.FITTED_FROM merged) and the names of the paired rows (which must stay predicted): a named row that
    does not exist or is marked PREDICTED, a paired row named, a FIT row nothing names. Empty when consistent."""
    rows = {(name, pub.tag): pub for name in PUBLISHED for pub in entries(name)}
    problems, named = [], set()
    for what, refs in fitted_from.items():
        for ref in refs:
            named.add(tuple(ref))
            if ref[0] in pair_names:
                problems.append(f"{what} is set from the paired row {ref[0]!r}; paired rows are predicted")
            elif tuple(ref) not in rows:
                problems.append(f"{what} names {ref!r}, which is no published row (bench, source tag)")
            elif rows[tuple(ref)].role != FIT:
                problems.append(f"{what} is set from {ref!r}, which published.py marks {rows[tuple(ref)].role!r}; "
                                f"mark it FIT (its error then leaves the predicted figure)")
    for key, pub in rows.items():
        if pub.role not in ROLES:
            problems.append(f"{key!r} has role {pub.role!r}; expected one of {ROLES}")
        elif pub.role == FIT and key not in named:
            problems.append(f"{key!r} is marked FIT but no constant or kernel choice names it in FITTED_FROM")
    return problems
