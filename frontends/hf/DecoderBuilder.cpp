// The shared graph pieces of HF decoder families, emitted as hg ops.
#include "frontends/hf/DecoderBuilder.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace hybridc::hf {

using mlir::Value;

namespace {

struct ActivationName {
  llvm::StringLiteral name;
  Activation act;
};

// HF's ACT2FN names whose function the hg ops express exactly.
constexpr ActivationName kActivations[] = {
    {"gelu", Activation::GeluErf},
    {"gelu_new", Activation::GeluTanh},
    {"gelu_pytorch_tanh", Activation::GeluTanh},
    {"gelu_fast", Activation::GeluTanh},
    {"gelu_accurate", Activation::GeluTanh},
    {"quick_gelu", Activation::QuickGelu},
    {"relu", Activation::Relu},
    {"relu2", Activation::Relu2},
    {"relu6", Activation::Relu6},
    {"silu", Activation::Silu},
    {"swish", Activation::Silu},
    {"tanh", Activation::Tanh},
    {"sigmoid", Activation::Sigmoid},
    {"linear", Activation::Identity},
};

} // namespace

Activation readActivation(HfConfig &config, llvm::StringRef key,
                          llvm::StringRef defaultName) {
  std::string name = config.getString(key, defaultName);
  for (const ActivationName &entry : kActivations)
    if (entry.name == name)
      return entry.act;
  std::string supported;
  for (const ActivationName &entry : kActivations)
    supported += (supported.empty() ? "" : ", ") + entry.name.str();
  config.reject("unsupported activation '" + name + "' in '" + key +
                "' (supported: " + supported + ")");
  return Activation::Identity;
}

std::optional<int64_t> readPaddingIdx(HfConfig &config, int64_t vocab) {
  std::optional<int64_t> pad = config.getOptionalInt("pad_token_id");
  if (!pad)
    return std::nullopt;
  if (*pad < -vocab || *pad >= vocab) {
    config.reject("pad_token_id " + llvm::Twine(*pad) +
                  " is not a row of the token embedding (vocab_size " +
                  llvm::Twine(vocab) + ")");
    return std::nullopt;
  }
  return *pad < 0 ? *pad + vocab : *pad;
}

void readLlamaStyleParams(HfConfig &config, double defaultEpsilon,
                          LlamaStyleParams &p) {
  p.vocab = config.getSize("vocab_size");
  p.dim = config.getSize("hidden_size");
  p.inner = config.getSize("intermediate_size");
  p.layers = config.getSize("num_hidden_layers");
  p.heads = config.getSize("num_attention_heads");
  p.kvHeads = config.getSize("num_key_value_heads", p.heads);
  if (!config.has("head_dim"))
    config.requireDivisible("hidden_size", p.dim, "num_attention_heads",
                            p.heads);
  p.headDim = config.getSize("head_dim", p.dim / p.heads);
  if (!config.failed() && p.heads % p.kvHeads != 0)
    config.reject("num_attention_heads " + llvm::Twine(p.heads) +
                  " is not a multiple of num_key_value_heads " +
                  llvm::Twine(p.kvHeads));
  p.epsilon = config.getEpsilon("rms_norm_eps", defaultEpsilon);
  p.act = readActivation(config, "hidden_act", "silu");
  p.tied = config.getBool("tie_word_embeddings", false);
  p.paddingIdx = readPaddingIdx(config, p.vocab);
}

//===----------------------------------------------------------------------===//
// Module and signature
//===----------------------------------------------------------------------===//

