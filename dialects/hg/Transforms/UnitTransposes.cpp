// hg-unit-transposes: a transpose that moves only dims of size 1 keeps every
// element where it was, so it is a reshape (a view, after lowering). A decode
// step is full of them: seq is 1, and [batch, 1, heads, dim] <-> [batch,
// heads, 1, dim] around attention moves nothing.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_UNITTRANSPOSES
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

struct UnitTransposeToReshape : OpRewritePattern<TransposeOp> {
  UnitTransposeToReshape(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern(context), shapes_(shapes) {}

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<hybrid::SymShape> in = shapes_.get(op.getInput());
    std::optional<hybrid::SymShape> out = shapes_.get(op.getResult());
    if (!in || !out)
      return rewriter.notifyMatchFailure(op, "shape not known");
    // The dims that are not 1, in the order the result takes them, must be
    // in their input order.
    int64_t last = -1;
    for (int64_t p : op.getPerm()) {
      if ((*in)[p] == hybrid::SymExpr(1))
        continue;
      if (p < last)
        return rewriter.notifyMatchFailure(op, "moves a dim larger than 1");
      last = p;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, op.getType(), op.getInput(),
        shapes_.shapeAttr(rewriter.getContext(), *out));
    return success();
  }

  ValueShapes &shapes_;
};

struct UnitTransposesPass : impl::UnitTransposesBase<UnitTransposesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ValueShapes shapes(getOperation());
    ValueShapesListener listener(shapes);
    patterns.add<UnitTransposeToReshape>(&getContext(), shapes);
    GreedyRewriteConfig config;
    config.listener = &listener;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                       config);
  }
};

} // namespace
} // namespace hybridc::hg
