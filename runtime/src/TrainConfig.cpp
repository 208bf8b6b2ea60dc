// DeepSpeed-style configuration: parsing, defaults, checks, the check
// against a bundle's training plan, and the learning-rate schedules (see
// TrainConfig.h).
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
      throw Error((path_.empty() ? std::string("config: the top level")
                                 : "config: " + path_) +
                  " must be a JSON object, got " + object_.type_name());
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
  // Beyond these a step never ends in practice (train_batch_size 2^62 over
  // micro-batches of 1 ran silently forever), and products could overflow.
  constexpr int64_t kMaxMicro = int64_t(1) << 24, kMaxAccumulation = 1 << 20;
  if (micro > kMaxMicro)
    throw Error("config: train_micro_batch_size_per_gpu " +
                std::to_string(micro) + " is more than " +
                std::to_string(kMaxMicro) + " sequences");
  if (accumulation > kMaxAccumulation)
    throw Error("config: gradient_accumulation_steps " +
                std::to_string(accumulation) + " is more than " +
                std::to_string(kMaxAccumulation) + " micro-batches a step");
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
  if (accumulation > kMaxAccumulation)
    throw Error("config: train_batch_size " + std::to_string(train) +
                " over micro-batches of " + std::to_string(micro) + " is " +
                std::to_string(accumulation) +
                " micro-batches a step (gradient_accumulation_steps), more "
                "than " +
                std::to_string(kMaxAccumulation));
  if (micro > kMaxMicro)
    throw Error("config: train_batch_size " + std::to_string(train) +
                " gives micro-batches of " + std::to_string(micro) +
                " sequences, more than " + std::to_string(kMaxMicro) +
                " (give train_micro_batch_size_per_gpu)");
  if (micro < 1 || accumulation < 1 || train != micro * accumulation * world)
    throw Error("config: train_batch_size (" + std::to_string(train) +
                ") must equal train_micro_batch_size_per_gpu (" +
                std::to_string(micro) + ") x gradient_accumulation_steps (" +
                std::to_string(accumulation) + ") x world size (1)");
  c.trainBatchSize = train;
  c.microBatchSize = micro;
  c.gradientAccumulationSteps = accumulation;
}

void adamW(Section &p, const std::string &type, StepConfig &o) {
  if (type == "Adam" && !p.boolean("adam_w_mode", true))
    throw Error("config: optimizer.params.adam_w_mode false (Adam with "
                "L2 regularisation) is not supported");
  o.lr = static_cast<float>(p.number("lr", 1e-3));
  o.eps = static_cast<float>(p.number("eps", 1e-8));
  o.weightDecay = static_cast<float>(p.number("weight_decay", 0));
  if (p.has("betas")) {
    const Json &b = p.at("betas");
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() ||
        !b[1].is_number())
      throw Error("config: optimizer.params.betas must be [b1, b2], got " +
                  b.dump());
    o.beta1 = b[0].get<float>();
    o.beta2 = b[1].get<float>();
  }
}

/// torch.optim.SGD's params, with its defaults.
void sgd(Section &p, StepConfig &o) {
  o.lr = static_cast<float>(p.number("lr", 1e-3));
  o.momentum = static_cast<float>(p.number("momentum", 0));
  o.dampening = static_cast<float>(p.number("dampening", 0));
  o.weightDecay = static_cast<float>(p.number("weight_decay", 0));
  o.nesterov = p.boolean("nesterov", false);
}

