// DeepSpeed-style configuration: parsing, defaults, checks, and the
// learning-rate schedules (see TrainConfig.h).
#include "hybrid/TrainConfig.h"

#include "hybrid/Types.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace hybrid {

namespace {

using Json = nlohmann::json;

/// Reads the keys of one JSON object, reporting the ones nobody asked for.
class Section {
public:
  Section(const Json &object, std::string path,
          std::vector<std::string> *unknown)
      : object_(object), path_(std::move(path)), unknown_(unknown) {
    if (!object_.is_object())
      throw Error(where("") + " must be an object");
  }
  ~Section() = default;

  bool has(const char *key) {
    seen_.insert(key);
    return object_.contains(key) && !object_.at(key).is_null();
  }
  const Json &at(const char *key) {
    seen_.insert(key);
    return object_.at(key);
  }
  double number(const char *key, double dflt) {
    if (!has(key))
      return dflt;
    const Json &v = object_.at(key);
    if (!v.is_number())
      throw Error(where(key) + " must be a number, got " + v.dump());
    return v.get<double>();
  }
  int64_t integer(const char *key, int64_t dflt, int64_t min) {
    if (!has(key))
      return dflt;
    const Json &v = object_.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      throw Error(where(key) + " must be an integer >= " + std::to_string(min) +
                  ", got " + v.dump());
    return v.get<int64_t>();
  }
  bool boolean(const char *key, bool dflt) {
    if (!has(key))
      return dflt;
    const Json &v = object_.at(key);
    if (!v.is_boolean())
      throw Error(where(key) + " must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string string(const char *key, const std::string &dflt) {
    if (!has(key))
      return dflt;
    const Json &v = object_.at(key);
    if (!v.is_string())
      throw Error(where(key) + " must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::string where(const std::string &key) const {
    return "config: " + (path_.empty() ? key
                         : key.empty() ? path_
                                       : path_ + "." + key);
  }
  /// Records the keys no reader asked for.
  void finish() {
    if (!unknown_)
      return;
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (!seen_.count(it.key()))
        unknown_->push_back(path_.empty() ? it.key() : path_ + "." + it.key());
  }

private:
  const Json &object_;
  std::string path_;
  std::vector<std::string> *unknown_;
  std::set<std::string> seen_;
};

void batchSizes(Section &top, TrainConfig &c) {
  const int64_t world = 1;
  int64_t train = top.integer("train_batch_size", 0, 1);
  int64_t micro = top.integer("train_micro_batch_size_per_gpu", 0, 1);
  int64_t accumulation = top.integer("gradient_accumulation_steps", 0, 1);
  if (train && micro && accumulation) {
    // all three: checked below
  } else if (train && micro) {
    accumulation = train / micro / world;
  } else if (train && accumulation) {
    micro = train / world / accumulation;
  } else if (micro && accumulation) {
    train = micro * accumulation * world;
  } else if (train) {
    accumulation = 1;
    micro = train / world;
  } else if (micro) {
    train = micro * world;
    accumulation = 1;
  } else {
    throw Error("config: either train_batch_size or "
                "train_micro_batch_size_per_gpu must be given");
  }
  if (micro < 1 || accumulation < 1 || train != micro * accumulation * world)
    throw Error("config: train_batch_size (" + std::to_string(train) +
                ") must equal train_micro_batch_size_per_gpu (" +
                std::to_string(micro) + ") x gradient_accumulation_steps (" +
                std::to_string(accumulation) + ") x world size (1)");
  c.trainBatchSize = train;
  c.microBatchSize = micro;
  c.gradientAccumulationSteps = accumulation;
}

void optimizer(Section &top, TrainConfig &c,
               std::vector<std::string> *unknown) {
  // DeepSpeed's Adam(W) defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
  // weight decay 0.
  c.optimizer.weightDecay = 0.0f;
  if (!top.has("optimizer"))
    return;
  Section opt(top.at("optimizer"), "optimizer", unknown);
  const std::string type = opt.string("type", "AdamW");
  if (type != "AdamW" && type != "Adam")
    throw Error("config: optimizer.type '" + type +
                "' is not supported (AdamW, or Adam in its AdamW mode)");
  if (opt.has("params")) {
    Section p(opt.at("params"), "optimizer.params", unknown);
    if (type == "Adam" && !p.boolean("adam_w_mode", true))
      throw Error("config: optimizer.params.adam_w_mode false (Adam with "
                  "L2 regularisation) is not supported");
    c.optimizer.lr = static_cast<float>(p.number("lr", 1e-3));
    c.optimizer.eps = static_cast<float>(p.number("eps", 1e-8));
    c.optimizer.weightDecay = static_cast<float>(p.number("weight_decay", 0));
    if (p.has("betas")) {
      const Json &b = p.at("betas");
      if (!b.is_array() || b.size() != 2 || !b[0].is_number() ||
          !b[1].is_number())
        throw Error("config: optimizer.params.betas must be [b1, b2], got " +
                    b.dump());
      c.optimizer.beta1 = b[0].get<float>();
      c.optimizer.beta2 = b[1].get<float>();
    }
    p.finish();
  }
  opt.finish();
  const StepConfig &o = c.optimizer;
  if (!(o.lr >= 0) || !(o.eps > 0) || !(o.weightDecay >= 0) ||
      !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
    throw Error("config: optimizer.params: lr and weight_decay must be >= 0, "
                "eps > 0, betas in [0, 1)");
}

void scheduler(Section &top, TrainConfig &c,
               std::vector<std::string> *unknown) {
  if (!top.has("scheduler"))
    return;
  Section s(top.at("scheduler"), "scheduler", unknown);
  const std::string type = s.string("type", "");
  SchedulerConfig &r = c.scheduler;
  if (type == "WarmupLR")
    r.kind = SchedulerConfig::Kind::WarmupLR;
  else if (type == "WarmupDecayLR")
    r.kind = SchedulerConfig::Kind::WarmupDecayLR;
  else
    throw Error("config: scheduler.type '" + type +
                "' is not supported (WarmupLR, WarmupDecayLR)");
  if (s.has("params")) {
    Section p(s.at("params"), "scheduler.params", unknown);
    r.warmupMinLr = p.number("warmup_min_lr", 0.0);
    r.warmupMaxLr = p.number("warmup_max_lr", 0.001);
    // DeepSpeed warms up over at least 2 steps (log(1) would divide).
    r.warmupNumSteps =
        std::max<int64_t>(2, p.integer("warmup_num_steps", 1000, 1));
    const std::string warmup = p.string("warmup_type", "log");
    if (warmup != "log" && warmup != "linear")
      throw Error("config: scheduler.params.warmup_type must be \"log\" or "
                  "\"linear\", got \"" +
                  warmup + "\"");
    r.linearWarmup = warmup == "linear";
    if (r.kind == SchedulerConfig::Kind::WarmupDecayLR) {
      if (!p.has("total_num_steps"))
        throw Error("config: scheduler.params.total_num_steps is required "
                    "by WarmupDecayLR");
      r.totalNumSteps = p.integer("total_num_steps", 0, 1);
    }
    p.finish();
  } else if (r.kind == SchedulerConfig::Kind::WarmupDecayLR) {
    throw Error("config: scheduler.params.total_num_steps is required by "
                "WarmupDecayLR");
  }
  s.finish();
}

void precisionAndZero(Section &top, std::vector<std::string> *unknown) {
  for (const char *key : {"fp16", "bf16"})
    if (top.has(key)) {
      Section p(top.at(key), key, unknown);
      if (p.boolean("enabled", false))
        throw Error(std::string("config: ") + key +
                    ".enabled: mixed-precision training is not implemented "
                    "yet (compile with --dtype for bf16 inference)");
      // The other keys of a disabled block do not matter.
      for (const char *k :
           {"loss_scale", "initial_scale_power", "loss_scale_window",
            "hysteresis", "min_loss_scale", "auto_cast"})
        p.has(k);
      p.finish();
    }
  if (top.has("zero_optimization")) {
    Section z(top.at("zero_optimization"), "zero_optimization", unknown);
    const int64_t stage = z.integer("stage", 0, 0);
    if (stage > 3)
      throw Error("config: zero_optimization.stage must be 0 to 3, got " +
                  std::to_string(stage));
    if (stage > 0)
      throw Error("config: zero_optimization.stage " + std::to_string(stage) +
                  " is not implemented yet (one GPU: use 0)");
    z.finish();
  }
}

void hybridEngine(Section &top, TrainConfig &c,
                  std::vector<std::string> *unknown) {
  if (!top.has("hybrid_engine"))
    return;
  Section h(top.at("hybrid_engine"), "hybrid_engine", unknown);
  c.hybridEngine = h.boolean("enabled", false);
  c.generation.maxOutTokens = h.integer("max_out_tokens", 512, 1);
  c.generation.releaseInferenceCache =
      h.boolean("release_inference_cache", false);
  c.generation.cudaGraph = h.boolean("enable_cuda_graph", true);
  if (h.integer("inference_tp_size", 1, 1) != 1)
    throw Error("config: hybrid_engine.inference_tp_size > 1 (tensor "
                "parallel generation) is not implemented");
  h.boolean("pin_parameters", true); // one weight store: always pinned
  h.integer("tp_gather_partition_size", 8, 1);
  h.finish();
}

} // namespace

TrainConfig parseTrainConfig(const std::string &text,
                             std::vector<std::string> *unknown) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error &e) {
    throw Error(std::string("config: not valid JSON: ") + e.what());
  }
  TrainConfig c;
  Section top(json, "", unknown);
  batchSizes(top, c);
  optimizer(top, c, unknown);
  scheduler(top, c, unknown);
  const double clip = top.number("gradient_clipping", 0.0);
  if (!(clip >= 0))
    throw Error("config: gradient_clipping must be >= 0");
  c.optimizer.maxGradNorm = static_cast<float>(clip);
  c.stepsPerPrint = top.integer("steps_per_print", 10, 1);
  precisionAndZero(top, unknown);
  hybridEngine(top, c, unknown);
  top.boolean("wall_clock_breakdown", false);
  top.finish();
  return c;
}

double learningRate(const SchedulerConfig &s, double lr, int64_t step) {
  if (s.kind == SchedulerConfig::Kind::None)
    return lr;
  double gamma = 1.0;
  if (step < s.warmupNumSteps) {
    gamma = s.linearWarmup
                ? static_cast<double>(step) / s.warmupNumSteps
                : std::log(static_cast<double>(step + 1)) /
                      std::log(static_cast<double>(s.warmupNumSteps));
  } else if (s.kind == SchedulerConfig::Kind::WarmupDecayLR) {
    gamma = std::max(
        0.0, static_cast<double>(s.totalNumSteps - step) /
                 std::max<double>(1.0, static_cast<double>(s.totalNumSteps -
                                                           s.warmupNumSteps)));
  }
  return s.warmupMinLr + (s.warmupMaxLr - s.warmupMinLr) * gamma;
}

} // namespace hybrid
