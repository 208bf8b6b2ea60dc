// The PPO-shaped step and its timing.
#include "hybrid/PpoShapedStep.h"

#include <algorithm>

namespace hybrid {

namespace {

/// The largest value `symbol` may take in executable `exe` of `bundle`; 0
/// when it is unbounded or absent.
int64_t symbolLimitOf(const BundleDesc &bundle, const std::string &exe,
                      const std::string &symbol) {
  for (const ExecutableDesc &e : bundle.executables)
    if (e.name == exe)
      for (size_t i = 0; i < e.symbols.size(); ++i)
        if (e.symbols[i] == symbol)
          return e.symbolMax[i];
  return 0;
}

} // namespace

std::string PpoShapedStep::missingExecutables(const Engine &engine) {
  std::vector<std::string> missing;
  if (!engine.hasExecutable("prefill") || !engine.hasExecutable("decode"))
    missing.push_back("no prefill/decode executables (compile the model "
                      "without --no-generate)");
  if (!engine.hasExecutable("forward_backward") ||
      !engine.hasExecutable("step"))
    missing.push_back("no training executables (compile the model with "
                      "hybridc --train)");
  std::string joined;
  for (const std::string &m : missing)
    joined += (joined.empty() ? "" : " and ") + m;
  return joined;
}

int64_t PpoShapedStep::positionLimit(const BundleDesc &bundle) {
  // The sequences must fit the KV cache and the training pass.
  int64_t limit = 0;
  for (int64_t l : {symbolLimitOf(bundle, "prefill", "cap"),
                    symbolLimitOf(bundle, "forward_backward", "seq")})
    if (l > 0)
      limit = limit == 0 ? l : std::min(limit, l);
  return limit;
}

PpoShapedStep::PpoShapedStep(Engine &engine, TokenBatch prompts,
                             PpoShapedStepConfig config)
    : engine_(&engine), prompts_(std::move(prompts)), config_(config) {
  const std::string missing = missingExecutables(engine);
  if (!missing.empty())
    throw Error("bundle '" + engine.bundle().model + "': " + missing);
  if (config_.microBatch < 1 || prompts_.rows() % config_.microBatch != 0)
    throw Error("ppo step: " + std::to_string(prompts_.rows()) +
                " prompts are no whole number of micro-batches of " +
                std::to_string(config_.microBatch));
  const int64_t positions = prompts_.seq() + config_.newTokens;
  const int64_t limit = positionLimit(engine.bundle());
  if (limit > 0 && positions > limit)
    throw Error("ppo step: prompts of " + std::to_string(prompts_.seq()) +
                " tokens and " + std::to_string(config_.newTokens) +
                " new tokens need " + std::to_string(positions) +
                " positions; the model has " + std::to_string(limit));
}

PpoStepCost PpoShapedStep::run(uint64_t seed) {
  Engine &engine = *engine_;
  Device &device = engine.device();
  GenerateConfig sampling;
  sampling.greedy = false; // temperature 1, no top-k / top-p
  sampling.maxNewTokens = sampling.minNewTokens = config_.newTokens;
  sampling.eosTokenId = -1; // no early stop
  sampling.cudaGraph = config_.cudaGraph;
  sampling.releaseInferenceCache = config_.releaseInferenceCache;
  sampling.seed = seed;
  StepConfig optimizer;
  optimizer.optimizer = trainPlanOf(engine.bundle()).optimizer;
  optimizer.lr = config_.lr;
  const int64_t batch = prompts_.rows(), microBatch = config_.microBatch;

  PpoStepCost c;
  c.total = measurePhase(device, [&] {
    c.switches += measurePhase(device, [&] { engine.eval(); });
    GenerateResult generated;
    c.generate = measurePhase(device, [&] {
      generated = engine.generate(prompts_.inputIds, nullptr, sampling);
    });
    c.newTokens = generated.steps;
    const TokenBatch sequences{
        concatColumns(prompts_.inputIds, generated.tokens), std::nullopt};
    c.switches += measurePhase(device, [&] { engine.train(); });
    c.train = measurePhase(device, [&] {
      double loss = 0;
      for (int64_t first = 0; first < batch; first += microBatch)
        loss += engine.forwardBackward(
            sequences.rowsFrom(first, microBatch).inputIds);
      engine.step(optimizer);
      c.loss = static_cast<float>(loss / (batch / microBatch));
    });
  });
  return c;
}

PpoStepCost PpoStepTiming::median() const {
  if (steps.size() < 2)
    return steps.at(0);
  std::vector<PpoStepCost> timed(steps.begin() + 1, steps.end());
  std::sort(timed.begin(), timed.end(),
            [](const PpoStepCost &a, const PpoStepCost &b) {
              return a.total.seconds < b.total.seconds;
            });
  return timed[timed.size() / 2];
}

uint64_t PpoStepTiming::maxSwitchBytes() const {
  uint64_t most = 0;
  for (const PpoStepCost &c : steps)
    most = std::max(most, c.switches.bytesAllocated + c.switches.bytesCopied);
  return most;
}

PpoStepTiming timePpoSteps(PpoShapedStep &step, uint64_t seed, int repeat) {
  PpoStepTiming timing;
  for (int i = 0; i <= repeat; ++i) {
    timing.steps.push_back(step.run(seed + static_cast<uint64_t>(i)));
    if (i == 0)
      step.engine().device().resetProfile();
  }
  return timing;
}

} // namespace hybrid
