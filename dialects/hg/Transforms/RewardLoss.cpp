// hg-reward-loss: DeepSpeed-Chat's reward-model training loss (step 2,
// RewardModel.forward) as a function of a value model, beside @forward:
// @reward_loss, marked `hg.loss` with the accumulation executable the
// optimizer pass builds from its gradient (@reward_forward_backward). Its
// batch is 2B rows, the chosen answers then the rejected ones; besides the
// loss it returns each row's end score and the pairs' accuracy, marked
// `hg.metric` so that the gradient and the accumulation keep them.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/FunctionPorts.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_REWARDLOSS
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

constexpr StringLiteral kLoss = "reward_loss";
constexpr StringLiteral kAccumulate = "reward_forward_backward";

struct RewardLossPass : impl::RewardLossBase<RewardLossPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (StringRef name : {kLoss, kAccumulate})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-reward-loss: @" << name << " exists already";
        return signalPassFailure();
      }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    std::optional<unsigned> values =
        forward ? namedResult(forward, "values") : std::nullopt;
    if (!values) {
      module.emitError() << "hg-reward-loss: no value model's @forward "
                            "returning values (compile with --head value)";
      return signalPassFailure();
    }
    std::optional<unsigned> ids = namedArgument(forward, "input_ids");
    std::optional<unsigned> mask = namedArgument(forward, "attention_mask");
    if (!ids || !mask) {
      forward.emitError() << "hg-reward-loss: @forward must take input_ids "
                             "and attention_mask (the pairs' ends and "
                             "where they differ)";
      return signalPassFailure();
    }
    if (failed(addRewardLoss(forward, *values, *ids, *mask)))
      return signalPassFailure();
  }

  LogicalResult addRewardLoss(func::FuncOp forward, unsigned valuesIndex,
                              unsigned idsIndex, unsigned maskIndex) {
    OpBuilder b(forward.getContext());
    b.setInsertionPointAfter(forward);
    auto f = cast<func::FuncOp>(b.clone(*forward));
    f.setSymName(kLoss);
    f->setAttr("hg.loss", b.getUnitAttr());
    f->setAttr("hg.accumulate", b.getStringAttr(kAccumulate));
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    Value v = ret.getOperand(valuesIndex);
    Value ids = f.getArgument(idsIndex), mask = f.getArgument(maskIndex);
    auto idsType = dyn_cast<RankedTensorType>(ids.getType());
    auto maskType = dyn_cast<RankedTensorType>(mask.getType());
    auto valuesType = cast<RankedTensorType>(v.getType());
    if (valuesType.getRank() != 2 || !valuesType.getElementType().isF32() ||
        !idsType || !idsType.getElementType().isInteger(64) || !maskType ||
        !maskType.getElementType().isInteger(64)) {
      f.erase();
      return forward.emitError()
             << "hg-reward-loss: expects f32 values [batch, seq] and i64 "
                "input_ids and attention_mask, got "
             << valuesType << ", " << ids.getType() << " and "
             << mask.getType();
    }
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    auto ranking = b.create<PairwiseRankingLossOp>(loc, v, ids, mask);
    auto one = b.getArrayAttr({b.getI64IntegerAttr(1)});
    SmallVector<Value> results = {
        b.create<ReshapeOp>(loc, ranking.getLoss(), one),
        ranking.getEndScores(),
        b.create<ReshapeOp>(loc, ranking.getAccuracy(), one)};
    b.create<func::ReturnOp>(loc, results);
    ret.erase();
    f.setFunctionType(FunctionType::get(f.getContext(), f.getArgumentTypes(),
                                        ValueRange(results).getTypes()));
    auto named = [&](StringRef name, bool metric) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("hg.name", b.getStringAttr(name))};
      if (metric)
        attrs.push_back(b.getNamedAttr("hg.metric", b.getUnitAttr()));
      return b.getDictionaryAttr(attrs);
    };
    f.setAllResultAttrs(ArrayRef<DictionaryAttr>{named("loss", false),
                                                 named("end_scores", true),
                                                 named("accuracy", true)});
    return success();
  }
};

} // namespace
} // namespace hybridc::hg
