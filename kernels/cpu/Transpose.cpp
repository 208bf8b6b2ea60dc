// transpose: permute dimensions (result dim i = input dim perm[i]); any dtype
// (elements are moved as words of their size).
#include "common/Transpose.h"
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cstdint>

namespace hybrid::cpu::kernels {
namespace {

constexpr int64_t kTile = 32;

/// A permutation that moves the input's contiguous dimension away from the
/// last result dimension reads the input with a large stride; copying
/// kTile x kTile tiles keeps both sides in cache. `dims`/`inStrides` are the
/// merged result dimensions and their input strides; the last one is not
/// contiguous and dimension p is.
template <typename W>
void copyTiles(const std::vector<int64_t> &dims,
               const std::vector<int64_t> &inStrides, size_t p, const W *in,
               W *out) {
  const size_t q = dims.size() - 1;
  const std::vector<int64_t> outStrides = contiguousStrides(dims);
  std::vector<size_t> others;
  int64_t count = 1;
  for (size_t d = 0; d < q; ++d)
    if (d != p) {
      others.push_back(d);
      count *= dims[d];
    }
  const int64_t P = dims[p], Q = dims[q], sq = inStrides[q], op = outStrides[p];
  const int64_t tilesP = (P + kTile - 1) / kTile;
  parallelFor(count * tilesP, kTile * Q, [&](int64_t t) {
    int64_t rest = t / tilesP, inBase = 0, outBase = 0;
    for (size_t k = others.size(); k-- > 0;) {
      const size_t d = others[k];
      const int64_t idx = rest % dims[d];
      rest /= dims[d];
      inBase += idx * inStrides[d];
      outBase += idx * outStrides[d];
    }
    const int64_t i0 = (t % tilesP) * kTile, i1 = std::min(P, i0 + kTile);
    for (int64_t j0 = 0; j0 < Q; j0 += kTile) {
      const int64_t j1 = std::min(Q, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        W *dst = out + outBase + i * op;
        const W *src = in + inBase + i;
        for (int64_t j = j0; j < j1; ++j)
          dst[j] = src[j * sq];
      }
    }
  });
}

/// Copies through tiles when the permutation calls for it (see copyTiles);
/// false when a plain strided copy is as good.
bool tryTiledCopy(const TransposeProblem &p, const void *in, void *out) {
  TransposeTiles tiles;
  if (!transposeTiles(p, tiles) || tiles.dims[tiles.p] < 8 ||
      tiles.dims.back() < 8)
    return false;
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    copyTiles(tiles.dims, tiles.inStrides, tiles.p, static_cast<const W *>(in),
              static_cast<W *>(out));
  });
  return true;
}

} // namespace

void transpose(const KernelCall &call) {
  const TransposeArgs a = TransposeArgs::bind(call, "transpose");
  const TransposeProblem p = describeTranspose(a);
  if (a.out.numel() == 0 || tryTiledCopy(p, a.input.data, a.out.data))
    return;
  copyStrided(
      BroadcastWalk::fromStrides(p.shape, p.strides.data(), "transpose"),
      a.input.data, 0, a.out.data, p.elementSize);
}

} // namespace hybrid::cpu::kernels
