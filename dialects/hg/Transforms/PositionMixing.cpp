// findPositionMixing: the per-op rules of PositionMixing.h.
#include "dialects/hg/Transforms/PositionMixing.h"

#include "dialects/hg/IR/HgOps.h"

#include <algorithm>
#include <numeric>

namespace hybridc::hg {

using namespace mlir;
using hybrid::SymExpr;

namespace {

/// Decides, op by op, whether an op reads across positions of one symbol.
class MixingRules {
public:
  MixingRules(ValueShapes &shapes, unsigned symbol)
      : shapes_(shapes), symbol_(symbol) {}

  /// Why `op` mixes positions; empty when it does not.
  std::string why(Operation *op) {
    if (isa<ConstantOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp,
            EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp,
            OrOp, XorOp, NegOp, AbsOp, SignOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
            ReciprocalOp, TanhOp, SigmoidOp, ReluOp, SiluOp, GeluOp, SinOp,
            CosOp, ErfOp, FloorOp, CeilOp, NotOp, IsNanOp, IsInfOp, ClipOp,
            SelectOp, CastOp, BroadcastToOp, TransposeOp, RotaryOp>(op))
      return "";
    if (auto o = dyn_cast<CumSumOp>(op))
      return along(o.getInput(), {o.getAxis()}, "scans");
    if (auto o = dyn_cast<TriluOp>(op))
      return along(o.getInput(), {-2, -1}, "masks a triangle");
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
            op)) {
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
      return along(op->getOperand(0), allIfEmpty(op->getOperand(0), axes),
                   "reduces");
    }
    if (auto o = dyn_cast<SoftmaxOp>(op))
      return along(o.getInput(), {o.getAxis()}, "normalises");
    if (auto o = dyn_cast<LogSoftmaxOp>(op))
      return along(o.getInput(), {o.getAxis()}, "normalises");
    if (auto o = dyn_cast<LabelLogProbsOp>(op))
      return along(o.getLogits(), {-1}, "normalises");
    if (auto o = dyn_cast<LayerNormOp>(op))
      return along(o.getInput(), trailing(o.getInput(), o.getAxis()),
                   "normalises");
    if (auto o = dyn_cast<RmsNormOp>(op))
      return along(o.getInput(), trailing(o.getInput(), o.getAxis()),
                   "normalises");
    if (auto o = dyn_cast<SliceOp>(op))
      return along(o.getInput(), o.getAxes(), "slices");
    if (auto o = dyn_cast<ConcatOp>(op))
      return along(o.getResult(), {o.getAxis()}, "concatenates");
    if (auto o = dyn_cast<GatherOp>(op))
      return along(o.getData(), {o.getAxis()}, "gathers");
    if (auto o = dyn_cast<GatherNdOp>(op))
      return along(o.getData(), all(o.getData()), "gathers");
    if (auto o = dyn_cast<EmbeddingOp>(op))
      return along(o.getTable(), all(o.getTable()), "looks up");
    if (auto o = dyn_cast<LinearOp>(op))
      return along(o.getInput(), {-1}, "contracts") +
             along(o.getWeight(), all(o.getWeight()), "contracts");
    if (auto o = dyn_cast<MatMulOp>(op))
      return matmul(o);
    if (auto o = dyn_cast<IotaOp>(op)) {
      for (Attribute d : o.getLength())
        if (auto text = dyn_cast<StringAttr>(d);
            text && mentionsText(text.getValue()))
          return "its values are positions (an iota over " +
                 text.getValue().str() + ")";
      return "";
    }
    if (auto o = dyn_cast<ReshapeOp>(op))
      return reshape(o);
    if (isa<AttentionOp>(op))
      return "attends over the keys of every position";
    if (isa<PositionsOp>(op))
      return "counts the tokens before each position";
    return "it is an op whose position behaviour is not known";
  }

private:
  bool mentions(const SymExpr &e) const {
    for (const auto &[monomial, coeff] : e.terms())
      if (llvm::is_contained(monomial, symbol_))
        return true;
    return false;
  }
  bool mentionsText(StringRef text) const {
    std::optional<SymExpr> e =
        SymExpr::parse(text.str(), shapes_.symbols(), nullptr);
    return !e || mentions(*e);
  }
  std::string name() const { return shapes_.symbols()[symbol_]; }

