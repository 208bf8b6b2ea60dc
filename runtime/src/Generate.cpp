// Engine::generate: binds @prefill and @decode to one bucket, writes the
// generation options into their state, runs the prompt, then decode steps
// until every row finished or the budget is spent, and reads the tokens.
#include "hybrid/Engine.h"

#include "hybrid/AttentionMask.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace hybrid {

namespace {

/// The states @prefill and @decode share that hold what one generation
/// produced or needs; released by release_inference_cache and whenever the
/// bucket changes.
bool isGenerationState(const std::string &name) {
  return name.rfind("gen.", 0) == 0 || name.rfind("kv.", 0) == 0;
}

/// Symbol values in an executable's order, by name.
std::vector<int64_t>
symbolValues(const ExecutableDesc &exe,
             const std::vector<std::pair<std::string, int64_t>> &values) {
  std::vector<int64_t> out;
  for (const std::string &s : exe.symbols) {
    auto it = std::find_if(values.begin(), values.end(),
                           [&](const auto &v) { return v.first == s; });
    if (it == values.end())
      throw Error(exe.name + ": unexpected symbol '" + s +
                  "' (generation binds batch, seq, cap and nmax)");
    out.push_back(it->second);
  }
  return out;
}

/// The largest value `symbol` may take in `exe`; 0 when unbounded.
int64_t symbolLimit(const ExecutableDesc &exe, const std::string &symbol) {
  for (size_t s = 0; s < exe.symbols.size(); ++s)
    if (exe.symbols[s] == symbol)
      return exe.symbolMax[s];
  return 0;
}

/// The batch bucket of `batch` rows when decode steps are captured: a
/// power of two up to 64, then a multiple of 64, so a few graphs serve
/// every batch size.
int64_t batchBucket(int64_t batch) {
  if (batch > 64)
    return (batch + 63) / 64 * 64;
  int64_t b = 1;
  while (b < batch)
    b *= 2;
  return b;
}

/// `t` ([batch, ...]) with its last row repeated up to `rows` rows.
HostTensor padRows(const HostTensor &t, int64_t rows) {
  const int64_t batch = t.shape()[0];
  if (rows == batch)
    return t;
  Shape shape = t.shape();
  shape[0] = rows;
  HostTensor out = HostTensor::allocate(t.dtype(), shape);
  const size_t rowBytes = t.bytes() / static_cast<size_t>(batch);
  auto *dst = static_cast<uint8_t *>(out.data());
  const auto *src = static_cast<const uint8_t *>(t.data());
  std::memcpy(dst, src, t.bytes());
  for (int64_t r = batch; r < rows; ++r)
    std::memcpy(dst + r * rowBytes, src + (batch - 1) * rowBytes, rowBytes);
  return out;
}

/// The first `batch` rows of `t` ([rows, ...]).
HostTensor firstRows(const HostTensor &t, int64_t batch) {
  if (t.shape()[0] == batch)
    return t;
  Shape shape = t.shape();
  shape[0] = batch;
  HostTensor out = HostTensor::allocate(t.dtype(), shape);
  std::memcpy(out.data(), t.data(), out.bytes());
  return out;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

GenerateResult Engine::generate(const HostTensor &inputIds,
                                const HostTensor *attentionMask,
                                const GenerateConfig &config) {
  if (!bundle_->lora.fusedGeneration)
    return generateOnWeights(inputIds, attentionMask, config);
  // DeepSpeed's hybrid engine: fuse_lora_weight before generating,
  // unfuse_lora_weight after, so no executable but @prefill/@decode ever
  // sees the merged weights (whatever generate throws).
  auto merge = [&](const char *name) {
    const auto start = std::chrono::steady_clock::now();
    executable(name).run(NamedTensors{});
    return msSince(start);
  };
  double ms = merge("lora_fuse");
  GenerateResult result;
  try {
    result = generateOnWeights(inputIds, attentionMask, config);
  } catch (...) {
    merge("lora_unfuse");
    throw;
  }
  result.loraMergeMs = ms + merge("lora_unfuse");
  return result;
}

GenerateResult Engine::generateOnWeights(const HostTensor &inputIds,
                                         const HostTensor *attentionMask,
                                         const GenerateConfig &config) {
  const auto called = std::chrono::steady_clock::now();
  if (!hasExecutable("prefill") || !hasExecutable("decode"))
    throw Error("bundle '" + bundle_->model +
                "' has no prefill/decode executables (compile it from a "
                "language model without --no-generate)");
  Executable &prefill = executable("prefill");
  Executable &decode = executable("decode");

  // Everything a user can get wrong is checked before any work.
  if (inputIds.dtype() != DType::I64 || inputIds.shape().size() != 2)
    throw Error("generate: input_ids must be i64 [batch, prompt], got " +
                std::string(dtypeName(inputIds.dtype())) + " " +
                shapeToString(inputIds.shape()));
  const int64_t batch = inputIds.shape()[0], prompt = inputIds.shape()[1];
  if (batch < 1 || prompt < 1)
    throw Error("generate: empty prompt batch " +
                shapeToString(inputIds.shape()));
  if (config.maxNewTokens < 1)
    throw Error("generate: max_new_tokens must be >= 1, got " +
                std::to_string(config.maxNewTokens));
  if (config.minNewTokens < 0 || config.minNewTokens > config.maxNewTokens)
    throw Error("generate: min_new_tokens " +
                std::to_string(config.minNewTokens) +
                " must be in [0, max_new_tokens = " +
                std::to_string(config.maxNewTokens) + "]");
  if (config.maxOutTokens < 0)
    throw Error("generate: max_out_tokens must be >= 0 (0: automatic)");
  const int64_t needed = prompt + config.maxNewTokens;
  const int64_t positionLimit = symbolLimit(prefill.desc(), "cap");
  if (positionLimit > 0 && needed > positionLimit)
    throw Error("generate: the prompt (" + std::to_string(prompt) +
                " tokens) and max_new_tokens (" +
                std::to_string(config.maxNewTokens) + ") need " +
                std::to_string(needed) + " positions; the model has " +
                std::to_string(positionLimit));
  int64_t capacity = config.maxOutTokens;
  if (capacity == 0) {
    capacity = positionLimit > 0 ? std::min<int64_t>(512, positionLimit) : 512;
    capacity = std::max(capacity, needed);
  }
  if (needed > capacity)
    throw Error("generate: the prompt (" + std::to_string(prompt) +
                " tokens) and max_new_tokens (" +
                std::to_string(config.maxNewTokens) + ") need " +
                std::to_string(needed) +
                " KV-cache slots, more than max_out_tokens = " +
                std::to_string(capacity));
  if (!config.greedy &&
      (!(config.temperature > 0) || !std::isfinite(config.temperature)))
    throw Error("generate: temperature must be > 0 when sampling, got " +
                std::to_string(config.temperature));
  // Below f32's smallest normal number the kernels' scaled logits are 0/0
  // (subnormals flush to zero): every log-prob would be NaN.
  if (!config.greedy &&
      config.temperature < std::numeric_limits<float>::min()) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", config.temperature);
    throw Error(std::string("generate: temperature ") + value +
                " is below f32's smallest normal number (1.2e-38); sample "
                "greedily instead");
  }
  if (!config.greedy && !(config.topP > 0 && config.topP <= 1))
    throw Error("generate: top_p must be in (0, 1], got " +
                std::to_string(config.topP));
  if (config.topK < 0)
    throw Error("generate: top_k must be >= 0, got " +
                std::to_string(config.topK));
  if (config.stopCheckInterval < 1)
    throw Error("generate: the stop-check interval must be >= 1");
  const int64_t vocab = [&] {
    const ExecutableDesc &f = prefill.desc();
    for (const CommandDesc &c : f.commands)
      if (std::holds_alternative<ops::Sample>(c.op) ||
          std::holds_alternative<ops::SampleStep>(c.op))
        if (auto v = f.buffers[c.operands[0]].shape.back().constant())
          return *v;
    return int64_t(-1);
  }();
  for (int64_t id : {config.eosTokenId, config.padTokenId})
    if (id < -1 || (vocab > 0 && id >= vocab))
      throw Error("generate: token id " + std::to_string(id) +
                  " is outside the vocabulary [0, " + std::to_string(vocab) +
                  ")");

  // With captured steps, the batch runs in its bucket (extra rows repeat
  // the last one and are dropped at the end).
  const bool captured = config.cudaGraph && device_->supportsGraphs();
  const int64_t rows = captured ? batchBucket(batch) : batch;
  NamedTensors inputs = {{"input_ids", padRows(inputIds, rows)}};
  const bool takesMask =
      std::any_of(prefill.inputNames().begin(), prefill.inputNames().end(),
                  [](const std::string &n) { return n == "attention_mask"; });
  if (attentionMask) {
    const HostTensor &m = *attentionMask;
    checkAttentionMask(m, inputIds.shape(), "generate");
    // Beyond the shared rule: prompts are left-padded.
    const int64_t *mask = m.as<int64_t>();
    bool padded = false;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t tokens = 0;
      for (int64_t t = 0; t < prompt; ++t) {
        const int64_t v = mask[b * prompt + t];
        if (v == 1 && tokens == 0 && t > 0)
          padded = true;
        if (v == 0 && tokens > 0)
          throw Error("generate: attention_mask row " + std::to_string(b) +
                      " has padding after a token; prompts are left-padded");
        tokens += v;
      }
    }
    if (padded && !takesMask)
      throw Error("generate: this bundle's model takes no attention_mask "
                  "(an ONNX export of input_ids only); it cannot run "
                  "padded prompts");
    if (takesMask)
      inputs["attention_mask"] = padRows(m, rows);
  }

