// CUTLASS 3.x's sm90 TMA warp-specialised cooperative bf16 GEMM, D = A B^T (A row-major M x K, B "column-major" K x N
// i.e. N x K rows, D row-major M x N, fp32 accumulation), as CUTLASS's example 48 builds it through the collective
// builders: 128x128x64 tiles, no cluster (1x1x1), TMA loads and a TMA-store epilogue, persistent tile scheduler.
// Included by the device translation unit (NVRTC) and by the host shim (g++), so both see one GemmKernel type.
#pragma once
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace ptxmoe_cutlass {
using namespace cute;
using ElementA = cutlass::bfloat16_t; using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t; using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::bfloat16_t; using LayoutC = cutlass::layout::RowMajor;
constexpr int kAlign = 8;  // 16 bytes of bf16: TMA's alignment
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    ElementC, LayoutC, kAlign, ElementC, LayoutC, kAlign,
    cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA, kAlign, ElementB, LayoutB, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
}  // namespace ptxmoe_cutlass
