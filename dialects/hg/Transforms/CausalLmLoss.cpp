// hg-causal-lm-loss: @forward_loss, a copy of @forward that returns
// HuggingFace's causal-LM loss instead of the logits, and @logprobs, each
// position's log-probability of the next token (what PPO computes for the
// actor and the reference model). @forward_loss takes HF's `labels`
// (aligned with input_ids: position t is scored against labels[t + 1],
// -100 ignored); omitted, they are input_ids with -100 where
// attention_mask is 0, so padding never counts. The loss is the mean
// cross-entropy over the labels that count, in f32, and 0 when none does
// (HF's mean is NaN then). One hg.label_log_probs over the full [batch,
// seq, vocab] logits picks each label's log-probability (a fused kernel),
// so neither the logits nor their gradient are sliced, padded or widened
// to f32: the last position's label is ignored instead.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/FunctionPorts.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>
#include <memory>
#include <tuple>

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_CAUSALLMLOSS
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

constexpr int64_t kIgnoreIndex = -100;
/// What an omitted `labels` input is filled with, read per element as "the
/// input token, or -100 under padding". No caller passes it: HF rejects
/// negative labels other than -100.
constexpr int64_t kLabelOfInput = std::numeric_limits<int64_t>::min();

/// A rank-0 constant of `elementType`.
Value scalar(OpBuilder &b, Location loc, Type elementType, Attribute value) {
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                  ArrayRef<Attribute>{value}));
}

Value i64Scalar(OpBuilder &b, Location loc, int64_t value) {
  return scalar(b, loc, b.getI64Type(), b.getI64IntegerAttr(value));
}

/// `ids` as i64.
Value asI64(OpBuilder &b, Location loc, Value ids) {
  auto type = cast<RankedTensorType>(ids.getType());
  if (type.getElementType().isInteger(64))
    return ids;
  return b.create<CastOp>(loc, type.clone(b.getI64Type()), ids);
}

/// The next-token log-probabilities of a clone of @forward and its labels.
struct Picked {
  Value logProbs; ///< f32 [batch, seq]: 0 at the last position
  Value labels;   ///< i64 [batch, seq]: the aligned labels[:, 1:], then -100
  Operation *unusedCast = nullptr; ///< the logits' cast to f32, bypassed
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

/// Each position's log-softmax of the logits (in f32) at `aligned[t + 1]`
/// (i64 [batch, seq], shaped like input_ids `ids`), by one
/// hg.label_log_probs over every position, the last one's label -100.
std::optional<Picked> pick(OpBuilder &b, Location loc, func::FuncOp f,
                           Value logits, Value ids, Value aligned) {
  Type i64 = b.getI64Type();
  auto dyn = ShapedType::kDynamic;
  Picked picked;
  // A cast of narrower logits to f32 is exact; label_log_probs computes in
  // f32 from them anyway, and its gradient then comes in their type.
  if (auto widen = logits.getDefiningOp<CastOp>())
    if (isa<FloatType>(getElementTypeOrSelf(widen.getInput().getType())) &&
        getElementTypeOrSelf(logits.getType()).isF32()) {
      picked.unusedCast = widen;
      logits = widen.getInput();
    }
  ValueShapes shapes(f);
  std::optional<hybrid::SymShape> idShape = shapes.get(ids);
  if (!idShape || idShape->size() != 2) {
    f.emitError() << "hg-causal-lm-loss: the shape of input_ids is not "
                     "known symbolically";
    return std::nullopt;
  }
  const int64_t batch = cast<RankedTensorType>(ids.getType()).getDimSize(0);
  Value next =
      b.create<SliceOp>(loc, RankedTensorType::get({batch, dyn}, i64), aligned,
                        ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1},
                        ArrayRef<int64_t>{INT64_MAX}, ArrayRef<int64_t>{1});
  Value last = b.create<BroadcastToOp>(
      loc, i64Scalar(b, loc, kIgnoreIndex),
      shapes.shapeAttr(f.getContext(), {(*idShape)[0], hybrid::SymExpr(1)}));
  picked.labels =
      b.create<ConcatOp>(loc, ValueRange{next, last}, b.getI64IntegerAttr(1));
  picked.logProbs = b.create<LabelLogProbsOp>(loc, logits, picked.labels);
  return picked;
}