  // One bucket per shape of generation; the state of another is let go.
  std::vector<std::pair<std::string, int64_t>> bucket = {
      {"batch", rows},
      {"seq", prompt},
      {"cap", capacity},
      {"nmax", config.maxNewTokens}};
  std::vector<int64_t> stateKey = {rows, capacity, config.maxNewTokens};
  if (stateKey != generationBucket_) {
    for (size_t i = 0; i < states_->size(); ++i)
      if (isGenerationState(states_->desc(i).name))
        states_->release(states_->desc(i).name);
    generationBucket_ = stateKey;
  }

  // The options the steps read on the device.
  Stream &stream = device_->defaultStream();
  auto writeState = [&](const char *name, const HostTensor &value) {
    states_->allocate(name, value.shape());
    DeviceTensor t = states_->tensor(name);
    device_->copyHostToDevice(t.data, value.data(), value.bytes(), stream);
  };
  HostTensor settings = HostTensor::fromVector<int64_t>(
      {4}, {config.eosTokenId, config.padTokenId, config.minNewTokens, 0});
  HostTensor sampling = HostTensor::fromVector<float>(
      {3}, {config.greedy ? 0.0f : config.temperature, config.topP,
            static_cast<float>(config.topK)});
  HostTensor rng = HostTensor::fromVector<int64_t>(
      {2}, {static_cast<int64_t>(config.seed), 0});
  writeState("gen.config", settings);
  writeState("gen.sampling", sampling);
  writeState("gen.rng", rng);

