// rotary's checks and layout (see Rotary.h).
#include "common/Rotary.h"

#include "common/Check.h"

namespace hybrid::kernels {

RotaryProblem describeRotary(const RotaryArgs &a) {
  const ConstTensor &input = a.input, &cos = a.cos, &sin = a.sin;
  expectSameDType(cos, input, "rotary", "cos", "input");
  expectSameDType(sin, input, "rotary", "sin", "input");
  expectDType(a.out, input.dtype, "rotary", "result");
  expectRank(input, 4, "rotary", "input");
  expectShape(a.out, input.shape, "rotary", "result");
  expectShape(sin, cos.shape, "rotary", "sin");
  RotaryProblem p;
  p.B = input.shape[0];
  p.H = input.shape[1];
  p.T = input.shape[2];
  p.D = input.shape[3];
  // cos/sin: [1, T, R], [B, T, R], [T, R] or [B, 1, T, R].
  if (cos.rank() < 2)
    fail("rotary", "cos must have rank >= 2, got " + shapeToString(cos.shape));
  p.R = cos.shape.back();
  const int64_t lead = product(cos.shape, 0, cos.rank() - 2);
  if (cos.shape[cos.rank() - 2] != p.T || (lead != 1 && lead != p.B))
    fail("rotary", "cos/sin " + shapeToString(cos.shape) +
                       " do not match [B or 1, T, rotary_dim] for input " +
                       shapeToString(input.shape));
  if (p.R > p.D || p.R % 2 != 0)
    fail("rotary", "rotary_dim " + std::to_string(p.R) +
                       " must be even and at most the head size " +
                       std::to_string(p.D));
  p.perBatch = lead != 1;
  p.interleaved = a.attrs.interleaved;
  return p;
}

} // namespace hybrid::kernels
