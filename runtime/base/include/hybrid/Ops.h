// The typed operations of a command list: one struct per kernel family, with
// its attributes resolved (defaults applied by the compiler, from ODS). The
// compiler builds them from hrt ops, the bundle stores them as a FlatBuffers
// union, and a backend turns each into a kernel call once, at load time.
// Kernels read their attributes from these structs, never by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace hybrid {

// Kinds within a family. Values are part of the bundle format (bundle.fbs
// stores them as ubyte); append only. The hrt dialect's ODS enums use the
// same names and values (test/compiler checks it).

enum class BinaryKind : uint8_t {
  Add,
  Sub,
  Mul,
  Div, ///< integer division truncates
  Pow,
  Max,
  Min,
  Mod,  ///< result takes the divisor's sign (Python %)
  FMod, ///< result takes the dividend's sign (C fmod)
  Equal,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  And,
  Or,
  Xor,
};

enum class UnaryKind : uint8_t {
  Neg,
  Abs,
  Sign,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Tanh,
  Sigmoid,
  Relu,
  Silu,
  GeluErf,
  GeluTanh,
  Sin,
  Cos,
  Erf,
  Floor,
  Ceil,
  Not,
  IsNan,
  IsInf,
};

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, Prod };

/// Shard: this rank's piece of a tensor every rank holds whole (ZeRO's flat
/// partition, the rest zeros); no data moves between ranks.
enum class CollectiveKind : uint8_t {
  AllGather,
  ReduceScatter,
  AllReduce,
  Shard
};

/// What a linear layer applies to x . W + bias before its residual (the
/// GEMM epilogue): GeluErf is hg.gelu, GeluTanh its tanh approximation.
enum class Activation : uint8_t { None, Relu, GeluErf, GeluTanh, Silu };

/// What a linear layer applies to its input rows before the product (the
/// GEMM prologue): hg.layer_norm or hg.rms_norm over the last dim.
enum class NormKind : uint8_t { None, LayerNorm, RmsNorm };

/// Number of kinds, for tables indexed by kind.
constexpr int kBinaryKinds = static_cast<int>(BinaryKind::Xor) + 1;
constexpr int kUnaryKinds = static_cast<int>(UnaryKind::IsInf) + 1;
constexpr int kReduceKinds = static_cast<int>(ReduceKind::Prod) + 1;
constexpr int kCollectiveKinds = static_cast<int>(CollectiveKind::Shard) + 1;
constexpr int kActivations = static_cast<int>(Activation::Silu) + 1;
constexpr int kNormKinds = static_cast<int>(NormKind::RmsNorm) + 1;

/// The hg mnemonic of each kind ("add", "gelu_tanh" reads as "gelu").
const char *binaryKindName(BinaryKind k);
const char *unaryKindName(UnaryKind k);
const char *reduceKindName(ReduceKind k);
const char *collectiveKindName(CollectiveKind k);
/// "none", "relu", "gelu", "gelu_tanh", "silu" (hg.linear's spelling).
const char *activationName(Activation a);

