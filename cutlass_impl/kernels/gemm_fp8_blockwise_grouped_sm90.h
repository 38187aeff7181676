// CUTLASS 3.x's sm90 grouped (pointer-array) FP8 GEMM with blockwise scales, as example 68 builds it: per group g,
// e4m3 A_g (row-major M_g x K) and B_g (N x K rows), DeepSeek-V3's scales (1 x 128 per row of A, 128 x 128 blocks
// of B), fp32 promotion every 128-deep k block, bf16 D_g, the problem shapes, pointers and strides read from device
// arrays; the kernel points its TMA maps at each group's tensors on the device (tensormap.replace).
// Both scale layouts are K-major, as the sm90 grouped FP8 MoE GEMMs of the serving stacks declare them (SGLang's
// Sm90BlockwiseScaleConfig<1, 128, 128, Major::K, Major::K>): SFA_g[m, k block] at m * K/128 + k block, i.e. the
// contract's a_scale rows from the group's first row, and SFB_g = w_scale[e]. NOTE: this collective ignores the
// per-group layout arrays it is given and rebuilds each group's scale layouts from the group's (M, N, K)
// (tile_atom_to_shape_SFA in load_init); with an M-major SFA that makes the k-block step the group's own M, so
// an M-major SFA must be transposed group by group (docs/cutlass.md). Both are loaded by cp.async predicated on
// the group's M (no TMA for the scales in the grouped collective).
// The configuration is one of CUTLASS's own candidates, chosen by macros (cutlass_impl/build.py CONFIGS passes the
// same -D to NVRTC and to g++): PTXMOE_TILE_M x PTXMOE_TILE_N x 128 tiles (default 128x128), PTXMOE_PINGPONG 1 for
// the ping-pong schedule instead of the cooperative one, PTXMOE_CLUSTER_M x PTXMOE_CLUSTER_N CTAs a cluster (default
// 1x1; a 1x2 cluster shares each A tile between the two CTAs of adjacent N tiles by TMA multicast, 2x1 each B tile).
// Included by the device translation unit (NVRTC) and by the host shim (g++), so both see one GemmKernel type.
#pragma once
#include "gemm_sm90_config.h"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/detail/blockwise_scale_layout.hpp"

namespace ptxmoe_cutlass {
using namespace cute;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;  // <M, N, K> per group
using ElementA = cutlass::float_e4m3_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::float_e4m3_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
using TileShape = Shape<Int<PTXMOE_TILE_M>, Int<PTXMOE_TILE_N>, _128>;
using ClusterShape = Shape<Int<PTXMOE_CLUSTER_M>, Int<PTXMOE_CLUSTER_N>, _1>;
#if PTXMOE_PINGPONG
using MainloopSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8Blockwise;
using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
#else
using MainloopSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise;
using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
#endif
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::K, cute::GMMA::Major::K>;
using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC*, 8, ElementC, LayoutC*, 8,
    EpilogueSchedule,
    cutlass::epilogue::fusion::LinearCombination<ElementC, float>>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, cute::tuple<LayoutA*, LayoutSFA*>, 16, ElementB, cute::tuple<LayoutB*, LayoutSFB*>, 16, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
