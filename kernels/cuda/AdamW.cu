// adamw_update: torch.optim.AdamW's update of one parameter in one launch
// (Ops.h's AdamWUpdate): a grid-stride loop over groups of four elements
// (float4s of the parameter and moments, four bf16/f16 of a half-precision
// gradient or working parameter in one 8-byte access; a scalar loop takes
// the tail, or everything when a buffer is not aligned for its group). The
// arithmetic is the CPU kernel's (kernels/cpu/AdamW.cpp), each product,
// sum, quotient and square root rounded on its own (the _rn intrinsics:
// nvcc would fuse multiply-adds), so both give the same bits; a bf16/f16
// gradient is read and the working parameter written with the cast
// kernel's conversions (Device.cuh's toFloat / fromFloat).
#include "Device.cuh"
#include "Kernels.h"
#include "common/AdamWChecks.h"

#include <cstdint>
#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

using namespace hybrid::adamw; // operand and result positions

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

/// The f32 [1] scalars, read on the device (a schedule changes them
/// between replays of a captured step).
struct Scalars {
  const float *beta1, *beta2, *eps, *stepSize, *rootBc2, *decayFactor;
};

/// What every element's update shares.
struct Coefficients {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, stepSize, rootBc2,
      decayFactor;
};

__device__ __forceinline__ Coefficients load(const Scalars &s) {
  Coefficients c;
  c.beta1 = *s.beta1;
  c.oneMinusBeta1 = __fsub_rn(1.0f, c.beta1);
  c.beta2 = *s.beta2;
  c.oneMinusBeta2 = __fsub_rn(1.0f, c.beta2);
  c.eps = *s.eps;
  c.stepSize = *s.stepSize;
  c.rootBc2 = *s.rootBc2;
  c.decayFactor = *s.decayFactor;
  return c;
}

/// One element: p, m, v updated from gradient g.
__device__ __forceinline__ void update(const Coefficients &c, float g, float &p,
                                       float &m, float &v) {
  m = __fadd_rn(__fmul_rn(c.beta1, m), __fmul_rn(c.oneMinusBeta1, g));
  v = __fadd_rn(__fmul_rn(c.beta2, v),
                __fmul_rn(c.oneMinusBeta2, __fmul_rn(g, g)));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), c.rootBc2), c.eps);
  p = __fsub_rn(__fmul_rn(p, c.decayFactor),
                __fmul_rn(c.stepSize, __fdiv_rn(m, denom)));
}

/// Four elements of storage type T in one access (16 bytes of f32, 8 of
/// bf16/f16).
template <typename T> struct alignas(4 * sizeof(T)) Group { T x[4]; };

/// Elements [0, 4 groups) four at a time, then [4 groups, n) one by one.
template <typename G, typename W>
__global__ void adamwKernel(Buffers<G, W> b, Scalars s, int64_t groups,
                            int64_t n) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  awaitInputs();
  const Coefficients c = load(s);
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
      update(c, toFloat(g.x[k]), p.x[k], m.x[k], v.x[k]);
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
    update(c, toFloat(b.grad[i]), p, m, v);
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

const float *scalar(const CudaCall &call, int i) {
  return static_cast<const float *>(call.operands[i].data);
}

template <typename G, typename W> void launchUpdate(const CudaCall &call) {
  constexpr bool kWorking = !std::is_same_v<W, NoWorkingParam>;
  const int64_t n = call.operands[Param].numel();
  auto in = [&](int i) {
    return static_cast<const float *>(call.operands[i].data);
  };
  auto out = [&](int i) { return static_cast<float *>(call.results[i].data); };
  Buffers<G, W> b{
      in(Param),        static_cast<const G *>(call.operands[Grad].data),
      in(ExpAvg),       in(ExpAvgSq),
      out(ParamOut),    out(ExpAvgOut),
      out(ExpAvgSqOut), nullptr};
  bool grouped = groupAligned<G>(b.grad);
  if constexpr (kWorking) {
    b.workingOut = static_cast<W *>(call.results[WorkingParamOut].data);
    grouped = grouped && groupAligned<W>(b.workingOut);
  }
  const void *f32Buffers[] = {b.param,    b.expAvg,    b.expAvgSq,
                              b.paramOut, b.expAvgOut, b.expAvgSqOut};
  for (const void *p : f32Buffers)
    grouped = grouped && groupAligned<float>(p);
  const Scalars s{scalar(call, Beta1),
                  scalar(call, Beta2),
                  scalar(call, Eps),
                  scalar(call, StepSize),
                  scalar(call, BiasCorrection2Sqrt),
                  scalar(call, DecayFactor)};
  const int64_t groups = grouped ? n / 4 : 0;
  launch(adamwKernel<G, W>, gridFor(groups + (n - 4 * groups)), kThreads, 0,
         streamOf(call), b, s, groups, n);
  checkLaunch(kKernel);
}

} // namespace

void adamwUpdate(const CudaCall &call) {
  const bool working = call.attrs<ops::AdamWUpdate>().workingParam;
  expectArity(call, kKernel, 10, working ? 4 : 3);
  checkAdamWUpdate(call, working, kKernel,
                   [](const std::string &message) { fail(kKernel, message); });
  if (call.operands[Param].numel() == 0)
    return;
  visitFloat(call.operands[Grad].dtype, kKernel, "grad", [&](auto gradZero) {
    using G = decltype(gradZero);
    if (!working)
      return launchUpdate<G, NoWorkingParam>(call);
    visitFloat(call.results[WorkingParamOut].dtype, kKernel,
               "working param result", [&](auto workingZero) {
                 using W = decltype(workingZero);
                 // f32 was rejected above; no instance of it is needed.
                 if constexpr (!std::is_same_v<W, float>)
                   launchUpdate<G, W>(call);
               });
  });
}

} // namespace hybrid::cuda::kernels
