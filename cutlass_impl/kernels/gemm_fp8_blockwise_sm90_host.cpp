// Host shim: CUTLASS's own GemmKernel::to_underlying_arguments builds the kernel's Params for device pointers given
// on the command line; the TMA descriptors are left as markers (descriptor n holds n in its first 8 bytes) and each
// cuTensorMapEncodeTiled call is printed, so the caller encodes them with its own encoder (ptxsim's on the simulator,
// the driver's on a GPU) and writes them over the markers.
// The blockwise scales: SFA (one float per row of A per 128-deep k block) and SFB (one per 128 x 128 block of B) at
// addrSFA / addrSFB: SFA M-major with ldSFA floats between k blocks (>= M: a problem's rows may be a window of a
// taller scale array), SFB as CUTLASS's ScaleConfig says; the shim prints the layouts' sizes and index steps ("sfa"
// m step, k-block step; "sfb" n-block step, k-block step) so the caller fills and checks them.
//   usage: gemm_fp8_blockwise_sm90_host M N K addrA addrB addrC addrD addrSFA addrSFB ldSFA params.bin
#include "host_shim.h"
#include "gemm_fp8_blockwise_sm90.h"

int main(int argc, char** argv) {
  using namespace ptxmoe_cutlass_fp8;
  if (argc != 12) {
    std::fprintf(stderr, "usage: %s M N K addrA addrB addrC addrD addrSFA addrSFB ldSFA params.bin\n", argv[0]);
    return 2;
  }
  int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]), L = 1;
  auto addr = [&](int i) { return reinterpret_cast<void*>(std::strtoull(argv[i], nullptr, 0)); };
  auto sA = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, {M, K, L});
  auto sB = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, {N, K, L});
  auto sC = cutlass::make_cute_packed_stride(typename GemmKernel::StrideC{}, {M, N, L});
  auto sD = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, {M, N, L});
  int ldSFA = int(std::strtol(argv[10], nullptr, 0));
  if (ldSFA < M) { std::fprintf(stderr, "ldSFA %d < M %d\n", ldSFA, M); return 2; }
  // CUTLASS's own SFA layout for M x K, with ldSFA in place of M as the k-block step
  auto sfa_atom = ScaleConfig::tile_atom_to_shape_SFA(make_shape(M, N, K, L));
  auto layout_SFA = make_layout(shape(sfa_atom), make_stride(make_stride(_0{}, _1{}), make_stride(_0{}, ldSFA),
                                                               ldSFA * ((K + 127) / 128)));
  auto layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(make_shape(M, N, K, L));
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = 132;
  typename GemmKernel::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, L},
      {static_cast<ElementA*>(addr(4)), sA, static_cast<ElementB*>(addr(5)), sB,
       static_cast<float*>(addr(8)), layout_SFA, static_cast<float*>(addr(9)), layout_SFB},
      {{1.0f, 0.0f}, static_cast<ElementC*>(addr(6)), sC, static_cast<ElementC*>(addr(7)), sD}, hw};
  if (GemmKernel::can_implement(args) != true) { std::fprintf(stderr, "CUTLASS cannot implement %dx%dx%d\n", M, N, K); return 3; }
  auto params = GemmKernel::to_underlying_arguments(args, nullptr);
  dim3 grid = GemmKernel::get_grid_shape(params), block = GemmKernel::get_block_shape();
  std::printf("params %zu grid %u %u %u block %u %u %u smem %d\n", sizeof(params), grid.x, grid.y, grid.z,
              block.x, block.y, block.z, int(GemmKernel::SharedStorageSize));
  std::printf("sfa %d %d %d sfb %d %d %d\n", int(cosize(filter_zeros(layout_SFA))),
              int(layout_SFA(make_coord(1, 0, 0))), int(layout_SFA(make_coord(0, 128, 0))),
              int(size(filter_zeros(layout_SFB))), int(layout_SFB(make_coord(128, 0, 0))),
              int(layout_SFB(make_coord(0, 128, 0))));
  FILE* f = std::fopen(argv[11], "wb");
  if (!f || std::fwrite(&params, sizeof(params), 1, f) != 1) { std::perror(argv[11]); return 4; }
  std::fclose(f);
  print_encode_calls();
  return 0;
}
