// adamw_update: torch.optim.AdamW's update of one parameter in one pass
// (Ops.h's AdamWUpdate): common/AdamW.h's element update, in f32 and
// in the order of operations of the elementwise ops hg-adamw composed it
// from before, so that its results are their bits (CMakeLists.txt keeps the
// compiler from contracting the products and sums into fused multiply-adds,
// which they could not be). A bf16 or f16 gradient is read as the cast to
// f32 would read it, and the working parameter is written as the cast of
// the new master would write it (Element.h's conversions, the cast
// kernel's).
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include "common/AdamW.h"

#include <type_traits>

namespace hybrid::cpu::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

/// Work per element, in parallelChunks' units: a square root, two
/// divisions and a dozen products and sums.
constexpr int64_t kCostPerElement = 16;

/// The working-parameter storage type of an update that writes none.
struct NoWorkingParam {};

/// The update with gradient storage G and working-parameter storage W.
template <typename G, typename W>
void update(const AdamWUpdateArgs &a, const AdamWProblem &problem) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  const AdamWCoefficients c = adamwCoefficients(problem.scalars);
  // Results may be their operands' buffers: element i is read before it is
  // written, and by no other element.
  const float *param = a.inParam.as<float>(), *expAvg = a.inExpAvg.as<float>(),
              *expAvgSq = a.inExpAvgSq.as<float>();
  const G *grad = a.grad.as<G>();
  float *paramOut = a.param.as<float>(), *expAvgOut = a.expAvg.as<float>(),
        *expAvgSqOut = a.expAvgSq.as<float>();
  W *workingOut = nullptr;
  if constexpr (kWorking)
    workingOut = a.workingParam->as<W>();
  parallelChunks(problem.n, kCostPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float p = param[i], m = expAvg[i], v = expAvgSq[i];
      adamwUpdateElement(c, toFloat(grad[i]), p, m, v);
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
  const auto a = AdamWUpdateArgs::bind(call, kKernel);
  const AdamWProblem p = describeAdamW(a);
  visitFloat(p.grad, kKernel, "grad", [&](auto gradZero) {
    using G = decltype(gradZero);
    if (!p.working)
      return update<G, NoWorkingParam>(a, p);
    visitFloat(p.workingParam, kKernel, "working param result",
               [&](auto workingZero) {
                 using W = decltype(workingZero);
                 // f32 was rejected above; no instance of it is needed.
                 if constexpr (!std::is_same_v<W, float>)
                   update<G, W>(a, p);
               });
  });
}

} // namespace hybrid::cpu::kernels
