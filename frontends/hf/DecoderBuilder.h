// Builds the hg graph of a decoder-only language model: the @forward
// signature convention and the pieces HF model families share (embeddings,
// norms, projections, rotary tables, causal attention, MLPs, LM head).
#pragma once

#include "frontends/hf/HfConfig.h"
#include "frontends/hf/Rope.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybridc::hf {

/// One entry of a shape built by the frontend: a static size, or a
/// polynomial over the function's symbolic dims ("batch", "seq").
struct ShapeDim {
  ShapeDim(int64_t size) : size(size) {}
  ShapeDim(const char *symbol) : symbol(symbol) {}
  int64_t size = 0;
  llvm::StringRef symbol;
};

/// Activation functions of HF's ACT2FN that the frontend can express.
enum class Activation {
  GeluErf,   ///< "gelu"
  GeluTanh,  ///< "gelu_new", "gelu_pytorch_tanh", "gelu_fast", ...
  QuickGelu, ///< x * sigmoid(1.702 x)
  Relu,
  Relu2, ///< relu(x)^2
  Relu6,
  Silu, ///< "silu", "swish"
  Tanh,
  Sigmoid,
  Identity, ///< "linear"
};

/// Reads the activation named by `key` (or `defaultName` when absent);
/// an unknown name is recorded on `config` with the supported ones.
Activation readActivation(HfConfig &config, llvm::StringRef key,
                          llvm::StringRef defaultName);

/// torch's padding_idx of the token embedding, for the families that build
/// it as nn.Embedding(vocab, dim, padding_idx=config.pad_token_id) (OPT,
/// Llama, Mistral, Qwen2, Phi-3; not GPT-2, GPT-NeoX, BLOOM): pad_token_id,
/// a negative one counting from the end as in torch; none when the key is
/// absent or null. An id outside the `vocab` rows is recorded on `config`
/// (torch refuses it too).
std::optional<int64_t> readPaddingIdx(HfConfig &config, int64_t vocab);

/// What Llama-style configs (llama, mistral, qwen2, phi3) name alike.
struct LlamaStyleParams {
  int64_t vocab, dim, inner, layers, heads, kvHeads, headDim;
  double epsilon;
  Activation act;
  bool tied;
  std::optional<int64_t> paddingIdx; ///< all four build it with one
};

/// Reads the LlamaStyleParams into `p` (`defaultEpsilon` is the family's
/// rms_norm_eps default), checking that the attention heads split
/// hidden_size (unless head_dim is given) and group over the kv heads.
void readLlamaStyleParams(HfConfig &config, double defaultEpsilon,
                          LlamaStyleParams &p);

/// cos and sin [1, seq, rotaryDim] for positions 0..seq-1, shared by all
/// layers of a model.
struct RotaryTables {
  mlir::Value cos, sin;
};

/// How a model's causal self-attention scores its keys.
struct AttentionOptions {
  double scale = 0;                     ///< multiplies q.k
  int64_t slidingWindow = 0;            ///< 0: full causal attention
  mlir::Value alibiSlopes;              ///< optional [numHeads] (BLOOM)
  const RotaryTables *rotary = nullptr; ///< optional, applied to q and k
};

/// The most parameters a model may have: a sane bound on what a config can
/// ask for (each size key has its own limit, see HfConfig::getSize).
constexpr int64_t kMaxParameters = int64_t(1) << 40;