DecoderBuilder::DecoderBuilder(mlir::MLIRContext &context,
                               const HfConfig &config,
                               llvm::StringRef basePrefix)
    : builder_(&context), modelType_(config.modelType().str()),
      head_(config.head()), basePrefix_(basePrefix.str()) {
  floatType_ = config.modelDtype() == "bfloat16"  ? builder_.getBF16Type()
               : config.modelDtype() == "float16" ? builder_.getF16Type()
                                                  : builder_.getF32Type();
  context.getOrLoadDialect<hg::HgDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();

  mlir::Location moduleLoc = mlir::FileLineColLoc::get(
      builder_.getStringAttr(config.sourceDir() + "/config.json"), 0, 0);
  module_ = mlir::ModuleOp::create(moduleLoc);
  module_.get()->setAttr("hg.model", builder_.getStringAttr(modelType_));
  module_.get()->setAttr("hg.source",
                         builder_.getStringAttr(config.sourceDir()));

  builder_.setInsertionPointToEnd(module_->getBody());
  auto idsType = mlir::RankedTensorType::get(
      {mlir::ShapedType::kDynamic, mlir::ShapedType::kDynamic},
      builder_.getI64Type());
  forward_ = builder_.create<mlir::func::FuncOp>(
      loc("forward"), "forward",
      builder_.getFunctionType({idsType, idsType}, {}));
  mlir::Block *entry = forward_.addEntryBlock();
  inputIds_ = entry->getArgument(0);
  attentionMask_ = entry->getArgument(1);
  argAttrs_.push_back(builder_.getDictionaryAttr({
      builder_.getNamedAttr("hg.name", builder_.getStringAttr("input_ids")),
      builder_.getNamedAttr("hg.dims",
                            builder_.getStrArrayAttr({"batch", "seq"})),
  }));
  // HF's attention_mask (1 = token, 0 = left padding); omitted, it is all
  // ones.
  argAttrs_.push_back(builder_.getDictionaryAttr({
      builder_.getNamedAttr("hg.name",
                            builder_.getStringAttr("attention_mask")),
      builder_.getNamedAttr("hg.dims",
                            builder_.getStrArrayAttr({"batch", "seq"})),
      builder_.getNamedAttr("hg.default", builder_.getI64IntegerAttr(1)),
  }));
  builder_.setInsertionPointToEnd(entry);
}

mlir::Location DecoderBuilder::loc(const llvm::Twine &name) {
  return mlir::NameLoc::get(builder_.getStringAttr(name));
}

Value DecoderBuilder::param(llvm::StringRef name,
                            llvm::ArrayRef<int64_t> shape) {
  if (head_ == ModelHead::CausalLm)
    return addParam(name, shape);
  // Every parameter but the LM head's (which a value head never asks for)
  // belongs to the base model.
  assert(name.starts_with(basePrefix_) &&
         "a trunk parameter outside the family's base prefix");
  return addParam(name.drop_front(basePrefix_.size()), shape);
}

Value DecoderBuilder::addParam(llvm::StringRef name,
                               llvm::ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (int64_t d : shape)
    if (llvm::MulOverflow(elements, d, elements))
      elements = std::numeric_limits<int64_t>::max();
  if (llvm::AddOverflow(parameterCount_, elements, parameterCount_))
    parameterCount_ = std::numeric_limits<int64_t>::max();
  auto type = mlir::RankedTensorType::get(shape, floatType_);
  Value arg = forward_.getBody().front().addArgument(type, loc(name));
  argAttrs_.push_back(builder_.getDictionaryAttr(
      builder_.getNamedAttr("hg.param", builder_.getStringAttr(name))));
  return arg;
}

