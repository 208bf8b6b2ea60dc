// Generalised advantage estimation (ops::Gae) as DeepSpeed-Chat's
// get_advantages_and_returns loops over a row, in torch's f32 order, and
// the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cstdint>
#include <string>

namespace hybrid::kernels {

/// One call: B rows of L positions, advantages over [start, L); gamma and
/// gamma * lam as the f32 scalars torch multiplies by (gamma * lam is
/// Python's double product, rounded once).
struct GaeProblem {
  int64_t rows = 0, positions = 0, start = 0;
  float gamma = 1.0f, gammaLam = 0.95f;
};

/// One row: rewards and values [L], advantages and returns [L - start].
HYBRID_HOST_DEVICE void gaeRow(const float *rewards, const float *values,
                               float *advantages, float *returns,
                               const GaeProblem &p) {
  float last = 0.0f;
  for (int64_t t = p.positions - 1; t >= p.start; --t) {
    const float next = t < p.positions - 1 ? values[t + 1] : 0.0f;
    // Each product and sum rounded on its own, as torch's ops round.
    const float delta =
        rn::sub(rn::add(rewards[t], rn::mul(p.gamma, next)), values[t]);
    last = rn::add(delta, rn::mul(p.gammaLam, last));
    advantages[t - p.start] = last;
  }
  for (int64_t t = p.start; t < p.positions; ++t)
    returns[t - p.start] = rn::add(advantages[t - p.start], values[t]);
}

template <typename Args>
GaeProblem describeGae(const Args &a, const char *kernel) {
  expectRank(a.rewards, 2, kernel, "rewards");
  const Shape &shape = a.rewards.shape;
  expectDType(a.rewards, DType::F32, kernel, "rewards");
  expectDType(a.values, DType::F32, kernel, "values");
  expectShape(a.values, shape, kernel, "values");
  if (a.attrs.start < 0 || a.attrs.start >= shape[1])
    fail(kernel, "start " + std::to_string(a.attrs.start) +
                     " must lie in [0, " + std::to_string(shape[1]) + ")");
  const Shape out = {shape[0], shape[1] - a.attrs.start};
  expectDType(a.advantages, DType::F32, kernel, "advantages");
  expectShape(a.advantages, out, kernel, "advantages");
  expectDType(a.returns, DType::F32, kernel, "returns");
  expectShape(a.returns, out, kernel, "returns");
  GaeProblem p;
  p.rows = shape[0];
  p.positions = shape[1];
  p.start = a.attrs.start;
  p.gamma = static_cast<float>(a.attrs.gamma);
  p.gammaLam = static_cast<float>(a.attrs.gamma * a.attrs.lam);
  return p;
}

} // namespace hybrid::kernels
