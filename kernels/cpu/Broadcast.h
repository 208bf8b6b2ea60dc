// NumPy broadcasting for the kernels: a walk over a result in contiguous spans
// that yields, for every operand, where each span's elements come from.
#pragma once

#include "Parallel.h"
#include "cpu/CpuKernels.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace hybrid::cpu {

/// Visits a result of shape `out` in row-major order as spans of contiguous
/// result elements, giving for each span where every operand's elements are:
/// operand k's element i of the span is at offsets[k] + i * rowStride(k)
/// (for broadcasting, a stride of 1 or 0). Adjacent dimensions are merged
/// wherever all operands allow, so equal shapes give one long row and a
/// scalar operand has stride 0; spans never cross a merged row. Holds no
/// heap memory: kernels build walks while they run.
class BroadcastWalk {
public:
  static constexpr size_t kMaxOperands = 4;
  /// Merged dimensions (outside the row); more is an error.
  static constexpr size_t kMaxRank = 16;

  /// Throws hybrid::Error when an operand cannot broadcast to `out`.
  BroadcastWalk(const Shape &out, std::initializer_list<const Shape *> operands,
                const char *kernel);

  /// A walk over `out` for one operand whose element at result index i is
  /// at offset sum_d i[d] * strides[d] (any strides: a transposed or sliced
  /// view). rowStride(0) is then its stride along a row.
  static BroadcastWalk fromStrides(const Shape &out, const int64_t *strides,
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
  /// strides[d * numOperands_ + k]: operand k's stride along out[d].
  void mergeDimensions(const Shape &out, const int64_t *strides,
                       const char *kernel);

  size_t numOperands_ = 0;
  int64_t rowLength_ = 1;
  int64_t numRows_ = 1;
  int64_t rowStrides_[kMaxOperands] = {};
  // Merged dimensions outside the row, outermost first, and each operand's
  // stride along them: outerStrides_[d][k].
  size_t outerRank_ = 0;
  int64_t outerDims_[kMaxRank] = {};
  int64_t outerStrides_[kMaxRank][kMaxOperands] = {};
};

/// Fills the contiguous `dst` (the walk's result) from operand 0 of `walk`,
/// whose elements are at src + srcOffset + (the walk's offsets), moving
/// elements of `elementSize` bytes (1, 2, 4 or 8). Used by the data-movement
/// kernels (transpose, slice, broadcast_to) and to broadcast weights.
void copyStrided(const BroadcastWalk &walk, const void *src, int64_t srcOffset,
                 void *dst, size_t elementSize);

/// Writes float tensor `t` (f32, bf16 or f16) broadcast to `shape` into the
/// contiguous f32 array `dst` (numElements(shape) floats). Leading size-1
/// dimensions of t are ignored (a weight [1, D] for [D]). Throws naming
/// `kernel` and `what` when t does not broadcast.
void broadcastToFloat(const ConstTensor &t, const Shape &shape, float *dst,
                      const char *kernel, const char *what);

/// Checks what broadcastToFloat checks, without data (for scratch sizing and
/// validation before a run).
void expectBroadcastsTo(const ConstTensor &t, const Shape &shape,
                        const char *kernel, const char *what);

template <typename Fn>
void BroadcastWalk::forSpans(int64_t begin, int64_t end, Fn &&fn) const {
  if (begin >= end)
    return;
  const size_t rank = outerRank_;
  const size_t n = numOperands_;
  const int64_t L = rowLength_;
  int64_t index[kMaxRank] = {};
  int64_t rowOffsets[kMaxOperands] = {};
  int64_t spanOffsets[kMaxOperands] = {};
  int64_t rest = begin / L;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % outerDims_[d];
    rest /= outerDims_[d];
    for (size_t k = 0; k < n; ++k)
      rowOffsets[k] += index[d] * outerStrides_[d][k];
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
      const int64_t *strides = outerStrides_[d];
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
