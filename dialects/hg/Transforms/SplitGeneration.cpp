// hg-split-generation: @forward -> @prefill and @decode, with the sampling
// epilogue and the generation state (see Passes.td for the contract).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/PositionMixing.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "hybrid/SymExpr.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

namespace hybridc::hg {

#define GEN_PASS_DEF_SPLITGENERATION
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

using namespace mlir;
using hybrid::SymExpr;

constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

/// A function being turned into a generation step: adds state arguments,
/// records state results, and builds the ops both steps share.
class StepBuilder {
public:
  StepBuilder(func::FuncOp func) : func_(func), b_(func.getContext()) {
    ret_ = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    b_.setInsertionPoint(ret_);
  }

  OpBuilder &builder() { return b_; }
  /// Ops the pass adds have no source node; they are named for what they
  /// do, so bundles do not depend on where the model file was read from.
  Location loc() { return NameLoc::get(b_.getStringAttr("generation")); }

  /// The argument holding state `name` (added on first use) of `type`,
  /// whose dynamic dims are named by `dims` (one entry per dim; "" for
  /// static ones).
  Value state(StringRef name, RankedTensorType type, ArrayRef<StringRef> dims) {
    if (Value v = states_.lookup(name))
      return v;
    SmallVector<NamedAttribute> attrs = {
        b_.getNamedAttr("hg.state", b_.getStringAttr(name))};
    if (llvm::any_of(dims, [](StringRef d) { return !d.empty(); }))
      attrs.push_back(b_.getNamedAttr("hg.dims", b_.getStrArrayAttr(dims)));
    unsigned index = func_.getNumArguments();
    func_.insertArgument(index, type, b_.getDictionaryAttr(attrs), loc());
    Value arg = func_.getArgument(index);
    states_[name] = arg;
    return arg;
  }

  /// Makes `value` the new content of state `name` when the step ends.
  void write(StringRef name, Value value) {
    writes_.push_back({name.str(), value});
  }

  /// Replaces the function's results by the recorded state writes.
  void finish() {
    SmallVector<Value> values;
    SmallVector<Attribute> attrs;
    for (auto &[name, v] : writes_) {
      values.push_back(v);
      attrs.push_back(b_.getDictionaryAttr(
          b_.getNamedAttr("hg.state", b_.getStringAttr(name))));
    }
    b_.create<func::ReturnOp>(ret_.getLoc(), values);
    ret_.erase();
    func_.setFunctionType(b_.getFunctionType(
        func_.getBody().front().getArgumentTypes(), TypeRange(values)));
    func_.setAllResultAttrs(attrs);
  }

  // Small ops.
  Value i64(int64_t v) {
    return b_.create<ConstantOp>(
        loc(),
        DenseElementsAttr::get(RankedTensorType::get({1}, b_.getI64Type()),
                               ArrayRef<int64_t>{v}));
  }
  Value boolean(bool v) {
    return b_.create<ConstantOp>(
        loc(),
        DenseElementsAttr::get(RankedTensorType::get({1}, b_.getI1Type()),
                               ArrayRef<bool>{v}));
  }
  ArrayAttr shape(ArrayRef<Attribute> dims) { return b_.getArrayAttr(dims); }
  Attribute dim(StringRef symbol) { return b_.getStringAttr(symbol); }
  Attribute dim(int64_t size) { return b_.getI64IntegerAttr(size); }

