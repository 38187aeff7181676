// What every CUTLASS kernel header here (gemm_*_sm90.h) starts with: the defaults of the configuration macros that
// cutlass_impl/build.py CONFIGS passes as -D to NVRTC and to g++ (PTXMOE_TILE_M x PTXMOE_TILE_N tiles, PTXMOE_PINGPONG
// 1 for the ping-pong schedule, PTXMOE_CLUSTER_M x PTXMOE_CLUSTER_N CTAs a cluster: the grouped kernels' only), and
// the headers of CUTLASS's sm90 collective builders and GemmUniversal kernel.
#pragma once
#ifndef PTXMOE_TILE_M
#define PTXMOE_TILE_M 128
#endif
#ifndef PTXMOE_TILE_N
#define PTXMOE_TILE_N 128
#endif
#ifndef PTXMOE_PINGPONG
#define PTXMOE_PINGPONG 0
#endif
#ifndef PTXMOE_CLUSTER_M
#define PTXMOE_CLUSTER_M 1
#endif
#ifndef PTXMOE_CLUSTER_N
#define PTXMOE_CLUSTER_N 1
#endif
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
