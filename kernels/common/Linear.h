// linear and linear_group calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid::kernels {

/// One linear: result [M, N] = epilogue(norm(input) [M, K] . W) with W's
/// element (k, n) at weight[n * ldw() + k] when transW ([N, K] rows), else
/// at weight[k * ldw() + n] ([K, N] columns).
struct LinearProblem {
  DType dtype = DType::F32;
  int64_t M = 0, N = 0, K = 0;
  Shape out; ///< the result's shape: the input's with N last
  bool transW = true;
  Activation activation = Activation::None;
  NormKind norm = NormKind::None;
  double normEpsilon = 0;

  int64_t ldw() const { return transW ? K : N; }
};

/// The sizes of a linear from its input's and weight's shapes alone
/// (scratch sizing); throws naming linear for a weight not of rank 2, an
/// input of rank 0 or a weight that does not take the input's features.
LinearProblem linearShape(const Shape &input, const Shape &weight, bool transW);

/// Checks the call (float input; weight, bias, residual, norm operands and
/// result of its dtype; a bias of N elements, a residual of the result's
/// shape, a valid activation, a valid prologue for K) and describes it.
LinearProblem describeLinear(const LinearArgs &a);

/// linear_group's operands and results by name. The op is variadic, so
/// KernelArgs.h generates no Args for it: the input, then per member a
/// weight and an optional bias; a result per member.
struct LinearGroupArgs {
  const ops::LinearGroup &attrs;
  const Call &call;

  static constexpr size_t kInput = 0;
  /// Operand positions of member i's weight and bias.
  static size_t weightPosition(size_t i) { return 1 + 2 * i; }
  static size_t biasPosition(size_t i) { return 2 + 2 * i; }

  size_t members() const { return attrs.featureBegins.size(); }
  const ConstTensor &input() const { return call.operands[kInput]; }
  const ConstTensor &weight(size_t i) const {
    return call.operands[weightPosition(i)];
  }
  const ConstTensor *bias(size_t i) const {
    return optional(call, biasPosition(i));
  }
  const Tensor &out(size_t i) const { return call.results[i]; }

  /// Checks the feature ranges (one per member), the operand and result
  /// counts and every tensor's shape and data (hybrid::Error naming
  /// `kernel`), then names them.
  static LinearGroupArgs bind(const Call &call, const char *kernel);
};

/// Member i of a linear group: features [begin, end) of a weight with
/// weightN output features.
struct LinearGroupMember {
  int64_t begin = 0, end = 0, weightN = 0;
  int64_t features() const { return end - begin; }
};

/// One linear group: each member is a linear of the shared [M, K] input
/// with its features of its weight (and of its bias).
struct LinearGroupProblem {
  DType dtype = DType::F32;
  int64_t M = 0, K = 0;
  bool transW = true;
  Activation activation = Activation::None;
  std::vector<LinearGroupMember> members;

  /// Elements from the start of member m's weight to its first feature's
  /// row ([N, K] with transW) or column ([K, N]); its bias starts at begin.
  int64_t weightOffset(const LinearGroupMember &m) const {
    return transW ? m.begin * K : m.begin;
  }
  /// The leading dimension of member m's weight.
  int64_t ldw(const LinearGroupMember &m) const {
    return transW ? K : m.weightN;
  }
};

/// Checks the group (float input of rank >= 1, a valid activation; per
/// member a weight of rank 2 and the input's dtype taking its K features, a
/// feature range within it, a bias of its N elements, a result of the
/// input's shape with the range's features last) and describes it.
LinearGroupProblem describeLinearGroup(const LinearGroupArgs &a);

} // namespace hybrid::kernels
