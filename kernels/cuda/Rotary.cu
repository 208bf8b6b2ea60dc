// rotary: rotary position embedding of the first rotary_dim features of
// input [B, H, T, D] with cos/sin [B or 1, T, rotary_dim] (of the input's
// dtype), half-split (GPT-NeoX, Llama rotate_half) or interleaved (GPT-J)
// pairs; floats (f32, bf16, f16) computed in f32. Each feature uses its own
// cos/sin entry, as HF and the CPU kernel do; features past rotary_dim are
// copied.
#include "Device.cuh"
#include "Kernels.h"

namespace hybrid::cuda::kernels {
namespace {

struct RotaryShape {
  int64_t B = 0, H = 0, T = 0, D = 0, R = 0;
  bool perBatch = false; ///< cos/sin hold B entries (else 1)
  bool interleaved = false;
};

/// One thread per rotated pair (reads both before writing both, so the
/// result may alias the input), or per copied feature past rotary_dim.
template <typename S>
__global__ void rotaryKernel(const S *x, const S *cosines, const S *sines, S *y,
                             RotaryShape s) {
  awaitInputs();
  const int64_t half = s.R / 2;
  const int64_t tail = s.D - s.R;     // copied features per row
  const int64_t perRow = half + tail; // work items per row
  const int64_t total = s.B * s.H * s.T * perRow;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < total; e += stride) {
    const int64_t row = e / perRow, k = e - row * perRow;
    const S *xr = x + row * s.D;
    S *yr = y + row * s.D;
    if (k >= half) {
      const int64_t i = s.R + (k - half);
      if (xr != yr)
        yr[i] = xr[i];
      continue;
    }
    const int64_t t = row % s.T, b = row / (s.H * s.T);
    const S *c = cosines + ((s.perBatch ? b : 0) * s.T + t) * s.R;
    const S *sn = sines + ((s.perBatch ? b : 0) * s.T + t) * s.R;
    // The pair's positions: (2k, 2k + 1) interleaved, (k, k + half) split.
    const int64_t i0 = s.interleaved ? 2 * k : k;
    const int64_t i1 = s.interleaved ? 2 * k + 1 : k + half;
    const float x0 = toFloat(xr[i0]), x1 = toFloat(xr[i1]);
    yr[i0] = fromFloat<S>(x0 * toFloat(c[i0]) - x1 * toFloat(sn[i0]));
    yr[i1] = fromFloat<S>(x1 * toFloat(c[i1]) + x0 * toFloat(sn[i1]));
  }
}

} // namespace

void rotary(const CudaCall &call) {
  expectArity(call, "rotary", 3, 1);
  const ConstTensor &input = call.operands[0], &cos = call.operands[1],
                    &sin = call.operands[2];
  const Tensor &result = call.results[0];
  expectSameDType(cos, input, "rotary", "cos", "input");
  expectSameDType(sin, input, "rotary", "sin", "input");
  expectDType(result, input.dtype, "rotary", "result");
  expectRank(input, 4, "rotary", "input");
  expectShape(result, input.shape, "rotary", "result");
  expectShape(sin, cos.shape, "rotary", "sin");
  RotaryShape s;
  s.B = input.shape[0];
  s.H = input.shape[1];
  s.T = input.shape[2];
  s.D = input.shape[3];
  if (cos.rank() < 2)
    fail("rotary", "cos must have rank >= 2, got " + shapeToString(cos.shape));
  s.R = cos.shape.back();
  const int64_t lead = product(cos.shape, 0, cos.rank() - 2);
  if (cos.shape[cos.rank() - 2] != s.T || (lead != 1 && lead != s.B))
    fail("rotary", "cos/sin " + shapeToString(cos.shape) +
                       " do not match [B or 1, T, rotary_dim] for input " +
                       shapeToString(input.shape));
  if (s.R > s.D || s.R % 2 != 0)
    fail("rotary", "rotary_dim " + std::to_string(s.R) +
                       " must be even and at most the head size " +
                       std::to_string(s.D));
  s.perBatch = lead != 1;
  s.interleaved = call.attrs<ops::Rotary>().interleaved;
  visitFloat(input.dtype, "rotary", "input", [&](auto zero) {
    using S = decltype(zero);
    if (input.numel() == 0)
      return;
    const int64_t total = s.B * s.H * s.T * (s.D - s.R / 2);
    launch(rotaryKernel<S>, gridFor(total), kThreads, 0, streamOf(call),
           static_cast<const S *>(input.data), static_cast<const S *>(cos.data),
           static_cast<const S *>(sin.data), static_cast<S *>(result.data), s);
    checkLaunch("rotary");
  });
}

} // namespace hybrid::cuda::kernels
