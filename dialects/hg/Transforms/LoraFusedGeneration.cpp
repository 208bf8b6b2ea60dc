// hg-lora-fused-generation: generation on merged weights, as DeepSpeed's
// hybrid engine generates with LoRA: @prefill and @decode lose the adapters'
// path (hg-lora) and read W alone, and @lora_fuse / @lora_unfuse add and
// subtract alpha / r x B A in place around generation (see Passes.td).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Lora.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_LORAFUSEDGENERATION
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// Removes the adapters' path from `f`: each linear by a lora_B parameter
/// ends one, in one of the forms hg-lora and hg-fuse-epilogues leave:
///   add(y0, u) or add(u, y0)        -> y0
///   u = linear(t, B, residual = y0) -> y0
///   linear(x, W, ..., residual = u) -> the same linear without residual
/// What fed u (the lora_A linear, the scale) is then dead and erased, and
/// the adapters' arguments with it.
LogicalResult stripAdapters(func::FuncOp f, const llvm::StringSet<> &loraB,
                            const llvm::StringSet<> &adapterParams) {
  SmallVector<LinearOp> ups;
  f.walk([&](LinearOp linear) {
    auto arg = dyn_cast<BlockArgument>(linear.getWeight());
    if (!arg || arg.getOwner()->getParentOp() != f)
      return;
    auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "hg.param");
    if (name && loraB.contains(name.getValue()))
      ups.push_back(linear);
  });
  for (LinearOp up : ups) {
    Value u = up.getResult();
    if (Value base = up.getResidual()) {
      u.replaceAllUsesWith(base);
      continue;
    }
    for (OpOperand &use : llvm::make_early_inc_range(u.getUses())) {
      Operation *user = use.getOwner();
      if (auto add = dyn_cast<AddOp>(user)) {
        Value other = add.getLhs() == u ? add.getRhs() : add.getLhs();
        if (other.getType() != add.getType())
          return add.emitError("hg-lora-fused-generation: the adapter's sum "
                               "broadcasts");
        add.getResult().replaceAllUsesWith(other);
        continue;
      }
      auto linear = dyn_cast<LinearOp>(user);
      if (linear && linear.getResidual() == u) {
        OpBuilder b(linear);
        Value plain = b.create<LinearOp>(
            linear.getLoc(), linear.getType(), linear.getInput(),
            linear.getWeight(), linear.getBias(), Value(),
            linear.getNormWeight(), linear.getNormBias(),
            linear.getTransposeWeight(), linear.getActivation(),
            linear.getNorm(), linear.getNormEpsilon());
        linear.getResult().replaceAllUsesWith(plain);
        continue;
      }
      return user->emitError("hg-lora-fused-generation: an adapter's output "
                             "feeds '")
             << user->getName() << "', not the sum with its base linear";
    }
  }
  // Dead code, last first, then the arguments nothing reads.
  Block &body = f.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  llvm::BitVector unused(f.getNumArguments());
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto name = f.getArgAttrOfType<StringAttr>(i, "hg.param");
        name && adapterParams.contains(name.getValue())) {
      if (!f.getArgument(i).use_empty())
        return f.emitError() << "hg-lora-fused-generation: @" << f.getSymName()
                             << " still reads '" << name.getValue() << "'";
      unused.set(i);
    }
  f.eraseArguments(unused);
  return success();
}

/// @name: every adapted weight W <- W + sign x alpha / r x (B A), or its
/// transpose for a [in, out] weight, written back in place.
void buildMerge(ModuleOp module, StringRef name, const LoraConfig &config,
                double sign) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = NameLoc::get(b.getStringAttr(name));
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  // The weights' types come from @forward, which reads all of them.
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  llvm::StringMap<Type> paramTypes;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto n = forward.getArgAttrOfType<StringAttr>(i, "hg.param"))
      paramTypes[n.getValue()] = forward.getArgument(i).getType();
  auto param = [&](StringRef n) {
    return b.getDictionaryAttr(b.getNamedAttr("hg.param", b.getStringAttr(n)));
  };
  for (const LoraAdapter &a : config.adapters)
    for (StringRef n :
         {StringRef(a.weight), StringRef(a.loraA), StringRef(a.loraB)}) {
      types.push_back(paramTypes.lookup(n));
      argAttrs.push_back(param(n));
    }
  auto f = b.create<func::FuncOp>(loc, name, b.getFunctionType(types, {}));
  f.setAllArgAttrs(argAttrs);
  // Each add runs in its weight's buffer, one product's workspace at a
  // time; folded into a GEMM's residual, every merged weight would be a
  // temporary until the write-backs.
  f->setAttr("hg.no_epilogue_fusion", b.getUnitAttr());
  Block *body = f.addEntryBlock();
  b.setInsertionPointToEnd(body);
  const double scale = sign * config.alpha / static_cast<double>(config.rank);
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, a] : llvm::enumerate(config.adapters)) {
    Value w = body->getArgument(3 * i), loraA = body->getArgument(3 * i + 1),
          loraB = body->getArgument(3 * i + 2);
    Type element = cast<RankedTensorType>(w.getType()).getElementType();
    Value s = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(RankedTensorType::get({1}, element),
                                    b.getFloatAttr(element, scale)));
    // The product, then the add the lowering computes in W's own buffer.
    Value delta;
    if (!a.fanInFanOut) {
      // (s B) [out, r] x A [r, in]: W is [out, in].
      Value scaled = b.create<MulOp>(loc, loraB, s);
      delta = b.create<LinearOp>(loc, scaled, loraA, Value(),
                                 /*transpose_weight=*/false);
    } else {
      // (s A^T) [in, r] x B^T [r, out]: W is [in, out].
      Value at =
          b.create<TransposeOp>(loc, loraA, b.getDenseI64ArrayAttr({1, 0}));
      Value scaled = b.create<MulOp>(loc, at, s);
      delta = b.create<LinearOp>(loc, scaled, loraB, Value(),
                                 /*transpose_weight=*/true);
    }
    results.push_back(b.create<AddOp>(loc, w, delta));
    resultAttrs.push_back(param(a.weight));
  }
  b.create<func::ReturnOp>(loc, results);
  f.setFunctionType(b.getFunctionType(types, ValueRange(results).getTypes()));
  f.setAllResultAttrs(resultAttrs);
}

struct LoraFusedGenerationPass
    : impl::LoraFusedGenerationBase<LoraFusedGenerationPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::optional<LoraConfig> config = readLoraConfig(module, &error);
    if (!config) {
      module.emitError() << "hg-lora-fused-generation: " << error
                         << " (run hg-lora first)";
      return signalPassFailure();
    }
    for (StringRef name : {"lora_fuse", "lora_unfuse"})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-lora-fused-generation: @" << name
                           << " exists already";
        return signalPassFailure();
      }
    llvm::StringSet<> loraB, adapterParams;
    for (const LoraAdapter &a : config->adapters) {
      loraB.insert(a.loraB);
      adapterParams.insert(a.loraA);
      adapterParams.insert(a.loraB);
    }
    bool any = false;
    for (StringRef name : {"prefill", "decode"})
      if (auto f = module.lookupSymbol<func::FuncOp>(name)) {
        any = true;
        if (failed(stripAdapters(f, loraB, adapterParams)))
          return signalPassFailure();
      }
    if (!any) {
      module.emitError("hg-lora-fused-generation: no @prefill or @decode "
                       "(run hg-split-generation first)");
      return signalPassFailure();
    }
    buildMerge(module, "lora_fuse", *config, 1.0);
    buildMerge(module, "lora_unfuse", *config, -1.0);
  }
};

} // namespace
} // namespace hybridc::hg
