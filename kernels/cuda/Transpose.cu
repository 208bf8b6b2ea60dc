// transpose: permute dimensions (result dim i = input dim perm[i]); any dtype
// (elements move as words of their size). When the permutation moves the
// input's contiguous dimension away from the result's last one, 32 x 32
// tiles (64 x 64 moved as 4-byte pairs for 2-byte elements) go through
// shared memory so both reads and writes coalesce; otherwise it is a
// strided copy.
#include "Elementwise.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/Transpose.h"

#include <vector>

namespace hybrid::cuda::kernels {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

/// The merged result dimensions split into: P (input-contiguous), Q (the
/// result's last, input stride sq), and the rest (`others`: input and
/// result strides, a StridedPlan<2> over them).
struct TiledShape {
  int64_t P = 0, Q = 0, sq = 0, op = 0; // op: result stride of P
  StridedPlan<2> others;
};

template <typename W>
__global__ void tiledTransposeKernel(const W *in, W *out, TiledShape s) {
  awaitInputs();
  __shared__ W tile[kTile][kTile + 1];
  const int64_t p0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t o = blockIdx.z; o < s.others.numel; o += gridDim.z) {
    int64_t base[2];
    s.others.offsets(o, base);
    // Read along P (contiguous in the input): tile[q][p].
    for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
      const int64_t p = p0 + threadIdx.x, q = q0 + r;
      if (p < s.P && q < s.Q)
        tile[r][threadIdx.x] = in[base[0] + p + q * s.sq];
    }
    __syncthreads();
    // Write along Q (contiguous in the result).
    for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
      const int64_t p = p0 + r, q = q0 + threadIdx.x;
      if (p < s.P && q < s.Q)
        out[base[1] + p * s.op + q] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

/// 2-byte elements (bf16 / f16, the training step's weight-gradient
/// transposes): 64 x 64 tiles whose global reads and writes are 4-byte
/// words, two elements each, so a warp moves 128 contiguous bytes per row
/// either way (the 32 x 32 kernel moves 64 in 2-byte words and ran at
/// ~0.75 TB/s). Shared rows of 65 halves: the write phase's column reads
/// (two rows per word) fall in distinct banks.
constexpr int kPairTile = 64;

__global__ void __launch_bounds__(256)
    pairTransposeKernel(const uint16_t *in, uint16_t *out, TiledShape s) {
  awaitInputs();
  __shared__ uint16_t tile[kPairTile][kPairTile + 1];
  const int64_t p0 = static_cast<int64_t>(blockIdx.y) * kPairTile;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kPairTile;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Whole words along P and Q: both even and (with the bases) 4-byte aligned.
  const bool pairsP = p0 + kPairTile <= s.P, pairsQ = q0 + kPairTile <= s.Q;
  for (int64_t o = blockIdx.z; o < s.others.numel; o += gridDim.z) {
    int64_t base[2];
    s.others.offsets(o, base);
    // Read along P: rows q of the tile, lane takes elements p0 + 2 lane, + 1.
    for (int r = warp; r < kPairTile; r += 8) {
      const int64_t q = q0 + r, p = p0 + 2 * lane;
      if (q >= s.Q)
        continue;
      const uint16_t *at = in + base[0] + q * s.sq + p;
      if (pairsP) {
        const uint32_t w = *reinterpret_cast<const uint32_t *>(at);
        tile[r][2 * lane] = static_cast<uint16_t>(w);
        tile[r][2 * lane + 1] = static_cast<uint16_t>(w >> 16);
      } else {
        if (p < s.P)
          tile[r][2 * lane] = at[0];
        if (p + 1 < s.P)
          tile[r][2 * lane + 1] = at[1];
      }
    }
    __syncthreads();
    // Write along Q: rows p of the result, lane takes q0 + 2 lane, + 1.
    for (int r = warp; r < kPairTile; r += 8) {
      const int64_t p = p0 + r, q = q0 + 2 * lane;
      if (p >= s.P)
        continue;
      uint16_t *at = out + base[1] + p * s.op + q;
      const uint16_t lo = tile[2 * lane][r], hi = tile[2 * lane + 1][r];
      if (pairsQ) {
        *reinterpret_cast<uint32_t *>(at) = lo | static_cast<uint32_t>(hi)
                                                     << 16;
      } else {
        if (q < s.Q)
          at[0] = lo;
        if (q + 1 < s.Q)
          at[1] = hi;
      }
    }
    __syncthreads();
  }
}

/// Runs the tiled kernel when the permutation calls for it; false when a
/// strided copy is as good.
bool tryTiled(const TransposeProblem &problem, const void *in, void *out,
              cudaStream_t stream) {
  TransposeTiles tiles;
  if (!transposeTiles(problem, tiles) || tiles.dims[tiles.p] < 4)
    return false;
  const std::vector<int64_t> &dims = tiles.dims, &inStrides = tiles.inStrides;
  const size_t p = tiles.p, elementSize = problem.elementSize;
  const size_t q = dims.size() - 1;
  const std::vector<int64_t> outStrides = contiguousStrides(dims);
  TiledShape s;
  s.P = dims[p];
  s.Q = dims[q];
  s.sq = inStrides[q];
  s.op = outStrides[p];
  Shape otherDims;
  std::vector<int64_t> otherIn, otherOut;
  for (size_t d = 0; d < q; ++d)
    if (d != p) {
      otherDims.push_back(dims[d]);
      otherIn.push_back(inStrides[d]);
      otherOut.push_back(outStrides[d]);
    }
  if (otherDims.size() > static_cast<size_t>(kMaxDims))
    return false;
  s.others.rank = static_cast<int>(otherDims.size());
  s.others.numel = numElements(otherDims);
  s.others.direct = false;
  for (int d = 0; d < s.others.rank; ++d) {
    s.others.dims[d] = otherDims[d];
    s.others.strides[0][d] = otherIn[d];
    s.others.strides[1][d] = otherOut[d];
  }
  // The pair kernel where every word it moves is whole and 4-byte aligned:
  // even strides and bases (its edge tiles move single elements).
  const bool pairs = elementSize == 2 && s.sq % 2 == 0 && s.op % 2 == 0 &&
                     reinterpret_cast<uintptr_t>(in) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 4 == 0 && [&] {
                       for (int d = 0; d < s.others.rank; ++d)
                         if (s.others.strides[0][d] % 2 != 0 ||
                             s.others.strides[1][d] % 2 != 0)
                           return false;
                       return true;
                     }();
  const int tile = pairs ? kPairTile : kTile;
  const int64_t tilesQ = (s.Q + tile - 1) / tile;
  const int64_t tilesP = (s.P + tile - 1) / tile;
  if (tilesQ > 0x7fffffff || tilesP > 65535)
    return false;
  if (pairs) {
    const dim3 grid(
        static_cast<unsigned>(tilesQ), static_cast<unsigned>(tilesP),
        static_cast<unsigned>(std::min<int64_t>(s.others.numel, 65535)));
    launch(pairTransposeKernel, grid, 256, 0, stream,
           static_cast<const uint16_t *>(in), static_cast<uint16_t *>(out), s);
    checkLaunch("transpose");
    return true;
  }
  const dim3 grid(
      static_cast<unsigned>(tilesQ), static_cast<unsigned>(tilesP),
      static_cast<unsigned>(std::min<int64_t>(s.others.numel, 65535)));
  const dim3 block(kTile, kRowsPerPass);
  visitWord(elementSize, [&](auto zero) {
    using W = decltype(zero);
    launch(tiledTransposeKernel<W>, grid, block, 0, stream,
           static_cast<const W *>(in), static_cast<W *>(out), s);
  });
  checkLaunch("transpose");
  return true;
}

} // namespace

void transpose(const CudaCall &call) {
  const TransposeArgs a = TransposeArgs::bind(call, "transpose");
  const TransposeProblem p = describeTranspose(a);
  if (a.out.numel() == 0 ||
      tryTiled(p, a.input.data, a.out.data, streamOf(call)))
    return;
  copyStrided(stridedPlan(p.shape, p.strides.data(), "transpose"), a.input.data,
              a.out.data, p.elementSize, streamOf(call), "transpose");
}

} // namespace hybrid::cuda::kernels
