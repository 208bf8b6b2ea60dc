// adamw_update: torch.optim.AdamW's update of one parameter in one pass
// (Ops.h's AdamWUpdate), in f32 and in the order of operations of the
// elementwise ops hg-adamw composed it from before, so that its results
// are their bits (CMakeLists.txt keeps the compiler from contracting the
// products and sums into fused multiply-adds, which they could not be).
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"
#include "common/AdamWChecks.h"

#include <cmath>

namespace hybrid::cpu::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

using namespace hybrid::adamw; // operand and result positions

/// Work per element, in parallelChunks' units: a square root, two
/// divisions and a dozen products and sums.
constexpr int64_t kCostPerElement = 16;

float scalar(const KernelCall &call, int i) {
  return *call.operands[i].as<float>();
}

} // namespace

void adamwUpdate(const KernelCall &call) {
  expectArity(call, kKernel, 10, 3);
  checkAdamWUpdate(call, kKernel,
                   [](const std::string &message) { fail(kKernel, message); });
  const float beta1 = scalar(call, Beta1), beta2 = scalar(call, Beta2),
              eps = scalar(call, Eps), stepSize = scalar(call, StepSize),
              rootBc2 = scalar(call, BiasCorrection2Sqrt),
              decayFactor = scalar(call, DecayFactor);
  const float oneMinusBeta1 = 1.0f - beta1, oneMinusBeta2 = 1.0f - beta2;
  // Results may be their operands' buffers: element i is read before it is
  // written, and by no other element.
  const float *param = call.operands[Param].as<float>(),
              *grad = call.operands[Grad].as<float>(),
              *expAvg = call.operands[ExpAvg].as<float>(),
              *expAvgSq = call.operands[ExpAvgSq].as<float>();
  float *paramOut = call.results[ParamOut].as<float>(),
        *expAvgOut = call.results[ExpAvgOut].as<float>(),
        *expAvgSqOut = call.results[ExpAvgSqOut].as<float>();
  parallelChunks(call.operands[Param].numel(), kCostPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t i = begin; i < end; ++i) {
                     const float g = grad[i];
                     const float m = beta1 * expAvg[i] + oneMinusBeta1 * g;
                     const float v =
                         beta2 * expAvgSq[i] + oneMinusBeta2 * (g * g);
                     const float denom = std::sqrt(v) / rootBc2 + eps;
                     paramOut[i] =
                         param[i] * decayFactor - stepSize * (m / denom);
                     expAvgOut[i] = m;
                     expAvgSqOut[i] = v;
                   }
                 });
}

} // namespace hybrid::cpu::kernels
