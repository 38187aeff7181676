// CUTLASS 3.x's sm90 TMA warp-specialised cooperative bf16 GEMM, D = A B^T (A row-major M x K, B "column-major" K x N
// i.e. N x K rows, D row-major M x N, fp32 accumulation), as CUTLASS's example 48 builds it through the collective
// builders: TMA loads and a TMA-store epilogue, persistent tile scheduler, no cluster (1x1x1). The configuration is
// one of CUTLASS's own candidates, chosen by macros (cutlass_impl/build.py CONFIGS passes the same -D to NVRTC and to
// g++): PTXMOE_TILE_M x PTXMOE_TILE_N x 64 tiles (default 128x128), PTXMOE_PINGPONG 1 for the ping-pong schedule (two
// consumer warpgroups on two tiles, epilogue TmaWarpSpecialized) instead of the cooperative one (both on one tile).
// Included by the device translation unit (NVRTC) and by the host shim (g++), so both see one GemmKernel type.
#pragma once
#include "gemm_sm90_config.h"

namespace ptxmoe_cutlass {
using namespace cute;
using ElementA = cutlass::bfloat16_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
constexpr int kAlign = 8;  // 16 bytes of bf16: TMA's alignment
using TileShape = Shape<Int<PTXMOE_TILE_M>, Int<PTXMOE_TILE_N>, _64>;
#if PTXMOE_PINGPONG
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#else
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif
using ClusterShape = Shape<_1, _1, _1>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC, kAlign, ElementC, LayoutC, kAlign,
    EpilogueSchedule>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA, kAlign, ElementB, LayoutB, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