void DecoderBuilder::addTiedName(llvm::StringRef name) {
  tiedNames_.push_back(builder_.getStringAttr(name));
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
DecoderBuilder::finish(Value logits) {
  // Log-probabilities (sampling, PPO) want float32 whatever the weights.
  return finishReturning(
      {{"logits", castTo(logits, builder_.getF32Type(), "logits")}});
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
DecoderBuilder::finishReturning(
    llvm::ArrayRef<std::pair<llvm::StringRef, Value>> results) {
  if (parameterCount_ > kMaxParameters)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "config.json: the model has " +
            (parameterCount_ == std::numeric_limits<int64_t>::max()
                 ? std::string("more than 2^63")
                 : std::to_string(parameterCount_)) +
            " parameters, above the limit of " +
            std::to_string(kMaxParameters) + " (2^40) (model_type " +
            modelType_ + ")");
  llvm::SmallVector<Value> values;
  for (const auto &[name, value] : results)
    values.push_back(value);
  builder_.create<mlir::func::ReturnOp>(loc(results.front().first), values);
  if (maxSeq_ > 0)
    forward_->setAttr("hg.dim_max",
                      builder_.getDictionaryAttr(builder_.getNamedAttr(
                          "seq", builder_.getI64IntegerAttr(maxSeq_))));
  mlir::Block &entry = forward_.getBody().front();
  forward_.setFunctionType(builder_.getFunctionType(
      entry.getArgumentTypes(), mlir::TypeRange(mlir::ValueRange(values))));
  forward_.setAllArgAttrs(argAttrs_);
  for (auto [i, result] : llvm::enumerate(results))
    forward_.setResultAttr(i, "hg.name", builder_.getStringAttr(result.first));
  if (!tiedNames_.empty())
    module_.get()->setAttr("hg.tied", builder_.getArrayAttr(tiedNames_));

  // The graph is built from validated hyper-parameters, so an invalid op is
  // a bug here; say which op, in one line.
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler handler(context(), [&](mlir::Diagnostic &diag) {
    if (diagnostic.empty()) {
      llvm::raw_string_ostream os(diagnostic);
      os << diag.getLocation() << ": " << diag.str();
    }
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(module_.get())))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "internal error: the HF frontend built an invalid " + modelType_ +
            " graph: " + diagnostic);
  return std::move(module_);
}

//===----------------------------------------------------------------------===//
// Single ops
//===----------------------------------------------------------------------===//

mlir::ArrayAttr DecoderBuilder::shapeAttr(llvm::ArrayRef<ShapeDim> shape) {
  llvm::SmallVector<mlir::Attribute> entries;
  for (const ShapeDim &dim : shape)
    entries.push_back(
        dim.symbol.empty()
            ? mlir::Attribute(builder_.getI64IntegerAttr(dim.size))
            : mlir::Attribute(builder_.getStringAttr(dim.symbol)));
  return builder_.getArrayAttr(entries);
}

Value DecoderBuilder::constant(llvm::ArrayRef<float> values,
                               llvm::ArrayRef<int64_t> shape,
                               const llvm::Twine &name,
                               mlir::Type elementType) {
  if (!elementType)
    elementType = floatType_;
  auto type = mlir::RankedTensorType::get(shape, elementType);
  // Each value rounded once, to nearest even, as torch's .to(dtype) does.
  const llvm::fltSemantics &semantics =
      mlir::cast<mlir::FloatType>(elementType).getFloatSemantics();
  llvm::SmallVector<llvm::APFloat> rounded;
  for (float v : values) {
    llvm::APFloat x(v);
    bool lost;
    x.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
    rounded.push_back(x);
  }
  return builder_.create<hg::ConstantOp>(
      loc(name), mlir::DenseElementsAttr::get(type, rounded));
}

void DecoderBuilder::limitSeq(int64_t maxSeq) { maxSeq_ = maxSeq; }

Value DecoderBuilder::positions(int64_t start, mlir::Type elementType,
                                const llvm::Twine &name) {
  // HF computes position ids from the attention mask (cumsum - 1), so a
  // left-padded row's tokens count from 0 at its first real token.
  if (!positionIds_)
    positionIds_ =
        builder_.create<hg::PositionsOp>(loc("positions"), attentionMask_);
  Value pos = positionIds_;
  if (start != 0)
    pos = add(pos,
              builder_.create<hg::ConstantOp>(
                  loc(name),
                  mlir::DenseElementsAttr::get(
                      mlir::RankedTensorType::get({1}, builder_.getI64Type()),
                      llvm::ArrayRef<int64_t>{start})),
              name);
  return castTo(pos, elementType, name);
}

Value DecoderBuilder::embedding(Value table, Value ids, const llvm::Twine &name,
                                std::optional<int64_t> paddingIdx) {
  auto op = builder_.create<hg::EmbeddingOp>(loc(name), table, ids);
  if (paddingIdx)
    op.setPaddingIdx(*paddingIdx);
  return op;
}