  Value broadcast(Value scalar, ArrayRef<Attribute> dims) {
    auto t = cast<RankedTensorType>(scalar.getType());
    SmallVector<int64_t> sizes;
    for (Attribute d : dims)
      sizes.push_back(isa<IntegerAttr>(d) ? cast<IntegerAttr>(d).getInt()
                                          : kDyn);
    return b_.create<BroadcastToOp>(loc(), t.clone(sizes), scalar, shape(dims));
  }
  Value reshape(Value x, ArrayRef<Attribute> dims) {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> sizes;
    for (Attribute d : dims)
      sizes.push_back(isa<IntegerAttr>(d) ? cast<IntegerAttr>(d).getInt()
                                          : kDyn);
    return b_.create<ReshapeOp>(loc(), t.clone(sizes), x, shape(dims));
  }
  /// x[start:end] along `axis` (static bounds).
  Value slice(Value x, int64_t axis, int64_t start, int64_t end) {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> sizes(t.getShape());
    if (!ShapedType::isDynamic(sizes[axis]) && end != kToEnd && start >= 0)
      sizes[axis] = end - start;
    else if (start == -1 && end == kToEnd)
      sizes[axis] = 1;
    else
      sizes[axis] = kDyn;
    return b_.create<SliceOp>(loc(), t.clone(sizes), x, ArrayRef<int64_t>{axis},
                              ArrayRef<int64_t>{start}, ArrayRef<int64_t>{end},
                              ArrayRef<int64_t>{1});
  }
  Value castTo(Value x, Type elementType) {
    auto t = cast<RankedTensorType>(x.getType());
    if (t.getElementType() == elementType)
      return x;
    return b_.create<CastOp>(loc(), t.clone(elementType), x);
  }
  Value cacheWrite(Value cache, Value update, Value offset, int64_t axis) {
    return b_.create<CacheWriteOp>(loc(), cache, update, offset,
                                   b_.getI64IntegerAttr(axis));
  }

private:
  func::FuncOp func_;
  OpBuilder b_;
  func::ReturnOp ret_;
  llvm::StringMap<Value> states_;
  SmallVector<std::pair<std::string, Value>> writes_;
};

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// The sampling epilogue both steps end with (Passes.td): from the step's
/// logits [batch, vocab] and the previous count / finished / lengths, one
/// hg.sample_step (one kernel where there were ~28 small ones).
void buildEpilogue(StepBuilder &s, Value logits, Value count, Value finished,
                   Value lengths) {
  OpBuilder &b = s.builder();
  Type i64 = b.getI64Type(), f32 = b.getF32Type();
  Value config = s.state("gen.config", tensorOf({4}, i64), {""});
  Value sampling = s.state("gen.sampling", tensorOf({3}, f32), {""});
  Value rng = s.state("gen.rng", tensorOf({2}, i64), {""});
  Value tokens =
      s.state("gen.tokens", tensorOf({kDyn, kDyn}, i64), {"batch", "nmax"});
  Value logprobs =
      s.state("gen.logprobs", tensorOf({kDyn, kDyn}, f32), {"batch", "nmax"});
  s.state("gen.token", tensorOf({kDyn}, i64), {"batch"});

  auto step =
      b.create<SampleStepOp>(s.loc(), logits, config, sampling, rng, count,
                             finished, lengths, tokens, logprobs);
  s.write("gen.tokens", step.getNextTokens());
  s.write("gen.logprobs", step.getNextLogprobs());
  s.write("gen.lengths", step.getNextLengths());
  s.write("gen.finished", step.getNextFinished());
  s.write("gen.token", step.getToken());
  s.write("gen.count", step.getNextCount());
  s.write("gen.rng", step.getNextRng());
}

/// What the sampling epilogue reads of the model's logits: hg.sample_step
/// computes in f32 from any float type, so a widening cast into the logits
/// (HF's `logits.float()` after a bf16 LM head) is exact and left out: one
/// kernel less per step, the same bits.
Value sampledLogits(Value logits) {
  auto widen = logits.getDefiningOp<CastOp>();
  if (!widen)
    return logits;
  Type from =
           cast<RankedTensorType>(widen.getInput().getType()).getElementType(),
       to = cast<RankedTensorType>(logits.getType()).getElementType();
  bool exact = to.isF32() && (from.isBF16() || from.isF16() || from.isF32());
  return exact ? widen.getInput() : logits;
}

/// `e` with symbol `sym` replaced by `value`.
SymExpr substitute(const SymExpr &e, unsigned sym, int64_t value) {
  SymExpr out;
  for (const auto &[monomial, coeff] : e.terms()) {
    int64_t c = coeff;
    SymExpr::Monomial rest;
    for (uint8_t s : monomial) {
      if (s == sym)
        c *= value;
      else
        rest.push_back(s);
    }
    out = out + SymExpr::term(c, rest);
  }
  return out;
}

class SplitGenerationPass
    : public impl::SplitGenerationBase<SplitGenerationPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("hg-split-generation: the module has no @forward");
      return signalPassFailure();
    }
    for (StringRef name : {"prefill", "decode"})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-split-generation: the module already has @"
                           << name;
        return signalPassFailure();
      }
    if (failed(analyse(forward)))
      return signalPassFailure();
    if (failed(buildPrefill(forward)) || failed(buildDecode(forward)))
      return signalPassFailure();
  }

  /// Finds input_ids, attention_mask and logits, and the symbol names.
  LogicalResult analyse(func::FuncOp forward) {
    ids_ = -1;
    mask_ = -1;
    logits_ = -1;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name = forward.getArgAttrOfType<StringAttr>(i, "hg.name");
      if (name && name.getValue() == "input_ids")
        ids_ = i;
      if (name && name.getValue() == "attention_mask")
        mask_ = i;
      if (auto dims = forward.getArgAttrOfType<ArrayAttr>(i, "hg.dims"))
        for (Attribute d : dims)
          if (auto s = dyn_cast<StringAttr>(d);
              s && !s.getValue().empty() &&
              !llvm::is_contained(symbols_, s.str()))
            symbols_.push_back(s.str());
    }
    for (unsigned i = 0; i < forward.getNumResults(); ++i) {
      auto name = forward.getResultAttrOfType<StringAttr>(i, "hg.name");
      if (name && name.getValue() == "logits")
        logits_ = i;
    }
    if (ids_ < 0 || logits_ < 0)
      return forward.emitError("hg-split-generation: @forward needs an "
                               "input_ids argument and a logits result");
    auto ids = cast<RankedTensorType>(forward.getArgument(ids_).getType());
    auto dims = forward.getArgAttrOfType<ArrayAttr>(ids_, "hg.dims");
    if (ids.getRank() != 2 || !dims || dims.size() != 2 ||
        cast<StringAttr>(dims[0]).getValue() != "batch" ||
        cast<StringAttr>(dims[1]).getValue() != "seq")
      return forward.emitError(
          "hg-split-generation: input_ids must be "
          "[batch, seq] with hg.dims [\"batch\", \"seq\"]");
    for (StringRef reserved : {"cap", "nmax"})
      if (llvm::is_contained(symbols_, reserved.str()))
        return forward.emitError() << "hg-split-generation: @forward already "
                                      "uses the symbol '"
                                   << reserved << "'";
    auto logits =
        cast<RankedTensorType>(forward.getFunctionType().getResult(logits_));
    if (logits.getRank() != 3 || ShapedType::isDynamic(logits.getDimSize(2)))
      return forward.emitError("hg-split-generation: logits must be [batch, "
                               "seq, vocab] with a static vocab");
    return success();
  }

  /// Copies @forward's limits, bounding the cache as seq is bounded (a
  /// learned position table bounds both).
  void setLimits(func::FuncOp forward, func::FuncOp step, bool withSeq) {
    auto limits = forward->getAttrOfType<DictionaryAttr>("hg.dim_max");
    if (!limits)
      return;
    OpBuilder b(step);
    SmallVector<NamedAttribute> out;
    for (NamedAttribute l : limits) {
      if (l.getName() == "seq") {
        out.push_back(b.getNamedAttr("cap", l.getValue()));
        if (!withSeq)
          continue;
      }
      out.push_back(l);
    }
    step->setAttr("hg.dim_max", b.getDictionaryAttr(out));
  }

  func::FuncOp cloneAs(func::FuncOp forward, StringRef name, StringRef kind) {
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    auto step = cast<func::FuncOp>(b.clone(*forward));
    step.setSymName(name);
    step->setAttr("hg.generation", b.getStringAttr(kind));
    return step;
  }

  LogicalResult buildPrefill(func::FuncOp forward) {
    func::FuncOp f = cloneAs(forward, "prefill", "prefill");
    setLimits(forward, f, /*withSeq=*/true);
    StepBuilder s(f);
    OpBuilder &b = s.builder();
    Type i64 = b.getI64Type();
    Value logits =
        sampledLogits(cast<func::ReturnOp>(f.getBody().front().getTerminator())
                          .getOperand(logits_));

    // The prompt's length P = seq, as a device scalar: the slots filled.
    Value upTo = b.create<IotaOp>(s.loc(), tensorOf({kDyn}, i64),
                                  s.shape({s.dim("seq")}), b.getF64FloatAttr(1),
                                  b.getF64FloatAttr(1));
    Value filled = s.slice(upTo, 0, -1, kToEnd);
    s.state("gen.past", tensorOf({1}, i64), {""});
    s.write("gen.past", filled);

    Value mask = mask_ >= 0
                     ? s.castTo(f.getArgument(mask_), i64)
                     : s.broadcast(s.i64(1), {s.dim("batch"), s.dim("seq")});
    Value keyMask =
        s.state("gen.key_mask", tensorOf({kDyn, kDyn}, i64), {"batch", "cap"});
    (void)keyMask;
    Value cleared = s.broadcast(s.i64(0), {s.dim("batch"), s.dim("cap")});
    s.write("gen.key_mask", s.cacheWrite(cleared, mask, s.i64(0), 1));
    // The next token's position: each row's count of real tokens.
    s.state("gen.position", tensorOf({kDyn}, i64), {"batch"});
    s.write("gen.position",
            b.create<ReduceSumOp>(s.loc(), tensorOf({kDyn}, i64), mask,
                                  b.getDenseI64ArrayAttr({1}),
                                  b.getBoolAttr(false)));

    Value last = s.reshape(
        s.slice(logits, 1, -1, kToEnd),
        {s.dim("batch"),
         s.dim(cast<RankedTensorType>(logits.getType()).getDimSize(2))});
    // A new generation: nothing counted or finished yet.
    s.state("gen.count", tensorOf({1}, i64), {""});
    s.state("gen.finished", tensorOf({kDyn}, b.getI1Type()), {"batch"});
    s.state("gen.lengths", tensorOf({kDyn}, i64), {"batch"});
    buildEpilogue(s, last, s.i64(0),
                  s.broadcast(s.boolean(false), {s.dim("batch")}),
                  s.broadcast(s.i64(0), {s.dim("batch")}));
    s.finish();
    return success();
  }

  LogicalResult buildDecode(func::FuncOp forward) {
    // Every op must compute a position from that position alone, except
    // the ones this pass and hg-kv-cache rewrite: attention (over the
    // cache), the positions of the mask, or without a mask the iota over
    // seq (offset by the slots filled).
    ValueShapes shapes(forward);
    Value maskArg = mask_ >= 0 ? forward.getArgument(mask_) : Value();
    PositionMixing mixing =
        findPositionMixing(forward, "seq", shapes, [&](Operation *op) {
          if (isa<AttentionOp>(op))
            return true;
          if (auto p = dyn_cast<PositionsOp>(op))
            return maskArg && p->getOperand(0) == maskArg;
          if (auto iota = dyn_cast<IotaOp>(op)) {
            auto length = iota.getLength();
            auto only = length.size() == 1 ? dyn_cast<StringAttr>(length[0])
                                           : StringAttr();
            return !maskArg && only && only.getValue() == "seq";
          }
          return false;
        });
    if (mixing.op)
      return mixing.op->emitError()
             << "hg-split-generation: a decode step cannot run this op one "
                "token at a time: it "
             << mixing.why;

    func::FuncOp f = cloneAs(forward, "decode", "decode");
    setLimits(forward, f, /*withSeq=*/false);
    StepBuilder s(f);
    OpBuilder &b = s.builder();
    Type i64 = b.getI64Type();
    Value logits =
        sampledLogits(cast<func::ReturnOp>(f.getBody().front().getTerminator())
                          .getOperand(logits_));

    // Inputs come from the state the previous step left.
    Block &entry = f.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value token = s.state("gen.token", tensorOf({kDyn}, i64), {"batch"});
    Value past = s.state("gen.past", tensorOf({1}, i64), {""});
    Value ids = s.reshape(token, {s.dim("batch"), s.dim(1)});
    f.getArgument(ids_).replaceAllUsesWith(ids);

    if (mask_ >= 0) {
      Value keyMask = s.state("gen.key_mask", tensorOf({kDyn, kDyn}, i64),
                              {"batch", "cap"});
      Value slotFilled = s.cacheWrite(
          keyMask, s.broadcast(s.i64(1), {s.dim("batch"), s.dim(1)}), past, 1);
      Value position =
          s.state("gen.position", tensorOf({kDyn}, i64), {"batch"});
      Value positions = s.reshape(position, {s.dim("batch"), s.dim(1)});
      Value mask = f.getArgument(mask_);
      for (OpOperand &use : llvm::make_early_inc_range(mask.getUses())) {
        Operation *user = use.getOwner();
        if (auto p = dyn_cast<PositionsOp>(user)) {
          p.getResult().replaceAllUsesWith(positions);
          p.erase();
        } else if (auto a = dyn_cast<AttentionOp>(user);
                   a && a.getKeyMask() == mask) {
          use.set(slotFilled);
        } else {
          return user->emitError()
                 << "hg-split-generation: cannot run '" << user->getName()
                 << "' of the attention_mask one token at a time";
        }
      }
      b.setInsertionPoint(entry.getTerminator());
      s.write("gen.key_mask", slotFilled);
      s.write("gen.position", b.create<AddOp>(s.loc(), position, s.i64(1)));
    } else {
      // No padding: the positions are the graph's iota over seq, offset
      // by the slots already filled.
      for (IotaOp iota : llvm::to_vector(f.getOps<IotaOp>())) {
        auto length = iota.getLength();
        auto sym =
            length.size() == 1 ? dyn_cast<StringAttr>(length[0]) : StringAttr();
        if (!sym || sym.getValue() != "seq")
          continue;
        b.setInsertionPoint(iota);
        auto type = iota.getType();
        Value first = b.create<IotaOp>(iota.getLoc(), type.clone({1}),
                                       s.shape({s.dim(1)}), iota.getStartAttr(),
                                       iota.getStepAttr());
        Value offset = past;
        if (iota.getStep().convertToDouble() != 1.0)
          return iota.emitError("hg-split-generation: a position iota with "
                                "a step other than 1");
        offset = s.castTo(offset, type.getElementType());
        Value shifted = b.create<AddOp>(iota.getLoc(), first, offset);
        iota.getResult().replaceAllUsesWith(shifted);
        iota.erase();
      }
      b.setInsertionPoint(entry.getTerminator());
    }
    if (failed(substituteSeq(f)))
      return failure();

    b.setInsertionPoint(entry.getTerminator());
    s.write("gen.past", b.create<AddOp>(s.loc(), past, s.i64(1)));
    Value last = s.reshape(
        logits,
        {s.dim("batch"),
         s.dim(cast<RankedTensorType>(logits.getType()).getDimSize(2))});
    Value count = s.state("gen.count", tensorOf({1}, i64), {""});
    Value finished =
        s.state("gen.finished", tensorOf({kDyn}, b.getI1Type()), {"batch"});
    Value lengths = s.state("gen.lengths", tensorOf({kDyn}, i64), {"batch"});
    buildEpilogue(s, last, count, finished, lengths);
    s.finish();
    // Highest index first, so the other keeps its number.
    SmallVector<unsigned> gone = {static_cast<unsigned>(ids_)};
    if (mask_ >= 0)
      gone.push_back(static_cast<unsigned>(mask_));
    llvm::sort(gone, std::greater<unsigned>());
    for (unsigned i : gone)
      f.eraseArgument(i);
    return success();
  }

  /// seq is 1 in a decode step: every shape that names it says so.
  LogicalResult substituteSeq(func::FuncOp f) {
    auto seq =
        static_cast<unsigned>(llvm::find(symbols_, "seq") - symbols_.begin());
    OpBuilder b(f);
    LogicalResult result = success();
    f.walk([&](Operation *op) {
      for (StringRef attrName : {"shape", "length"}) {
        auto shape = op->getAttrOfType<ArrayAttr>(attrName);
        if (!shape || !isa<ReshapeOp, BroadcastToOp, IotaOp>(op))
          continue;
        SmallVector<Attribute> dims;
        for (Attribute d : shape) {
          auto text = dyn_cast<StringAttr>(d);
          if (!text) {
            dims.push_back(d);
            continue;
          }
          std::string why;
          std::optional<SymExpr> e = SymExpr::parse(text.str(), symbols_, &why);
          if (!e) {
            op->emitError() << "hg-split-generation: " << why;
            result = failure();
            return;
          }
          SymExpr one = substitute(*e, seq, 1);
          if (std::optional<int64_t> c = one.constant())
            dims.push_back(b.getI64IntegerAttr(*c));
          else
            dims.push_back(b.getStringAttr(one.str(symbols_)));
        }
        op->setAttr(attrName, b.getArrayAttr(dims));
      }
    });
    return result;
  }

  int ids_ = -1, mask_ = -1, logits_ = -1;
  std::vector<std::string> symbols_;
};

} // namespace
} // namespace hybridc::hg
