// adamw_update's host-side checks, shared by every backend.
#include "common/AdamW.h"

#include "common/Check.h"

#include <string>
#include <utility>

namespace hybrid::kernels {

AdamWProblem describeAdamW(const AdamWUpdateArgs &a) {
  constexpr const char *kKernel = "adamw_update";
  const Shape &shape = a.inParam.shape;
  auto expectF32 = [&](const auto &t, const char *name) {
    expectDType(t, DType::F32, kKernel, name);
    expectShape(t, shape, kKernel, name);
  };
  expectF32(a.inParam, "param");
  expectF32(a.inExpAvg, "exp_avg");
  expectF32(a.inExpAvgSq, "exp_avg_sq");
  if (!isFloatDType(a.grad.dtype))
    fail(kKernel, std::string("grad must be f32, bf16 or f16, got ") +
                      dtypeName(a.grad.dtype));
  expectShape(a.grad, shape, kKernel, "grad");
  expectF32(a.param, "param result");
  expectF32(a.expAvg, "exp_avg result");
  expectF32(a.expAvgSq, "exp_avg_sq result");
  AdamWProblem p;
  if (a.attrs.workingParam) {
    const Tensor &out = *a.workingParam;
    if (out.dtype != DType::BF16 && out.dtype != DType::F16)
      fail(kKernel,
           std::string("working param result must be bf16 or f16, got ") +
               dtypeName(out.dtype));
    expectShape(out, shape, kKernel, "working param result");
    p.working = true;
    p.workingParam = out.dtype;
  }
  const std::pair<const ConstTensor *, const char *> scalars[] = {
      {&a.beta1, "beta1"},
      {&a.beta2, "beta2"},
      {&a.eps, "eps"},
      {&a.stepSize, "step_size"},
      {&a.biasCorrection2Sqrt, "bias_correction2_sqrt"},
      {&a.decayFactor, "decay_factor"}};
  for (auto [t, name] : scalars) {
    expectDType(*t, DType::F32, kKernel, name);
    if (t->numel() != 1)
      fail(kKernel, std::string(name) + " " + shapeToString(t->shape) +
                        " must hold one element");
  }
  p.n = a.inParam.numel();
  p.grad = a.grad.dtype;
  p.scalars = {a.beta1.as<float>(),
               a.beta2.as<float>(),
               a.eps.as<float>(),
               a.stepSize.as<float>(),
               a.biasCorrection2Sqrt.as<float>(),
               a.decayFactor.as<float>()};
  return p;
}

} // namespace hybrid::kernels