/// The operations. Operands and results are buffer indices of the command;
/// each struct's comment gives their order. An optional operand that is
/// absent is -1 in the command's operand list (never dropped), so positions
/// are fixed. Shapes and dtypes come from the buffers, not from here.
namespace ops {

/// (lhs, rhs) -> result; NumPy broadcasting. Comparisons and logic give bool.
struct Binary {
  BinaryKind kind = BinaryKind::Add;
};
/// (input) -> result.
struct Unary {
  UnaryKind kind = UnaryKind::Neg;
};
/// (input) -> result, clamped to the bounds that are present.
struct Clip {
  std::optional<double> min, max;
};
/// (cond, lhs, rhs) -> result; cond ? lhs : rhs with broadcasting.
struct Select {};
/// (input) -> result of the result buffer's dtype.
struct Cast {};
/// (input) -> result of the same dtype and element count (bytes copied).
struct Copy {};
/// () -> result, every element `value` (converted to the result's dtype).
struct Fill {
  double value = 0;
};
/// (input) -> result; result dim i = input dim perm[i].
struct Transpose {
  std::vector<int64_t> perm;
};
/// (input) -> result, NumPy-broadcast to the result's shape.
struct BroadcastTo {};
/// (input) -> result; ONNX Slice semantics per listed axis.
struct Slice {
  std::vector<int64_t> axes, starts, ends, steps;
};
/// (inputs...) -> result, joined along `axis`.
struct Concat {
  int64_t axis = 0;
};
/// (data, indices) -> result; ONNX Gather.
struct Gather {
  int64_t axis = 0;
};
/// (data, indices) -> result; ONNX GatherND.
struct GatherNd {
  int64_t batchDims = 0;
};
/// () -> result[n]: start, start + step, ...
struct Iota {
  double start = 0, step = 1;
};
/// (input) -> result, running sum along `axis`.
struct CumSum {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
};
/// (input) -> result; keeps the upper (or lower) triangle offset by k.
struct Trilu {
  bool upper = true;
  int64_t k = 0;
};
/// (input) -> result, reduced over `axes` (all when empty).
struct Reduce {
  ReduceKind kind = ReduceKind::Sum;
  std::vector<int64_t> axes;
  bool keepdims = true;
};
/// (input) -> result; softmax (or log-softmax) along `axis`.
struct Softmax {
  int64_t axis = -1;
  bool log = false;
};
/// (input, weight?, bias?) -> result; normalised over dims [axis, rank).
struct LayerNorm {
  double epsilon = 1e-5;
  int64_t axis = -1;
};
/// (input, weight?) -> result.
struct RmsNorm {
  double epsilon = 1e-6;
  int64_t axis = -1;
};
/// (lhs, rhs) -> result; NumPy matmul.
struct MatMul {};
/// (input, weight, bias?, residual?, norm_weight?, norm_bias?) -> result =
/// activation(norm(input) . W + bias) + residual, each element rounded
/// once; weight [N, K] when transposeWeight (nn.Linear), else [K, N];
/// residual has the result's shape. norm (the prologue) normalises each
/// input row of K as ops::LayerNorm / ops::RmsNorm with normEpsilon, times
/// norm_weight [K] (+ norm_bias [K]) when given, and rounds it to the
/// input's type before the product.
struct Linear {
  bool transposeWeight = true;
  Activation activation = Activation::None;
  NormKind norm = NormKind::None;
  double normEpsilon = 1e-5;
};
/// (table, ids) -> result.
struct Embedding {};
/// (input, cos, sin) -> result.
struct Rotary {
  bool interleaved = false;
};
/// (query, key, value, mask?, alibi_slopes?, key_length?, key_mask?) ->
/// result. key_length, when present, is an i64 [1] tensor in device memory
/// holding how many leading keys exist (S' <= S, the key buffer's length: a
/// KV cache's filled slots); queries align to the end of those S' keys.
/// key_mask, when present, is an integer [B, S] tensor: key j of row b is
/// padding (never attended) where it is 0.
/// With `append`, three more operands (append_key, append_value [B, Hkv,
/// T', D], append_at i64 [1]) are first written into key and value at
/// [append_at, append_at + T') along axis 2 (as two CacheWrites), and the
/// command's results are (result, key, value).
struct Attention {
  double scale = 1;
  bool causal = false;
  int64_t slidingWindow = 0;
  bool append = false;
};
/// (input) -> result over communicator `communicator` (an index into the
/// executable's communicators). With one rank every kind is a copy.
struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int32_t communicator = 0;
};
/// Marks `event` as reached on the command's stream.
struct RecordEvent {
  int32_t event = 0;
};
/// Makes the command's stream wait until `event` was reached.
struct WaitEvent {
  int32_t event = 0;
};
/// (update, offset) -> result: writes `update` into the result at
/// [offset, offset + n) along `axis` (n = update's length there; every other
/// dim equal) and leaves the rest of the result as it was — the result is
/// the KV cache (or another state) itself, updated in place. `offset` is an
/// i64 [1] tensor in device memory, so one captured step serves every
/// position. Slices past the end of the result are an error on the CPU and
/// dropped on devices that cannot report one.
struct CacheWrite {
  int64_t axis = 0;
};
/// (logits [B, V] float, sampling [3] f32, rng [2] i64) -> result [B] i64.
/// sampling = {temperature, top_p, top_k}: temperature <= 0 takes the
/// argmax (the first on ties); else logits / temperature, keep the top_k
/// largest (top_k <= 0: all), then the smallest set of the most likely
/// tokens whose probability reaches top_p (top_p >= 1: all), and draw from
/// the renormalised rest with u = hybrid::philoxUniform(rng[0], rng[1],
/// row) (Philox.h), walking the kept tokens from most to least likely (ties
/// by index). The same seed and counter give the same tokens on every
/// backend.
struct Sample {};
/// The sampling epilogue of a generation step in one command (what
/// hg-split-generation's @prefill and @decode end with):
/// (logits [B, V] float, config [4] i64 = {eos or -1, pad, min_new, unused},
/// sampling [3] f32, rng [2] i64, count [1] i64, finished [B] bool,
/// lengths [B] i64) -> (token [B] i64, tokens [B, N] i64, logprobs [B, N]
/// f32, lengths [B] i64, finished [B] bool, count [1] i64, rng [2] i64).
/// Per row, in f32: the EOS logit is -inf while count < min_new; the token
/// is Sample's of those logits; its log-probability is log_softmax(logits /
/// T)[token] (T = temperature, 1 when greedy); a finished row emits pad and
/// 0. token and log-probability are written at column `count` of tokens
/// and logprobs, which keep every other column (as CacheWrite, they are
/// the state itself); lengths += !finished, finished |= token == eos,
/// count += 1, rng[1] += 1. The results lengths, finished, count and rng
/// may be the operands' buffers (updated in place).
struct SampleStep {};