Value DecoderBuilder::linear(Value x, Value weight, Value bias,
                             const llvm::Twine &name, bool transposeWeight) {
  return builder_.create<hg::LinearOp>(loc(name), x, weight, bias,
                                       builder_.getBoolAttr(transposeWeight));
}

Value DecoderBuilder::layerNorm(Value x, Value weight, Value bias,
                                double epsilon, const llvm::Twine &name) {
  return builder_.create<hg::LayerNormOp>(loc(name), x, weight, bias,
                                          builder_.getF64FloatAttr(epsilon),
                                          builder_.getI64IntegerAttr(-1));
}

Value DecoderBuilder::rmsNorm(Value x, Value weight, double epsilon,
                              const llvm::Twine &name) {
  return builder_.create<hg::RmsNormOp>(loc(name), x, weight,
                                        builder_.getF64FloatAttr(epsilon),
                                        builder_.getI64IntegerAttr(-1));
}

Value DecoderBuilder::castTo(Value x, mlir::Type elementType,
                             const llvm::Twine &name) {
  auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
  if (type.getElementType() == elementType)
    return x;
  return builder_.create<hg::CastOp>(loc(name), type.clone(elementType), x);
}

Value DecoderBuilder::add(Value lhs, Value rhs, const llvm::Twine &name) {
  return builder_.create<hg::AddOp>(loc(name), lhs, rhs);
}

Value DecoderBuilder::mul(Value lhs, Value rhs, const llvm::Twine &name) {
  return builder_.create<hg::MulOp>(loc(name), lhs, rhs);
}

Value DecoderBuilder::activation(Activation act, Value x,
                                 const llvm::Twine &name) {
  mlir::Location l = loc(name);
  switch (act) {
  case Activation::GeluErf:
    return builder_.create<hg::GeluOp>(l, x, builder_.getStringAttr("none"));
  case Activation::GeluTanh:
    return builder_.create<hg::GeluOp>(l, x, builder_.getStringAttr("tanh"));
  case Activation::QuickGelu: {
    Value scaled = mul(x, constant({1.702f}, {1}, name + ".alpha"), name);
    return mul(x, builder_.create<hg::SigmoidOp>(l, scaled), name);
  }
  case Activation::Relu:
    return builder_.create<hg::ReluOp>(l, x);
  case Activation::Relu2: {
    Value relu = builder_.create<hg::ReluOp>(l, x);
    return mul(relu, relu, name);
  }
  case Activation::Relu6:
    return builder_.create<hg::ClipOp>(l, x, builder_.getF64FloatAttr(0.0),
                                       builder_.getF64FloatAttr(6.0));
  case Activation::Silu:
    return builder_.create<hg::SiluOp>(l, x);
  case Activation::Tanh:
    return builder_.create<hg::TanhOp>(l, x);
  case Activation::Sigmoid:
    return builder_.create<hg::SigmoidOp>(l, x);
  case Activation::Identity:
    return x;
  }
  llvm_unreachable("unknown activation");
}

Value DecoderBuilder::reshape(Value x, llvm::ArrayRef<ShapeDim> shape,
                              const llvm::Twine &name) {
  return builder_.create<hg::ReshapeOp>(loc(name), x, shapeAttr(shape));
}

Value DecoderBuilder::transpose(Value x, llvm::ArrayRef<int64_t> perm,
                                const llvm::Twine &name) {
  return builder_.create<hg::TransposeOp>(loc(name), x,
                                          builder_.getDenseI64ArrayAttr(perm));
}

Value DecoderBuilder::sliceLast(Value x, int64_t begin, int64_t end,
                                const llvm::Twine &name) {
  auto rank = mlir::cast<mlir::RankedTensorType>(x.getType()).getRank();
  return builder_.create<hg::SliceOp>(
      loc(name), x, builder_.getDenseI64ArrayAttr({rank - 1}),
      builder_.getDenseI64ArrayAttr({begin}),
      builder_.getDenseI64ArrayAttr({end}), builder_.getDenseI64ArrayAttr({1}));
}

//===----------------------------------------------------------------------===//
// Parameterised layers
//===----------------------------------------------------------------------===//

