// Names and arities of the typed operations (see Ops.h).
#include "hybrid/Ops.h"

#include <type_traits>

namespace hybrid {

const char *binaryKindName(BinaryKind k) {
  static const char *const names[kBinaryKinds] = {
      "add",     "sub",           "mul",  "div",   "pow",  "max",
      "min",     "mod",           "fmod", "equal", "less", "less_equal",
      "greater", "greater_equal", "and",  "or",    "xor"};
  auto i = static_cast<unsigned>(k);
  return i < kBinaryKinds ? names[i] : "?";
}

const char *unaryKindName(UnaryKind k) {
  static const char *const names[kUnaryKinds] = {
      "neg",   "abs",        "sign",   "exp",     "log",  "sqrt",
      "rsqrt", "reciprocal", "tanh",   "sigmoid", "relu", "silu",
      "gelu",  "gelu_tanh",  "sin",    "cos",     "erf",  "floor",
      "ceil",  "not",        "is_nan", "is_inf"};
  auto i = static_cast<unsigned>(k);
  return i < kUnaryKinds ? names[i] : "?";
}

const char *reduceKindName(ReduceKind k) {
  static const char *const names[kReduceKinds] = {
      "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};
  auto i = static_cast<unsigned>(k);
  return i < kReduceKinds ? names[i] : "?";
}

const char *collectiveKindName(CollectiveKind k) {
  static const char *const names[kCollectiveKinds] = {
      "all_gather", "reduce_scatter", "all_reduce", "shard"};
  auto i = static_cast<unsigned>(k);
  return i < kCollectiveKinds ? names[i] : "?";
}

const char *activationName(Activation a) {
  static const char *const names[kActivations] = {"none", "relu", "gelu",
                                                  "gelu_tanh", "silu"};
  auto i = static_cast<unsigned>(a);
  return i < kActivations ? names[i] : "?";
}

namespace {

struct NameOf {
  std::string operator()(const ops::Binary &o) const {
    return binaryKindName(o.kind);
  }
  std::string operator()(const ops::Unary &o) const {
    return unaryKindName(o.kind);
  }
  std::string operator()(const ops::Clip &) const { return "clip"; }
  std::string operator()(const ops::Select &) const { return "select"; }
  std::string operator()(const ops::Cast &) const { return "cast"; }
  std::string operator()(const ops::Copy &) const { return "copy"; }
  std::string operator()(const ops::Fill &) const { return "fill"; }
  std::string operator()(const ops::Transpose &) const { return "transpose"; }
  std::string operator()(const ops::BroadcastTo &) const {
    return "broadcast_to";
  }
  std::string operator()(const ops::Slice &) const { return "slice"; }
  std::string operator()(const ops::Concat &) const { return "concat"; }
  std::string operator()(const ops::Gather &) const { return "gather"; }
  std::string operator()(const ops::GatherNd &) const { return "gather_nd"; }
  std::string operator()(const ops::Iota &) const { return "iota"; }
  std::string operator()(const ops::CumSum &) const { return "cumsum"; }
  std::string operator()(const ops::Trilu &) const { return "trilu"; }
  std::string operator()(const ops::Reduce &o) const {
    return reduceKindName(o.kind);
  }
  std::string operator()(const ops::Softmax &o) const {
    return o.log ? "log_softmax" : "softmax";
  }
  std::string operator()(const ops::LayerNorm &) const { return "layer_norm"; }
  std::string operator()(const ops::RmsNorm &) const { return "rms_norm"; }
  std::string operator()(const ops::MatMul &) const { return "matmul"; }
  std::string operator()(const ops::Linear &) const { return "linear"; }
  std::string operator()(const ops::Embedding &) const { return "embedding"; }
  std::string operator()(const ops::Rotary &) const { return "rotary"; }
  std::string operator()(const ops::Attention &) const { return "attention"; }
  std::string operator()(const ops::Collective &o) const {
    return collectiveKindName(o.kind);
  }
  std::string operator()(const ops::RecordEvent &) const {
    return "record_event";
  }
  std::string operator()(const ops::WaitEvent &) const { return "wait_event"; }
  std::string operator()(const ops::CacheWrite &) const {
    return "cache_write";
  }
  std::string operator()(const ops::Sample &) const { return "sample"; }
  std::string operator()(const ops::SampleStep &) const {
    return "sample_step";
  }
  std::string operator()(const ops::LinearGroup &) const {
    return "linear_group";
  }
  std::string operator()(const ops::AdamWUpdate &) const {
    return "adamw_update";
  }
  std::string operator()(const ops::AttentionGrad &) const {
    return "attention_grad";
  }
  std::string operator()(const ops::LayerNormGrad &) const {
    return "layer_norm_grad";
  }
  std::string operator()(const ops::LabelLogProbs &) const {
    return "label_log_probs";
  }
  std::string operator()(const ops::LabelLogProbsGrad &) const {
    return "label_log_probs_grad";
  }
  std::string operator()(const ops::EmbeddingGrad &) const {
    return "embedding_grad";
  }
  std::string operator()(const ops::ActivationGrad &) const {
    return "activation_grad";
  }
};

struct ArityOf {
  int operator()(const ops::Binary &) const { return 2; }
  int operator()(const ops::Select &) const { return 3; }
  int operator()(const ops::Fill &) const { return 0; }
  int operator()(const ops::Iota &) const { return 0; }
  int operator()(const ops::Concat &) const { return -1; }
  int operator()(const ops::Gather &) const { return 2; }
  int operator()(const ops::GatherNd &) const { return 2; }
  int operator()(const ops::LayerNorm &) const { return 3; }
  int operator()(const ops::RmsNorm &) const { return 2; }
  int operator()(const ops::MatMul &) const { return 2; }
  int operator()(const ops::Linear &) const { return 6; }
  int operator()(const ops::Embedding &) const { return 2; }
  int operator()(const ops::Rotary &) const { return 3; }
  int operator()(const ops::Attention &) const { return 10; }
  int operator()(const ops::CacheWrite &) const { return 2; }
  int operator()(const ops::Sample &) const { return 3; }
  int operator()(const ops::SampleStep &) const { return 7; }
  int operator()(const ops::AdamWUpdate &) const { return 10; }
  int operator()(const ops::LinearGroup &o) const {
    return 1 + 2 * static_cast<int>(o.featureBegin.size());
  }
  int operator()(const ops::AttentionGrad &) const { return 6; }
  int operator()(const ops::LayerNormGrad &) const { return 3; }
  int operator()(const ops::LabelLogProbs &) const { return 2; }
  int operator()(const ops::LabelLogProbsGrad &) const { return 3; }
  int operator()(const ops::EmbeddingGrad &) const { return 2; }
  int operator()(const ops::ActivationGrad &) const { return 2; }
  int operator()(const ops::RecordEvent &) const { return 0; }
  int operator()(const ops::WaitEvent &) const { return 0; }
  // Everything else maps one input to one result.
  template <typename T> int operator()(const T &) const { return 1; }
};

} // namespace

std::string opName(const Op &op) { return std::visit(NameOf{}, op); }

int opArity(const Op &op) { return std::visit(ArityOf{}, op); }

int opResultCount(const Op &op) {
  if (const auto *attention = std::get_if<ops::Attention>(&op))
    return attention->append ? 3 : 1;
  if (const auto *group = std::get_if<ops::LinearGroup>(&op))
    return static_cast<int>(group->featureBegin.size());
  if (std::holds_alternative<ops::AttentionGrad>(op) ||
      std::holds_alternative<ops::LayerNormGrad>(op))
    return 3;
  if (isEvent(op))
    return 0;
  if (const auto *update = std::get_if<ops::AdamWUpdate>(&op))
    return update->workingParam ? 4 : 3;
  return std::holds_alternative<ops::SampleStep>(op) ? 7 : 1;
}

} // namespace hybrid