/// (input, then per member i: weight_i, bias_i?) -> (result_0, ...):
/// member i is ops::Linear{transposeWeight, activation} of the input with
/// its weight's output features [featureBegin[i], featureEnd[i]) only —
/// rows of a [N, K] weight (transposeWeight), columns of a [K, N] one —
/// and the same range of its bias [N]; result i has the input's shape with
/// featureEnd[i] - featureBegin[i] last. Members may share a weight (one
/// fused projection cut into several results). No residual, no norm.
struct LinearGroup {
  bool transposeWeight = true;
  Activation activation = Activation::None;
  std::vector<int64_t> featureBegin, featureEnd;
};

/// torch.optim.AdamW's update of one parameter in one pass (hg-adamw):
/// (param, grad, exp_avg, exp_avg_sq, beta1, beta2, eps, step_size,
/// bias_correction2_sqrt, decay_factor) -> (param, exp_avg, exp_avg_sq),
/// every tensor f32 of one shape, every scalar f32 [1]. Per element, in f32
/// and in this order (the composed update's, so the results are its bits):
/// m' = beta1 m + (1 - beta1) g; v' = beta2 v + (1 - beta2) (g g);
/// p' = p decay_factor - step_size (m' / (sqrt(v') / bias_correction2_sqrt
/// + eps)). step_size = lr / (1 - beta1^t), bias_correction2_sqrt =
/// sqrt(1 - beta2^t) and decay_factor = 1 - lr weight_decay are computed
/// once per step. The results may be the buffers of param, exp_avg and
/// exp_avg_sq (updated in place). Mixed precision: grad may also be bf16 or
/// f16 (read as f32, exactly, as a cast to f32 would), and with
/// `workingParam` a fourth result, bf16 or f16 of param's shape, gets p'
/// rounded to nearest even (what a cast of the new f32 master writes): the
/// working weight, so no cast runs before or after the update.
struct AdamWUpdate {
  bool workingParam = false;
};
/// Attention's backward: (query, key, value, grad_out [B, Hq, T, Dv],
/// mask?, key_mask?) -> (grad_query, grad_key, grad_value), each shaped as
/// its input. The probabilities p are Attention's (same scale, causal and
/// sliding-window limits, additive mask and key padding; no ALiBi, no
/// key_length), recomputed; then dv = p^T grad_out, dp = grad_out v^T,
/// ds = p (dp - rowsum(dp p)), dq = ds k scale, dk = ds^T q scale, the
/// query heads of a KV head summed into it. A query row that sees no key
/// has p = 0, so it adds nothing.
struct AttentionGrad {
  double scale = 1;
  bool causal = false;
  int64_t slidingWindow = 0;
};