  prefill.bind(symbolValues(prefill.desc(), bucket));
  decode.bind(symbolValues(decode.desc(), bucket));
  // The decode step's graph is made before the prompt's pass, so that GEMM
  // plans step tuning changes (Device::captureTuned) are the prompt's
  // too (an LM head of one row is both's) and the first generation's bits
  // are every later one's. Tuning replays the step: the generation state
  // it writes is saved and put back around the replays. The KV caches need
  // no copy: a replay writes slots the prompt's pass writes again, or slots
  // after the prompt, which each step writes before any step reads them.
  // Before the prompt's pass the state is no step's: each replay starts
  // at the middle step's position (gen.past, gen.position) with the keys
  // before it visible (gen.key_mask: attention skips masked keys), so that
  // attention reads as many keys as an average step does; the prompt's
  // pass writes all three anew.
  std::vector<std::pair<DeviceTensor, DeviceAllocation>> saved, midway;
  std::vector<HostTensor> midwayValues; // (until the stream has read them)
  const int64_t middle = prompt + config.maxNewTokens / 2;
  StepState tuning;
  tuning.save = [&](Stream &s) {
    saved.clear();
    midway.clear();
    for (const char *name : {"gen.past", "gen.position", "gen.key_mask"}) {
      if (!states_->find(name) || !states_->allocated(name))
        continue;
      DeviceTensor t = states_->tensor(name);
      if (t.dtype != DType::I64 || t.shape.empty())
        continue;
      HostTensor at = HostTensor::allocate(DType::I64, t.shape);
      int64_t *v = at.as<int64_t>();
      if (std::string(name) == "gen.key_mask") {
        const int64_t width = t.shape.back();
        for (int64_t i = 0; i < at.numel(); ++i)
          v[i] = i % width < middle ? 1 : 0;
      } else {
        std::fill(v, v + at.numel(), middle);
      }
      DeviceAllocation copy(device_, t.bytes());
      device_->copyHostToDevice(copy.get(), at.data(), t.bytes(), s);
      midway.emplace_back(t, std::move(copy));
      midwayValues.push_back(std::move(at));
    }
    for (const StateUse &use : decode.desc().states) {
      const std::string &name = states_->desc(use.state).name;
      if (use.access != Access::ReadWrite || name.rfind("kv.", 0) == 0 ||
          !states_->allocated(name))
        continue;
      DeviceTensor t = states_->tensor(name);
      DeviceAllocation copy(device_, t.bytes());
      device_->copyDeviceToDevice(copy.get(), t.data, t.bytes(), s);
      saved.emplace_back(t, std::move(copy));
    }
  };
  tuning.restore = [&](Stream &s) {
    for (const auto &[t, copy] : saved)
      device_->copyDeviceToDevice(t.data, copy.get(), t.bytes(), s);
    for (const auto &[t, copy] : midway)
      device_->copyDeviceToDevice(t.data, copy.get(), t.bytes(), s);
  };
  // (One new token is the prompt's pass alone: no step to capture.)
  if (captured && config.maxNewTokens > 1)
    decode.captureGraph(stream, tuning);

