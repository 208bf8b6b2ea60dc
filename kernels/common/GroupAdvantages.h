// GRPO's group-relative advantages (ops::GroupAdvantages) as TRL's
// GRPOTrainer computes them, one group at a time (sums in double, so every
// backend gives the same bits), and the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>
#include <string>

namespace hybrid::kernels {

struct GroupAdvantagesProblem {
  int64_t groups = 0, groupSize = 1;
  bool scale = true;
  float epsilon = 1e-4f;
};

/// One group of G scores: s - mean, over (std + eps) when scaling; std
/// unbiased as torch.std's default.
HYBRID_HOST_DEVICE void groupAdvantages(const float *scores, float *out,
                                        const GroupAdvantagesProblem &p) {
  const int64_t g = p.groupSize;
  double sum = 0;
  for (int64_t i = 0; i < g; ++i)
    sum += scores[i];
  const float mean = static_cast<float>(sum) / static_cast<float>(g);
  float deviation = 0;
  if (p.scale) {
    const double m = sum / static_cast<double>(g);
    double squares = 0;
    for (int64_t i = 0; i < g; ++i) {
      const double d = scores[i] - m;
      squares += rn::dmul(d, d);
    }
#if defined(__CUDA_ARCH__)
    deviation = static_cast<float>(sqrt(squares / static_cast<double>(g - 1)));
#else
    deviation =
        static_cast<float>(std::sqrt(squares / static_cast<double>(g - 1)));
#endif
  }
  for (int64_t i = 0; i < g; ++i) {
    const float a = scores[i] - mean;
    out[i] = p.scale ? a / (deviation + p.epsilon) : a;
  }
}

template <typename Args>
GroupAdvantagesProblem describeGroupAdvantages(const Args &a,
                                               const char *kernel) {
  expectDType(a.scores, DType::F32, kernel, "scores");
  expectRank(a.scores, 1, kernel, "scores");
  expectDType(a.advantages, DType::F32, kernel, "result");
  expectShape(a.advantages, a.scores.shape, kernel, "result");
  const int64_t g = a.attrs.groupSize, n = a.scores.shape[0];
  if (g < (a.attrs.scale ? 2 : 1))
    fail(kernel, "group_size must be >= " +
                     std::string(a.attrs.scale ? "2 (torch.std of one sample "
                                                 "is NaN)"
                                               : "1") +
                     ", got " + std::to_string(g));
  if (n % g)
    fail(kernel, std::to_string(n) + " scores are not whole groups of " +
                     std::to_string(g));
  if (!(a.attrs.epsilon >= 0))
    fail(kernel,
         "epsilon must be >= 0, got " + std::to_string(a.attrs.epsilon));
  GroupAdvantagesProblem p;
  p.groups = n / g;
  p.groupSize = g;
  p.scale = a.attrs.scale;
  p.epsilon = static_cast<float>(a.attrs.epsilon);
  return p;
}

} // namespace hybrid::kernels
