// Validation shared by the kernels: every user-reachable inconsistency in a
// KernelCall becomes a hybrid::Error that names the kernel.
#pragma once

#include "cpu/CpuKernels.h"

#include <cstdint>
#include <string>

namespace hybrid::cpu {

/// Throws hybrid::Error("<kernel>: <message>").
[[noreturn]] void fail(const char *kernel, const std::string &message);

/// Checks the operand and result counts, that the first `required` operands
/// are present (the rest are optional and may be absent), that shapes are
/// non-negative and that non-empty tensors have data.
void expectOperands(const KernelCall &call, const char *kernel, size_t required,
                    size_t optional, size_t results = 1);

/// expectOperands with no optional operands.
inline void expectArity(const KernelCall &call, const char *kernel,
                        size_t operands, size_t results) {
  expectOperands(call, kernel, operands, 0, results);
}

/// Operand `i` when present, else null (positional optional operands).
inline const ConstTensor *optionalOperand(const KernelCall &call, size_t i) {
  return i < call.operands.size() && call.operands[i].present
             ? &call.operands[i]
             : nullptr;
}

[[noreturn]] void failDType(DType got, DType want, const char *kernel,
                            const char *what);
[[noreturn]] void failSameDType(DType a, DType b, const char *kernel,
                                const char *whatA, const char *whatB);
[[noreturn]] void failShape(const Shape &got, const Shape &want,
                            const char *kernel, const char *what);
[[noreturn]] void failRank(const Shape &got, int64_t rank, const char *kernel,
                           const char *what);

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

/// `axis` in [-rank, rank) mapped to [0, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank, const char *kernel);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> contiguousStrides(const Shape &shape);

/// Product of shape[begin, end).
int64_t product(const Shape &shape, int64_t begin, int64_t end);

} // namespace hybrid::cpu
