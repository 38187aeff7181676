// What every host shim here (gemm_*_sm90_host.cpp, built by g++: cutlass_impl/build.py) shares: the headers, the
// cuTensorMapEncodeTiled CUTLASS's host code calls, answered by a recorder (descriptor n left as a marker, n in its
// first 8 bytes, and the call's arguments kept), and the printing of the recorded calls, one `encode` line each
// (cutlass_impl/params.py parses them), so the caller encodes the maps with its own encoder (ptxsim's on the
// simulator, the driver's on a GPU) and writes them over the markers.
#pragma once
#include "host_prelude.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "cutlass/util/packed_stride.hpp"

struct EncodeCall { int dtype, rank; uint64_t gaddr, dims[5], strides[5]; uint32_t box[5], estr[5]; int il, sw, l2, oob; };
static std::vector<EncodeCall> g_calls;

extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* gaddr,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estr,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  EncodeCall c{};
  c.dtype = dtype; c.rank = int(rank); c.gaddr = uint64_t(gaddr); c.il = il; c.sw = sw; c.l2 = l2; c.oob = oob;
  for (unsigned i = 0; i < rank; ++i) {
    c.dims[i] = dims[i]; c.box[i] = box[i]; c.estr[i] = estr[i];
    if (i + 1 < rank) c.strides[i] = strides[i];
  }
  std::memset(map, 0, sizeof(*map));
  uint64_t marker = g_calls.size() + 1;
  std::memcpy(map, &marker, sizeof(marker));
  g_calls.push_back(c);
  return CUDA_SUCCESS;
}

// the grouped shims' arrays.bin: a vector's bytes as they are in memory
template <class T> static void put(FILE* f, std::vector<T> const& v) { std::fwrite(v.data(), sizeof(T), v.size(), f); }

// `encode dtype rank addr dims.. strides.. box.. estr.. il sw l2 oob`, one line per recorded call, in call order
static void print_encode_calls() {
  for (auto& c : g_calls) {
    std::printf("encode %d %d %llu", c.dtype, c.rank, (unsigned long long)c.gaddr);
    for (int i = 0; i < c.rank; ++i) std::printf(" %llu", (unsigned long long)c.dims[i]);
    for (int i = 0; i + 1 < c.rank; ++i) std::printf(" %llu", (unsigned long long)c.strides[i]);
    for (int i = 0; i < c.rank; ++i) std::printf(" %u", c.box[i]);
    for (int i = 0; i < c.rank; ++i) std::printf(" %u", c.estr[i]);
    std::printf(" %d %d %d %d\n", c.il, c.sw, c.l2, c.oob);
  }
}