Value DecoderBuilder::linearLayer(Value x, llvm::StringRef prefix, int64_t in,
                                  int64_t out, bool hasBias,
                                  const llvm::Twine &name) {
  Value weight = param((prefix + ".weight").str(), {out, in});
  Value bias = hasBias ? param((prefix + ".bias").str(), {out}) : Value();
  return linear(x, weight, bias, name);
}

Value DecoderBuilder::conv1dLayer(Value x, llvm::StringRef prefix, int64_t in,
                                  int64_t out, const llvm::Twine &name) {
  Value weight = param((prefix + ".weight").str(), {in, out});
  Value bias = param((prefix + ".bias").str(), {out});
  return linear(x, weight, bias, name, /*transposeWeight=*/false);
}

Value DecoderBuilder::layerNormLayer(Value x, llvm::StringRef prefix,
                                     int64_t dim, double epsilon,
                                     const llvm::Twine &name, bool affine) {
  Value weight, bias;
  if (affine) {
    weight = param((prefix + ".weight").str(), {dim});
    bias = param((prefix + ".bias").str(), {dim});
  }
  return layerNorm(x, weight, bias, epsilon, name);
}

Value DecoderBuilder::rmsNormLayer(Value x, llvm::StringRef prefix, int64_t dim,
                                   double epsilon, const llvm::Twine &name) {
  return rmsNorm(x, param((prefix + ".weight").str(), {dim}), epsilon, name);
}

//===----------------------------------------------------------------------===//
// Transformer pieces
//===----------------------------------------------------------------------===//

RotaryTables DecoderBuilder::rotaryTables(const RopeFrequencies &rope) {
  auto half = static_cast<int64_t>(rope.invFreq.size());
  int64_t dim = rope.rotaryDim();
  // HF: freqs = inv_freq @ position_ids (float32), emb = cat(freqs, freqs),
  // cos and sin in float32, then cast to the activations' type.
  mlir::Type f32 = builder_.getF32Type();
  Value pos = positions(0, f32, "rotary.positions");
  pos = reshape(pos, {"batch", "seq", 1}, "rotary.positions");
  Value invFreq = constant(rope.invFreq, {1, 1, half}, "rotary.inv_freq", f32);
  Value freqs = mul(pos, invFreq, "rotary.freqs");
  Value emb = builder_.create<hg::ConcatOp>(loc("rotary.freqs"),
                                            mlir::ValueRange{freqs, freqs},
                                            builder_.getI64IntegerAttr(2));
  Value cos = builder_.create<hg::CosOp>(loc("rotary.cos"), emb);
  Value sin = builder_.create<hg::SinOp>(loc("rotary.sin"), emb);
  if (rope.attentionScaling != 1.0f) {
    Value scaling =
        constant({rope.attentionScaling}, {1}, "rotary.attention_scaling", f32);
    cos = mul(cos, scaling, "rotary.cos");
    sin = mul(sin, scaling, "rotary.sin");
  }
  (void)dim;
  // [batch, seq, rotary_dim]: each row's own positions (left padding).
  return {castTo(cos, floatType_, "rotary.cos"),
          castTo(sin, floatType_, "rotary.sin")};
}

Value DecoderBuilder::splitHeads(Value x, int64_t heads, int64_t headDim,
                                 const llvm::Twine &name) {
  Value split = reshape(x, {"batch", "seq", heads, headDim}, name);
  return transpose(split, {0, 2, 1, 3}, name);
}

Value DecoderBuilder::mergeHeads(Value x, const llvm::Twine &name) {
  auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
  int64_t width = type.getDimSize(1) * type.getDimSize(3);
  Value merged = transpose(x, {0, 2, 1, 3}, name);
  return reshape(merged, {"batch", "seq", width}, name);
}

