// adamw_update: torch.optim.AdamW's update of one parameter in one pass
// (Ops.h's AdamWUpdate), in f32 and in the order of operations of the
// elementwise ops hg-adamw composed it from before, so that its results
// are their bits (CMakeLists.txt keeps the compiler from contracting the
// products and sums into fused multiply-adds, which they could not be).
// A bf16 or f16 gradient is read as the cast to f32 would read it, and the
// working parameter is written as the cast of the new master would write
// it (Element.h's conversions, the cast kernel's).
#include "Element.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"
#include "common/AdamWChecks.h"

#include <cmath>
#include <type_traits>

namespace hybrid::cpu::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

using namespace hybrid::adamw; // operand and result positions

/// Work per element, in parallelChunks' units: a square root, two
/// divisions and a dozen products and sums.
constexpr int64_t kCostPerElement = 16;

/// The working-parameter storage type of an update that writes none.
struct NoWorkingParam {};

float scalar(const KernelCall &call, int i) {
  return *call.operands[i].as<float>();
}

/// The update with gradient storage G and working-parameter storage W.
template <typename G, typename W> void update(const KernelCall &call) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  const float beta1 = scalar(call, Beta1), beta2 = scalar(call, Beta2),
              eps = scalar(call, Eps), stepSize = scalar(call, StepSize),
              rootBc2 = scalar(call, BiasCorrection2Sqrt),
              decayFactor = scalar(call, DecayFactor);
  const float oneMinusBeta1 = 1.0f - beta1, oneMinusBeta2 = 1.0f - beta2;
  // Results may be their operands' buffers: element i is read before it is
  // written, and by no other element.
  const float *param = call.operands[Param].as<float>(),
              *expAvg = call.operands[ExpAvg].as<float>(),
              *expAvgSq = call.operands[ExpAvgSq].as<float>();
  const G *grad = call.operands[Grad].as<G>();
  float *paramOut = call.results[ParamOut].as<float>(),
        *expAvgOut = call.results[ExpAvgOut].as<float>(),
        *expAvgSqOut = call.results[ExpAvgSqOut].as<float>();
  W *workingOut = nullptr;
  if constexpr (kWorking)
    workingOut = call.results[WorkingParamOut].as<W>();
  parallelChunks(call.operands[Param].numel(), kCostPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t i = begin; i < end; ++i) {
                     const float g = toFloat(grad[i]);
                     const float m = beta1 * expAvg[i] + oneMinusBeta1 * g;
                     const float v =
                         beta2 * expAvgSq[i] + oneMinusBeta2 * (g * g);
                     const float denom = std::sqrt(v) / rootBc2 + eps;
                     const float p =
                         param[i] * decayFactor - stepSize * (m / denom);
                     paramOut[i] = p;
                     expAvgOut[i] = m;
                     expAvgSqOut[i] = v;
                     if constexpr (kWorking)
                       workingOut[i] = fromFloat<W>(p);
                   }
                 });
}

} // namespace

void adamwUpdate(const KernelCall &call) {
  const bool working = call.attrs<ops::AdamWUpdate>().workingParam;
  expectArity(call, kKernel, 10, working ? 4 : 3);
  checkAdamWUpdate(call, working, kKernel,
                   [](const std::string &message) { fail(kKernel, message); });
  visitFloat(call.operands[Grad].dtype, kKernel, "grad", [&](auto gradZero) {
    using G = decltype(gradZero);
    if (!working)
      return update<G, NoWorkingParam>(call);
    visitFloat(call.results[WorkingParamOut].dtype, kKernel,
               "working param result", [&](auto workingZero) {
                 using W = decltype(workingZero);
                 // f32 was rejected above; no instance of it is needed.
                 if constexpr (!std::is_same_v<W, float>)
                   update<G, W>(call);
               });
  });
}

} // namespace hybrid::cpu::kernels
