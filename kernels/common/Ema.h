// The exponential moving average of weights (DeepSpeed-Chat's
// --enable_ema, utils.moving_average): the per-element rule both backends
// use and the host validation of one update over many weights. Not an op
// of any graph: the engine runs it after step() (Engine::updateEma).
#pragma once

#include "common/RoundedMath.h"
#include "hybrid/Types.h"

#include <cstdint>
#include <vector>

namespace hybrid::kernels {

/// One weight's average: `ema` f32 [numel], updated in place from `param`
/// (f32, bf16 or f16 [numel], read as f32 exactly).
struct EmaSpan {
  float *ema = nullptr;
  const void *param = nullptr;
  DType paramDType = DType::F32;
  int64_t numel = 0;
};

/// torch.lerp(param, ema, beta), what moving_average writes: ema' = ema -
/// (ema - param) (1 - beta) for beta >= 0.5, param + beta (ema - param)
/// below, in f32 with each operation rounded on its own (torch's CPU and
/// CUDA lerp). beta 0 gives param exactly (the average's start).
HYBRID_HOST_DEVICE float emaLerp(float ema, float param, float beta) {
  const float d = rn::sub(ema, param);
  return beta < 0.5f ? rn::add(param, rn::mul(beta, d))
                     : rn::sub(ema, rn::mul(d, rn::sub(1.0f, beta)));
}

/// Checks one update: beta in [0, 1], every span's param f32, bf16 or f16,
/// addresses present where numel > 0. `kernel` names it in errors
/// (hybrid::Error, one line).
void checkEmaSpans(const std::vector<EmaSpan> &spans, float beta,
                   const char *kernel);

} // namespace hybrid::kernels
