// hg-fuse-linear: matmul by a parameter matrix (plus a bias) -> hg.linear,
// so the weight layout pass and the GEMM epilogues see the linear layers.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OperandMatchers.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSELINEAR
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// matmul(x, W) with W [K, N] a parameter, or matmul(x, transpose(W)) with
/// W [N, K] a parameter.
struct MatMulToLinear : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    Value rhs = op.getRhs();
    Value weight;
    bool transposed = false;
    if (isParameter(rhs)) {
      weight = rhs;
    } else if (auto t = rhs.getDefiningOp<TransposeOp>();
               t && isParameter(t.getInput()) &&
               t.getPerm() == ArrayRef<int64_t>{1, 0}) {
      weight = t.getInput();
      transposed = true;
    }
    if (!weight || cast<RankedTensorType>(weight.getType()).getRank() != 2)
      return rewriter.notifyMatchFailure(op, "rhs is not a parameter matrix");
    // A 2-D rhs has no batch dims, so the result type is unchanged.
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getLhs(), weight, Value(),
                                          transposed);
    return success();
  }
};

/// add(linear(x, W), b) with b [N] -> linear(x, W, bias b).
struct FoldLinearBias : OpRewritePattern<AddOp> {
  FoldLinearBias(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern(context), shapes(shapes) {}
  ValueShapes &shapes;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      auto linear = op->getOperand(side).getDefiningOp<LinearOp>();
      Value bias = op->getOperand(1 - side);
      if (!linear || linear.getBias() || linear.getResidual() ||
          linear.getActivation() != "none" || !linear->hasOneUse())
        continue;
      auto biasType = cast<RankedTensorType>(bias.getType());
      if (biasType.getRank() != 1 || !hasFloatElements(bias))
        continue;
      std::optional<hybrid::SymExpr> n = shapes.dim(linear.getResult(), -1);
      std::optional<hybrid::SymExpr> b = shapes.dim(bias, 0);
      if (!n || !b || *n != *b)
        continue;
      if (linear.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<LinearOp>(op, linear.getInput(),
                                            linear.getWeight(), bias,
                                            linear.getTransposeWeight());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not linear + [N] bias");
  }
};

struct FuseLinearPass : impl::FuseLinearBase<FuseLinearPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ValueShapes shapes(getOperation());
    ValueShapesListener listener(shapes);
    patterns.add<MatMulToLinear>(&getContext());
    patterns.add<FoldLinearBias>(&getContext(), shapes);
    GreedyRewriteConfig config;
    config.listener = &listener;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                       config);
  }
};

} // namespace
} // namespace hybridc::hg