/// Adds @forward_loss's `labels` argument: i64 shaped like input_ids (its
/// dims), filled with kLabelOfInput when the caller omits it.
Value addLabelsArgument(func::FuncOp f, unsigned idsIndex) {
  Builder b(f.getContext());
  auto idsType = cast<RankedTensorType>(f.getArgumentTypes()[idsIndex]);
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("hg.name", b.getStringAttr("labels")),
      b.getNamedAttr("hg.default", b.getI64IntegerAttr(kLabelOfInput))};
  if (Attribute dims = f.getArgAttr(idsIndex, "hg.dims"))
    attrs.push_back(b.getNamedAttr("hg.dims", dims));
  const unsigned index = f.getNumArguments();
  f.insertArgument(index, idsType.clone(b.getI64Type()),
                   b.getDictionaryAttr(attrs), f.getLoc());
  return f.getArgument(index);
}

/// The labels the loss scores: `labels` where given, else (kLabelOfInput)
/// input_ids with -100 where attention_mask, when the model takes one, is
/// 0: HF's labels=input_ids.masked_fill(attention_mask == 0, -100).
Value effectiveLabels(OpBuilder &b, Location loc, func::FuncOp f, Value labels,
                      Value ids) {
  Value fromInput = asI64(b, loc, ids);
  if (std::optional<unsigned> m = namedArgument(f, "attention_mask")) {
    Value mask = f.getArgument(*m);
    Type maskType = getElementTypeOrSelf(mask.getType());
    Value padding = b.create<EqualOp>(
        loc, mask, scalar(b, loc, maskType, b.getZeroAttr(maskType)));
    fromInput = b.create<SelectOp>(loc, padding,
                                   i64Scalar(b, loc, kIgnoreIndex), fromInput);
  }
  Value omitted =
      b.create<EqualOp>(loc, labels, i64Scalar(b, loc, kLabelOfInput));
  return b.create<SelectOp>(loc, omitted, fromInput, labels);
}

/// Erases the bypassed cast once nothing reads it.
void dropUnusedCast(const Picked &p) {
  if (p.unusedCast && p.unusedCast->use_empty())
    p.unusedCast->erase();
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
    if (namedArgument(forward, "labels")) {
      forward.emitError() << "hg-causal-lm-loss: @forward takes an input "
                             "named labels already; the loss adds its own";
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
      Value ids = f.getArgument(*idsIndex);
      std::optional<Picked> p =
          pick(*b, ret.getLoc(), f, ret.getOperand(*logitsIndex), ids,
               asI64(*b, ret.getLoc(), ids));
      if (!p)
        return signalPassFailure();
      // The last position predicts no token: [batch, seq - 1].
      auto type = cast<RankedTensorType>(p->logProbs.getType());
      Value next = b->create<SliceOp>(
          ret.getLoc(),
          RankedTensorType::get({type.getDimSize(0), ShapedType::kDynamic},
                                type.getElementType()),
          p->logProbs, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{0},
          ArrayRef<int64_t>{-1}, ArrayRef<int64_t>{1});
      finish(f, ret, *b, next, "logprobs");
      dropUnusedCast(*p);
    }
    // @forward_loss: the mean over the labels that count, negated.
    auto [f, ret, bp] = cloneForward(forward, "forward_loss");
    OpBuilder &b = *bp;
    Location loc = ret.getLoc();
    Value ids = f.getArgument(*idsIndex);
    Value labels =
        effectiveLabels(b, loc, f, addLabelsArgument(f, *idsIndex), ids);
    std::optional<Picked> p =
        pick(b, loc, f, ret.getOperand(*logitsIndex), ids, labels);
    if (!p)
      return signalPassFailure();
    Type f32 = b.getF32Type();
    Value ignored =
        b.create<EqualOp>(loc, p->labels, i64Scalar(b, loc, kIgnoreIndex));
    Value counted = b.create<NotOp>(loc, ignored);
    Value weight = b.create<CastOp>(
        loc, cast<RankedTensorType>(counted.getType()).clone(f32), counted);
    // An ignored label's log-probability is 0 already.
    Value total =
        b.create<ReduceSumOp>(loc, p->logProbs, ArrayRef<int64_t>{}, false);
    Value count =
        b.create<ReduceSumOp>(loc, weight, ArrayRef<int64_t>{}, false);
    // No label counts: 0 / 1, so the loss is 0 and every gradient zero
    // (HF divides 0 by 0). 0 - total, not -total, keeps that 0 positive.
    Value zero = scalar(b, loc, f32, b.getF32FloatAttr(0));
    Value one = scalar(b, loc, f32, b.getF32FloatAttr(1));
    Value negated = b.create<SubOp>(loc, zero, total);
    Value mean =
        b.create<DivOp>(loc, negated, b.create<MaxOp>(loc, count, one));
    Value loss = b.create<ReshapeOp>(loc, mean,
                                     b.getArrayAttr({b.getI64IntegerAttr(1)}));
    finish(f, ret, b, loss, "loss");
    dropUnusedCast(*p);
  }
};

} // namespace
} // namespace hybridc::hg