Value DecoderBuilder::causalAttention(Value q, Value k, Value v,
                                      const AttentionOptions &options,
                                      const llvm::Twine &prefix) {
  if (options.rotary) {
    auto rotate = [&](Value x, const char *which) {
      return builder_.create<hg::RotaryOp>(
          loc(prefix + ".rotary_" + which), x, options.rotary->cos,
          options.rotary->sin, builder_.getBoolAttr(false));
    };
    q = rotate(q, "q");
    k = rotate(k, "k");
  }
  Value out = builder_.create<hg::AttentionOp>(
      loc(prefix + ".sdpa"), q, k, v, /*mask=*/Value(), options.alibiSlopes,
      /*key_length=*/Value(), /*key_mask=*/attentionMask_,
      builder_.getF64FloatAttr(options.scale), builder_.getBoolAttr(true),
      builder_.getI64IntegerAttr(options.slidingWindow));
  return mergeHeads(out, prefix + ".merge_heads");
}

Value DecoderBuilder::lmHeadWeight(bool tied, Value embeddingTable,
                                   llvm::StringRef headName, int64_t vocab,
                                   int64_t dim) {
  if (!tied)
    return param(headName, {vocab, dim});
  addTiedName(headName);
  return embeddingTable;
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
DecoderBuilder::finishWithLmHead(Value h, bool tied, Value embeddingTable,
                                 llvm::StringRef headName, int64_t vocab,
                                 int64_t dim) {
  if (head_ == ModelHead::Value)
    return finishWithValueHead(h, dim, headName);
  Value weight = lmHeadWeight(tied, embeddingTable, headName, vocab, dim);
  return finish(linear(h, weight, Value(), "lm_head"));
}

/// Wrappers under which value-model checkpoints hold the base model:
/// DeepSpeed-Chat's RewardModel (its own spelling) and a module that names
/// it `trunk` (the PPO oracle's critic and reward model).
constexpr llvm::StringLiteral kTrunkWrappers[] = {"rwtranformer.", "trunk."};

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
DecoderBuilder::finishWithValueHead(Value h, int64_t dim,
                                    llvm::StringRef headName) {
  Value weight = addParam("v_head.weight", {1, dim});
  Value values = linear(h, weight, Value(), "v_head");
  values = reshape(values, {"batch", "seq"}, "values");
  values = castTo(values, builder_.getF32Type(), "values");

  // The score is the value at the row's last token: number the positions
  // 1..seq, keep the tokens' numbers, and pick the position whose number
  // is the row's largest (none in a row without tokens: its score is 0).
  mlir::Type i64 = builder_.getI64Type();
  Value numbers = builder_.create<hg::IotaOp>(
      loc("scores.positions"),
      mlir::RankedTensorType::get({mlir::ShapedType::kDynamic}, i64),
      shapeAttr({"seq"}), builder_.getF64FloatAttr(1),
      builder_.getF64FloatAttr(1));
  Value numbered =
      mul(castTo(attentionMask_, i64, "scores.mask"), numbers, "scores.tokens");
  Value last = builder_.create<hg::ReduceMaxOp>(loc("scores.last"), numbered,
                                                llvm::ArrayRef<int64_t>{1},
                                                /*keepdims=*/true);
  Value isLast =
      builder_.create<hg::EqualOp>(loc("scores.is_last"), numbers, last);
  Value zero = constant({0.0f}, {1}, "scores.zero", builder_.getF32Type());
  Value picked =
      builder_.create<hg::SelectOp>(loc("scores.pick"), isLast, values, zero);
  Value scores = builder_.create<hg::ReduceSumOp>(
      loc("scores"), picked, llvm::ArrayRef<int64_t>{1}, /*keepdims=*/false);

  llvm::SmallVector<llvm::StringRef> prefixes = {basePrefix_};
  prefixes.append(std::begin(kTrunkWrappers), std::end(kTrunkWrappers));
  module_.get()->setAttr("hg.checkpoint_prefixes",
                         builder_.getStrArrayAttr(prefixes));
  module_.get()->setAttr("hg.checkpoint_extras",
                         builder_.getStrArrayAttr({headName}));
  return finishReturning({{"values", values}, {"scores", scores}});
}

Value DecoderBuilder::gatedActivation(Value gate, Value up, Activation act,
                                      const llvm::Twine &prefix) {
  return mul(activation(act, gate, prefix + ".act"), up, prefix + ".gate_mul");
}

} // namespace hybridc::hf
