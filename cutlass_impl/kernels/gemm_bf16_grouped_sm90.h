// CUTLASS 3.x's sm90 grouped (pointer-array) bf16 GEMM, as example 57 builds it through the collective builders:
// per group g, D_g = A_g B_g^T (A_g row-major M_g x K, B_g N x K rows, D_g row-major M_g x N, fp32 accumulation),
// problem shapes and pointers read from device arrays; the kernel points its TMA maps at each group's tensors on the
// device (tensormap.replace, tensormap.cp_fenceproxy; ptxsim/ops/tmapreplace.py). Cooperative 128x128x64 tiles,
// persistent grouped tile scheduler, no cluster (1x1x1). Included by the device translation unit (NVRTC) and by the
// host shim (g++), so both see one GemmKernel type.
#pragma once
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace ptxmoe_cutlass {
using namespace cute;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;  // <M, N, K> per group
using ElementA = cutlass::bfloat16_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
constexpr int kAlign = 8;  // 16 bytes of bf16: TMA's alignment
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC*, kAlign, ElementC, LayoutC*, kAlign,
    cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
    cutlass::epilogue::fusion::LinearCombination<ElementC, float>>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA*, kAlign, ElementB, LayoutB*, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
