// Rotary position embedding frequencies from a config's RoPE parameters,
// computed as HuggingFace transformers computes them.
#pragma once

#include "frontends/hf/HfConfig.h"

#include <cstdint>
#include <vector>

namespace hybridc::hf {

/// The constants of one rotary embedding: cos/sin of position * invFreq,
/// times attentionScaling, over the first rotaryDim() features of a head.
struct RopeFrequencies {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;

  int64_t rotaryDim() const { return 2 * static_cast<int64_t>(invFreq.size()); }
};

struct RopeDefaults {
  double theta = 10000.0;
  double partialRotaryFactor = 1.0;
  /// Families whose attention rotates the whole head reject a partial
  /// factor instead of silently ignoring it.
  bool allowPartial = false;
};

/// Reads the RoPE settings the way transformers 5.x standardises them: a
/// legacy non-empty `rope_scaling` object wins over `rope_parameters`;
/// `rope_theta` and `partial_rotary_factor` come from that object, else from
/// the top level, else from `defaults`; the type is `rope_type` (or legacy
/// `type`). Supports the "default", "linear" and "llama3" types exactly;
/// anything else is recorded as an error on `config` naming the type.
RopeFrequencies readRopeFrequencies(HfConfig &config, int64_t headDim,
                                    const RopeDefaults &defaults);

} // namespace hybridc::hf
