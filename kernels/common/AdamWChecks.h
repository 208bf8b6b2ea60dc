// The checks of adamw_update's operands and results (Ops.h's AdamWUpdate),
// one definition for the CPU and CUDA kernels: the tensor types of either
// backend bring its expectDType / expectShape (argument-dependent lookup),
// and `fail(message)` throws the backend's error for the kernel.
#pragma once

#include "hybrid/Types.h"

#include <string>

namespace hybrid::adamw {

/// Operand and result positions (Ops.h).
enum AdamWOperand {
  Param,
  Grad,
  ExpAvg,
  ExpAvgSq,
  Beta1,
  Beta2,
  Eps,
  StepSize,
  BiasCorrection2Sqrt,
  DecayFactor
};
enum AdamWResult { ParamOut, ExpAvgOut, ExpAvgSqOut, WorkingParamOut };

/// Checks that param, the moments and their results are f32 of the param's
/// shape, grad f32, bf16 or f16 of that shape, the working parameter (when
/// `working`, the fourth result) bf16 or f16 of that shape, and every scalar
/// f32 with one element.
template <typename Call, typename Fail>
void checkAdamWUpdate(const Call &call, bool working, const char *kernel,
                      Fail fail) {
  const Shape &shape = call.operands.at(Param).shape;
  const std::pair<int, const char *> tensors[] = {
      {Param, "param"}, {ExpAvg, "exp_avg"}, {ExpAvgSq, "exp_avg_sq"}};
  for (auto [i, name] : tensors) {
    expectDType(call.operands.at(i), DType::F32, kernel, name);
    expectShape(call.operands.at(i), shape, kernel, name);
  }
  const auto &grad = call.operands.at(Grad);
  if (grad.dtype != DType::F32 && grad.dtype != DType::BF16 &&
      grad.dtype != DType::F16)
    fail(std::string("grad must be f32, bf16 or f16, got ") +
         dtypeName(grad.dtype));
  expectShape(grad, shape, kernel, "grad");
  const std::pair<int, const char *> results[] = {
      {ParamOut, "param result"},
      {ExpAvgOut, "exp_avg result"},
      {ExpAvgSqOut, "exp_avg_sq result"}};
  for (auto [i, name] : results) {
    expectDType(call.results.at(i), DType::F32, kernel, name);
    expectShape(call.results.at(i), shape, kernel, name);
  }
  if (working) {
    const auto &out = call.results.at(WorkingParamOut);
    if (out.dtype != DType::BF16 && out.dtype != DType::F16)
      fail(std::string("working param result must be bf16 or f16, got ") +
           dtypeName(out.dtype));
    expectShape(out, shape, kernel, "working param result");
  }
  const std::pair<int, const char *> scalars[] = {
      {Beta1, "beta1"},
      {Beta2, "beta2"},
      {Eps, "eps"},
      {StepSize, "step_size"},
      {BiasCorrection2Sqrt, "bias_correction2_sqrt"},
      {DecayFactor, "decay_factor"}};
  for (auto [i, name] : scalars) {
    expectDType(call.operands.at(i), DType::F32, kernel, name);
    if (call.operands.at(i).numel() != 1)
      fail(std::string(name) + " " + shapeToString(call.operands.at(i).shape) +
           " must hold one element");
  }
}

} // namespace hybrid::adamw