void optimizer(Section &top, TrainConfig &c,
               std::vector<std::string> *unknown) {
  // DeepSpeed's Adam(W) defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
  // weight decay 0.
  StepConfig &o = c.optimizer;
  o.weightDecay = 0.0f;
  if (!top.has("optimizer"))
    return;
  Section opt(top.at("optimizer"), "optimizer", unknown);
  const std::string type = opt.string("type", "AdamW");
  if (type == "SGD")
    o.optimizer = Optimizer::Sgd;
  else if (type != "AdamW" && type != "Adam")
    throw Error("config: optimizer.type '" + type +
                "' is not supported (AdamW, Adam in its AdamW mode, or SGD)");
  if (opt.has("params")) {
    Section p(opt.at("params"), "optimizer.params", unknown);
    if (o.optimizer == Optimizer::Sgd)
      sgd(p, o);
    else
      adamW(p, type, o);
    p.finish();
  }
  opt.finish();
  if (o.optimizer == Optimizer::Sgd) {
    if (!(o.lr >= 0) || !(o.momentum >= 0) || !(o.dampening >= 0) ||
        !(o.weightDecay >= 0))
      throw Error("config: optimizer.params: lr, momentum, dampening and "
                  "weight_decay must be >= 0");
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
      throw Error("config: optimizer.params.nesterov needs a momentum > 0 "
                  "and zero dampening (as torch.optim.SGD)");
    return;
  }
  if (!(o.lr >= 0) || !(o.eps > 0) || !(o.weightDecay >= 0) ||
      !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
    throw Error("config: optimizer.params: lr and weight_decay must be >= 0, "
                "eps > 0, betas in [0, 1)");
}

/// warmup_num_steps and warmup_type, shared by every schedule.
void warmup(Section &p, SchedulerConfig &r) {
  // DeepSpeed warms up over at least 2 steps (log(1) would divide).
  r.warmupNumSteps =
      std::max<int64_t>(2, p.integer("warmup_num_steps", 1000, 1));
  const std::string warmup = p.string("warmup_type", "log");
  if (warmup != "log" && warmup != "linear")
    throw Error("config: scheduler.params.warmup_type must be \"log\" or "
                "\"linear\", got \"" +
                warmup + "\"");
  r.linearWarmup = warmup == "linear";
}

void scheduler(Section &top, TrainConfig &c,
               std::vector<std::string> *unknown) {
  if (!top.has("scheduler"))
    return;
  Section s(top.at("scheduler"), "scheduler", unknown);
  const std::string type = s.string("type", "");
  using Kind = SchedulerConfig::Kind;
  SchedulerConfig &r = c.scheduler;
  if (type == "WarmupLR")
    r.kind = Kind::WarmupLR;
  else if (type == "WarmupDecayLR")
    r.kind = Kind::WarmupDecayLR;
  else if (type == "WarmupCosineLR")
    r.kind = Kind::WarmupCosineLR;
  else
    throw Error("config: scheduler.type '" + type +
                "' is not supported (WarmupLR, WarmupDecayLR, "
                "WarmupCosineLR)");
  const bool needsTotal = r.kind != Kind::WarmupLR;
  if (!s.has("params")) {
    if (needsTotal)
      throw Error("config: scheduler.params.total_num_steps is required by " +
                  type);
    s.finish();
    return;
  }
  Section p(s.at("params"), "scheduler.params", unknown);
  if (r.kind == Kind::WarmupCosineLR) {
    r.warmupMinRatio = p.number("warmup_min_ratio", 0.0);
    r.cosMinRatio = p.number("cos_min_ratio", 0.0001);
    if (!(r.warmupMinRatio >= 0) || !(r.cosMinRatio >= 0))
      throw Error("config: scheduler.params: warmup_min_ratio and "
                  "cos_min_ratio must be >= 0");
  } else {
    r.warmupMinLr = p.number("warmup_min_lr", 0.0);
    r.warmupMaxLr = p.number("warmup_max_lr", 0.001);
  }
  warmup(p, r);
  if (needsTotal) {
    if (!p.has("total_num_steps"))
      throw Error("config: scheduler.params.total_num_steps is required by " +
                  type);
    r.totalNumSteps = p.integer("total_num_steps", 0, 1);
  }
  p.finish();
  s.finish();
}

/// The fp16 block: DeepSpeed's dynamic loss scaling (or a static scale).
void fp16(Section &p, TrainConfig &c) {
  LossScaleConfig &l = c.optimizer.lossScale;
  const double staticScale = p.number("loss_scale", 0);
  const int64_t power = p.integer("initial_scale_power", 16, 0);
  l.window = p.integer("loss_scale_window", 1000, 1);
  l.hysteresis = p.integer("hysteresis", 2, 1);
  l.minScale = static_cast<float>(p.number("min_loss_scale", 1));
  // Token ids are the inputs: nothing to cast.
  p.boolean("auto_cast", false);
  if (p.boolean("consecutive_hysteresis", false))
    throw Error("config: fp16.consecutive_hysteresis true is not supported "
                "(the hysteresis is refilled when the scale grows)");
  if (!(staticScale >= 0) || staticScale > 3e38)
    throw Error("config: fp16.loss_scale must be 0 (dynamic) or a positive "
                "f32, got " +
                std::to_string(staticScale));
  if (power > 127)
    throw Error("config: fp16.initial_scale_power must be <= 127 (2^power "
                "is an f32), got " +
                std::to_string(power));
  if (!(l.minScale > 0) || l.minScale > 3e38f)
    throw Error("config: fp16.min_loss_scale must be a positive f32");
  l.dynamic = staticScale == 0;
  l.initialScale = l.dynamic ? std::ldexp(1.0f, static_cast<int>(power))
                             : static_cast<float>(staticScale);
}

void precision(Section &top, TrainConfig &c,
               std::vector<std::string> *unknown) {
  for (const char *key : {"fp16", "bf16"}) {
    if (!top.has(key))
      continue;
    const bool half = std::string(key) == "fp16";
    Section p(top.at(key), key, unknown);
    if (p.boolean("enabled", false)) {
      if (c.precision != DType::F32)
        throw Error("config: fp16.enabled and bf16.enabled: enable one of "
                    "them");
      c.precision = half ? DType::F16 : DType::BF16;
      if (half)
        fp16(p, c);
    } else if (half) {
      // The other keys of a disabled block do not matter.
      for (const char *k : {"loss_scale", "initial_scale_power",
                            "loss_scale_window", "hysteresis", "min_loss_scale",
                            "auto_cast", "consecutive_hysteresis"})
        p.has(k);
    }
    p.finish();
  }
}

void zero(Section &top, TrainConfig &c, std::vector<std::string> *unknown) {
  if (top.has("zero_optimization")) {
    Section z(top.at("zero_optimization"), "zero_optimization", unknown);
    const int64_t stage = z.integer("stage", 0, 0);
    if (stage > 3)
      throw Error("config: zero_optimization.stage must be 0 to 3, got " +
                  std::to_string(stage));
    c.zeroStage = stage;
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
  // DeepSpeed's configs nest three or four levels; far deeper input is
  // refused while it is read (100,000 levels crashed the reader, 30,000
  // gave a 60 kB error echoing the value).
  constexpr int kMaxDepth = 32;
  Json json;
  try {
    json = Json::parse(text, [](int depth, Json::parse_event_t, Json &) {
      if (depth > kMaxDepth)
        throw Error("config: nested deeper than " + std::to_string(kMaxDepth) +
                    " levels");
      return true;
    });
  } catch (const Json::exception &e) {
    // Syntax errors, and numbers JSON allows but a double cannot hold
    // (lr: 1e400 escaped as the library's own message, without the file).
    std::string what = e.what();
    if (const size_t end = what.find("] ");
        what.rfind("[json.", 0) == 0 && end != std::string::npos)
      what = what.substr(end + 2);
    throw Error("config: not valid JSON: " + what);
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
  precision(top, c, unknown);
  zero(top, c, unknown);
  hybridEngine(top, c, unknown);
  top.boolean("wall_clock_breakdown", false);
  top.finish();
  return c;
}

TrainPlan trainPlanOf(const BundleDesc &bundle) {
  const ExecutableDesc *step = nullptr;
  for (const ExecutableDesc &e : bundle.executables)
    if (e.name == "step")
      step = &e;
  if (!step)
    throw Error("bundle '" + bundle.model +
                "' has no training executables (compile it with hybridc "
                "--train)");
  TrainPlan plan;
  for (const PortDesc &in : step->inputs)
    if (in.name == "momentum")
      plan.optimizer = Optimizer::Sgd;
  // The working precision: that of the parameters kept as f32 masters
  // (hybridc gives every trainable parameter one dtype).
  const std::string master = "opt.master.";
  for (const StateUse &use : step->states) {
    const std::string &name = bundle.states.at(use.state).name;
    if (name.compare(0, master.size(), master) != 0)
      continue;
    const std::string param = name.substr(master.size());
    for (const ParamDesc &p : bundle.params)
      if (p.name == param)
        return {plan.optimizer, p.dtype};
  }
  return plan;
}

void checkTrainConfig(const TrainConfig &config, const TrainPlan &plan) {
  const bool sgd = config.optimizer.optimizer == Optimizer::Sgd;
  if (config.optimizer.optimizer != plan.optimizer)
    throw Error(std::string("config: optimizer.type ") +
                (sgd ? "SGD" : "AdamW") + ", but the bundle was compiled for " +
                (sgd ? "AdamW" : "SGD") +
                " (compile it with hybridc --train --optimizer=" +
                (sgd ? "sgd" : "adamw") + ")");
  if (config.precision == plan.precision)
    return;
  auto typeName = [](DType d) {
    return d == DType::F16    ? std::string("float16")
           : d == DType::BF16 ? std::string("bfloat16")
                              : std::string("float32");
  };
  const std::string compile =
      "compile it with hybridc --train --dtype=" + typeName(config.precision);
  if (config.precision != DType::F32)
    throw Error(std::string("config: ") +
                (config.precision == DType::F16 ? "fp16" : "bf16") +
                ".enabled, but the bundle trains " + typeName(plan.precision) +
                " weights (" + compile + ")");
  throw Error("config: the bundle trains " + typeName(plan.precision) +
              " weights through f32 masters: enable " +
              (plan.precision == DType::F16 ? "fp16" : "bf16") +
              " in the config, or " + compile);
}

double learningRate(const SchedulerConfig &s, double lr, int64_t step) {
  using Kind = SchedulerConfig::Kind;
  if (s.kind == Kind::None)
    return lr;
  double gamma = 1.0;
  if (step < s.warmupNumSteps) {
    gamma = s.linearWarmup
                ? static_cast<double>(step) / s.warmupNumSteps
                : std::log(static_cast<double>(step + 1)) /
                      std::log(static_cast<double>(s.warmupNumSteps));
  } else if (s.kind == Kind::WarmupCosineLR) {
    const double progress = std::min(
        1.0, static_cast<double>(step - s.warmupNumSteps + 1) /
                 std::max<double>(1.0, static_cast<double>(s.totalNumSteps -
                                                           s.warmupNumSteps)));
    constexpr double kPi = 3.14159265358979323846;
    const double cosine = (1 + std::cos(kPi * progress)) / 2;
    return lr * std::max(0.0, s.cosMinRatio + (1 - s.cosMinRatio) * cosine);
  } else if (s.kind == Kind::WarmupDecayLR) {
    gamma = std::max(
        0.0, static_cast<double>(s.totalNumSteps - step) /
                 std::max<double>(1.0, static_cast<double>(s.totalNumSteps -
                                                           s.warmupNumSteps)));
  }
  if (s.kind == Kind::WarmupCosineLR)
    return lr * (s.warmupMinRatio + (1 - s.warmupMinRatio) * gamma);
  return s.warmupMinLr + (s.warmupMaxLr - s.warmupMinLr) * gamma;
}

} // namespace hybrid
