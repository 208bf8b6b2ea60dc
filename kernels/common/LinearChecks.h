// The checks of a linear's norm prologue (ops::Linear's norm, norm_weight
// and norm_bias) and of a linear group's members, one definition for the
// CPU and CUDA kernels: either backend's call brings its expectOperands /
// optionalOperand / expect* checks (argument-dependent lookup), and
// `fail(message)` throws its error (each kernel checks the input's float
// dtype itself).
#pragma once

#include "hybrid/Ops.h"

#include <cstdint>
#include <string>

namespace hybrid::checks {

/// Checks the prologue's kind, epsilon and operands (4: norm_weight, 5:
/// norm_bias, each [K] in the input's dtype when present) for rows of K.
template <typename Call, typename Fail>
void checkNormPrologue(const Call &call, const ops::Linear &attrs, int64_t K,
                       Fail fail) {
  const auto &input = call.operands[0];
  const auto *weight = optionalOperand(call, 4);
  const auto *bias = optionalOperand(call, 5);
  if (attrs.norm != NormKind::LayerNorm && attrs.norm != NormKind::RmsNorm)
    fail("invalid norm " + std::to_string(static_cast<int>(attrs.norm)));
  if (attrs.norm == NormKind::RmsNorm && bias)
    fail("rms_norm takes no norm_bias");
  if (!(attrs.normEpsilon >= 0))
    fail("norm_epsilon must be >= 0");
  for (const auto *t : {weight, bias}) {
    if (!t)
      continue;
    expectSameDType(*t, input, "linear", "norm operand", "input");
    expectShape(*t, {K}, "linear", "norm operand");
  }
}

/// Checks a linear group's shape of call (one feature range per member, an
/// optional bias per member, a result per member), its input's rank and its
/// activation.
template <typename Call, typename Fail>
void checkLinearGroup(const Call &call, const ops::LinearGroup &attrs,
                      Fail fail) {
  const size_t members = attrs.featureBegins.size();
  if (members == 0 || attrs.featureEnds.size() != members)
    fail("needs one feature range per member");
  expectOperands(call, "linear_group", 1, 2 * members, members);
  if (call.operands[0].rank() == 0)
    fail("input must have rank >= 1");
  if (static_cast<int>(attrs.activation) >= kActivations)
    fail("invalid activation " +
         std::to_string(static_cast<int>(attrs.activation)));
}

/// Checks member i of a checked linear group against the input's K
/// features: its weight, feature range, bias and result; returns the
/// weight's output features (all of them, not the member's range).
template <typename Call, typename Fail>
int64_t checkLinearGroupMember(const Call &call, const ops::LinearGroup &attrs,
                               size_t i, int64_t K, Fail fail) {
  const auto &input = call.operands[0];
  const auto &weight = call.operands[1 + 2 * i];
  const auto *bias = optionalOperand(call, 2 + 2 * i);
  const auto &result = call.results[i];
  auto member = [i] { return "member " + std::to_string(i); };
  if (!weight.present)
    fail(member() + " has no weight");
  expectRank(weight, 2, "linear_group", "weight");
  expectSameDType(weight, input, "linear_group", "weight", "input");
  const bool transW = attrs.transposeWeight;
  const int64_t n = weight.shape[transW ? 0 : 1];
  if (weight.shape[transW ? 1 : 0] != K)
    fail(member() + "'s weight " + shapeToString(weight.shape) +
         " does not take the input's " + std::to_string(K) + " features");
  const int64_t begin = attrs.featureBegins[i], end = attrs.featureEnds[i];
  if (begin < 0 || begin >= end || end > n)
    fail(member() + "'s features [" + std::to_string(begin) + ", " +
         std::to_string(end) + ") are not a range of its weight's " +
         std::to_string(n));
  if (bias) {
    expectSameDType(*bias, input, "linear_group", "bias", "input");
    expectShape(*bias, {n}, "linear_group", "bias");
  }
  Shape shape = input.shape;
  shape.back() = end - begin;
  expectDType(result, input.dtype, "linear_group", "result");
  expectShape(result, shape, "linear_group", "result");
  return n;
}

} // namespace hybrid::checks
