// The norms' host-side checks and shapes, shared by every backend.
#include "common/Norm.h"

#include "common/Check.h"

#include <string>

namespace hybrid::kernels {
namespace {

/// Whether weight `w` must broadcast to the row (it has not the row's n
/// elements); throws when it does not broadcast.
bool broadcastsToRow(const ConstTensor &w, const NormProblem &p,
                     const char *kernel, const char *what) {
  const Shape own = trimmedShape(w.shape, p.norm.size());
  bool ok = own.size() <= p.norm.size();
  for (size_t i = 0; ok && i < own.size(); ++i) {
    const int64_t d = own[i], o = p.norm[p.norm.size() - own.size() + i];
    ok = d == o || d == 1;
  }
  if (!ok)
    fail(kernel, std::string(what) + " of shape " + shapeToString(w.shape) +
                     " does not broadcast to " + shapeToString(p.norm));
  return w.numel() != p.n;
}

/// The checks layer_norm and rms_norm share.
template <typename Args>
NormProblem describeNorm(const Args &a, const ConstTensor *bias,
                         const char *kernel) {
  const ConstTensor &input = a.input;
  expectDType(a.out, input.dtype, kernel, "result");
  expectShape(a.out, input.shape, kernel, "result");
  NormProblem p = normShape(input.shape, a.attrs.axis, kernel);
  p.dtype = input.dtype;
  p.epsilon = a.attrs.epsilon;
  if (a.weight)
    expectSameDType(*a.weight, input, kernel, "weight", "input");
  if (bias)
    expectSameDType(*bias, input, kernel, "bias", "input");
  addNormWeights(p, a.weight, bias, kernel);
  expectFloat(input.dtype, kernel, "input");
  return p;
}

} // namespace

Shape trimmedShape(const Shape &shape, size_t rank) {
  size_t lead = 0;
  while (shape.size() - lead > rank && shape[lead] == 1)
    ++lead;
  return Shape(shape.begin() + lead, shape.end());
}

NormProblem normShape(const Shape &input, int64_t axis, const char *kernel) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (rank == 0)
    fail(kernel, "input must have rank >= 1");
  const int64_t first = normalizeAxis(axis, rank, kernel);
  NormProblem p;
  p.norm.assign(input.begin() + first, input.end());
  p.n = numElements(p.norm);
  p.rows = product(input, 0, first);
  return p;
}

void addNormWeights(NormProblem &p, const ConstTensor *weight,
                    const ConstTensor *bias, const char *kernel) {
  if (weight)
    p.weightBroadcasts = broadcastsToRow(*weight, p, kernel, "weight");
  if (bias)
    p.biasBroadcasts = broadcastsToRow(*bias, p, kernel, "bias");
}

NormProblem describeLayerNorm(const LayerNormArgs &a) {
  return describeNorm(a, a.bias, "layer_norm");
}

NormProblem describeRmsNorm(const RmsNormArgs &a) {
  return describeNorm(a, nullptr, "rms_norm");
}

LayerNormGradArgs bindLayerNormGrad(const Call &call) {
  using In = ops::LayerNormGrad::In;
  if (call.operands.size() == In::gradOut + 1 &&
      !call.operands[In::gradOut].present)
    fail("layer_norm_grad", "operand 2 (grad_out) is required");
  return LayerNormGradArgs::bind(call, "layer_norm_grad");
}

NormProblem describeLayerNormGrad(const LayerNormGradArgs &a) {
  constexpr const char *kKernel = "layer_norm_grad";
  const ConstTensor &input = a.input;
  NormProblem p = normShape(input.shape, a.attrs.axis, kKernel);
  p.dtype = input.dtype;
  p.epsilon = a.attrs.epsilon;
  expectSameDType(a.gradOut, input, kKernel, "grad_out", "input");
  expectShape(a.gradOut, input.shape, kKernel, "grad_out");
  if (a.weight) {
    expectSameDType(*a.weight, input, kKernel, "weight", "input");
    expectShape(*a.weight, p.norm, kKernel, "weight");
  }
  const Tensor *results[] = {&a.gradInput, &a.gradWeight, &a.gradBias};
  const char *names[] = {"grad_input", "grad_weight", "grad_bias"};
  for (size_t i = 0; i < 3; ++i) {
    expectDType(*results[i], input.dtype, kKernel, names[i]);
    expectShape(*results[i], i == 0 ? input.shape : p.norm, kKernel, names[i]);
  }
  expectFloat(input.dtype, kKernel, "input");
  return p;
}

} // namespace hybrid::kernels
