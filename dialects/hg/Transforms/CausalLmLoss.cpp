// hg-causal-lm-loss: @forward_loss, a copy of @forward that returns
// HuggingFace's causal-LM loss instead of the logits: labels = input_ids
// shifted left by one (position t predicts token t + 1), mean cross-entropy
// over the labels that are not -100 (HF's ignore index), computed in f32
// from log_softmax of the logits. The one-hot product picks each label's
// log-probability (a fused cross-entropy kernel replaces it later).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
    if (module.lookupSymbol("forward_loss")) {
      module.emitError() << "hg-causal-lm-loss: @forward_loss exists already";
      return signalPassFailure();
    }
    OpBuilder top(module.getContext());
    top.setInsertionPointAfter(forward);
    auto f = cast<func::FuncOp>(top.clone(*forward));
    f.setSymName("forward_loss");
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    Value logits = ret.getOperand(*logitsIndex);
    Value ids = body.getArgument(*idsIndex);
    const int64_t vocab = logitsType.getDimSize(2);
    Type f32 = b.getF32Type(), i64 = b.getI64Type();
    auto dyn = ShapedType::kDynamic;
    auto scalar = [&](Attribute value, Type t) {
      return b.create<ConstantOp>(
          loc, DenseElementsAttr::get(RankedTensorType::get({}, t), value));
    };
    // Position t's logits against token t + 1.
    if (logitsType.getElementType() != f32)
      logits = b.create<CastOp>(loc, logitsType.clone(f32), logits);
    Value shifted = b.create<SliceOp>(
        loc, RankedTensorType::get({logitsType.getDimSize(0), dyn, vocab}, f32),
        logits, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{0},
        ArrayRef<int64_t>{-1}, ArrayRef<int64_t>{1});
    auto idsType = cast<RankedTensorType>(ids.getType());
    Value labels = b.create<SliceOp>(
        loc, RankedTensorType::get({idsType.getDimSize(0), dyn}, i64),
        idsType.getElementType() == i64
            ? ids
            : b.create<CastOp>(loc, idsType.clone(i64), ids).getResult(),
        ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1},
        ArrayRef<int64_t>{INT64_MAX}, ArrayRef<int64_t>{1});
    Value logProbs =
        b.create<LogSoftmaxOp>(loc, shifted, b.getI64IntegerAttr(2));
    // The label's log-probability: a one-hot product over the vocabulary.
    Value vocabIds = b.create<IotaOp>(
        loc, RankedTensorType::get({vocab}, i64),
        b.getArrayAttr({b.getI64IntegerAttr(vocab)}), b.getF64FloatAttr(0),
        b.getF64FloatAttr(1));
    ValueShapes shapes(f);
    std::optional<hybrid::SymShape> labelShape = shapes.get(labels);
    if (!labelShape) {
      f.emitError() << "hg-causal-lm-loss: the shape of input_ids is not "
                       "known symbolically";
      return signalPassFailure();
    }
    labelShape->push_back(hybrid::SymExpr(1));
    Value column = b.create<ReshapeOp>(
        loc, labels, shapes.shapeAttr(module.getContext(), *labelShape));
    Value row = b.create<ReshapeOp>(
        loc, vocabIds,
        b.getArrayAttr({b.getI64IntegerAttr(1), b.getI64IntegerAttr(1),
                        b.getI64IntegerAttr(vocab)}));
    Value hot = b.create<EqualOp>(loc, column, row);
    Value onehot = b.create<CastOp>(
        loc, cast<RankedTensorType>(hot.getType()).clone(f32), hot);
    Value picked = b.create<ReduceSumOp>(
        loc, b.create<MulOp>(loc, logProbs, onehot), ArrayRef<int64_t>{2},
        false);
    // Mean over the labels that count.
    Value ignored = b.create<EqualOp>(
        loc, labels, scalar(b.getI64IntegerAttr(kIgnoreIndex), i64));
    Value counted = b.create<NotOp>(loc, ignored);
    Value weight = b.create<CastOp>(
        loc, cast<RankedTensorType>(counted.getType()).clone(f32), counted);
    Value total = b.create<ReduceSumOp>(
        loc, b.create<MulOp>(loc, picked, weight), ArrayRef<int64_t>{}, false);
    Value count = b.create<ReduceSumOp>(loc, weight, ArrayRef<int64_t>{},
                                        false);
    Value mean = b.create<NegOp>(loc, b.create<DivOp>(loc, total, count));
    Value loss = b.create<ReshapeOp>(
        loc, mean, b.getArrayAttr({b.getI64IntegerAttr(1)}));
    b.create<func::ReturnOp>(loc, loss);
    ret.erase();
    f.setFunctionType(FunctionType::get(module.getContext(),
                                        f.getArgumentTypes(),
                                        {loss.getType()}));
    f.setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr(
        b.getNamedAttr("hg.name", b.getStringAttr("loss")))});
  }
};

} // namespace
} // namespace hybridc::hg
