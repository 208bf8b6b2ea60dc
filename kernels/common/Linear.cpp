// linear's and linear_group's host-side checks and sizes, for every backend.
#include "common/Linear.h"

#include "common/Check.h"

#include <algorithm>
#include <string>

namespace hybrid::kernels {
namespace {

void expectActivation(Activation activation, const char *kernel) {
  if (static_cast<int>(activation) >= kActivations)
    fail(kernel,
         "invalid activation " + std::to_string(static_cast<int>(activation)));
}

/// The prologue's kind, epsilon and operands (norm_weight and norm_bias,
/// each [K] in the input's dtype when present) for rows of K.
void expectNormPrologue(const LinearArgs &a, int64_t K) {
  if (a.attrs.norm != NormKind::LayerNorm && a.attrs.norm != NormKind::RmsNorm)
    fail("linear",
         "invalid norm " + std::to_string(static_cast<int>(a.attrs.norm)));
  if (a.attrs.norm == NormKind::RmsNorm && a.normBias)
    fail("linear", "rms_norm takes no norm_bias");
  if (!(a.attrs.normEpsilon >= 0))
    fail("linear", "norm_epsilon must be >= 0");
  for (const ConstTensor *t : {a.normWeight, a.normBias}) {
    if (!t)
      continue;
    expectSameDType(*t, a.input, "linear", "norm operand", "input");
    expectShape(*t, {K}, "linear", "norm operand");
  }
}

} // namespace

LinearProblem linearShape(const Shape &input, const Shape &weight,
                          bool transW) {
  if (weight.size() != 2)
    failRank(weight, 2, "linear", "weight");
  if (input.empty())
    fail("linear", "input must have rank >= 1");
  LinearProblem p;
  p.transW = transW;
  p.K = input.back();
  p.N = transW ? weight[0] : weight[1];
  const int64_t wK = transW ? weight[1] : weight[0];
  if (wK != p.K)
    fail("linear", "input " + shapeToString(input) + " has " +
                       std::to_string(p.K) + " features but weight " +
                       shapeToString(weight) +
                       (transW ? " ([N, K])" : " ([K, N])") + " expects " +
                       std::to_string(wK));
  p.out = input;
  p.out.back() = p.N;
  p.M = numElements(input) / std::max<int64_t>(p.K, 1);
  if (p.K == 0)
    p.M = numElements(p.out) / std::max<int64_t>(p.N, 1);
  return p;
}

LinearProblem describeLinear(const LinearArgs &a) {
  const ConstTensor &input = a.input;
  expectFloat(input.dtype, "linear", "input");
  expectSameDType(a.weight, input, "linear", "weight", "input");
  expectDType(a.out, input.dtype, "linear", "result");
  LinearProblem p =
      linearShape(input.shape, a.weight.shape, a.attrs.transposeWeight);
  p.dtype = input.dtype;
  expectShape(a.out, p.out, "linear", "result");
  if (const ConstTensor *b = a.bias) {
    expectSameDType(*b, input, "linear", "bias", "input");
    if (b->numel() != p.N || (b->rank() > 0 && b->shape.back() != p.N))
      fail("linear", "bias " + shapeToString(b->shape) + " must have " +
                         std::to_string(p.N) + " elements");
  }
  if (a.residual) {
    expectSameDType(*a.residual, input, "linear", "residual", "input");
    expectShape(*a.residual, p.out, "linear", "residual");
  }
  expectActivation(a.attrs.activation, "linear");
  p.activation = a.attrs.activation;
  p.norm = a.attrs.norm;
  p.normEpsilon = a.attrs.normEpsilon;
  if (p.norm != NormKind::None)
    expectNormPrologue(a, p.K);
  return p;
}

LinearGroupArgs LinearGroupArgs::bind(const Call &call, const char *kernel) {
  const auto &attrs = call.attrs<ops::LinearGroup>();
  const size_t members = attrs.featureBegins.size();
  if (members == 0 || attrs.featureEnds.size() != members)
    fail(kernel, "needs one feature range per member");
  expectOperands(call, kernel, 1, 2 * members, members);
  return {attrs, call};
}

LinearGroupProblem describeLinearGroup(const LinearGroupArgs &a) {
  constexpr const char *kKernel = "linear_group";
  const ConstTensor &input = a.input();
  if (input.rank() == 0)
    fail(kKernel, "input must have rank >= 1");
  expectActivation(a.attrs.activation, kKernel);
  expectFloat(input.dtype, kKernel, "input");
  LinearGroupProblem p;
  p.dtype = input.dtype;
  p.K = input.shape.back();
  p.M = product(input.shape, 0, input.rank() - 1);
  p.transW = a.attrs.transposeWeight;
  p.activation = a.attrs.activation;
  p.members.resize(a.members());
  for (size_t i = 0; i < p.members.size(); ++i) {
    const ConstTensor &weight = a.weight(i);
    auto member = [i] { return "member " + std::to_string(i); };
    if (!weight.present)
      fail(kKernel, member() + " has no weight");
    expectRank(weight, 2, kKernel, "weight");
    expectSameDType(weight, input, kKernel, "weight", "input");
    LinearGroupMember &m = p.members[i];
    m.weightN = weight.shape[p.transW ? 0 : 1];
    if (weight.shape[p.transW ? 1 : 0] != p.K)
      fail(kKernel, member() + "'s weight " + shapeToString(weight.shape) +
                        " does not take the input's " + std::to_string(p.K) +
                        " features");
    m.begin = a.attrs.featureBegins[i];
    m.end = a.attrs.featureEnds[i];
    if (m.begin < 0 || m.begin >= m.end || m.end > m.weightN)
      fail(kKernel, member() + "'s features [" + std::to_string(m.begin) +
                        ", " + std::to_string(m.end) +
                        ") are not a range of its weight's " +
                        std::to_string(m.weightN));
    if (const ConstTensor *bias = a.bias(i)) {
      expectSameDType(*bias, input, kKernel, "bias", "input");
      expectShape(*bias, {m.weightN}, kKernel, "bias");
    }
    Shape shape = input.shape;
    shape.back() = m.features();
    expectDType(a.out(i), input.dtype, kKernel, "result");
    expectShape(a.out(i), shape, kKernel, "result");
  }
  return p;
}

} // namespace hybrid::kernels