class DecoderBuilder {
public:
  /// Starts module { func.func @forward(%input_ids: tensor<?x?xi64>) }
  /// tagged with the config's model_type and source folder. `basePrefix`
  /// is what the family's causal-LM class puts before its base model's
  /// parameter names ("transformer." in GPT-2, "model." in Llama and OPT):
  /// families name parameters as the causal-LM checkpoint does, and with a
  /// value head (config.head()) param() drops the prefix, naming them as
  /// HF's AutoModel does.
  DecoderBuilder(mlir::MLIRContext &context, const HfConfig &config,
                 llvm::StringRef basePrefix);

  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }
  /// A NameLoc naming the op in model terms ("layers.0.attn.q_proj").
  mlir::Location loc(const llvm::Twine &name);

  /// input_ids [batch, seq] (i64).
  mlir::Value inputIds() { return inputIds_; }
  /// attention_mask [batch, seq] (i64; 1 = token, 0 = left padding).
  mlir::Value attentionMask() { return attentionMask_; }

  //===--------------------------------------------------------------------===//
  // Parameters
  //===--------------------------------------------------------------------===//

  /// A checkpoint tensor: a new argument of @forward tagged
  /// {hg.param = name} with the checkpoint's shape. `name` is the causal-LM
  /// checkpoint's; a value-head model's trunk drops the base prefix.
  mlir::Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  /// Records a checkpoint name that is tied to another parameter (the
  /// runtime accepts it as an extra tensor): module attr hg.tied.
  void addTiedName(llvm::StringRef name);

  //===--------------------------------------------------------------------===//
  // Single ops
  //===--------------------------------------------------------------------===//

  /// The model's floating-point element type (from the config's dtype).
  mlir::Type floatType() const { return floatType_; }
  /// A constant of `elementType` (default: the model's float type).
  mlir::Value constant(llvm::ArrayRef<float> values,
                       llvm::ArrayRef<int64_t> shape, const llvm::Twine &name,
                       mlir::Type elementType = {});
  /// Bounds the `seq` dim (e.g. by a learned position table's rows): the
  /// runtime refuses longer calls before running anything.
  void limitSeq(int64_t maxSeq);
  /// Each token's position id plus `start`, from the attention mask as HF
  /// computes it (left-padded rows count from their first real token):
  /// [batch, seq] of `elementType`.
  mlir::Value positions(int64_t start, mlir::Type elementType,
                        const llvm::Twine &name);
  /// Rows of `table` at `ids`; positions whose id is `paddingIdx` give
  /// the table no gradient (torch's nn.Embedding padding_idx).
  mlir::Value embedding(mlir::Value table, mlir::Value ids,
                        const llvm::Twine &name,
                        std::optional<int64_t> paddingIdx = std::nullopt);
  /// x . weight^T (+ bias) for weight [out, in]; with transposeWeight false
  /// the weight is [in, out] (GPT-2's Conv1D).
  mlir::Value linear(mlir::Value x, mlir::Value weight, mlir::Value bias,
                     const llvm::Twine &name, bool transposeWeight = true);
  mlir::Value layerNorm(mlir::Value x, mlir::Value weight, mlir::Value bias,
                        double epsilon, const llvm::Twine &name);
  mlir::Value rmsNorm(mlir::Value x, mlir::Value weight, double epsilon,
                      const llvm::Twine &name);
  mlir::Value add(mlir::Value lhs, mlir::Value rhs, const llvm::Twine &name);
  /// `x` as `elementType` (itself when it already is).
  mlir::Value castTo(mlir::Value x, mlir::Type elementType,
                     const llvm::Twine &name);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs, const llvm::Twine &name);
  mlir::Value activation(Activation act, mlir::Value x,
                         const llvm::Twine &name);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<ShapeDim> shape,
                      const llvm::Twine &name);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm,
                        const llvm::Twine &name);
  /// x[..., begin:end] along the last axis.
  mlir::Value sliceLast(mlir::Value x, int64_t begin, int64_t end,
                        const llvm::Twine &name);

  //===--------------------------------------------------------------------===//
  // Parameterised layers (create their checkpoint arguments)
  //===--------------------------------------------------------------------===//

  /// nn.Linear named `prefix`: `prefix.weight` [out, in], `prefix.bias`
  /// [out] when `hasBias`.
  mlir::Value linearLayer(mlir::Value x, llvm::StringRef prefix, int64_t in,
                          int64_t out, bool hasBias, const llvm::Twine &name);
  /// GPT-2's Conv1D named `prefix`: `prefix.weight` [in, out], `prefix.bias`.
  mlir::Value conv1dLayer(mlir::Value x, llvm::StringRef prefix, int64_t in,
                          int64_t out, const llvm::Twine &name);
  /// nn.LayerNorm named `prefix` (weight and bias unless !affine).
  mlir::Value layerNormLayer(mlir::Value x, llvm::StringRef prefix, int64_t dim,
                             double epsilon, const llvm::Twine &name,
                             bool affine = true);
  /// RMSNorm named `prefix` (`prefix.weight`).
  mlir::Value rmsNormLayer(mlir::Value x, llvm::StringRef prefix, int64_t dim,
                           double epsilon, const llvm::Twine &name);

  //===--------------------------------------------------------------------===//
  // Transformer pieces
  //===--------------------------------------------------------------------===//

  /// cos/sin tables for `rope`, computed in the graph from the positions:
  /// iota(seq) (x) invFreq -> concat(freqs, freqs) -> cos, sin.
  RotaryTables rotaryTables(const RopeFrequencies &rope);
  /// [batch, seq, heads*headDim] -> [batch, heads, seq, headDim].
  mlir::Value splitHeads(mlir::Value x, int64_t heads, int64_t headDim,
                         const llvm::Twine &name);
  /// [batch, heads, seq, headDim] -> [batch, seq, heads*headDim].
  mlir::Value mergeHeads(mlir::Value x, const llvm::Twine &name);
  /// Causal attention of q [B,Hq,T,Dh] over k, v [B,Hkv,T,Dh] (rotary
  /// applied to q and k first when the options have tables); returns the
  /// merged heads [B, T, Hq*Dh]. `prefix` names the ops ("layers.0.attn").
  mlir::Value causalAttention(mlir::Value q, mlir::Value k, mlir::Value v,
                              const AttentionOptions &options,
                              const llvm::Twine &prefix);
  /// act(gate) * up: the gated MLP core of Llama-style models.
  mlir::Value gatedActivation(mlir::Value gate, mlir::Value up, Activation act,
                              const llvm::Twine &prefix);

  /// Ends @forward returning `logits` [batch, seq, vocab] (cast to f32 when
  /// the model's float type is narrower) and verifies the module; a
  /// verifier failure is an internal error naming the op. A model of more
  /// than kMaxParameters parameters is a config error.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> finish(mlir::Value logits);
  /// Ends @forward with the model's head on `h`, the base model's last
  /// hidden state [batch, seq, dim]: the LM head, logits = h . weight^T
  /// (see finish and lmHeadWeight), or with a value head
  /// finishWithValueHead (which ignores the LM head's arguments but
  /// `headName`).
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  finishWithLmHead(mlir::Value h, bool tied, mlir::Value embeddingTable,
                   llvm::StringRef headName, int64_t vocab, int64_t dim);
  /// Ends @forward with DeepSpeed-Chat's value head: v_head = Linear(dim,
  /// 1, bias=False), parameter `v_head.weight` [1, dim]; returns `values`
  /// f32 [batch, seq] (each position's value) and `scores` f32 [batch]
  /// (the value at each row's last position whose attention_mask is 1:
  /// RewardModel's chosen_end_scores; 0 for a row without one). Records
  /// for the runtime where else a checkpoint may hold the parameters
  /// (module attributes hg.checkpoint_prefixes: the base prefix of a
  /// causal-LM checkpoint, and DeepSpeed-Chat's and a `trunk` wrapper's
  /// names; hg.checkpoint_extras: the causal LM's head `headName`, which
  /// such a checkpoint holds unused).
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  finishWithValueHead(mlir::Value h, int64_t dim, llvm::StringRef headName);

