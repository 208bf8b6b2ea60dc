// hg-causal-lm-loss: @forward_loss, a copy of @forward that returns
// HuggingFace's causal-LM loss instead of the logits: labels = input_ids
// shifted left by one (position t predicts token t + 1), mean cross-entropy
// over the labels that are not -100 (HF's ignore index), computed in f32
// from log_softmax of the logits; and @logprobs, each position's
// log-probability of the next token (what PPO computes for the actor and
// the reference model). A one-hot product picks each label's
// log-probability (a fused cross-entropy kernel replaces it later).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <tuple>

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_CAUSALLMLOSS
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

constexpr int64_t kIgnoreIndex = -100;

std::optional<unsigned> namedResult(func::FuncOp f, StringRef name) {
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto n = f.getResultAttrOfType<StringAttr>(i, "hg.name");
        n && n.getValue() == name)
      return i;
  return std::nullopt;
}

std::optional<unsigned> namedArgument(func::FuncOp f, StringRef name) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto n = f.getArgAttrOfType<StringAttr>(i, "hg.name");
        n && n.getValue() == name)
      return i;
  return std::nullopt;
}

/// The next-token log-probabilities of a clone of @forward and its labels.
struct Picked {
  Value logProbs; ///< f32 [batch, seq - 1]
  Value labels;   ///< i64 [batch, seq - 1]: input_ids[:, 1:]
};

/// A copy of @forward named `name`, its return, and a builder before it.
std::tuple<func::FuncOp, func::ReturnOp, std::unique_ptr<OpBuilder>>
cloneForward(func::FuncOp forward, StringRef name) {
  OpBuilder top(forward.getContext());
  top.setInsertionPointAfter(forward);
  auto f = cast<func::FuncOp>(top.clone(*forward));
  f.setSymName(name);
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  return {f, ret, std::make_unique<OpBuilder>(ret)};
}

/// Position t's log-softmax of the logits (in f32) at token t + 1, by a
/// one-hot product over the vocabulary.
std::optional<Picked> pick(OpBuilder &b, Location loc, func::FuncOp f,
                           Value logits, Value ids) {
  auto logitsType = cast<RankedTensorType>(logits.getType());
  const int64_t vocab = logitsType.getDimSize(2);
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto dyn = ShapedType::kDynamic;
  if (logitsType.getElementType() != f32)
    logits = b.create<CastOp>(loc, logitsType.clone(f32), logits);
  Value shifted = b.create<SliceOp>(
      loc, RankedTensorType::get({logitsType.getDimSize(0), dyn, vocab}, f32),
      logits, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{-1},
      ArrayRef<int64_t>{1});
  auto idsType = cast<RankedTensorType>(ids.getType());
  Value labels = b.create<SliceOp>(
      loc, RankedTensorType::get({idsType.getDimSize(0), dyn}, i64),
      idsType.getElementType() == i64
          ? ids
          : b.create<CastOp>(loc, idsType.clone(i64), ids).getResult(),
      ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{INT64_MAX},
      ArrayRef<int64_t>{1});
  Value logProbs = b.create<LogSoftmaxOp>(loc, shifted, b.getI64IntegerAttr(2));
  Value vocabIds =
      b.create<IotaOp>(loc, RankedTensorType::get({vocab}, i64),
                       b.getArrayAttr({b.getI64IntegerAttr(vocab)}),
                       b.getF64FloatAttr(0), b.getF64FloatAttr(1));
  ValueShapes shapes(f);
  std::optional<hybrid::SymShape> labelShape = shapes.get(labels);
  if (!labelShape) {
    f.emitError() << "hg-causal-lm-loss: the shape of input_ids is not "
                     "known symbolically";
    return std::nullopt;
  }
  labelShape->push_back(hybrid::SymExpr(1));
  Value column = b.create<ReshapeOp>(
      loc, labels, shapes.shapeAttr(f.getContext(), *labelShape));
  Value row = b.create<ReshapeOp>(
      loc, vocabIds,
      b.getArrayAttr({b.getI64IntegerAttr(1), b.getI64IntegerAttr(1),
                      b.getI64IntegerAttr(vocab)}));
  Value hot = b.create<EqualOp>(loc, column, row);
  Value onehot = b.create<CastOp>(
      loc, cast<RankedTensorType>(hot.getType()).clone(f32), hot);
  Value picked = b.create<ReduceSumOp>(
      loc, b.create<MulOp>(loc, logProbs, onehot), ArrayRef<int64_t>{2}, false);
  return Picked{picked, labels};
}