  GenerateResult result;
  auto start = std::chrono::steady_clock::now();
  // An omitted mask is all ones, the executable's default.
  const NamedTensors all = prefill.withDefaults(inputs);
  for (size_t i = 0; i < prefill.inputNames().size(); ++i) {
    DeviceTensor slot = prefill.input(i);
    const HostTensor &t = all.at(prefill.inputNames()[i]);
    device_->copyHostToDevice(slot.data, t.data(), slot.bytes(), stream);
  }
  // Captured too: its launches cost more host time than its kernels take
  // (OPT-1.3B, 128 tokens: ~180 launches), and a trainer's generations
  // repeat one prompt bucket.
  if (captured)
    prefill.enqueueGraph(stream);
  else
    prefill.enqueue(stream);
  device_->synchronize(stream);
  result.prefillMs = msSince(start);

  // Decode steps; every few, a look at whether all rows finished.
  start = std::chrono::steady_clock::now();
  int64_t steps = 1;
  HostTensor finished = HostTensor::allocate(DType::Bool, {rows});
  auto allFinished = [&] {
    DeviceTensor f = states_->tensor("gen.finished");
    device_->copyDeviceToHost(finished.data(), f.data, f.bytes(), stream);
    device_->synchronize(stream);
    const auto *flags = static_cast<const uint8_t *>(finished.data());
    return std::all_of(flags, flags + batch, [](uint8_t v) { return v; });
  };
  bool done = config.eosTokenId >= 0 && allFinished();
  while (!done && steps < config.maxNewTokens) {
    if (captured)
      decode.enqueueGraph(stream);
    else
      decode.enqueue(stream);
    ++steps;
    if (config.eosTokenId >= 0 && steps % config.stopCheckInterval == 0)
      done = allFinished();
  }
  device_->synchronize(stream);
  result.decodeMs = msSince(start);
  result.steps = steps;
  result.decodeGraphOperations = captured ? decode.graphOperations() : 0;

  // The answer: the first `steps` columns.
  auto read = [&](const char *name, DType dtype) {
    DeviceTensor t = states_->tensor(name);
    HostTensor all = HostTensor::allocate(dtype, t.shape);
    device_->copyDeviceToHost(all.data(), t.data, t.bytes(), stream);
    return all;
  };
  HostTensor tokens = read("gen.tokens", DType::I64);
  HostTensor logprobs = read("gen.logprobs", DType::F32);
  HostTensor lengths = read("gen.lengths", DType::I64);
  device_->synchronize(stream);
  result.lengths = firstRows(lengths, batch);
  const int64_t width = tokens.shape()[1];
  result.tokens = HostTensor::allocate(DType::I64, {batch, steps});
  result.logprobs = HostTensor::allocate(DType::F32, {batch, steps});
  for (int64_t b = 0; b < batch; ++b) {
    std::memcpy(result.tokens.as<int64_t>() + b * steps,
                tokens.as<int64_t>() + b * width, steps * sizeof(int64_t));
    std::memcpy(result.logprobs.as<float>() + b * steps,
                logprobs.as<float>() + b * width, steps * sizeof(float));
  }
  generateSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - called)
          .count();
  generatedSamples_ += batch;
  generatedTokens_ += batch * steps;
  if (config.releaseInferenceCache) {
    for (size_t i = 0; i < states_->size(); ++i)
      if (isGenerationState(states_->desc(i).name))
        states_->release(states_->desc(i).name);
    generationBucket_.clear();
    // Their workspaces too (activations of the prompt, the decode step's
    // buffers): training gets all of it; the next call binds again.
    executable("prefill").release();
    executable("decode").release();
  }
  return result;
}

} // namespace hybrid
