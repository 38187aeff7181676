// CUTLASS 3.x's sm90 FP8 GEMM with blockwise scaling, as its example 67 (groupwise variant) builds it: e4m3 A (M x K,
// row-major) and B (N x K), DeepSeek-V3's scales (1 x 128 per row of A: ScaleGranularityM 1; 128 x 128 blocks of B),
// fp32 promotion every 128-deep k block (KernelTmaWarpSpecializedCooperativeFP8Blockwise), bf16 D = A B^T.
// Included by the device translation unit (NVRTC) and by the host shim (g++).
#pragma once
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/detail/blockwise_scale_layout.hpp"

namespace ptxmoe_cutlass_fp8 {
using namespace cute;
using ElementA = cutlass::float_e4m3_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::float_e4m3_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
using TileShape = Shape<_128, _128, _128>;
using ClusterShape = Shape<_1, _1, _1>;
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN, cute::GMMA::Major::K>;
using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC, 8, ElementC, LayoutC, 8,
    cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, cute::tuple<LayoutA, LayoutSFA>, 16, ElementB, cute::tuple<LayoutB, LayoutSFB>, 16, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8Blockwise>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass_fp8
