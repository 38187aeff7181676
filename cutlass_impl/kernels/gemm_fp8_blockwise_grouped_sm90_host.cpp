// Host shim of the grouped (pointer-array) FP8 blockwise GEMM: as gemm_bf16_grouped_sm90_host.cpp, plus per group
// a pointer to its SFA (K-major: the contract's a_scale at the group's first row) and SFB (K-major, w_scale[e]) and
// their CUTLASS layouts (tile_atom_to_shape_SF{A,B} of the group's shape: what the kernel rebuilds on the device
// anyway, gemm_fp8_blockwise_grouped_sm90.h), whose arrays' bytes follow the stride arrays in arrays.bin. It prints
// the first group's scale index steps (SFA m, k block; SFB n block, k block) for the caller to check.
//   usage: gemm_fp8_blockwise_grouped_sm90_host G addrShapes addrPtrA addrStrideA addrPtrB addrStrideB addrPtrC
//          addrStrideC addrPtrD addrStrideD addrWorkspace workspaceBytes params.bin arrays.bin addrPtrSFA
//          addrLayoutSFA addrPtrSFB addrLayoutSFB M0 N0 K0 [M1 N1 K1 ...]
// A negative G (-G) gives CUTLASS no host copy of the problem shapes (GroupProblemShape's host pointer null): the
// kernel then reads every group's shape from the device array only and launches a persistent grid of SM count
// CTAs, so the Params do not depend on the groups' rows (the layer's shapes are written on the device each call,
// cutlass_impl/device_args.py). The shapes given still make the stride arrays (K- and N-dependent only).
#include "host_shim.h"
#include "gemm_fp8_blockwise_grouped_sm90.h"

int main(int argc, char** argv) {
  using namespace ptxmoe_cutlass;
  constexpr int S = 19;  // argv index of the first shape value
  if (argc < S + 3) { std::fprintf(stderr, "usage: see the head of %s\n", __FILE__); return 2; }
  int G = std::atoi(argv[1]);
  bool shapes_on_device = G < 0;  // see the head of this file
  if (shapes_on_device) G = -G;
  if (argc != S + 3 * G) { std::fprintf(stderr, "expected %d shape values\n", 3 * G); return 2; }
  auto addr = [&](int i) { return reinterpret_cast<void*>(std::strtoull(argv[i], nullptr, 0)); };
  using Shape3 = typename ProblemShape::UnderlyingProblemShape;
  using SA = typename GemmKernel::InternalStrideA; using SB = typename GemmKernel::InternalStrideB;
  using SC = typename GemmKernel::InternalStrideC; using SD = typename GemmKernel::InternalStrideD;
  std::vector<Shape3> shapes; std::vector<SA> sA; std::vector<SB> sB; std::vector<SC> sC; std::vector<SD> sD;
  std::vector<LayoutSFA> lSFA; std::vector<LayoutSFB> lSFB;
  for (int g = 0; g < G; ++g) {
    int M = std::atoi(argv[S + 3 * g]), N = std::atoi(argv[S + 1 + 3 * g]), K = std::atoi(argv[S + 2 + 3 * g]);
    lSFA.push_back(ScaleConfig::tile_atom_to_shape_SFA(make_shape(M, N, K, 1)));
    lSFB.push_back(ScaleConfig::tile_atom_to_shape_SFB(make_shape(M, N, K, 1)));
    shapes.push_back({M, N, K});
    sA.push_back(cutlass::make_cute_packed_stride(SA{}, {M, K, 1}));
    sB.push_back(cutlass::make_cute_packed_stride(SB{}, {N, K, 1}));
    sC.push_back(cutlass::make_cute_packed_stride(SC{}, {M, N, 1}));
    sD.push_back(cutlass::make_cute_packed_stride(SD{}, {M, N, 1}));
  }
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = 132;
  typename GemmKernel::Arguments args;
  decltype(args.epilogue.thread) fusion{};
  fusion.alpha = 1.0f; fusion.beta = 0.0f;
  fusion.alpha_ptr = nullptr; fusion.beta_ptr = nullptr; fusion.alpha_ptr_array = nullptr; fusion.beta_ptr_array = nullptr;
  fusion.dAlpha = {cute::_0{}, cute::_0{}, 0}; fusion.dBeta = {cute::_0{}, cute::_0{}, 0};
  args = typename GemmKernel::Arguments{cutlass::gemm::GemmUniversalMode::kGrouped,
      {G, static_cast<Shape3*>(addr(2)), shapes_on_device ? nullptr : shapes.data()},
      {static_cast<ElementA const**>(addr(3)), static_cast<SA*>(addr(4)),
       static_cast<ElementB const**>(addr(5)), static_cast<SB*>(addr(6)),
       static_cast<float const**>(addr(15)), static_cast<LayoutSFA*>(addr(16)),
       static_cast<float const**>(addr(17)), static_cast<LayoutSFB*>(addr(18))},
      {fusion, static_cast<ElementC const**>(addr(7)), static_cast<SC*>(addr(8)),
       static_cast<ElementC**>(addr(9)), static_cast<SD*>(addr(10))}, hw};
  if (GemmKernel::can_implement(args) != true) { std::fprintf(stderr, "CUTLASS cannot implement these groups\n"); return 3; }
  size_t need = GemmKernel::get_workspace_size(args), have = std::strtoull(argv[12], nullptr, 0);
  if (need > have) { std::fprintf(stderr, "workspace %zu bytes needed, %zu given\n", need, have); return 5; }
  auto params = GemmKernel::to_underlying_arguments(args, addr(11));
  dim3 grid = GemmKernel::get_grid_shape(params), block = GemmKernel::get_block_shape();
  std::printf("params %zu grid %u %u %u block %u %u %u smem %d workspace %zu strides %zu %zu %zu %zu shape %zu "
              "sf %zu %zu\n", sizeof(params), grid.x, grid.y, grid.z, block.x, block.y, block.z,
              int(GemmKernel::SharedStorageSize), need, sizeof(SA), sizeof(SB), sizeof(SC), sizeof(SD), sizeof(Shape3),
              sizeof(LayoutSFA), sizeof(LayoutSFB));
  // the scale index steps of the first group: SFA (m, k block), SFB (n block, k block), as the kernel indexes them
  if (G > 0) {
    auto const& la = lSFA[0]; auto const& lb = lSFB[0];
    std::printf("scale steps %d %d %d %d\n", int(la(1, 0, 0) - la(0, 0, 0)), int(la(0, 128, 0) - la(0, 0, 0)),
                int(lb(128, 0, 0) - lb(0, 0, 0)), int(lb(0, 128, 0) - lb(0, 0, 0)));
  }
  FILE* f = std::fopen(argv[13], "wb");
  if (!f || std::fwrite(&params, sizeof(params), 1, f) != 1) { std::perror(argv[13]); return 4; }
  std::fclose(f);
  FILE* a = std::fopen(argv[14], "wb");
  if (!a) { std::perror(argv[14]); return 4; }
  put(a, shapes); put(a, sA); put(a, sB); put(a, sC); put(a, sD); put(a, lSFA); put(a, lSFB);
  std::fclose(a);
  print_encode_calls();
  return 0;
}
