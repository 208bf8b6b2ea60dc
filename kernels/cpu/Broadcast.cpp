// NumPy broadcasting for the kernels (see Broadcast.h).
#include "Broadcast.h"

#include "Element.h"
#include "KernelCheck.h"
#include "common/MergedDims.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu {

namespace {
/// Dimensions a walk accepts before merging (result rank).
constexpr size_t kMaxInputRank = 64;
static_assert(BroadcastWalk::kMaxOperands <= MergedDims::kMaxOperands);
} // namespace

BroadcastWalk::BroadcastWalk(const Shape &out,
                             std::initializer_list<const Shape *> operands,
                             const char *kernel) {
  const size_t n = operands.size();
  numOperands_ = n;
  if (n > kMaxOperands)
    fail(kernel, "too many broadcast operands");
  if (out.size() > kMaxInputRank)
    fail(kernel, "too many dimensions in " + shapeToString(out));
  int64_t strides[kMaxInputRank * kMaxOperands];
  broadcastStrides(out, operands, strides, kernel);
  mergeDimensions(out, strides, kernel);
}

BroadcastWalk BroadcastWalk::fromStrides(const Shape &out,
                                         const int64_t *strides,
                                         const char *kernel) {
  BroadcastWalk walk;
  walk.numOperands_ = 1;
  if (out.size() > kMaxInputRank)
    fail(kernel, "too many dimensions in " + shapeToString(out));
  walk.mergeDimensions(out, strides, kernel);
  return walk;
}

void BroadcastWalk::mergeDimensions(const Shape &out, const int64_t *strides,
                                    const char *kernel) {
  const size_t n = numOperands_;
  if (hybrid::numElements(out) == 0) {
    numRows_ = 0;
    rowLength_ = 0;
    return;
  }
  MergedDims merged;
  if (!mergeDims(out, strides, n, merged) || merged.rank > kMaxRank + 1)
    fail(kernel, "too many dimensions in " + shapeToString(out));
  if (merged.rank == 0)
    return; // a single element
  // The innermost merged dimension is the row; the rest go outermost first.
  rowLength_ = merged.dims[0];
  std::copy(merged.strides[0], merged.strides[0] + n, rowStrides_);
  numRows_ = 1;
  for (size_t i = merged.rank; i-- > 1;) {
    outerDims_[outerRank_] = merged.dims[i];
    std::copy(merged.strides[i], merged.strides[i] + n,
              outerStrides_[outerRank_]);
    ++outerRank_;
    numRows_ *= merged.dims[i];
  }
}

void copyStrided(const BroadcastWalk &walk, const void *src, int64_t srcOffset,
                 void *dst, size_t elementSize) {
  visitWord(elementSize, [&](auto zero) {
    using W = decltype(zero);
    const W *s0 = static_cast<const W *>(src) + srcOffset;
    W *d0 = static_cast<W *>(dst);
    const int64_t stride = walk.rowStride(0);
    walk.parallelForSpans(
        1, [&](int64_t first, const int64_t *offsets, int64_t n) {
          const W *s = s0 + offsets[0];
          W *d = d0 + first;
          if (stride == 1) {
            std::memcpy(d, s, n * sizeof(W));
          } else if (stride == 0) {
            std::fill(d, d + n, *s);
          } else {
            for (int64_t i = 0; i < n; ++i)
              d[i] = s[i * stride];
          }
        });
  });
}

namespace {

/// t's shape without leading size-1 dimensions beyond `rank`.
Shape trimmedShape(const Shape &s, size_t rank) {
  size_t lead = 0;
  while (s.size() - lead > rank && s[lead] == 1)
    ++lead;
  return Shape(s.begin() + lead, s.end());
}

} // namespace

void expectBroadcastsTo(const ConstTensor &t, const Shape &shape,
                        const char *kernel, const char *what) {
  const Shape own = trimmedShape(t.shape, shape.size());
  bool ok = own.size() <= shape.size();
  for (size_t i = 0; ok && i < own.size(); ++i) {
    const int64_t d = own[i], o = shape[shape.size() - own.size() + i];
    ok = d == o || d == 1;
  }
  if (!ok)
    fail(kernel, std::string(what) + " of shape " + shapeToString(t.shape) +
                     " does not broadcast to " + shapeToString(shape));
}

void broadcastToFloat(const ConstTensor &t, const Shape &shape, float *dst,
                      const char *kernel, const char *what) {
  expectBroadcastsTo(t, shape, kernel, what);
  const Shape own = trimmedShape(t.shape, shape.size());
  BroadcastWalk walk(shape, {&own}, kernel);
  const int64_t stride = walk.rowStride(0);
  visitFloat(t.dtype, kernel, what, [&](auto zero) {
    using S = decltype(zero);
    const S *src = t.as<S>();
    walk.forSpans(0, walk.numElements(),
                  [&](int64_t first, const int64_t *offsets, int64_t n) {
                    for (int64_t i = 0; i < n; ++i)
                      dst[first + i] = toFloat(src[offsets[0] + i * stride]);
                  });
  });
}

} // namespace hybrid::cpu
