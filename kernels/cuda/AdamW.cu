// adamw_update: torch.optim.AdamW's update of one parameter in one launch
// (Ops.h's AdamWUpdate): a grid-stride loop over groups of four elements
// (float4s of the parameter and moments, four bf16/f16 of a half-precision
// gradient or working parameter in one 8-byte access; a scalar loop takes
// the tail, or everything when a buffer is not aligned for its group). The
// arithmetic is common/AdamW.h's, the CPU kernel's too, each
// product, sum, quotient and square root rounded on its own (the _rn
// intrinsics: nvcc would fuse multiply-adds), so both give the same bits; a
// bf16/f16
// gradient is read and the working parameter written with the cast
// kernel's conversions (Device.cuh's toFloat / fromFloat).
#include "Device.cuh"
#include "Kernels.h"

#include "common/AdamW.h"

#include <cstdint>
#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

/// The working-parameter storage type of an update that writes none.
struct NoWorkingParam {};

/// The tensors of one update; a result may be its operand's buffer.
template <typename G, typename W> struct Buffers {
  const float *param;
  const G *grad;
  const float *expAvg, *expAvgSq;
  float *paramOut, *expAvgOut, *expAvgSqOut;
  W *workingOut; ///< null without a working parameter
};

/// Four elements of storage type T in one access (16 bytes of f32, 8 of
/// bf16/f16).
template <typename T> struct alignas(4 * sizeof(T)) Group { T x[4]; };

/// Elements [0, 4 groups) four at a time, then [4 groups, n) one by one.
template <typename G, typename W>
__global__ void adamwKernel(Buffers<G, W> b, AdamWScalars s, int64_t groups,
                            int64_t n) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  awaitInputs();
  const AdamWCoefficients c = adamwCoefficients(s);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < groups; i += stride) {
    const Group<G> g = reinterpret_cast<const Group<G> *>(b.grad)[i];
    Group<float> p = reinterpret_cast<const Group<float> *>(b.param)[i];
    Group<float> m = reinterpret_cast<const Group<float> *>(b.expAvg)[i];
    Group<float> v = reinterpret_cast<const Group<float> *>(b.expAvgSq)[i];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      adamwUpdateElement(c, toFloat(g.x[k]), p.x[k], m.x[k], v.x[k]);
    reinterpret_cast<Group<float> *>(b.paramOut)[i] = p;
    reinterpret_cast<Group<float> *>(b.expAvgOut)[i] = m;
    reinterpret_cast<Group<float> *>(b.expAvgSqOut)[i] = v;
    if constexpr (kWorking) {
      Group<W> w;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        w.x[k] = fromFloat<W>(p.x[k]);
      reinterpret_cast<Group<W> *>(b.workingOut)[i] = w;
    }
  }
  for (int64_t i = 4 * groups + first; i < n; i += stride) {
    float p = b.param[i], m = b.expAvg[i], v = b.expAvgSq[i];
    adamwUpdateElement(c, toFloat(b.grad[i]), p, m, v);
    b.paramOut[i] = p;
    b.expAvgOut[i] = m;
    b.expAvgSqOut[i] = v;
    if constexpr (kWorking)
      b.workingOut[i] = fromFloat<W>(p);
  }
}

/// Whether `p` may be accessed as Group<T>.
template <typename T> bool groupAligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % alignof(Group<T>) == 0;
}

template <typename G, typename W>
void launchUpdate(const CudaCall &call, const AdamWUpdateArgs &a,
                  const AdamWProblem &problem) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  const int64_t n = problem.n;
  auto out = [](const Tensor &t) { return static_cast<float *>(t.data); };
  Buffers<G, W> b{a.inParam.as<float>(),  a.grad.as<G>(),
                  a.inExpAvg.as<float>(), a.inExpAvgSq.as<float>(),
                  out(a.param),           out(a.expAvg),
                  out(a.expAvgSq),        nullptr};
  bool grouped = groupAligned<G>(b.grad);
  if constexpr (kWorking) {
    b.workingOut = static_cast<W *>(a.workingParam->data);
    grouped = grouped && groupAligned<W>(b.workingOut);
  }
  const void *f32Buffers[] = {b.param,    b.expAvg,    b.expAvgSq,
                              b.paramOut, b.expAvgOut, b.expAvgSqOut};
  for (const void *p : f32Buffers)
    grouped = grouped && groupAligned<float>(p);
  const int64_t groups = grouped ? n / 4 : 0;
  launch(adamwKernel<G, W>, gridFor(groups + (n - 4 * groups)), kThreads, 0,
         streamOf(call), b, problem.scalars, groups, n);
  checkLaunch(kKernel);
}

} // namespace

void adamwUpdate(const CudaCall &call) {
  const auto a = AdamWUpdateArgs::bind(call, kKernel);
  const AdamWProblem p = describeAdamW(a);
  if (p.n == 0)
    return;
  visitFloat(p.grad, kKernel, "grad", [&](auto gradZero) {
    using G = decltype(gradZero);
    if (!p.working)
      return launchUpdate<G, NoWorkingParam>(call, a, p);
    visitFloat(p.workingParam, kKernel, "working param result",
               [&](auto workingZero) {
                 using W = decltype(workingZero);
                 // f32 was rejected above; no instance of it is needed.
                 if constexpr (!std::is_same_v<W, float>)
                   launchUpdate<G, W>(call, a, p);
               });
  });
}

} // namespace hybrid::cuda::kernels
