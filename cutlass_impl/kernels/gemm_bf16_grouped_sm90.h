// CUTLASS 3.x's sm90 grouped (pointer-array) bf16 GEMM, as example 57 builds it through the collective builders:
// per group g, D_g = A_g B_g^T (A_g row-major M_g x K, B_g N x K rows, D_g row-major M_g x N, fp32 accumulation),
// problem shapes and pointers read from device arrays; the kernel points its TMA maps at each group's tensors on the
// device (tensormap.replace, tensormap.cp_fenceproxy; ptxsim/ops/tmapreplace.py); the persistent grouped tile
// scheduler. The configuration is one of CUTLASS's own candidates, chosen by macros (cutlass_impl/build.py CONFIGS
// passes the same -D to NVRTC and to g++): PTXMOE_TILE_M x PTXMOE_TILE_N x 64 tiles (default 128x128),
// PTXMOE_PINGPONG 1 for the ping-pong schedule instead of the cooperative one, PTXMOE_CLUSTER_M x PTXMOE_CLUSTER_N
// CTAs a cluster (default 1x1). Included by the device translation unit (NVRTC) and by the host shim (g++), so both
// see one GemmKernel type.
#pragma once
#include "gemm_sm90_config.h"
#include "cutlass/gemm/group_array_problem_shape.hpp"

namespace ptxmoe_cutlass {
using namespace cute;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;  // <M, N, K> per group
using ElementA = cutlass::bfloat16_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
constexpr int kAlign = 8;  // 16 bytes of bf16: TMA's alignment
using TileShape = Shape<Int<PTXMOE_TILE_M>, Int<PTXMOE_TILE_N>, _64>;
using ClusterShape = Shape<Int<PTXMOE_CLUSTER_M>, Int<PTXMOE_CLUSTER_N>, _1>;
#if PTXMOE_PINGPONG
using MainloopSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
#else
using MainloopSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
#endif
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC*, kAlign, ElementC, LayoutC*, kAlign,
    EpilogueSchedule,
    cutlass::epilogue::fusion::LinearCombination<ElementC, float>>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA*, kAlign, ElementB, LayoutB*, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
