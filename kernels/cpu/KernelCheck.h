// Validation shared by the kernels: every user-reachable inconsistency in a
// KernelCall becomes a hybrid::Error that names the kernel.
#pragma once

#include "cpu/CpuKernels.h"

#include <cstdint>
#include <string>

namespace hybrid::cpu {

/// Throws hybrid::Error("<kernel>: <message>").
[[noreturn]] void fail(const char *kernel, const std::string &message);

/// The call's attributes; an empty set when the caller passed none.
const Attrs &attrsOf(const KernelCall &call);

/// Checks the operand and result counts, and that non-empty tensors have data.
void expectArity(const KernelCall &call, const char *kernel, size_t operands,
                 size_t results);

/// Which optional operands are present, in order, for an op with `required`
/// leading operands followed by optional ones flagged by the attributes in
/// `flags` (e.g. "has_weight", "has_bias"). A missing flag is inferred when
/// the operand count leaves one answer; otherwise it is an error. Also
/// checks the arity (one result).
std::vector<bool> optionalOperands(const KernelCall &call, const char *kernel,
                                   size_t required,
                                   const std::vector<const char *> &flags);

void expectDType(const Tensor &t, DType dtype, const char *kernel,
                 const char *what);
void expectSameDType(const Tensor &a, const Tensor &b, const char *kernel,
                     const char *whatA, const char *whatB);
void expectShape(const Tensor &t, const Shape &shape, const char *kernel,
                 const char *what);
void expectRank(const Tensor &t, int64_t rank, const char *kernel,
                const char *what);

/// `axis` in [-rank, rank) mapped to [0, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank, const char *kernel);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> contiguousStrides(const Shape &shape);

/// Product of shape[begin, end).
int64_t product(const Shape &shape, int64_t begin, int64_t end);

} // namespace hybrid::cpu
