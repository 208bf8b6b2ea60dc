// clipped_value_loss and clipped_value_loss_grad: PPO's clipped value loss
// per token and its gradient (kernels/common/ClippedValueLoss.h holds the
// math and the checks both backends share).
#include "Kernels.h"

#include "common/ClippedValueLoss.h"

namespace hybrid::cpu::kernels {

void clippedValueLoss(const KernelCall &call) {
  const auto a = ClippedValueLossArgs::bind(call, "clipped_value_loss");
  const ClippedValueLossProblem p =
      describeClippedValueLoss(a, a.loss, "clipped_value_loss");
  const float *v = a.values.as<float>(), *old = a.oldValues.as<float>(),
              *ret = a.returns.as<float>(), *mask = a.mask.as<float>();
  float *out = a.loss.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::clippedValueLoss(v[i], old[i], ret[i], mask[i],
                                                 p.clip);
}

void clippedValueLossGrad(const KernelCall &call) {
  const auto a =
      ClippedValueLossGradArgs::bind(call, "clipped_value_loss_grad");
  const ClippedValueLossProblem p = describeClippedValueLossGrad(a);
  const float *v = a.values.as<float>(), *old = a.oldValues.as<float>(),
              *ret = a.returns.as<float>(), *mask = a.mask.as<float>(),
              *g = a.grad.as<float>();
  float *out = a.gradValues.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::clippedValueLossGrad(v[i], old[i], ret[i],
                                                     mask[i], g[i], p.clip);
}

} // namespace hybrid::cpu::kernels