private:
  /// The @forward argument behind param(), named `name` as it is.
  mlir::Value addParam(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  /// Returns `results` (hg.name, value) from @forward and verifies the
  /// module (see finish).
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> finishReturning(
      llvm::ArrayRef<std::pair<llvm::StringRef, mlir::Value>> results);
  /// The LM head weight [vocab, dim]: the embedding table when `tied` (the
  /// checkpoint name `headName` is then listed in hg.tied), else the
  /// parameter `headName`.
  mlir::Value lmHeadWeight(bool tied, mlir::Value embeddingTable,
                           llvm::StringRef headName, int64_t vocab,
                           int64_t dim);
  mlir::ArrayAttr shapeAttr(llvm::ArrayRef<ShapeDim> shape);

  mlir::OpBuilder builder_;
  std::string modelType_;
  ModelHead head_;
  std::string basePrefix_;
  mlir::Type floatType_;
  int64_t maxSeq_ = 0;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::func::FuncOp forward_;
  mlir::Value inputIds_;
  mlir::Value attentionMask_;
  mlir::Value positionIds_; // hg.positions of the mask, made once
  llvm::SmallVector<mlir::DictionaryAttr> argAttrs_;
  llvm::SmallVector<mlir::Attribute> tiedNames_;
  /// Elements of all parameters so far; saturates at INT64_MAX.
  int64_t parameterCount_ = 0;
};

} // namespace hybridc::hf
