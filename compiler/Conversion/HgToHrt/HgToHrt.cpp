// convert-hg-to-hrt: each hg function becomes an hrt executable of typed
// commands over explicit buffers (see Passes.td for the contract).
#include "compiler/Analysis/SymbolicShapes.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hybridc {

#define GEN_PASS_DEF_CONVERTHGTOHRT
#include "compiler/Conversion/Passes.h.inc"

namespace {

using namespace mlir;
using hrt::BinaryKind;
using hrt::ReduceKind;
using hrt::UnaryKind;

std::optional<BinaryKind> binaryKindOf(Operation *op) {
  using K = std::optional<BinaryKind>;
  return llvm::TypeSwitch<Operation *, K>(op)
      .Case([](hg::AddOp) { return BinaryKind::Add; })
      .Case([](hg::SubOp) { return BinaryKind::Sub; })
      .Case([](hg::MulOp) { return BinaryKind::Mul; })
      .Case([](hg::DivOp) { return BinaryKind::Div; })
      .Case([](hg::PowOp) { return BinaryKind::Pow; })
      .Case([](hg::MaxOp) { return BinaryKind::Max; })
      .Case([](hg::MinOp) { return BinaryKind::Min; })
      .Case([](hg::ModOp m) {
        return m.getFmod() ? BinaryKind::FMod : BinaryKind::Mod;
      })
      .Case([](hg::EqualOp) { return BinaryKind::Equal; })
      .Case([](hg::LessOp) { return BinaryKind::Less; })
      .Case([](hg::LessEqualOp) { return BinaryKind::LessEqual; })
      .Case([](hg::GreaterOp) { return BinaryKind::Greater; })
      .Case([](hg::GreaterEqualOp) { return BinaryKind::GreaterEqual; })
      .Case([](hg::AndOp) { return BinaryKind::And; })
      .Case([](hg::OrOp) { return BinaryKind::Or; })
      .Case([](hg::XorOp) { return BinaryKind::Xor; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<UnaryKind> unaryKindOf(Operation *op) {
  using K = std::optional<UnaryKind>;
  return llvm::TypeSwitch<Operation *, K>(op)
      .Case([](hg::NegOp) { return UnaryKind::Neg; })
      .Case([](hg::AbsOp) { return UnaryKind::Abs; })
      .Case([](hg::SignOp) { return UnaryKind::Sign; })
      .Case([](hg::ExpOp) { return UnaryKind::Exp; })
      .Case([](hg::LogOp) { return UnaryKind::Log; })
      .Case([](hg::SqrtOp) { return UnaryKind::Sqrt; })
      .Case([](hg::RsqrtOp) { return UnaryKind::Rsqrt; })
      .Case([](hg::ReciprocalOp) { return UnaryKind::Reciprocal; })
      .Case([](hg::TanhOp) { return UnaryKind::Tanh; })
      .Case([](hg::SigmoidOp) { return UnaryKind::Sigmoid; })
      .Case([](hg::ReluOp) { return UnaryKind::Relu; })
      .Case([](hg::SiluOp) { return UnaryKind::Silu; })
      .Case([](hg::GeluOp g) {
        return g.getApproximate() == "tanh" ? UnaryKind::GeluTanh
                                            : UnaryKind::GeluErf;
      })
      .Case([](hg::SinOp) { return UnaryKind::Sin; })
      .Case([](hg::CosOp) { return UnaryKind::Cos; })
      .Case([](hg::ErfOp) { return UnaryKind::Erf; })
      .Case([](hg::FloorOp) { return UnaryKind::Floor; })
      .Case([](hg::CeilOp) { return UnaryKind::Ceil; })
      .Case([](hg::NotOp) { return UnaryKind::Not; })
      .Case([](hg::IsNanOp) { return UnaryKind::IsNan; })
      .Case([](hg::IsInfOp) { return UnaryKind::IsInf; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<ReduceKind> reduceKindOf(Operation *op) {
  using K = std::optional<ReduceKind>;
  return llvm::TypeSwitch<Operation *, K>(op)
      .Case([](hg::ReduceSumOp) { return ReduceKind::Sum; })
      .Case([](hg::ReduceMeanOp) { return ReduceKind::Mean; })
      .Case([](hg::ReduceMaxOp) { return ReduceKind::Max; })
      .Case([](hg::ReduceMinOp) { return ReduceKind::Min; })
      .Case([](hg::ReduceProdOp) { return ReduceKind::Prod; })
      .Default([](Operation *) { return std::nullopt; });
}

/// Builds the executable of one hg function.
class ExecutableLowering {
public:
  /// paramsInPlace: see ConvertHgToHrt's params-in-place option.
  ExecutableLowering(func::FuncOp func, const SymbolicShapes &shapes,
                     bool paramsInPlace)
      : func_(func), shapes_(shapes), b_(func), paramsInPlace_(paramsInPlace) {}

  LogicalResult run() {
    std::vector<StringRef> symbols(shapes_.symbols().begin(),
                                   shapes_.symbols().end());
    exe_ = b_.create<hrt::ExecutableOp>(
        func_.getLoc(), func_.getSymName(),
        SmallVector<StringRef>(symbols.begin(), symbols.end()),
        hrt::Access::Read);
    if (failed(setSymbolLimits()))
      return failure();
    b_.setInsertionPointToEnd(&exe_.getBlock());
    auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
    if (failed(collectStateResults(ret)) || failed(lowerArguments()) ||
        failed(createOutputs(ret)))
      return failure();
    if (!writtenParams_.empty())
      exe_.setParamAccess(hrt::Access::ReadWrite);
    for (Operation &op : func_.getBody().front())
      if (&op != ret && failed(lowerOp(&op)))
        return failure();
    copyToOutputs(ret);
    return success();
  }

  hrt::ExecutableOp executable() { return exe_; }

private:
  hrt::BufferType typeOf(Value v) {
    return hrt::getBufferType(b_.getContext(),
                              cast<ShapedType>(v.getType()).getElementType(),
                              shapes_.shapeOf(v), shapes_.symbols());
  }

  LogicalResult setSymbolLimits() {
    auto limits = func_->getAttrOfType<DictionaryAttr>("hg.dim_max");
    if (!limits)
      return success();
    SmallVector<int64_t> max(shapes_.symbols().size(), 0);
    for (NamedAttribute limit : limits) {
      auto it = llvm::find(shapes_.symbols(), limit.getName().str());
      auto value = dyn_cast<IntegerAttr>(limit.getValue());
      if (it == shapes_.symbols().end() || !value || value.getInt() < 1)
        return func_.emitError() << "hg.dim_max: '" << limit.getName()
                                 << "' must name a dim and hold a size >= 1";
      max[it - shapes_.symbols().begin()] = value.getInt();
    }
    exe_.setSymbolMax(max);
    return success();
  }

  LogicalResult lowerArguments() {
    for (BlockArgument arg : func_.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto name = func_.getArgAttrOfType<StringAttr>(i, "hg.param")) {
        // One buffer per checkpoint name, however often it is an argument.
        Value &param = params_[name.getValue()];
        if (!param)
          param = b_.create<hrt::ParamOp>(arg.getLoc(), typeOf(arg), name);
        else if (param.getType() != typeOf(arg))
          return func_.emitError()
                 << "parameter '" << name.getValue()
                 << "' is used with two types: " << param.getType() << " and "
                 << typeOf(arg);
        buffers_[arg] = param;
        continue;
      }
      if (auto name = func_.getArgAttrOfType<StringAttr>(i, "hg.state")) {
        hrt::Access access = writtenStates_.count(name.getValue())
                                 ? hrt::Access::ReadWrite
                                 : hrt::Access::Read;
        Value state =
            b_.create<hrt::StateOp>(arg.getLoc(), typeOf(arg), name, access);
        buffers_[arg] = state;
        stateArgs_[name.getValue()] = arg;
        stateBuffers_[name.getValue()] = state;
        continue;
      }
      auto name = func_.getArgAttrOfType<StringAttr>(i, "hg.name");
      std::string port = name ? name.str() : "arg" + std::to_string(i);
      FloatAttr fill;
      if (Attribute d = func_.getArgAttr(i, "hg.default")) {
        if (auto f = dyn_cast<FloatAttr>(d))
          fill = b_.getF64FloatAttr(f.getValueAsDouble());
        else if (auto n = dyn_cast<IntegerAttr>(d))
          fill = b_.getF64FloatAttr(static_cast<double>(n.getInt()));
        else
          return func_.emitError()
                 << "argument " << i << ": hg.default must be a number";
      }
      buffers_[arg] = b_.create<hrt::InputOp>(arg.getLoc(), typeOf(arg),
                                              b_.getStringAttr(port),
                                              /*offset=*/nullptr, fill);
    }
    return success();
  }

  /// Results tagged hg.state = "name" write the state of that name back
  /// (the function's argument with the same tag holds its old value). A
  /// state result without that argument is an error: the executable could
  /// not say what shape the state has.
  LogicalResult collectStateResults(func::ReturnOp ret) {
    llvm::StringMap<BlockArgument> args;
    for (BlockArgument arg : func_.getArguments())
      if (auto name = func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         "hg.state"))
        args[name.getValue()] = arg;
    // Every argument of each checkpoint name (a tied weight is several).
    llvm::StringMap<SmallVector<BlockArgument, 1>> paramArgs;
    for (BlockArgument arg : func_.getArguments())
      if (auto name = func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         "hg.param"))
        paramArgs[name.getValue()].push_back(arg);
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      // Results tagged hg.param write that parameter (an optimizer step):
      // the executable then reads and writes the weights.
      if (auto param = func_.getResultAttrOfType<StringAttr>(i, "hg.param")) {
        auto arg = paramArgs.find(param.getValue());
        if (arg == paramArgs.end())
          return func_.emitError()
                 << "result #" << i << " writes parameter '" << param.getValue()
                 << "' that no argument of @" << func_.getSymName() << " is";
        if (arg->second.back().getType() != v.getType())
          return func_.emitError()
                 << "result #" << i << " writes parameter '" << param.getValue()
                 << "' with type " << v.getType() << ", the parameter is "
                 << arg->second.back().getType();
        if (!writtenParams_.insert({param.getValue(), v}).second)
          return func_.emitError() << "parameter '" << param.getValue()
                                   << "' is written by two results";
        continue;
      }
      auto name = func_.getResultAttrOfType<StringAttr>(i, "hg.state");
      if (!name)
        continue;
      auto arg = args.find(name.getValue());
      if (arg == args.end())
        return func_.emitError()
               << "result #" << i << " writes state '" << name.getValue()
               << "' that no argument of @" << func_.getSymName() << " reads";
      if (arg->second.getType() != v.getType())
        return func_.emitError()
               << "result #" << i << " writes state '" << name.getValue()
               << "' with type " << v.getType() << ", its argument is "
               << arg->second.getType();
      if (!writtenStates_.insert({name.getValue(), v}).second)
        return func_.emitError()
               << "state '" << name.getValue() << "' is written by two results";
    }
    // A state or parameter value is computed straight into its buffer when
    // nothing reads the old value (directly or through a reshape) after the
    // op that computes it, and that op may write over what it reads: an
    // optimizer step's new weights, moments and working weights.
    for (auto &[name, v] : writtenStates_)
      if (computesInPlace({args[name]}, v))
        inPlaceState_[v] = name;
    if (paramsInPlace_)
      for (auto &[name, v] : writtenParams_)
        if (computesInPlace(paramArgs[name], v))
          inPlaceParam_[v] = name;
    return success();
  }

  /// Whether `v` (written back over the old value held by `olds`) may be
  /// computed in the old value's buffer: see collectStateResults.
  bool computesInPlace(ArrayRef<BlockArgument> olds, Value v) {
    Block &body = func_.getBody().front();
    Operation *def = v.getDefiningOp();
    if (!def || isa<hg::ConstantOp, hg::ReshapeOp>(def))
      return false;
    for (BlockArgument arg : olds) {
      SmallVector<Value> old = {arg};
      for (size_t k = 0; k < old.size(); ++k)
        for (Operation *user : old[k].getUsers())
          if (auto view = dyn_cast<hg::ReshapeOp>(user))
            old.push_back(view.getResult());
      bool oldReadLater = false, defReadsOld = false;
      for (Value o : old)
        for (OpOperand &use : o.getUses()) {
          Operation *user = use.getOwner();
          if (user == def)
            defReadsOld = true;
          else if (isa<func::ReturnOp>(user))
            // An output copies the old value out after every command.
            oldReadLater |= !writesBack(use.getOperandNumber());
          else if (user->getBlock() == &body && def->isBeforeInBlock(user) &&
                   !isa<hg::ReshapeOp>(user))
            oldReadLater = true;
        }
      if (oldReadLater || (defReadsOld && !writesOverItsInput(def, arg, v)))
        return false;
    }
    return true;
  }

  /// Whether `def` stays correct when the buffer of its result `result` is
  /// the buffer of `input`: a cache write of that cache, a sample step's
  /// state result or an AdamW update's result over its old value, or an
  /// elementwise op whose operands have the result's shape (element i is
  /// read before it is written, and by no other element).
  static bool writesOverItsInput(Operation *def, Value input, Value result) {
    if (auto write = dyn_cast<hg::CacheWriteOp>(def))
      return write.getCache() == input && write.getUpdate() != input &&
             write.getOffset() != input;
    if (isa<hg::SampleStepOp, hg::AdamWUpdateOp>(def)) {
      // The kernel reads each row's (sample_step: and the scalars') or
      // element's old value before it writes the new; the old value must be
      // no other operand.
      std::optional<unsigned> paired = oldValueOperandOf(def, result);
      return paired && llvm::all_of(def->getOpOperands(), [&](OpOperand &o) {
               return o.get() != input || o.getOperandNumber() == *paired;
             });
    }
    bool elementwise = def->hasTrait<OpTrait::Elementwise>() ||
                       isa<hg::AddOp, hg::SubOp, hg::MulOp, hg::DivOp,
                           hg::MaxOp, hg::MinOp, hg::SelectOp, hg::CastOp,
                           hg::NegOp, hg::AndOp, hg::OrOp, hg::NotOp>(def);
    return elementwise && llvm::all_of(def->getOperands(), [&](Value v) {
             return v != input || v.getType() == def->getResult(0).getType();
           });
  }

  /// The operand holding the old value of a result of a sample step (none
  /// for the emitted tokens) or of an AdamW update.
  static std::optional<unsigned> oldValueOperandOf(Operation *def,
                                                   Value result) {
    SmallVector<std::pair<Value, OpOperand *>> pairs;
    if (auto step = dyn_cast<hg::SampleStepOp>(def))
      pairs = {{step.getNextTokens(), &step.getTokensMutable()},
               {step.getNextLogprobs(), &step.getLogprobsMutable()},
               {step.getNextLengths(), &step.getLengthsMutable()},
               {step.getNextFinished(), &step.getFinishedMutable()},
               {step.getNextCount(), &step.getCountMutable()},
               {step.getNextRng(), &step.getRngMutable()}};
    else if (auto update = dyn_cast<hg::AdamWUpdateOp>(def))
      pairs = {{update.getNextParam(), &update.getParamMutable()},
               {update.getNextExpAvg(), &update.getExpAvgMutable()},
               {update.getNextExpAvgSq(), &update.getExpAvgSqMutable()}};
    for (auto [next, old] : pairs)
      if (next == result)
        return old->getOperandNumber();
    return std::nullopt;
  }

  /// Whether result `i` writes a state or a parameter back (else it is an
  /// output).
  bool writesBack(unsigned i) {
    return func_.getResultAttrOfType<StringAttr>(i, "hg.state") ||
           func_.getResultAttrOfType<StringAttr>(i, "hg.param");
  }

  /// Creates the output ports in return order. A value computed by a command
  /// and returned once is written straight into its port, unless it is
  /// computed into a state (the port then copies it from there).
  LogicalResult createOutputs(func::ReturnOp ret) {
    llvm::DenseMap<Value, unsigned> uses;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (!writesBack(i))
        ++uses[v];
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      if (writesBack(i)) {
        outputs_.push_back(Value());
        continue;
      }
      auto name = func_.getResultAttrOfType<StringAttr>(i, "hg.name");
      std::string port = name ? name.str() : "result" + std::to_string(i);
      Value out = b_.create<hrt::OutputOp>(ret.getLoc(), typeOf(v),
                                           b_.getStringAttr(port), nullptr);
      outputs_.push_back(out);
      Operation *def = v.getDefiningOp();
      if (uses[v] == 1 && def && !isa<hg::ConstantOp, hg::ReshapeOp>(def) &&
          !inPlaceState_.count(v) && !inPlaceParam_.count(v))
        direct_[v] = out;
    }
    return success();
  }

  void copyToOutputs(func::ReturnOp ret) {
    // Outputs first: one may return the old value of what is written back.
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (!writesBack(i) && direct_.lookup(v) != outputs_[i])
        b_.create<hrt::CopyOp>(ret.getLoc(), outputs_[i], buffers_.lookup(v));
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      if (auto param = func_.getResultAttrOfType<StringAttr>(i, "hg.param")) {
        // After every read of the old value: the commands run in order.
        Value target = params_.lookup(param.getValue());
        if (buffers_.lookup(v) != target)
          b_.create<hrt::CopyOp>(NameLoc::get(param), target,
                                 buffers_.lookup(v));
      } else if (auto state =
                     func_.getResultAttrOfType<StringAttr>(i, "hg.state")) {
        // Written in place, or unchanged: nothing to copy.
        Value target = stateBuffers_.lookup(state.getValue());
        // Named for the state: the copy has no source node of its own.
        if (buffers_.lookup(v) != target)
          b_.create<hrt::CopyOp>(NameLoc::get(state), target,
                                 buffers_.lookup(v));
      }
    }
  }

  /// The buffer an op's result is written to.
  Value resultBuffer(Value result) {
    if (auto it = inPlaceState_.find(result); it != inPlaceState_.end()) {
      Value state = stateBuffers_.lookup(it->second);
      buffers_[result] = state;
      return state;
    }
    if (auto it = inPlaceParam_.find(result); it != inPlaceParam_.end()) {
      Value param = params_.lookup(it->second);
      buffers_[result] = param;
      return param;
    }
    Value buffer = direct_.lookup(result);
    if (!buffer)
      buffer = b_.create<hrt::AllocOp>(result.getLoc(), typeOf(result),
                                       /*offset=*/nullptr);
    buffers_[result] = buffer;
    return buffer;
  }

  Value in(Value v) { return v ? buffers_.lookup(v) : Value(); }

  LogicalResult lowerOp(Operation *op) {
    // Every operand was lowered before its user (one block, in order); a
    // missing buffer is an error here, never a null operand downstream.
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (!buffers_.count(operand))
        return op->emitError() << "operand #" << i
                               << " has no buffer (it is not defined by an "
                                  "argument or an earlier op of @"
                               << func_.getSymName() << ")";
    if (auto step = dyn_cast<hg::SampleStepOp>(op))
      return lowerSampleStep(step);
    if (auto update = dyn_cast<hg::AdamWUpdateOp>(op))
      return lowerAdamWUpdate(update);
    if (auto grad = dyn_cast<hg::AttentionGradOp>(op)) {
      b_.create<hrt::AttentionGradOp>(
          grad.getLoc(), resultBuffer(grad.getGradQuery()),
          resultBuffer(grad.getGradKey()), resultBuffer(grad.getGradValue()),
          in(grad.getQuery()), in(grad.getKey()), in(grad.getValue()),
          in(grad.getGradOut()), in(grad.getMask()), in(grad.getKeyMask()),
          grad.getScale(), grad.getCausal(),
          static_cast<int64_t>(grad.getSlidingWindow()));
      return success();
    }
    if (auto grad = dyn_cast<hg::LayerNormGradOp>(op)) {
      b_.create<hrt::LayerNormGradOp>(
          grad.getLoc(), resultBuffer(grad.getGradInput()),
          resultBuffer(grad.getGradWeight()), resultBuffer(grad.getGradBias()),
          in(grad.getInput()), in(grad.getWeight()), in(grad.getGradOut()),
          grad.getEpsilon(), static_cast<int64_t>(grad.getAxis()));
      return success();
    }
    if (op->getNumResults() != 1)
      return op->emitError("expected one result");
    Value result = op->getResult(0);
    Location loc = op->getLoc();
    if (auto c = dyn_cast<hg::ConstantOp>(op)) {
      if (!cast<ShapedType>(result.getType()).hasStaticShape())
        return op->emitError("constant with a dynamic shape");
      buffers_[result] =
          b_.create<hrt::ConstantOp>(loc, typeOf(result), c.getValue());
      return success();
    }
    if (auto r = dyn_cast<hg::ReshapeOp>(op)) {
      buffers_[result] =
          b_.create<hrt::ViewOp>(loc, typeOf(result), in(r.getInput()));
      return success();
    }
    if (op->getDialect() != exe_->getContext()->getLoadedDialect("hg"))
      return op->emitError()
             << "cannot lower '" << op->getName() << "' to an hrt command";

    if (std::optional<BinaryKind> kind = binaryKindOf(op)) {
      Value lhs = in(op->getOperand(0)), rhs = in(op->getOperand(1));
      b_.create<hrt::BinaryOp>(loc, resultBuffer(result), lhs, rhs, *kind);
      return success();
    }
    if (std::optional<UnaryKind> kind = unaryKindOf(op)) {
      Value x = in(op->getOperand(0));
      b_.create<hrt::UnaryOp>(loc, resultBuffer(result), x, *kind);
      return success();
    }
    if (std::optional<ReduceKind> kind = reduceKindOf(op)) {
      Value x = in(op->getOperand(0));
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
      bool keepdims = true; // hg's ODS default
      if (auto k = op->getAttrOfType<BoolAttr>("keepdims"))
        keepdims = k.getValue();
      b_.create<hrt::ReduceOp>(loc, resultBuffer(result), x, *kind,
                               axes.asArrayRef(), keepdims);
      return success();
    }
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](hg::ClipOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::ClipOp>(loc, resultBuffer(result), x, o.getMinAttr(),
                                 o.getMaxAttr(), b_.getI32IntegerAttr(0));
          return success();
        })
        .Case([&](hg::SelectOp o) {
          Value c = in(o.getCond()), l = in(o.getLhs()), r = in(o.getRhs());
          b_.create<hrt::SelectOp>(loc, resultBuffer(result), c, l, r);
          return success();
        })
        .Case([&](hg::CastOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::CastOp>(loc, resultBuffer(result), x);
          return success();
        })
        .Case([&](hg::BroadcastToOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::BroadcastToOp>(loc, resultBuffer(result), x);
          return success();
        })
        .Case([&](hg::TransposeOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::TransposeOp>(loc, resultBuffer(result), x,
                                      o.getPerm());
          return success();
        })
        .Case([&](hg::SliceOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::SliceOp>(loc, resultBuffer(result), x, o.getAxes(),
                                  o.getStarts(), o.getEnds(), o.getSteps());
          return success();
        })
        .Case([&](hg::ConcatOp o) {
          SmallVector<Value> xs;
          for (Value v : o.getInputs())
            xs.push_back(in(v));
          b_.create<hrt::ConcatOp>(loc, resultBuffer(result), xs,
                                   static_cast<int64_t>(o.getAxis()));
          return success();
        })
        .Case([&](hg::GatherOp o) {
          Value d = in(o.getData()), i = in(o.getIndices());
          b_.create<hrt::GatherOp>(loc, resultBuffer(result), d, i,
                                   static_cast<int64_t>(o.getAxis()));
          return success();
        })
        .Case([&](hg::GatherNdOp o) {
          Value d = in(o.getData()), i = in(o.getIndices());
          b_.create<hrt::GatherNdOp>(loc, resultBuffer(result), d, i,
                                     static_cast<int64_t>(o.getBatchDims()));
          return success();
        })
        .Case([&](hg::IotaOp o) {
          b_.create<hrt::IotaOp>(loc, resultBuffer(result), o.getStart(),
                                 o.getStep());
          return success();
        })
        .Case([&](hg::CumSumOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::CumSumOp>(loc, resultBuffer(result), x,
                                   static_cast<int64_t>(o.getAxis()),
                                   o.getExclusive(), o.getReverse());
          return success();
        })
        .Case([&](hg::TriluOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::TriluOp>(loc, resultBuffer(result), x, o.getUpper(),
                                  static_cast<int64_t>(o.getK()));
          return success();
        })
        .Case([&](hg::SoftmaxOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::SoftmaxOp>(loc, resultBuffer(result), x,
                                    static_cast<int64_t>(o.getAxis()),
                                    /*log=*/false);
          return success();
        })
        .Case([&](hg::LogSoftmaxOp o) {
          Value x = in(o.getInput());
          b_.create<hrt::SoftmaxOp>(loc, resultBuffer(result), x,
                                    static_cast<int64_t>(o.getAxis()),
                                    /*log=*/true);
          return success();
        })
        .Case([&](hg::LayerNormOp o) {
          Value x = in(o.getInput()), w = in(o.getWeight()),
                bias = in(o.getBias());
          b_.create<hrt::LayerNormOp>(loc, resultBuffer(result), x, w, bias,
                                      o.getEpsilon(),
                                      static_cast<int64_t>(o.getAxis()));
          return success();
        })
        .Case([&](hg::RmsNormOp o) {
          Value x = in(o.getInput()), w = in(o.getWeight());
          b_.create<hrt::RmsNormOp>(loc, resultBuffer(result), x, w,
                                    o.getEpsilon(),
                                    static_cast<int64_t>(o.getAxis()));
          return success();
        })
        .Case([&](hg::MatMulOp o) {
          Value l = in(o.getLhs()), r = in(o.getRhs());
          b_.create<hrt::MatMulOp>(loc, resultBuffer(result), l, r);
          return success();
        })
        .Case([&](hg::LinearOp o) {
          Value x = in(o.getInput()), w = in(o.getWeight()),
                bias = in(o.getBias()), residual = in(o.getResidual()),
                normWeight = in(o.getNormWeight()),
                normBias = in(o.getNormBias());
          std::optional<hrt::Activation> act =
              hrt::symbolizeActivation(o.getActivation());
          if (!act)
            return LogicalResult(o.emitError() << "unknown activation '"
                                               << o.getActivation() << "'");
          std::optional<hrt::NormKind> norm =
              hrt::symbolizeNormKind(o.getNorm());
          if (!norm)
            return LogicalResult(o.emitError()
                                 << "unknown norm '" << o.getNorm() << "'");
          b_.create<hrt::LinearOp>(loc, resultBuffer(result), x, w, bias,
                                   residual, normWeight, normBias,
                                   o.getTransposeWeight(), *act, *norm,
                                   o.getNormEpsilon());
          return success();
        })
        .Case([&](hg::ActivationGradOp o) {
          // The hg verifier admits only the activations that have one.
          std::optional<hrt::Activation> act =
              hrt::symbolizeActivation(o.getActivation());
          if (!act || *act == hrt::Activation::None)
            return LogicalResult(o.emitError() << "unknown activation '"
                                               << o.getActivation() << "'");
          b_.create<hrt::ActivationGradOp>(loc, resultBuffer(result),
                                           in(o.getInput()), in(o.getGradOut()),
                                           *act);
          return success();
        })
        .Case([&](hg::EmbeddingOp o) {
          Value t = in(o.getTable()), ids = in(o.getIds());
          b_.create<hrt::EmbeddingOp>(loc, resultBuffer(result), t, ids);
          return success();
        })
        .Case([&](hg::EmbeddingGradOp o) {
          Value ids = in(o.getIds()), g = in(o.getGradOut());
          b_.create<hrt::EmbeddingGradOp>(loc, resultBuffer(result), ids, g);
          return success();
        })
        .Case([&](hg::LabelLogProbsOp o) {
          Value logits = in(o.getLogits()), labels = in(o.getLabels());
          b_.create<hrt::LabelLogProbsOp>(loc, resultBuffer(result), logits,
                                          labels);
          return success();
        })
        .Case([&](hg::LabelLogProbsGradOp o) {
          Value logits = in(o.getLogits()), labels = in(o.getLabels()),
                g = in(o.getGrad());
          b_.create<hrt::LabelLogProbsGradOp>(loc, resultBuffer(result), logits,
                                              labels, g);
          return success();
        })
        .Case([&](hg::ClippedSurrogateOp o) {
          b_.create<hrt::ClippedSurrogateOp>(
              loc, resultBuffer(result), in(o.getLogprobs()),
              in(o.getOldLogprobs()), in(o.getAdvantages()), in(o.getMask()),
              o.getClipLow(), o.getClipHigh());
          return success();
        })
        .Case([&](hg::ClippedSurrogateGradOp o) {
          b_.create<hrt::ClippedSurrogateGradOp>(
              loc, resultBuffer(result), in(o.getLogprobs()),
              in(o.getOldLogprobs()), in(o.getAdvantages()), in(o.getMask()),
              in(o.getGrad()), o.getClipLow(), o.getClipHigh());
          return success();
        })
        .Case([&](hg::RotaryOp o) {
          Value x = in(o.getInput()), c = in(o.getCos()), s = in(o.getSin());
          b_.create<hrt::RotaryOp>(loc, resultBuffer(result), x, c, s,
                                   o.getInterleaved());
          return success();
        })
        .Case([&](hg::CacheWriteOp o) {
          Value out = resultBuffer(result), cache = in(o.getCache());
          // Out of place, the result starts as a copy of the cache.
          if (out != cache)
            b_.create<hrt::CopyOp>(loc, out, cache);
          b_.create<hrt::CacheWriteOp>(loc, out, in(o.getUpdate()),
                                       in(o.getOffset()),
                                       static_cast<int64_t>(o.getAxis()));
          return success();
        })
        .Case([&](hg::SampleOp o) {
          Value logits = in(o.getLogits()), sampling = in(o.getSampling()),
                rng = in(o.getRng());
          b_.create<hrt::SampleOp>(loc, resultBuffer(result), logits, sampling,
                                   rng);
          return success();
        })
        .Case([&](hg::PositionsOp o) { return lowerPositions(o); })
        .Case([&](hg::AttentionOp o) {
          Value q = in(o.getQuery()), k = in(o.getKey()), v = in(o.getValue()),
                mask = in(o.getMask()), slopes = in(o.getAlibiSlopes()),
                length = in(o.getKeyLength()), keyMask = in(o.getKeyMask());
          b_.create<hrt::AttentionOp>(
              loc, resultBuffer(result), q, k, v, mask, slopes, length, keyMask,
              /*append_key=*/Value(), /*append_value=*/Value(),
              /*append_at=*/Value(), o.getScale(), o.getCausal(),
              static_cast<int64_t>(o.getSlidingWindow()));
          return success();
        })
        .Default([&](Operation *o) {
          return o->emitError()
                 << "no hrt command for '" << o->getName() << "'";
        });
  }

  /// One command; its state results are usually the state buffers
  /// themselves (collectStateResults).
  LogicalResult lowerSampleStep(hg::SampleStepOp op) {
    Location loc = op.getLoc();
    Value token = resultBuffer(op.getToken());
    // The command writes one column: out of place, tokens and logprobs
    // start as copies of the old ones.
    auto column = [&](Value next, Value old) {
      Value out = resultBuffer(next);
      if (out != in(old))
        b_.create<hrt::CopyOp>(loc, out, in(old));
      return out;
    };
    Value tokens = column(op.getNextTokens(), op.getTokens());
    Value logprobs = column(op.getNextLogprobs(), op.getLogprobs());
    b_.create<hrt::SampleStepOp>(
        loc, token, tokens, logprobs, resultBuffer(op.getNextLengths()),
        resultBuffer(op.getNextFinished()), resultBuffer(op.getNextCount()),
        resultBuffer(op.getNextRng()), in(op.getLogits()), in(op.getConfig()),
        in(op.getSampling()), in(op.getRng()), in(op.getCount()),
        in(op.getFinished()), in(op.getLengths()));
    return success();
  }

  /// One command; the moments (and a master) are usually the state buffers
  /// themselves (collectStateResults), the working parameter a buffer of
  /// its own, as a cast's result would be.
  LogicalResult lowerAdamWUpdate(hg::AdamWUpdateOp op) {
    Value param = resultBuffer(op.getNextParam());
    Value expAvg = resultBuffer(op.getNextExpAvg());
    Value expAvgSq = resultBuffer(op.getNextExpAvgSq());
    Value working;
    if (Value next = op.getNextWorkingParam())
      working = resultBuffer(next);
    b_.create<hrt::AdamWUpdateOp>(
        op.getLoc(), param, expAvg, expAvgSq, working, in(op.getParam()),
        in(op.getGrad()), in(op.getExpAvg()), in(op.getExpAvgSq()),
        in(op.getBeta1()), in(op.getBeta2()), in(op.getEps()),
        in(op.getStepSize()), in(op.getBiasCorrection2Sqrt()),
        in(op.getDecayFactor()));
    return success();
  }

  /// positions(mask) = select(mask == 0, 1, cumsum(mask) - 1), as commands.
  LogicalResult lowerPositions(hg::PositionsOp op) {
    Location loc = op.getLoc();
    Value mask = in(op.getMask());
    auto maskType = cast<hrt::BufferType>(mask.getType());
    auto i64 = b_.getI64Type();
    auto like = [&](Type elementType) {
      return hrt::BufferType::get(b_.getContext(), elementType,
                                  maskType.getShape());
    };
    auto scalar = [&](int64_t v) -> Value {
      auto type = RankedTensorType::get({1}, i64);
      return b_.create<hrt::ConstantOp>(
          loc, hrt::getBufferType(b_.getContext(), i64, {1}, {}),
          DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>{v}));
    };
    Value ones = mask;
    if (!maskType.getElementType().isSignlessInteger(64)) {
      ones = b_.create<hrt::AllocOp>(loc, like(i64), nullptr);
      b_.create<hrt::CastOp>(loc, ones, mask);
    }
    Value sums = b_.create<hrt::AllocOp>(loc, like(i64), nullptr);
    b_.create<hrt::CumSumOp>(loc, sums, ones, int64_t(1), false, false);
    Value one = scalar(1), zero = scalar(0);
    Value positions = b_.create<hrt::AllocOp>(loc, like(i64), nullptr);
    b_.create<hrt::BinaryOp>(loc, positions, sums, one, hrt::BinaryKind::Sub);
    Value pad = b_.create<hrt::AllocOp>(loc, like(b_.getI1Type()), nullptr);
    b_.create<hrt::BinaryOp>(loc, pad, ones, zero, hrt::BinaryKind::Equal);
    b_.create<hrt::SelectOp>(loc, resultBuffer(op.getResult()), pad, one,
                             positions);
    return success();
  }

  func::FuncOp func_;
  const SymbolicShapes &shapes_;
  OpBuilder b_;
  hrt::ExecutableOp exe_;
  llvm::DenseMap<Value, Value> buffers_; // hg value -> hrt buffer
  llvm::DenseMap<Value, Value> direct_;  // returned value -> its port
  llvm::StringMap<Value> params_;
  SmallVector<Value> outputs_;           // per result; null for state results
  llvm::StringMap<Value> writtenStates_; // state name -> its new value
  llvm::StringMap<Value> writtenParams_; // parameter name -> its new value
  llvm::StringMap<BlockArgument> stateArgs_;      // state name -> old value
  llvm::StringMap<Value> stateBuffers_;           // state name -> hrt.state
  llvm::DenseMap<Value, StringRef> inPlaceState_; // value -> state it fills
  llvm::DenseMap<Value, StringRef> inPlaceParam_; // value -> param it fills
  bool paramsInPlace_ = true;
};

class ConvertHgToHrtPass : public impl::ConvertHgToHrtBase<ConvertHgToHrtPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (func::FuncOp func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!func.getBody().hasOneBlock()) {
        func.emitError("an hg function must have exactly one block");
        return signalPassFailure();
      }
      FailureOr<SymbolicShapes> shapes = SymbolicShapes::compute(func);
      if (failed(shapes))
        return signalPassFailure();
      ExecutableLowering lowering(func, *shapes, paramsInPlace);
      if (failed(lowering.run())) {
        if (lowering.executable())
          lowering.executable().erase();
        return signalPassFailure();
      }
      func.erase();
    }
  }
};

} // namespace
} // namespace hybridc
