// convert-hg-to-hrt: each hg function becomes an hrt executable of typed
// commands over explicit buffers (see Passes.td for the contract). This file
// lowers the function's signature and drives the per-op patterns of the
// family files beside it.
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/hg/IR/HgOps.h"

namespace hybridc {

#define GEN_PASS_DEF_CONVERTHGTOHRT
#include "compiler/Conversion/Passes.h.inc"

using namespace mlir;

void HgToHrtPatterns::insert(TypeID op, LowerFn lower,
                             InPlaceFn writesOverItsInput) {
  bool added = patterns_
                   .try_emplace(op, Pattern{std::move(lower),
                                            std::move(writesOverItsInput)})
                   .second;
  assert(added && "two hg -> hrt patterns for one op");
  (void)added;
}

const HgToHrtPatterns::LowerFn *HgToHrtPatterns::lowering(Operation *op) const {
  auto it = patterns_.find(op->getName().getTypeID());
  return it == patterns_.end() ? nullptr : &it->second.lower;
}

bool HgToHrtPatterns::writesOverItsInput(Operation *op, Value input,
                                         Value result) const {
  auto it = patterns_.find(op->getName().getTypeID());
  return it != patterns_.end() && it->second.writesOverItsInput &&
         it->second.writesOverItsInput(op, input, result);
}

void populateHgToHrtPatterns(HgToHrtPatterns &patterns) {
  populateAttentionPatterns(patterns);
  populateCommandPatterns(patterns);
  populateDataMovementPatterns(patterns);
  populateElementwisePatterns(patterns);
  populateGenerationPatterns(patterns);
  populateLinearPatterns(patterns);
  populateNormPatterns(patterns);
  populateReductionPatterns(patterns);
  populateTrainingPatterns(patterns);
}

bool writesOverOldValue(Operation *op, Value input, Value result,
                        ArrayRef<std::pair<Value, OpOperand *>> olds) {
  for (auto [next, old] : olds)
    if (next == result)
      return llvm::all_of(op->getOpOperands(), [&](OpOperand &o) {
        return o.get() != input || &o == old;
      });
  return false;
}

LogicalResult ExecutableLowering::run() {
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

hrt::BufferType ExecutableLowering::typeOf(Value v) const {
  return hrt::getBufferType(b_.getContext(),
                            cast<ShapedType>(v.getType()).getElementType(),
                            shapes_.shapeOf(v), shapes_.symbols());
}

LogicalResult ExecutableLowering::setSymbolLimits() {
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

LogicalResult ExecutableLowering::lowerArguments() {
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
LogicalResult ExecutableLowering::collectStateResults(func::ReturnOp ret) {
  llvm::StringMap<BlockArgument> args;
  for (BlockArgument arg : func_.getArguments())
    if (auto name =
            func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "hg.state"))
      args[name.getValue()] = arg;
  // Every argument of each checkpoint name (a tied weight is several).
  llvm::StringMap<SmallVector<BlockArgument, 1>> paramArgs;
  for (BlockArgument arg : func_.getArguments())
    if (auto name =
            func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "hg.param"))
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
bool ExecutableLowering::computesInPlace(ArrayRef<BlockArgument> olds,
                                         Value v) {
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
    if (oldReadLater ||
        (defReadsOld && !patterns_.writesOverItsInput(def, arg, v)))
      return false;
  }
  return true;
}

/// Whether result `i` writes a state or a parameter back (else it is an
/// output).
bool ExecutableLowering::writesBack(unsigned i) {
  return func_.getResultAttrOfType<StringAttr>(i, "hg.state") ||
         func_.getResultAttrOfType<StringAttr>(i, "hg.param");
}

/// Creates the output ports in return order. A value computed by a command
/// and returned once is written straight into its port, unless it is
/// computed into a state (the port then copies it from there).
LogicalResult ExecutableLowering::createOutputs(func::ReturnOp ret) {
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

void ExecutableLowering::copyToOutputs(func::ReturnOp ret) {
  // Outputs first: one may return the old value of what is written back.
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (!writesBack(i) && direct_.lookup(v) != outputs_[i])
      b_.create<hrt::CopyOp>(ret.getLoc(), outputs_[i], buffers_.lookup(v));
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (auto param = func_.getResultAttrOfType<StringAttr>(i, "hg.param")) {
      // After every read of the old value: the commands run in order.
      Value target = params_.lookup(param.getValue());
      if (buffers_.lookup(v) != target)
        b_.create<hrt::CopyOp>(NameLoc::get(param), target, buffers_.lookup(v));
    } else if (auto state =
                   func_.getResultAttrOfType<StringAttr>(i, "hg.state")) {
      // Written in place, or unchanged: nothing to copy.
      Value target = stateBuffers_.lookup(state.getValue());
      // Named for the state: the copy has no source node of its own.
      if (buffers_.lookup(v) != target)
        b_.create<hrt::CopyOp>(NameLoc::get(state), target, buffers_.lookup(v));
    }
  }
}

/// The buffer an op's result is written to.
Value ExecutableLowering::resultBuffer(Value result) {
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

LogicalResult ExecutableLowering::lowerOp(Operation *op) {
  // Every operand was lowered before its user (one block, in order); a
  // missing buffer is an error here, never a null operand downstream.
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!buffers_.count(operand))
      return op->emitError() << "operand #" << i
                             << " has no buffer (it is not defined by an "
                                "argument or an earlier op of @"
                             << func_.getSymName() << ")";
  if (const HgToHrtPatterns::LowerFn *lower = patterns_.lowering(op))
    return (*lower)(op, *this);
  if (op->getNumResults() != 1)
    return op->emitError("expected one result");
  if (op->getDialect() != exe_->getContext()->getLoadedDialect("hg"))
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to an hrt command";
  return op->emitError() << "no hrt command for '" << op->getName() << "'";
}

namespace {

class ConvertHgToHrtPass : public impl::ConvertHgToHrtBase<ConvertHgToHrtPass> {
public:
  using Base::Base;

  LogicalResult initialize(MLIRContext *) override {
    HgToHrtPatterns patterns;
    populateHgToHrtPatterns(patterns);
    patterns_ = std::move(patterns);
    return success();
  }

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
      ExecutableLowering lowering(func, *shapes, patterns_, paramsInPlace);
      if (failed(lowering.run())) {
        if (lowering.executable())
          lowering.executable().erase();
        return signalPassFailure();
      }
      func.erase();
    }
  }

private:
  HgToHrtPatterns patterns_;
};

} // namespace
} // namespace hybridc
