// The weights' exponential moving average (Engine::updateEma): one pass
// over every weight, blocks of elements spread over the threads
// (common/Ema.h holds the rule and the checks both backends share).
#include "CpuKernels.h"
#include "Parallel.h"

#include "hybrid/Float16.h"

#include <algorithm>

namespace hybrid::cpu {

void emaUpdate(const std::vector<::hybrid::kernels::EmaSpan> &spans,
               float beta) {
  ::hybrid::kernels::checkEmaSpans(spans, beta, "ema_update");
  constexpr int64_t kBlock = 4096;
  for (const ::hybrid::kernels::EmaSpan &s : spans) {
    const int64_t blocks = (s.numel + kBlock - 1) / kBlock;
    parallelFor(blocks, kBlock, [&](int64_t block) {
      const int64_t begin = block * kBlock,
                    end = std::min(s.numel, begin + kBlock);
      float *ema = s.ema;
      switch (s.paramDType) {
      case DType::BF16: {
        const auto *p = static_cast<const uint16_t *>(s.param);
        for (int64_t i = begin; i < end; ++i)
          ema[i] = ::hybrid::kernels::emaLerp(ema[i], bf16ToFloat(p[i]), beta);
        break;
      }
      case DType::F16: {
        const auto *p = static_cast<const uint16_t *>(s.param);
        for (int64_t i = begin; i < end; ++i)
          ema[i] = ::hybrid::kernels::emaLerp(ema[i], f16ToFloat(p[i]), beta);
        break;
      }
      default: {
        const auto *p = static_cast<const float *>(s.param);
        for (int64_t i = begin; i < end; ++i)
          ema[i] = ::hybrid::kernels::emaLerp(ema[i], p[i], beta);
      }
      }
    });
  }
}

} // namespace hybrid::cpu
