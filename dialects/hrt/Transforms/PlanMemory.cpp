// hrt-plan-memory: workspace offsets for allocations and ports (Passes.td).
#include "dialects/hrt/Transforms/MemoryPlan.h"
#include "dialects/hrt/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace hybridc::hrt {

#define GEN_PASS_DEF_PLANMEMORY
#include "dialects/hrt/Transforms/Passes.h.inc"

namespace {

using namespace mlir;
using hybrid::SymExpr;

class PlanMemoryPass : public impl::PlanMemoryBase<PlanMemoryPass> {
public:
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    ExecutableOp exe = getOperation();
    if (alignment < 1 || (alignment & (alignment - 1))) {
      exe.emitError() << "hrt-plan-memory: alignment " << alignment
                      << " is not a power of two";
      return signalPassFailure();
    }
    if (keepPlans && exe.getWorkspace())
      return;
    std::vector<std::string> symbols = exe.getSymbolNames();

    // The planned buffers, and the commands touching each (by root).
    SmallVector<Operation *> planned;
    llvm::DenseMap<Value, size_t> index;
    for (Operation &op : exe.getBlock())
      if (isa<AllocOp, InputOp, OutputOp>(op)) {
        index[op.getResult(0)] = planned.size();
        planned.push_back(&op);
      }
    std::vector<PlannedValue> values(planned.size());
    for (size_t i = 0; i < planned.size(); ++i) {
      auto type = cast<BufferType>(planned[i]->getResult(0).getType());
      std::optional<hybrid::SymShape> shape = getSymShape(type, symbols);
      if (!shape) {
        planned[i]->emitError("hrt-plan-memory: malformed shape");
        return signalPassFailure();
      }
      SymExpr bytes(elementBytes(type.getElementType()));
      for (const SymExpr &d : *shape)
        bytes = bytes * d;
      values[i].bytes = bytes;
      values[i].firstUse = -1;
      values[i].lastUse = -1;
    }

    int command = 0;
    for (Operation &op : exe.getBlock()) {
      auto cmd = dyn_cast<CommandOp>(op);
      if (!cmd)
        continue;
      for (Value v : op.getOperands()) {
        auto it = index.find(getRootBuffer(v));
        if (it == index.end())
          continue;
        PlannedValue &pv = values[it->second];
        if (pv.firstUse < 0)
          pv.firstUse = command;
        pv.lastUse = command;
      }
      ++command;
    }
    for (size_t i = 0; i < planned.size(); ++i) {
      PlannedValue &pv = values[i];
      if (pv.firstUse < 0) // never touched: still a valid, private slot
        pv.firstUse = pv.lastUse = 0;
      if (isa<InputOp>(planned[i]))
        pv.firstUse = -1; // written by the caller before the first command
      if (isa<OutputOp>(planned[i]))
        pv.lastUse = command; // read by the caller after the last one
    }

    MemoryPlan plan = planMemory(values, alignment);
    MLIRContext *context = exe.getContext();
    for (size_t i = 0; i < planned.size(); ++i)
      planned[i]->setAttr("offset",
                          getSizeAttr(context, plan.offsets[i], symbols));
    exe.setWorkspaceAttr(getSizeAttr(context, plan.totalBytes, symbols));
    exe.setAlignment(static_cast<uint64_t>(alignment));
  }
};

} // namespace
} // namespace hybridc::hrt
