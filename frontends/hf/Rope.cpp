// RoPE inverse frequencies for the default, linear and llama3 rope types.
// The arithmetic mirrors transformers' float32 tensor code step by step so
// the constants match HF's to the last bit where the libm agrees.
#include "frontends/hf/Rope.h"

#include <cmath>
#include <string>

namespace hybridc::hf {

namespace {

/// transformers' _compute_default_rope_parameters:
/// 1 / base ** (arange(0, dim, 2).float() / dim), all in float32.
std::vector<float> defaultInvFreq(double theta, int64_t dim) {
  std::vector<float> invFreq;
  for (int64_t i = 0; i < dim; i += 2) {
    float exponent = static_cast<float>(i) / static_cast<float>(dim);
    float power = std::pow(static_cast<float>(theta), exponent);
    invFreq.push_back(1.0f / power);
  }
  return invFreq;
}

/// transformers' _compute_llama3_parameters (Llama 3.1 frequency smoothing).
void applyLlama3Scaling(std::vector<float> &invFreq, float factor,
                        float lowFreqFactor, float highFreqFactor,
                        float oldContextLen) {
  const float twoPi = static_cast<float>(2 * M_PI);
  float lowFreqWavelen = oldContextLen / lowFreqFactor;
  float highFreqWavelen = oldContextLen / highFreqFactor;
  for (float &freq : invFreq) {
    float wavelen = twoPi / freq;
    float scaled = wavelen > lowFreqWavelen ? freq / factor : freq;
    float smooth = (oldContextLen / wavelen - lowFreqFactor) /
                   (highFreqFactor - lowFreqFactor);
    float smoothed = (1 - smooth) * scaled / factor + smooth * scaled;
    bool isMediumFreq =
        !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
    freq = isMediumFreq ? smoothed : scaled;
  }
}

} // namespace

RopeFrequencies readRopeFrequencies(HfConfig &config, int64_t headDim,
                                    const RopeDefaults &defaults) {
  // transformers: `rope_parameters = rope_scaling or rope_parameters`.
  std::string section =
      config.hasObject("rope_scaling") ? "rope_scaling" : "rope_parameters";
  config.hasObject(section); // records a type error if it is not an object
  for (const std::string &key : config.getObjectKeys(section))
    if (key == "full_attention" || key == "sliding_attention")
      config.reject("per-layer-type '" + section + "' is not supported");

  auto key = [&](llvm::StringRef name) { return section + "." + name.str(); };
  double theta = config.getFloat(key("rope_theta"),
                                 config.getFloat("rope_theta", defaults.theta));
  double partial = config.getFloat(
      key("partial_rotary_factor"),
      config.getFloat("partial_rotary_factor", defaults.partialRotaryFactor));
  std::string type = config.getString(key("rope_type"),
                                      config.getString(key("type"), "default"));

  RopeFrequencies rope;
  if (!(theta > 0)) {
    config.reject("rope_theta must be positive, got " + formatNumber(theta));
    return rope;
  }
  if (partial != 1.0 && !defaults.allowPartial) {
    config.reject("partial_rotary_factor = " + formatNumber(partial) +
                  " is not supported by this family (it rotates whole heads)");
    return rope;
  }
  // Python's int(head_dim * partial_rotary_factor).
  auto dim = static_cast<int64_t>(static_cast<double>(headDim) * partial);
  if (dim < 1 || dim > headDim) {
    config.reject("partial_rotary_factor = " + formatNumber(partial) +
                  " gives a rotary dimension of " + std::to_string(dim) +
                  " for head_dim " + std::to_string(headDim));
    return rope;
  }
  rope.invFreq = defaultInvFreq(theta, dim);
  if (rope.rotaryDim() > headDim) {
    config.reject("rotary dimension " + std::to_string(rope.rotaryDim()) +
                  " exceeds head_dim " + std::to_string(headDim));
    return rope;
  }

  if (type == "default")
    return rope;
  if (type == "linear") {
    auto factor = static_cast<float>(config.getFloat(key("factor")));
    if (!(factor > 0))
      config.reject(key("factor") + " must be positive");
    for (float &freq : rope.invFreq)
      freq /= factor;
    return rope;
  }
  if (type == "llama3") {
    auto factor = static_cast<float>(config.getFloat(key("factor")));
    auto low = static_cast<float>(config.getFloat(key("low_freq_factor")));
    auto high = static_cast<float>(config.getFloat(key("high_freq_factor")));
    // Older configs keep the pre-extension length at the top level.
    std::string contextKey = key("original_max_position_embeddings");
    if (!config.has(contextKey) &&
        config.has("original_max_position_embeddings"))
      contextKey = "original_max_position_embeddings";
    auto oldContext = static_cast<float>(config.getFloat(contextKey));
    if (config.failed())
      return rope;
    if (!(factor > 0) || !(low > 0) || !(high > low) || !(oldContext > 0)) {
      config.reject("llama3 rope parameters need factor > 0 and "
                    "high_freq_factor > low_freq_factor > 0");
      return rope;
    }
    applyLlama3Scaling(rope.invFreq, factor, low, high, oldContext);
    return rope;
  }
  config.reject("rope type '" + type +
                "' is not supported (supported: default, linear, llama3)");
  return rope;
}

} // namespace hybridc::hf
