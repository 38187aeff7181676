// CUTLASS 3.x's sm90 FP8 GEMM with blockwise scaling, as its example 67 (groupwise variant) builds it: e4m3 A (M x K,
// row-major) and B (N x K), DeepSeek-V3's scales (1 x 128 per row of A: ScaleGranularityM 1; 128 x 128 blocks of B),
// fp32 promotion every 128-deep k block (KernelTmaWarpSpecialized{Cooperative,Pingpong}FP8Blockwise), bf16 D = A B^T.
// SFA is M-major as in example 67 (SFA[m, k block] at m + k block * ldSFA; CUTLASS loads it by TMA, which fills rows
// past M with zeros; a K-major SFA goes by predicated cp.async, which leaves them unwritten in shared memory for the
// math to read), SFB K-major (SFB[n block, k block] at n block * K/128 + k block: the contract's w_scale[e]).
// The configuration is one of CUTLASS's own candidates, chosen by macros (cutlass_impl/build.py CONFIGS passes the
// same -D to NVRTC and to g++): PTXMOE_TILE_M x PTXMOE_TILE_N x 128 tiles (default 128x128), PTXMOE_PINGPONG 1 for
// the ping-pong schedule instead of the cooperative one.
// Included by the device translation unit (NVRTC) and by the host shim (g++).
#pragma once
#include "gemm_sm90_config.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"

namespace ptxmoe_cutlass_fp8 {
using namespace cute;
using ElementA = cutlass::float_e4m3_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::float_e4m3_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
using TileShape = Shape<Int<PTXMOE_TILE_M>, Int<PTXMOE_TILE_N>, _128>;
#if PTXMOE_PINGPONG
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8Blockwise;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#else
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8Blockwise;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif
using ClusterShape = Shape<_1, _1, _1>;
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN, cute::GMMA::Major::K>;
using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC, 8, ElementC, LayoutC, 8,
    EpilogueSchedule>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, cute::tuple<LayoutA, LayoutSFA>, 16, ElementB, cute::tuple<LayoutB, LayoutSFB>, 16, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass_fp8
