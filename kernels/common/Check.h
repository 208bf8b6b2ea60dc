// Host-side validation every backend's kernels share: each inconsistency a
// caller can put in a kernel call becomes a hybrid::Error that names the
// kernel, before any work starts.
#pragma once

#include "common/Call.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hybrid::kernels {

/// Throws hybrid::Error("<kernel>: <message>").
[[noreturn]] void fail(const char *kernel, const std::string &message);

/// checkCall for a call whose first `required` operands are required and
/// the next `optional` may be absent.
void expectOperands(const Call &call, const char *kernel, size_t required,
                    size_t optional, size_t results = 1);

/// expectOperands with no optional operands.
inline void expectArity(const Call &call, const char *kernel, size_t operands,
                        size_t results) {
  expectOperands(call, kernel, operands, 0, results);
}

/// Operand `i` when present, else null (positional optional operands).
inline const ConstTensor *optionalOperand(const Call &call, size_t i) {
  return optional(call, i);
}

[[noreturn]] void failDType(DType got, DType want, const char *kernel,
                            const char *what);
[[noreturn]] void failSameDType(DType a, DType b, const char *kernel,
                                const char *whatA, const char *whatB);
[[noreturn]] void failShape(const Shape &got, const Shape &want,
                            const char *kernel, const char *what);
[[noreturn]] void failRank(const Shape &got, int64_t rank, const char *kernel,
                           const char *what);
/// "<kernel>: unsupported element type <dt> for <what> (expected <expected>)".
[[noreturn]] void failUnsupported(const char *kernel, DType dt,
                                  const char *what, const char *expected);

// The checks take operands (ConstTensor) and results (Tensor) alike.
template <typename T>
void expectDType(const T &t, DType dtype, const char *kernel,
                 const char *what) {
  if (t.dtype != dtype)
    failDType(t.dtype, dtype, kernel, what);
}
template <typename A, typename B>
void expectSameDType(const A &a, const B &b, const char *kernel,
                     const char *whatA, const char *whatB) {
  if (a.dtype != b.dtype)
    failSameDType(a.dtype, b.dtype, kernel, whatA, whatB);
}
template <typename T>
void expectShape(const T &t, const Shape &shape, const char *kernel,
                 const char *what) {
  if (t.shape != shape)
    failShape(t.shape, shape, kernel, what);
}
template <typename T>
void expectRank(const T &t, int64_t rank, const char *kernel,
                const char *what) {
  if (t.rank() != rank)
    failRank(t.shape, rank, kernel, what);
}

/// Throws unless `dt` is f32, bf16 or f16.
void expectFloat(DType dt, const char *kernel, const char *what);
/// Throws unless `dt` is i32 or i64.
void expectIndex(DType dt, const char *kernel, const char *what);

/// Throws unless the call's scratch holds `needed` bytes.
void expectScratch(const Call &call, size_t needed, const char *kernel);

/// `axis` in [-rank, rank) mapped to [0, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank, const char *kernel);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> contiguousStrides(const Shape &shape);

/// Product of shape[begin, end).
int64_t product(const Shape &shape, int64_t begin, int64_t end);

/// The NumPy broadcast of `shapes`; throws naming `kernel` when they are
/// incompatible.
Shape broadcastShapes(std::initializer_list<const Shape *> shapes,
                      const char *kernel);

} // namespace hybrid::kernels
