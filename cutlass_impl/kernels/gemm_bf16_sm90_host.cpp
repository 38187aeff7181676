// Host shim: CUTLASS's own GemmKernel::to_underlying_arguments builds the kernel's Params for device pointers given
// on the command line; the TMA descriptors are left as markers (descriptor n holds n in its first 8 bytes) and each
// cuTensorMapEncodeTiled call is printed, so the caller encodes them with its own encoder (ptxsim's on the simulator,
// the driver's on a GPU) and writes them over the markers.
//   usage: gemm_bf16_sm90_host M N K addrA addrB addrC addrD params.bin
#include "host_shim.h"
#include "gemm_bf16_sm90.h"

int main(int argc, char** argv) {
  using namespace ptxmoe_cutlass;
  if (argc != 9) { std::fprintf(stderr, "usage: %s M N K addrA addrB addrC addrD params.bin\n", argv[0]); return 2; }
  int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]), L = 1;
  auto addr = [&](int i) { return reinterpret_cast<void*>(std::strtoull(argv[i], nullptr, 0)); };
  auto sA = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, {M, K, L});
  auto sB = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, {N, K, L});
  auto sC = cutlass::make_cute_packed_stride(typename GemmKernel::StrideC{}, {M, N, L});
  auto sD = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, {M, N, L});
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = 132;
  typename GemmKernel::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, L},
      {static_cast<ElementA*>(addr(4)), sA, static_cast<ElementB*>(addr(5)), sB},
      {{1.0f, 0.0f}, static_cast<ElementC*>(addr(6)), sC, static_cast<ElementC*>(addr(7)), sD}, hw};
  if (GemmKernel::can_implement(args) != true) { std::fprintf(stderr, "CUTLASS cannot implement %dx%dx%d\n", M, N, K); return 3; }
  auto params = GemmKernel::to_underlying_arguments(args, nullptr);
  dim3 grid = GemmKernel::get_grid_shape(params), block = GemmKernel::get_block_shape();
  std::printf("params %zu grid %u %u %u block %u %u %u smem %d\n", sizeof(params), grid.x, grid.y, grid.z,
              block.x, block.y, block.z, int(GemmKernel::SharedStorageSize));
  FILE* f = std::fopen(argv[8], "wb");
  if (!f || std::fwrite(&params, sizeof(params), 1, f) != 1) { std::perror(argv[8]); return 4; }
  std::fclose(f);
  print_encode_calls();
  return 0;
}