/// Layer norm's backward: (input, weight?, grad_out) -> (grad_input,
/// grad_weight, grad_bias), normalised over dims [axis, rank) as LayerNorm.
/// With x^ = (x - mean) rstd, rstd = 1 / sqrt(var + epsilon) (population
/// variance) and dx^ = grad_out weight (grad_out without weight):
/// grad_input = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)), input's shape;
/// grad_weight = sum over rows of grad_out x^, grad_bias = sum over rows of
/// grad_out, both the normalised shape; all of input's dtype.
struct LayerNormGrad {
  double epsilon = 1e-5;
  int64_t axis = -1;
};

/// A fused cross-entropy: (logits [..., V] float, labels [...] i32/i64) ->
/// f32 [...], each row's log-softmax at its label, x[label] - max -
/// log(sum exp(x - max)) in f32; 0 where the label is outside [0, V)
/// (HuggingFace's ignore index -100 among them).
struct LabelLogProbs {};
/// LabelLogProbs' backward: (logits, labels, grad [...] f32) -> grad_logits
/// of the logits' dtype and shape, grad (onehot(label) - softmax(logits))
/// per row (softmax in f32, rounded once); zero rows where the label is
/// outside [0, V).
struct LabelLogProbsGrad {};
/// Embedding's table gradient: (ids [...] i32/i64, grad_out [..., D]) ->
/// [rows, D] of grad_out's dtype (rows from the result's shape): row r is
/// the sum of grad_out's rows whose id is r, added in position order in
/// f32 and rounded once, so every run and backend gives the same bits;
/// zero for ids never seen; ids outside [0, rows) add nothing.
struct EmbeddingGrad {};
/// An activation's backward: (input, grad_out) -> grad_in, all three of one
/// shape and float dtype; grad_in = grad_out act'(input) per element, in
/// f32 and rounded once. act' is what hg's VJP rules define (VjpRules.cpp):
/// Relu 1 where x > 0, else 0; Silu s (1 + x (1 - s)), s = sigmoid(x);
/// GeluErf Phi(x) + x phi(x); GeluTanh (1 + tanh u) / 2 + x / 2 (1 -
/// tanh^2 u) k (1 + 3 a x^2), u = k (x + a x^3), k = sqrt(2 / pi), a =
/// 0.044715. Activation::None is not an activation_grad.
struct ActivationGrad {
  Activation activation = Activation::GeluTanh;
};

} // namespace ops

/// One operation of a command. The order of alternatives is the bundle's
/// union order; append only.
using Op = std::variant<
    ops::Binary, ops::Unary, ops::Clip, ops::Select, ops::Cast, ops::Copy,
    ops::Fill, ops::Transpose, ops::BroadcastTo, ops::Slice, ops::Concat,
    ops::Gather, ops::GatherNd, ops::Iota, ops::CumSum, ops::Trilu, ops::Reduce,
    ops::Softmax, ops::LayerNorm, ops::RmsNorm, ops::MatMul, ops::Linear,
    ops::Embedding, ops::Rotary, ops::Attention, ops::Collective,
    ops::RecordEvent, ops::WaitEvent, ops::CacheWrite, ops::Sample,
    ops::SampleStep, ops::LinearGroup, ops::AdamWUpdate, ops::AttentionGrad,
    ops::LayerNormGrad, ops::LabelLogProbs, ops::LabelLogProbsGrad,
    ops::EmbeddingGrad, ops::ActivationGrad>;

/// The op's name for messages and listings: the hg mnemonic where there is
/// one ("add", "gelu", "reduce_sum", "log_softmax", "layer_norm"), else the
/// hrt one ("fill", "all_gather", "record_event").
std::string opName(const Op &op);

/// How many operands the op takes, counting absent optional ones, or -1
/// when variadic (concat). Used to validate commands.
int opArity(const Op &op);

/// How many results the op writes: 0 for events, 7 for SampleStep, a
/// linear group's member count, 3 for an attention that appends, an
/// AttentionGrad and a LayerNormGrad, 3 or 4 for an AdamWUpdate (with its
/// working parameter), else 1.
int opResultCount(const Op &op);

/// Whether the op is an event (RecordEvent, WaitEvent): an executable's own
/// ordering object, no kernel.
inline bool isEvent(const Op &op) {
  return std::holds_alternative<ops::RecordEvent>(op) ||
         std::holds_alternative<ops::WaitEvent>(op);
}

} // namespace hybrid
