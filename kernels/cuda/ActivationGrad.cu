// The activations' backward (ops::ActivationGrad): grad_in = grad_out
// act'(input) per element, f32/bf16/f16, computed in f32 and rounded once.
// Operands and result are contiguous and of one shape: each thread moves 16
// bytes of each at a time where all three are 16-byte aligned.
#include "Activation.cuh"
#include "Device.cuh"
#include "Kernels.h"

#include "common/ActivationGrad.h"

namespace hybrid::cuda::kernels {
namespace {

/// 16 bytes of S: one vector load or store.
template <typename S> struct alignas(16) Vec16 {
  static constexpr int kSize = 16 / sizeof(S);
  S v[kSize];
};

template <typename S, Activation A>
__device__ __forceinline__ S gradAt(S x, S g) {
  return fromFloat<S>(cuda::activationGrad(A, toFloat(x), toFloat(g)));
}

/// With `vector`, threads take whole Vec16s of [0, n) in a grid-stride loop
/// and the elements past the last whole one singly; else every element
/// singly.
template <typename S, Activation A>
__global__ void activationGradKernel(const S *x, const S *g, S *out, int64_t n,
                                     bool vector) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vector) {
    constexpr int kSize = Vec16<S>::kSize;
    const int64_t vectors = n / kSize;
    const auto *xv = reinterpret_cast<const Vec16<S> *>(x);
    const auto *gv = reinterpret_cast<const Vec16<S> *>(g);
    auto *ov = reinterpret_cast<Vec16<S> *>(out);
    for (int64_t i = first; i < vectors; i += stride) {
      const Vec16<S> a = xv[i], b = gv[i];
      Vec16<S> r;
#pragma unroll
      for (int e = 0; e < kSize; ++e)
        r.v[e] = gradAt<S, A>(a.v[e], b.v[e]);
      ov[i] = r;
    }
    done = vectors * kSize;
  }
  for (int64_t i = done + first; i < n; i += stride)
    out[i] = gradAt<S, A>(x[i], g[i]);
}

template <typename S, Activation A>
void launchActivationGrad(const S *x, const S *g, S *out, int64_t n,
                          cudaStream_t stream) {
  const bool vector = reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(g) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(out) % 16 == 0;
  const int64_t items = vector ? n / Vec16<S>::kSize : n;
  launch(activationGradKernel<S, A>, gridFor(items), kThreads, 0, stream, x, g,
         out, n, vector);
}

} // namespace

void activationGrad(const CudaCall &call) {
  constexpr const char *kKernel = "activation_grad";
  const auto a = ActivationGradArgs::bind(call, kKernel);
  const ActivationGradProblem p = describeActivationGrad(a);
  const Activation act = p.activation;
  const int64_t n = p.n;
  if (n == 0)
    return;
  visitFloat(p.dtype, kKernel, "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = static_cast<const S *>(a.input.data);
    const S *g = static_cast<const S *>(a.gradOut.data);
    S *out = static_cast<S *>(a.gradIn.data);
    cudaStream_t stream = streamOf(call);
    switch (act) {
    case Activation::Relu:
      launchActivationGrad<S, Activation::Relu>(x, g, out, n, stream);
      break;
    case Activation::GeluErf:
      launchActivationGrad<S, Activation::GeluErf>(x, g, out, n, stream);
      break;
    case Activation::GeluTanh:
      launchActivationGrad<S, Activation::GeluTanh>(x, g, out, n, stream);
      break;
    default:
      launchActivationGrad<S, Activation::Silu>(x, g, out, n, stream);
      break;
    }
  });
  checkLaunch(kKernel);
}

} // namespace hybrid::cuda::kernels
