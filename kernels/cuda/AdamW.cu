// adamw_update: torch.optim.AdamW's update of one parameter in one launch
// (Ops.h's AdamWUpdate): a grid-stride loop over float4s of the parameter,
// gradient and moments (a scalar loop takes the tail, or everything when a
// buffer is not 16-byte aligned). The arithmetic is the CPU kernel's
// (kernels/cpu/AdamW.cpp), each product, sum, quotient and square root
// rounded on its own (the _rn intrinsics: nvcc would fuse multiply-adds),
// so both give the same bits.
#include "Device.cuh"
#include "Kernels.h"
#include "common/AdamWChecks.h"

#include <cstdint>

namespace hybrid::cuda::kernels {
namespace {

constexpr const char *kKernel = "adamw_update";

using namespace hybrid::adamw; // operand and result positions

/// The tensors of one update; a result may be its operand's buffer.
struct Buffers {
  const float *param, *grad, *expAvg, *expAvgSq;
  float *paramOut, *expAvgOut, *expAvgSqOut;
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

/// Elements [0, 4 vectors) as float4s, then [4 vectors, n) one by one.
__global__ void adamwKernel(Buffers b, Scalars s, int64_t vectors, int64_t n) {
  awaitInputs();
  const Coefficients c = load(s);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < vectors; i += stride) {
    const float4 g = reinterpret_cast<const float4 *>(b.grad)[i];
    float4 p = reinterpret_cast<const float4 *>(b.param)[i];
    float4 m = reinterpret_cast<const float4 *>(b.expAvg)[i];
    float4 v = reinterpret_cast<const float4 *>(b.expAvgSq)[i];
    update(c, g.x, p.x, m.x, v.x);
    update(c, g.y, p.y, m.y, v.y);
    update(c, g.z, p.z, m.z, v.z);
    update(c, g.w, p.w, m.w, v.w);
    reinterpret_cast<float4 *>(b.paramOut)[i] = p;
    reinterpret_cast<float4 *>(b.expAvgOut)[i] = m;
    reinterpret_cast<float4 *>(b.expAvgSqOut)[i] = v;
  }
  for (int64_t i = 4 * vectors + first; i < n; i += stride) {
    float p = b.param[i], m = b.expAvg[i], v = b.expAvgSq[i];
    update(c, b.grad[i], p, m, v);
    b.paramOut[i] = p;
    b.expAvgOut[i] = m;
    b.expAvgSqOut[i] = v;
  }
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

const float *scalar(const CudaCall &call, int i) {
  return static_cast<const float *>(call.operands[i].data);
}

} // namespace

void adamwUpdate(const CudaCall &call) {
  expectArity(call, kKernel, 10, 3);
  checkAdamWUpdate(call, kKernel,
                   [](const std::string &message) { fail(kKernel, message); });
  const int64_t n = call.operands[Param].numel();
  if (n == 0)
    return;
  auto in = [&](int i) {
    return static_cast<const float *>(call.operands[i].data);
  };
  auto out = [&](int i) { return static_cast<float *>(call.results[i].data); };
  const Buffers b{in(Param),     in(Grad),       in(ExpAvg),      in(ExpAvgSq),
                  out(ParamOut), out(ExpAvgOut), out(ExpAvgSqOut)};
  const Scalars s{scalar(call, Beta1),
                  scalar(call, Beta2),
                  scalar(call, Eps),
                  scalar(call, StepSize),
                  scalar(call, BiasCorrection2Sqrt),
                  scalar(call, DecayFactor)};
  const bool vectorised = aligned16(b.param) && aligned16(b.grad) &&
                          aligned16(b.expAvg) && aligned16(b.expAvgSq) &&
                          aligned16(b.paramOut) && aligned16(b.expAvgOut) &&
                          aligned16(b.expAvgSqOut);
  const int64_t vectors = vectorised ? n / 4 : 0;
  launch(adamwKernel, gridFor(vectors + (n - 4 * vectors)), kThreads, 0,
         streamOf(call), b, s, vectors, n);
  checkLaunch(kKernel);
}

} // namespace hybrid::cuda::kernels
