// rotary: rotary position embedding of the first rotary_dim features of
// input [B, H, T, D] with cos/sin [B or 1, T, rotary_dim] (of the input's
// dtype), half-split (GPT-NeoX, Llama rotate_half) or interleaved (GPT-J)
// pairs; floats (f32, bf16, f16) computed in f32. Each feature uses its own
// cos/sin entry, as HF and the CPU kernel do; features past rotary_dim are
// copied.
#include "Device.cuh"
#include "Kernels.h"
#include "common/Rotary.h"

namespace hybrid::cuda::kernels {
namespace {

/// One thread per rotated pair (reads both before writing both, so the
/// result may alias the input), or per copied feature past rotary_dim.
template <typename S>
__global__ void rotaryKernel(const S *x, const S *cosines, const S *sines, S *y,
                             RotaryProblem s) {
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
    const S *c = cosines + s.tableRow(row);
    const S *sn = sines + s.tableRow(row);
    // The pair's positions: (2k, 2k + 1) interleaved, (k, k + half) split.
    const int64_t i0 = s.interleaved ? 2 * k : k;
    const int64_t i1 = s.interleaved ? 2 * k + 1 : k + half;
    const float x0 = toFloat(xr[i0]), x1 = toFloat(xr[i1]);
    yr[i0] = fromFloat<S>(rotaryFirst(x0, x1, toFloat(c[i0]), toFloat(sn[i0])));
    yr[i1] =
        fromFloat<S>(rotarySecond(x0, x1, toFloat(c[i1]), toFloat(sn[i1])));
  }
}

} // namespace

void rotary(const CudaCall &call) {
  const RotaryArgs a = RotaryArgs::bind(call, "rotary");
  const RotaryProblem s = describeRotary(a);
  visitFloat(a.input.dtype, "rotary", "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() == 0)
      return;
    const int64_t total = s.B * s.H * s.T * (s.D - s.R / 2);
    launch(rotaryKernel<S>, gridFor(total), kThreads, 0, streamOf(call),
           static_cast<const S *>(a.input.data),
           static_cast<const S *>(a.cos.data),
           static_cast<const S *>(a.sin.data), static_cast<S *>(a.out.data), s);
    checkLaunch("rotary");
  });
}

} // namespace hybrid::cuda::kernels
