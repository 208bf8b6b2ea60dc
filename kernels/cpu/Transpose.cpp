// transpose: permute dimensions (result dim i = input dim perm[i]); any dtype
// (elements are moved as words of their size).
#include "Broadcast.h"
#include "Element.h"
#include "KernelCheck.h"
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
bool tryTiledCopy(const Shape &outShape, const std::vector<int64_t> &strides,
                  const void *in, void *out, size_t elementSize) {
  // Merge neighbouring result dimensions that stay neighbours in the input.
  std::vector<int64_t> dims, inStrides;
  for (size_t d = 0; d < outShape.size(); ++d) {
    if (outShape[d] == 1)
      continue;
    if (!dims.empty() && inStrides.back() == strides[d] * outShape[d]) {
      dims.back() *= outShape[d];
      inStrides.back() = strides[d];
    } else {
      dims.push_back(outShape[d]);
      inStrides.push_back(strides[d]);
    }
  }
  if (dims.size() < 2 || inStrides.back() == 1)
    return false;
  size_t p = 0;
  while (p < dims.size() && inStrides[p] != 1)
    ++p;
  if (p == dims.size() || dims[p] < 8 || dims.back() < 8)
    return false;
  visitWord(elementSize, [&](auto zero) {
    using W = decltype(zero);
    copyTiles(dims, inStrides, p, static_cast<const W *>(in),
              static_cast<W *>(out));
  });
  return true;
}

} // namespace

void transpose(const KernelCall &call) {
  expectArity(call, "transpose", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "transpose", "result");
  std::vector<int64_t> perm = call.attrs<ops::Transpose>().perm;
  const int64_t rank = input.rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    fail("transpose", "perm has " + std::to_string(perm.size()) +
                          " entries for an input of rank " +
                          std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t &p : perm) {
    p = normalizeAxis(p, rank, "transpose");
    if (seen[p])
      fail("transpose", "perm repeats dimension " + std::to_string(p));
    seen[p] = true;
  }
  std::vector<int64_t> inStrides = contiguousStrides(input.shape);
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = input.shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  expectShape(result, outShape, "transpose", "result");
  if (result.numel() == 0 || tryTiledCopy(outShape, strides, input.data,
                                          result.data, dtypeSize(input.dtype)))
    return;
  BroadcastWalk walk =
      BroadcastWalk::fromStrides(outShape, strides.data(), "transpose");
  copyStrided(walk, input.data, 0, result.data, dtypeSize(input.dtype));
}

} // namespace hybrid::cpu::kernels