  SmallVector<int64_t> all(Value v) {
    SmallVector<int64_t> dims(cast<RankedTensorType>(v.getType()).getRank());
    std::iota(dims.begin(), dims.end(), 0);
    return dims;
  }
  SmallVector<int64_t> allIfEmpty(Value v, ArrayRef<int64_t> axes) {
    return axes.empty() ? all(v) : SmallVector<int64_t>(axes);
  }
  SmallVector<int64_t> trailing(Value v, int64_t axis) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<int64_t> dims;
    for (int64_t d = axis < 0 ? axis + rank : axis; d < rank; ++d)
      dims.push_back(d);
    return dims;
  }

  /// `verb`s along dims `axes` of `v`: mixing when one mentions the symbol.
  std::string along(Value v, ArrayRef<int64_t> axes, StringRef verb) {
    for (int64_t axis : axes) {
      std::optional<SymExpr> d = shapes_.dim(v, axis);
      if (!d)
        return "the shape of its operand is not known";
      if (mentions(*d))
        return (verb + " along a dim of size " + shapes_.str(*d)).str();
    }
    return "";
  }

  std::string matmul(MatMulOp op) {
    std::string contracted = along(op.getLhs(), {-1}, "contracts");
    if (!contracted.empty())
      return contracted;
    // A 1-D operand is promoted: a single row (lhs) or column (rhs).
    auto rank = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getRank();
    };
    std::optional<SymExpr> rows =
        rank(op.getLhs()) > 1 ? shapes_.dim(op.getLhs(), -2) : SymExpr(1);
    std::optional<SymExpr> cols =
        rank(op.getRhs()) > 1 ? shapes_.dim(op.getRhs(), -1) : SymExpr(1);
    if (!rows || !cols)
      return "the shape of its operand is not known";
    if (mentions(*rows) && mentions(*cols))
      return "pairs every position with every other (" + shapes_.str(*rows) +
             " x " + shapes_.str(*cols) + ")";
    return "";
  }

  /// Keeps positions apart when one dim of each side mentions the symbol
  /// and the product of the dims after it is the same.
  std::string reshape(ReshapeOp op) {
    auto inner = [&](Value v) -> std::optional<std::pair<int, SymExpr>> {
      std::optional<hybrid::SymShape> shape = shapes_.get(v);
      if (!shape)
        return std::nullopt;
      int count = 0;
      SymExpr after = 1;
      for (const SymExpr &d : *shape) {
        if (count > 0)
          after = after * d;
        if (mentions(d)) {
          ++count;
          after = 1;
        }
      }
      return std::make_pair(count, after);
    };
    auto in = inner(op.getInput()), out = inner(op.getResult());
    if (!in || !out)
      return "the shape of its operand is not known";
    if (in->first == 0 && out->first == 0)
      return "";
    if (in->first != 1 || out->first != 1 || in->second != out->second)
      return "regroups the elements of different positions of " + name();
    return "";
  }

  ValueShapes &shapes_;
  uint8_t symbol_;
};

} // namespace

PositionMixing
findPositionMixing(func::FuncOp func, StringRef symbol, ValueShapes &shapes,
                   llvm::function_ref<bool(Operation *)> handled) {
  const std::vector<std::string> &symbols = shapes.symbols();
  auto it = std::find(symbols.begin(), symbols.end(), symbol.str());
  if (it == symbols.end())
    return {};
  MixingRules rules(shapes, static_cast<unsigned>(it - symbols.begin()));
  PositionMixing found;
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op) || handled(op))
      return WalkResult::advance();
    std::string why = rules.why(op);
    if (why.empty())
      return WalkResult::advance();
    found = {op, why};
    return WalkResult::interrupt();
  });
  return found;
}

} // namespace hybridc::hg
