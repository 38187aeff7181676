// CUTLASS 3.x's sm90 grouped (pointer-array) FP8 GEMM with blockwise scales, as example 68 builds it: per group g,
// e4m3 A_g (row-major M_g x K) and B_g (N x K rows), DeepSeek-V3's scales (1 x 128 per row of A, M-major like
// gemm_fp8_blockwise_sm90.h; 128 x 128 blocks of B, K-major), fp32 promotion every 128-deep k block, bf16 D_g, the
// problem shapes, pointers, strides and scale layouts read from device arrays; the kernel points its TMA maps at
// each group's tensors on the device (tensormap.replace). Cooperative 128x128x128 tiles, no cluster (1x1x1).
// Included by the device translation unit (NVRTC) and by the host shim (g++), so both see one GemmKernel type.
#pragma once
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/detail/blockwise_scale_layout.hpp"

namespace ptxmoe_cutlass {
using namespace cute;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;  // <M, N, K> per group
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
    ElementC, LayoutC*, 8, ElementC, LayoutC*, 8,
    cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
    cutlass::epilogue::fusion::LinearCombination<ElementC, float>>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, cute::tuple<LayoutA*, LayoutSFA*>, 16, ElementB, cute::tuple<LayoutB*, LayoutSFB*>, 16, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