/// Makes `value` the function's one result, named `name`.
void finish(func::FuncOp f, func::ReturnOp ret, OpBuilder &b, Value value,
            StringRef name) {
  b.create<func::ReturnOp>(ret.getLoc(), value);
  ret.erase();
  f.setFunctionType(FunctionType::get(f.getContext(), f.getArgumentTypes(),
                                      {value.getType()}));
  f.setAllResultAttrs(ArrayRef<DictionaryAttr>{
      b.getDictionaryAttr(b.getNamedAttr("hg.name", b.getStringAttr(name)))});
}

struct CausalLmLossPass : impl::CausalLmLossBase<CausalLmLossPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError() << "hg-causal-lm-loss: no function @forward";
      return signalPassFailure();
    }
    std::optional<unsigned> logitsIndex = namedResult(forward, "logits");
    std::optional<unsigned> idsIndex = namedArgument(forward, "input_ids");
    auto logitsType =
        logitsIndex ? dyn_cast<RankedTensorType>(
                          forward.getFunctionType().getResult(*logitsIndex))
                    : RankedTensorType();
    if (!logitsType || !idsIndex || logitsType.getRank() != 3 ||
        logitsType.isDynamicDim(2)) {
      forward.emitError() << "hg-causal-lm-loss: @forward must take "
                             "input_ids and return logits [batch, seq, vocab]";
      return signalPassFailure();
    }
    for (StringRef name : {"forward_loss", "logprobs"})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-causal-lm-loss: @" << name
                           << " exists already";
        return signalPassFailure();
      }
    // @logprobs: each position's log-probability of the next token.
    {
      auto [f, ret, b] = cloneForward(forward, "logprobs");
      std::optional<Picked> p =
          pick(*b, ret.getLoc(), f, ret.getOperand(*logitsIndex),
               f.getBody().front().getArgument(*idsIndex));
      if (!p)
        return signalPassFailure();
      finish(f, ret, *b, p->logProbs, "logprobs");
    }
    // @forward_loss: their mean over the labels that count, negated.
    auto [f, ret, bp] = cloneForward(forward, "forward_loss");
    OpBuilder &b = *bp;
    Location loc = ret.getLoc();
    std::optional<Picked> p = pick(b, loc, f, ret.getOperand(*logitsIndex),
                                   f.getBody().front().getArgument(*idsIndex));
    if (!p)
      return signalPassFailure();
    Type f32 = b.getF32Type(), i64 = b.getI64Type();
    Value ignored = b.create<EqualOp>(
        loc, p->labels,
        b.create<ConstantOp>(
            loc, DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                        b.getI64IntegerAttr(kIgnoreIndex))));
    Value counted = b.create<NotOp>(loc, ignored);
    Value weight = b.create<CastOp>(
        loc, cast<RankedTensorType>(counted.getType()).clone(f32), counted);
    Value total =
        b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, p->logProbs, weight),
                              ArrayRef<int64_t>{}, false);
    Value count =
        b.create<ReduceSumOp>(loc, weight, ArrayRef<int64_t>{}, false);
    Value mean = b.create<NegOp>(loc, b.create<DivOp>(loc, total, count));
    Value loss = b.create<ReshapeOp>(loc, mean,
                                     b.getArrayAttr({b.getI64IntegerAttr(1)}));
    finish(f, ret, b, loss, "loss");
  }
};

} // namespace
} // namespace hybridc::hg
