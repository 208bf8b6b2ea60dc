// rotary: rotary position embedding of the first rotary_dim features of
// input [B, H, T, D] with cos/sin [B or 1, T, rotary_dim], half-split
// (GPT-NeoX, Llama rotate_half) or interleaved (GPT-J) pairs; floats (f32,
// bf16, f16; cos/sin of the input's dtype) computed in f32.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void rotary(const KernelCall &call) {
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
  const int64_t B = input.shape[0], H = input.shape[1], T = input.shape[2],
                D = input.shape[3];
  // cos/sin: [..., T, rotary_dim] whose leading dimensions hold 1 or B
  // entries ([1, T, R], [B, T, R], [T, R] or [B, 1, T, R]).
  if (cos.rank() < 2)
    fail("rotary", "cos must have rank >= 2, got " + shapeToString(cos.shape));
  const int64_t R = cos.shape.back();
  const int64_t lead = product(cos.shape, 0, cos.rank() - 2);
  if (cos.shape[cos.rank() - 2] != T || (lead != 1 && lead != B))
    fail("rotary", "cos/sin " + shapeToString(cos.shape) +
                       " do not match [B or 1, T, rotary_dim] for input " +
                       shapeToString(input.shape));
  if (R > D || R % 2 != 0)
    fail("rotary", "rotary_dim " + std::to_string(R) +
                       " must be even and at most the head size " +
                       std::to_string(D));
  const bool interleaved = call.attrs<ops::Rotary>().interleaved;
  visitFloat(input.dtype, "rotary", "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = input.as<S>();
    const S *c = cos.as<S>();
    const S *s = sin.as<S>();
    S *y = result.as<S>();
    const int64_t half = R / 2;
    auto rotate = [](S x0, S x1, S cs, S sn) {
      return fromFloat<S>(toFloat(x0) * toFloat(cs) -
                          toFloat(x1) * toFloat(sn));
    };
    // out = x * cos + rotate(x) * sin, with each feature's own cos/sin entry
    // (as HF does), so both conventions of filling the halves work.
    parallelFor(B * H * T, D * 4, [&](int64_t row) {
      const int64_t t = row % T, b = row / (H * T);
      const S *cr = c + ((lead == 1 ? 0 : b) * T + t) * R;
      const S *sr = s + ((lead == 1 ? 0 : b) * T + t) * R;
      const S *xr = x + row * D;
      S *yr = y + row * D;
      if (interleaved) {
        for (int64_t i = 0; i < half; ++i) {
          const S x0 = xr[2 * i], x1 = xr[2 * i + 1];
          yr[2 * i] = rotate(x0, x1, cr[2 * i], sr[2 * i]);
          yr[2 * i + 1] = fromFloat<S>(toFloat(x1) * toFloat(cr[2 * i + 1]) +
                                       toFloat(x0) * toFloat(sr[2 * i + 1]));
        }
      } else {
        for (int64_t i = 0; i < half; ++i) {
          const S x0 = xr[i], x1 = xr[i + half];
          yr[i] = rotate(x0, x1, cr[i], sr[i]);
          yr[i + half] = fromFloat<S>(toFloat(x1) * toFloat(cr[i + half]) +
                                      toFloat(x0) * toFloat(sr[i + half]));
        }
      }
      if (D > R && yr != xr)
        std::memcpy(yr + R, xr + R, (D - R) * sizeof(S));
    });
  });
}

} // namespace hybrid::cpu::kernels
