// The engine's LoRA adapters in PEFT's files: adapter_config.json and
// adapter_model.safetensors (what PeftModel.save_pretrained writes and
// from_pretrained reads), and PEFT's initialisation.
#include "hybrid/Engine.h"

#include "hybrid/FileIO.h"
#include "hybrid/Float16.h"
#include "hybrid/SafeTensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>

namespace hybrid {

namespace {

const char *const kConfigFile = "/adapter_config.json";
const char *const kWeightsFile = "/adapter_model.safetensors";

const LoraDesc &loraOf(const BundleDesc &bundle, const char *call) {
  if (!bundle.lora.enabled())
    throw Error(std::string(call) + ": bundle '" + bundle.model +
                "' has no LoRA adapters (compile it with hybridc --lora-dim)");
  return bundle.lora;
}

/// The adapters' parameter names, A then B of each, in the bundle's order.
std::vector<std::string> adapterParams(const LoraDesc &lora) {
  std::vector<std::string> names;
  for (const LoraAdapterDesc &a : lora.adapters) {
    names.push_back(a.loraA);
    names.push_back(a.loraB);
  }
  return names;
}

/// `values` as the bytes of a parameter of `dtype` (a float type).
std::vector<uint8_t> toBytes(const std::vector<float> &values, DType dtype) {
  std::vector<uint8_t> bytes(values.size() * dtypeSize(dtype));
  for (size_t k = 0; k < values.size(); ++k) {
    if (dtype == DType::F32) {
      std::memcpy(bytes.data() + 4 * k, &values[k], 4);
    } else {
      uint16_t h =
          dtype == DType::BF16 ? floatToBf16(values[k]) : floatToF16(values[k]);
      std::memcpy(bytes.data() + 2 * k, &h, 2);
    }
  }
  return bytes;
}

} // namespace

void Engine::initAdapters(uint64_t seed) { initAdapters(seed, {}); }

void Engine::initAdapters(uint64_t seed, const std::set<std::string> &modules) {
  const LoraDesc &lora = loraOf(*bundle_, "initAdapters");
  if (!weights_->bound())
    throw Error("initAdapters: bind the base weights first");
  // One generator per adapter, seeded by the seed and the adapter's index:
  // an adapter's values do not depend on which others are initialised.
  for (size_t k = 0; k < lora.adapters.size(); ++k) {
    const LoraAdapterDesc &a = lora.adapters[k];
    if (!modules.empty() && !modules.count(a.module))
      continue;
    const size_t ia = *weights_->find(a.loraA), ib = *weights_->find(a.loraB);
    const Shape &shapeA = weights_->shape(ia);
    // kaiming_uniform_(a = sqrt(5)) on A [r, in]: gain sqrt(2 / (1 + 5)),
    // bound gain x sqrt(3 / fan_in) = 1 / sqrt(in).
    const double bound = 1.0 / std::sqrt(static_cast<double>(shapeA[1]));
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + k);
    std::uniform_real_distribution<double> uniform(-bound, bound);
    std::vector<float> values(static_cast<size_t>(numElements(shapeA)));
    for (float &v : values)
      v = static_cast<float>(uniform(rng));
    weights_->write(ia, toBytes(values, weights_->dtype(ia)).data());
    std::vector<uint8_t> zeros(weights_->bytes(ib), 0);
    weights_->write(ib, zeros.data());
  }
  releaseOptimizerStart();
}

void Engine::loadAdapters(const std::string &dir) {
  const LoraDesc &lora = loraOf(*bundle_, "loadAdapters");
  const std::string configPath = dir + kConfigFile;
  std::ifstream in(configPath);
  if (!in)
    throw Error(configPath + ": cannot read (a PEFT adapter folder holds "
                             "adapter_config.json and "
                             "adapter_model.safetensors)");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw Error(configPath + ": not JSON: " + e.what());
  }
  auto field = [&](const char *key) -> const nlohmann::json & {
    if (!config.is_object() || !config.contains(key))
      throw Error(configPath + ": no '" + key + "'");
    return config.at(key);
  };
  const nlohmann::json &type = field("peft_type");
  if (!type.is_string() || type.get<std::string>() != "LORA")
    throw Error(configPath + ": peft_type " + type.dump() +
                ", this bundle's adapters are LORA");
  const nlohmann::json &r = field("r"), &alpha = field("lora_alpha");
  if (!r.is_number_integer() || r.get<int64_t>() != lora.rank)
    throw Error(configPath + ": r " + r.dump() + ", the bundle was compiled " +
                "with --lora-dim " + std::to_string(lora.rank));
  if (!alpha.is_number() ||
      std::abs(alpha.get<double>() - lora.alpha) > 1e-12 * lora.alpha)
    throw Error(configPath + ": lora_alpha " + alpha.dump() +
                ", the bundle was compiled with --lora-alpha " +
                nlohmann::json(lora.alpha).dump());
  if (config.contains("use_rslora") && config["use_rslora"] == true)
    throw Error(configPath + ": use_rslora (scale alpha / sqrt(r)) is not "
                             "supported; the bundle scales by alpha / r");
  const std::vector<std::string> names = adapterParams(lora);
  CheckpointBinding binding;
  binding.only = {names.begin(), names.end()};
  weights_->bindFromSafeTensors(dir + kWeightsFile, binding);
  releaseOptimizerStart();
}

void Engine::saveAdapters(const std::string &dir) const {
  const LoraDesc &lora = loraOf(*bundle_, "saveAdapters");
  // One level, as `mkdir` does: a mistyped parent is an error when the
  // first file cannot be created.
  ::mkdir(dir.c_str(), 0755);
  weights_->saveSafeTensors(dir + kWeightsFile, adapterParams(lora),
                            {{"format", "pt"}});
  nlohmann::json targets = nlohmann::json::array();
  if (!lora.targetModules.empty())
    for (const std::string &t : lora.targetModules)
      targets.push_back(t);
  else // the default: every adapted module, by its last component
    for (const LoraAdapterDesc &a : lora.adapters) {
      std::string last = a.module.substr(a.module.rfind('.') + 1);
      if (std::find(targets.begin(), targets.end(), last) == targets.end())
        targets.push_back(last);
    }
  bool fanInFanOut = false;
  for (const LoraAdapterDesc &a : lora.adapters)
    fanInFanOut |= a.fanInFanOut;
  nlohmann::json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"r", lora.rank},
      {"lora_alpha", lora.alpha},
      {"lora_dropout", 0.0},
      {"target_modules", targets},
      {"fan_in_fan_out", fanInFanOut},
      {"bias", "none"},
      {"use_rslora", false},
      {"init_lora_weights", true},
      {"inference_mode", true},
      {"modules_to_save", nullptr},
      {"base_model_name_or_path", bundle_->source},
  };
  const std::string text = config.dump(2) + "\n";
  detail::writeFileAtomically(dir + kConfigFile, [&](const auto &write) {
    write(text.data(), text.size());
  });
}

} // namespace hybrid
