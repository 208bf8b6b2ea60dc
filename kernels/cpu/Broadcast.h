// NumPy broadcasting for the kernels: a walk over a result in contiguous spans
// that yields, for every operand, where each span's elements come from.
#pragma once

#include "Parallel.h"
#include "cpu/CpuKernels.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hybrid::cpu {

/// The shape `shapes` broadcast to together (NumPy rules); throws
/// hybrid::Error naming `kernel` when they are incompatible.
Shape broadcastShapes(const std::vector<Shape> &shapes, const char *kernel);

/// Visits a result of shape `out` in row-major order as spans of contiguous
/// result elements, giving for each span where every operand's elements are:
/// operand k's element i of the span is at offsets[k] + i * rowStride(k)
/// (for broadcasting, a stride of 1 or 0). Adjacent dimensions are merged
/// wherever all operands allow, so equal shapes give one long row and a
/// scalar operand has stride 0; spans never cross a merged row.
class BroadcastWalk {
public:
  /// Throws hybrid::Error when an operand cannot broadcast to `out`.
  BroadcastWalk(const Shape &out, const std::vector<Shape> &operands,
                const char *kernel);

  /// A walk over `out` where operand k's element at result index i is at
  /// offset sum_d i[d] * strides[k][d] (any strides: a transposed or sliced
  /// view). rowStride(k) is then that operand's stride along a row.
  static BroadcastWalk
  fromStrides(const Shape &out,
              const std::vector<std::vector<int64_t>> &strides,
              const char *kernel);

  int64_t numElements() const { return numRows_ * rowLength_; }
  int64_t rowStride(size_t operand) const { return rowStrides_[operand]; }

  /// Calls fn(first, offsets, length) for consecutive spans covering result
  /// elements [begin, end): the span holds result elements [first, first +
  /// length), and offsets[k] is operand k's offset of its first element.
  template <typename Fn>
  void forSpans(int64_t begin, int64_t end, Fn &&fn) const;

  /// forSpans over the whole result, split over threads when it holds
  /// enough work (elements * workPerElement). fn must not throw.
  template <typename Fn>
  void parallelForSpans(int64_t workPerElement, Fn &&fn) const {
    parallelChunks(
        numElements(), workPerElement,
        [&](int64_t begin, int64_t end) { forSpans(begin, end, fn); });
  }

private:
  BroadcastWalk() = default;
  void mergeDimensions(const Shape &out, const std::vector<int64_t> &strides,
                       const char *kernel);

  static constexpr size_t kMaxOperands = 4;
  static constexpr size_t kMaxOuterRank = 32;
  size_t numOperands_ = 0;
  int64_t rowLength_ = 1;
  int64_t numRows_ = 1;
  std::vector<int64_t> rowStrides_;
  // Merged dimensions outside the row, outermost first, and each operand's
  // stride along them: outerStrides_[d * numOperands_ + k].
  std::vector<int64_t> outerDims_;
  std::vector<int64_t> outerStrides_;
};

/// Fills the contiguous `dst` (the walk's result) from operand 0 of `walk`,
/// whose elements are at src + srcOffset + (the walk's offsets).
/// Used by the data-movement kernels (transpose, slice, broadcast_to).
void copyStrided(const BroadcastWalk &walk, const void *src, int64_t srcOffset,
                 void *dst, size_t elementSize);

/// The f32 tensor `t` broadcast to `shape`, as a contiguous array: t's own
/// data when that already is the layout, else a copy kept in `storage`.
/// Leading size-1 dimensions of t are ignored (a weight [1, D] for [D]).
const float *broadcastFloats(const ConstTensor &t, const Shape &shape,
                             std::vector<float> &storage, const char *kernel,
                             const char *what);

template <typename Fn>
void BroadcastWalk::forSpans(int64_t begin, int64_t end, Fn &&fn) const {
  if (begin >= end)
    return;
  const size_t rank = outerDims_.size();
  const size_t n = numOperands_;
  const int64_t L = rowLength_;
  int64_t index[kMaxOuterRank] = {};
  int64_t rowOffsets[kMaxOperands] = {};
  int64_t spanOffsets[kMaxOperands] = {};
  int64_t rest = begin / L;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % outerDims_[d];
    rest /= outerDims_[d];
    for (size_t k = 0; k < n; ++k)
      rowOffsets[k] += index[d] * outerStrides_[d * n + k];
  }
  int64_t col = begin % L;
  for (int64_t pos = begin; pos < end;) {
    const int64_t length = std::min(L - col, end - pos);
    for (size_t k = 0; k < n; ++k)
      spanOffsets[k] = rowOffsets[k] + col * rowStrides_[k];
    fn(pos, static_cast<const int64_t *>(spanOffsets), length);
    pos += length;
    col = 0;
    if (pos >= end)
      break;
    // The next row: an odometer over the outer dimensions.
    for (size_t d = rank; d-- > 0;) {
      const int64_t *strides = &outerStrides_[d * n];
      if (++index[d] < outerDims_[d]) {
        for (size_t k = 0; k < n; ++k)
          rowOffsets[k] += strides[k];
        break;
      }
      index[d] = 0;
      for (size_t k = 0; k < n; ++k)
        rowOffsets[k] -= strides[k] * (outerDims_[d] - 1);
    }
  }
}

} // namespace hybrid::cpu
