// hg-fuse-norm-prologues: a layer_norm or rms_norm whose every use is the
// input of a linear becomes those linears' prologue, so a decode step
// launches one kernel where it launched two (and reads the normalised rows
// from registers, not memory):
//   linear(layer_norm(x, g, b), W, ...)  -> linear(x, W, ...) {norm =
//   "layer_norm"} linear(rms_norm(x, g), W, ...)       -> linear(x, W, ...)
//   {norm = "rms_norm"}
// Each linear normalises the rows itself, so a norm feeding three
// projections is computed three times: cheap for a decode step's few rows,
// not for a prompt's, hence only in functions marked hg.generation =
// "decode". The norm must be over the last dim alone, and its input, weight
// and bias of the linear's element type; its result is rounded to that type
// before the product, as the unfused pair stores it.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSENORMPROLOGUES
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// What a linear's prologue needs from the norm that defines its input.
struct Prologue {
  Value input, weight, bias;
  StringRef kind;
  APFloat epsilon = APFloat(0.0);
};

/// The prologue `op` becomes, if it is a norm over the last dim alone.
std::optional<Prologue> prologueOf(Operation *op) {
  auto lastDimOnly = [](Value input, int64_t axis) {
    const int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    return rank >= 1 && (axis == -1 || axis == rank - 1);
  };
  if (auto ln = dyn_cast_or_null<LayerNormOp>(op)) {
    if (!lastDimOnly(ln.getInput(), ln.getAxis()))
      return std::nullopt;
    return Prologue{ln.getInput(), ln.getWeight(), ln.getBias(), "layer_norm",
                    ln.getEpsilon()};
  }
  if (auto rms = dyn_cast_or_null<RmsNormOp>(op)) {
    if (!lastDimOnly(rms.getInput(), rms.getAxis()))
      return std::nullopt;
    return Prologue{rms.getInput(), rms.getWeight(), Value(), "rms_norm",
                    rms.getEpsilon()};
  }
  return std::nullopt;
}

/// Whether `param` (absent counts) has `input`'s element type, as a
/// linear's norm operands must (a norm's may differ: an f32 weight of a
/// bf16 activation).
bool sameElementType(Value param, Value input) {
  return !param || getElementTypeOrSelf(param.getType()) ==
                       getElementTypeOrSelf(input.getType());
}

/// Whether every use of `v` is the input of a linear without a prologue.
bool onlyLinearInputs(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (!linear || use.getOperandNumber() != 0 || linear.getNorm() != "none")
      return false;
  }
  return true;
}

struct FuseNormProloguesPass
    : impl::FuseNormProloguesBase<FuseNormProloguesPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    auto kind = f->getAttrOfType<StringAttr>("hg.generation");
    if (!kind || kind.getValue() != "decode")
      return;
    SmallVector<Operation *> norms;
    f.walk([&](Operation *op) {
      if (isa<LayerNormOp, RmsNormOp>(op))
        norms.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *norm : norms) {
      std::optional<Prologue> p = prologueOf(norm);
      Value normalised = norm->getResult(0);
      if (!p || !onlyLinearInputs(normalised) ||
          p->input.getType() != normalised.getType() ||
          !sameElementType(p->weight, p->input) ||
          !sameElementType(p->bias, p->input))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(normalised.getUses())) {
        auto linear = cast<LinearOp>(use.getOwner());
        rewriter.setInsertionPoint(linear);
        rewriter.replaceOpWithNewOp<LinearOp>(
            linear, linear.getType(), p->input, linear.getWeight(),
            linear.getBias(), linear.getResidual(), p->weight, p->bias,
            linear.getTransposeWeight(), linear.getActivation(), p->kind,
            p->epsilon);
      }
      rewriter.eraseOp(norm);
    }
  }
};

} // namespace
} // namespace hybridc::hg
