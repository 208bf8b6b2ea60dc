// hg-fuse-epilogues: the activation and the residual add that follow a
// linear become its GEMM's epilogue, so a decode step reads and writes the
// projection's output once instead of three times:
//   relu / gelu / silu (linear(x, W, b))  -> linear {activation}
//   add(linear(x, W, b), r)               -> linear residual r
// Only a linear whose result has no other use fuses, and a residual must
// have the result's type (no broadcasting), so the fused op computes the
// same values, rounded once at the end instead of after each step.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSEEPILOGUES
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// The linear that defines `v` when `v` is its only use, else null.
LinearOp soleLinear(Value v) {
  auto linear = v.getDefiningOp<LinearOp>();
  return linear && linear->hasOneUse() ? linear : LinearOp();
}

/// A copy of `linear` at `at` with the given activation and residual.
Value rebuild(PatternRewriter &rewriter, Operation *at, LinearOp linear,
              StringRef activation, Value residual) {
  return rewriter.create<LinearOp>(
      at->getLoc(), linear.getType(), linear.getInput(), linear.getWeight(),
      linear.getBias(), residual, linear.getNormWeight(), linear.getNormBias(),
      linear.getTransposeWeight(), activation, linear.getNorm(),
      linear.getNormEpsilon());
}

/// The epilogue name of an activation op: the hg.linear `activation`.
std::optional<StringRef> activationOf(Operation *op) {
  if (isa<ReluOp>(op))
    return StringRef("relu");
  if (isa<SiluOp>(op))
    return StringRef("silu");
  if (auto gelu = dyn_cast<GeluOp>(op)) {
    if (gelu.getApproximate() == "none")
      return StringRef("gelu");
    if (gelu.getApproximate() == "tanh")
      return StringRef("gelu_tanh");
  }
  return std::nullopt;
}

/// act(linear) -> linear {activation = act}, for a linear with neither an
/// activation nor a residual yet (the activation comes before the add).
struct FuseActivation : RewritePattern {
  explicit FuseActivation(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::optional<StringRef> activation = activationOf(op);
    if (!activation)
      return failure();
    LinearOp linear = soleLinear(op->getOperand(0));
    if (!linear || linear.getActivation() != "none" || linear.getResidual() ||
        linear.getType() != op->getResult(0).getType())
      return rewriter.notifyMatchFailure(op, "not act(linear) alone");
    rewriter.replaceOp(op, rebuild(rewriter, op, linear, *activation, {}));
    return success();
  }
};

/// add(linear, r) -> linear residual r, r of the result's type.
struct FuseResidual : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      LinearOp linear = soleLinear(op->getOperand(side));
      Value residual = op->getOperand(1 - side);
      if (!linear || linear.getResidual() || linear.getType() != op.getType() ||
          residual.getType() != op.getType())
        continue;
      rewriter.replaceOp(
          op, rebuild(rewriter, op, linear, linear.getActivation(), residual));
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not linear + same-typed value");
  }
};

struct FuseEpiloguesPass : impl::FuseEpiloguesBase<FuseEpiloguesPass> {
  void runOnOperation() override {
    // A function that adds products into weights in place (@lora_fuse)
    // keeps its adds: a GEMM with the weight as its residual would need a
    // temporary for each result until the write-backs.
    if (getOperation()->hasAttr("hg.no_epilogue_fusion"))
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseActivation, FuseResidual>(&getContext());
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
} // namespace hybridc::hg
