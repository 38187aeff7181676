// permute -- the dispatch gather (kernels.md section 3), CUDA C++.
//
//   for p < total_padded:  xp[p] = x[sorted_ids[p] / K]  if sorted_ids[p] < T*K  else 0;  rows beyond: untouched
//
// Work split: xp is cut into 16-byte chunks (one uint4 = 8 bf16; H is a multiple of 8) and a grid-stride loop
// walks them, bounded by total_padded read on the device (the grid is sized for P_max). Consecutive threads move
// consecutive chunks of one row, so each warp reads and writes 512 contiguous bytes. (row, column chunk) are
// stepped by the grid stride with an add and a conditional wrap: the loop body has no integer division.
// x is read through __ldg (read-only path), stored with __stcs (streaming: xp is consumed by the next kernel,
// not re-read here).

extern "C" __global__ void __launch_bounds__(256)
cpp_permute(const uint4* __restrict__ x, const int* __restrict__ sorted_ids, const int* __restrict__ total_padded,
            uint4* __restrict__ xp, unsigned chunks_per_row, unsigned tk, unsigned k)
{
    const unsigned n_chunks = static_cast<unsigned>(__ldg(total_padded)) * chunks_per_row;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_chunks) return;
    unsigned row = i / chunks_per_row, col = i - row * chunks_per_row;
    const unsigned srow = stride / chunks_per_row, scol = stride - srow * chunks_per_row;
    for (; i < n_chunks; i += stride) {
        const unsigned id = static_cast<unsigned>(__ldg(sorted_ids + row));
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (id < tk) v = __ldg(x + (id / k) * chunks_per_row + col);
        __stcs(xp + i, v);
        row += srow;
        col += scol;
        if (col >= chunks_per_row) { col -= chunks_per_row; ++row; }
    }
}

// permute_words -- the fp8 layer's gather of the 1x128 scales: the same walk with 4-byte chunks (a scale row is
// H/128 fp32 words, 8 bytes at tiny, too short for uint4 chunks; the scales are 1/32 of the payload's bytes).
extern "C" __global__ void __launch_bounds__(256)
cpp_permute_words(const unsigned* __restrict__ x, const int* __restrict__ sorted_ids,
                  const int* __restrict__ total_padded, unsigned* __restrict__ xp, unsigned words_per_row,
                  unsigned tk, unsigned k)
{
    const unsigned n_words = static_cast<unsigned>(__ldg(total_padded)) * words_per_row;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_words) return;
    unsigned row = i / words_per_row, col = i - row * words_per_row;
    const unsigned srow = stride / words_per_row, scol = stride - srow * words_per_row;
    for (; i < n_words; i += stride) {
        const unsigned id = static_cast<unsigned>(__ldg(sorted_ids + row));
        unsigned v = 0u;
        if (id < tk) v = __ldg(x + (id / k) * words_per_row + col);
        __stcs(xp + i, v);
        row += srow;
        col += scol;
        if (col >= words_per_row) { col -= words_per_row; ++row; }
    }
}
