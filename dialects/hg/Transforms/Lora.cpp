// hg-lora: LoRA adapters on @forward's targeted linears, named as PEFT saves
// them (base_model.model.<module>.lora_A.weight / lora_B.weight), and with
// only-optimize every other parameter frozen (see Passes.td).
#include "dialects/hg/Transforms/Lora.h"
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_LORA
#include "dialects/hg/Transforms/Passes.h.inc"

bool isNumberedBlockPath(StringRef module) {
  SmallVector<StringRef> parts;
  module.split(parts, '.');
  return llvm::any_of(parts, [](StringRef p) {
    return !p.empty() &&
           llvm::all_of(p, [](char c) { return llvm::isDigit(c); });
  });
}

bool matchesTarget(StringRef module, StringRef target) {
  return module == target ||
         (module.size() > target.size() && module.ends_with(target) &&
          module[module.size() - target.size() - 1] == '.');
}

std::string loraParamName(StringRef module, StringRef which) {
  return ("base_model.model." + module + "." + which + ".weight").str();
}

std::optional<LoraConfig> readLoraConfig(ModuleOp module, std::string *error) {
  auto fail = [&](const Twine &why) -> std::optional<LoraConfig> {
    if (error)
      *error = ("hg.lora: " + why).str();
    return std::nullopt;
  };
  auto dict = module->getAttrOfType<DictionaryAttr>(kLoraAttr);
  if (!dict)
    return fail("absent");
  LoraConfig config;
  auto rank = dict.getAs<IntegerAttr>("rank");
  auto alpha = dict.getAs<FloatAttr>("alpha");
  auto targets = dict.getAs<ArrayAttr>("targets");
  auto only = dict.getAs<BoolAttr>("only_optimize");
  auto adapters = dict.getAs<ArrayAttr>("adapters");
  if (!rank || !alpha || !targets || !only || !adapters)
    return fail("needs rank, alpha, targets, only_optimize and adapters");
  config.rank = rank.getInt();
  config.alpha = alpha.getValueAsDouble();
  config.onlyOptimize = only.getValue();
  for (Attribute t : targets) {
    auto s = dyn_cast<StringAttr>(t);
    if (!s)
      return fail("targets must be strings");
    config.targets.push_back(s.str());
  }
  for (Attribute a : adapters) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d)
      return fail("an adapter must be a dictionary");
    LoraAdapter adapter;
    for (auto [key, field] :
         {std::pair<StringRef, std::string *>{"module", &adapter.module},
          {"weight", &adapter.weight},
          {"lora_A", &adapter.loraA},
          {"lora_B", &adapter.loraB}}) {
      auto s = d.getAs<StringAttr>(key);
      if (!s)
        return fail("an adapter needs '" + key + "'");
      *field = s.str();
    }
    auto f = d.getAs<BoolAttr>("fan_in_fan_out");
    if (!f)
      return fail("an adapter needs 'fan_in_fan_out'");
    adapter.fanInFanOut = f.getValue();
    config.adapters.push_back(std::move(adapter));
  }
  return config;
}

namespace {

struct Candidate {
  LinearOp linear;
  BlockArgument weight;
  std::string module;
};

struct LoraPass : impl::LoraBase<LoraPass> {
  using LoraBase::LoraBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("hg-lora: the module has no @forward");
      return signalPassFailure();
    }
    if (module->hasAttr(kLoraAttr)) {
      module.emitError("hg-lora: the module has adapters already");
      return signalPassFailure();
    }
    if (rank < 1) {
      module.emitError() << "hg-lora: rank must be >= 1, got " << rank;
      return signalPassFailure();
    }
    if (!(alpha > 0)) {
      module.emitError() << "hg-lora: alpha must be > 0, got " << alpha;
      return signalPassFailure();
    }

    // Every linear whose weight is a parameter "<module>.weight".
    SmallVector<Candidate> candidates;
    forward.walk([&](LinearOp linear) {
      auto arg = dyn_cast<BlockArgument>(linear.getWeight());
      if (!arg || arg.getOwner()->getParentOp() != forward)
        return;
      auto name =
          forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "hg.param");
      if (!name || !name.getValue().ends_with(".weight"))
        return;
      candidates.push_back(
          {linear, arg, name.getValue().drop_back(strlen(".weight")).str()});
    });

    SmallVector<Candidate> chosen;
    llvm::StringSet<> matched;
    for (const Candidate &c : candidates) {
      bool take = targets.empty() ? isNumberedBlockPath(c.module) : false;
      for (const std::string &t : targets)
        if (matchesTarget(c.module, t)) {
          take = true;
          matched.insert(t);
        }
      if (take)
        chosen.push_back(c);
    }
    for (const std::string &t : targets)
      if (!matched.contains(t)) {
        // The linears' last path components: what a target usually names.
        llvm::SetVector<StringRef> names;
        for (const Candidate &c : candidates)
          names.insert(StringRef(c.module).rsplit('.').second.empty()
                           ? StringRef(c.module)
                           : StringRef(c.module).rsplit('.').second);
        std::string list;
        for (StringRef n : names)
          list += (list.empty() ? "" : ", ") + n.str();
        module.emitError() << "hg-lora: target '" << t
                           << "' matches no linear (the linears are: " << list
                           << ")";
        return signalPassFailure();
      }
    if (chosen.empty()) {
      module.emitError("hg-lora: no linear of a numbered block to adapt "
                       "(name the modules with targets)");
      return signalPassFailure();
    }

    OpBuilder b(module.getContext());
    const double scale = alpha / static_cast<double>(rank);
    SmallVector<Attribute> adapters;
    llvm::StringSet<> adapted;
    for (const Candidate &c : chosen) {
      LinearOp linear = c.linear;
      if (!c.weight.hasOneUse()) {
        linear.emitError() << "hg-lora: '" << c.module
                           << ".weight' is used by more than this linear "
                              "(tied); it cannot take an adapter";
        return signalPassFailure();
      }
      if (linear.getResidual() || linear.getActivation() != "none" ||
          linear.getNorm() != "none") {
        linear.emitError() << "hg-lora: the linear of '" << c.module
                           << "' has a fused epilogue or prologue (run hg-lora "
                              "before the fusions)";
        return signalPassFailure();
      }
      if (!adapted.insert(c.module).second)
        continue;
      auto w = cast<RankedTensorType>(c.weight.getType());
      if (w.getRank() != 2 || !w.hasStaticShape()) {
        linear.emitError() << "hg-lora: '" << c.module
                           << ".weight' is not a static matrix: " << w;
        return signalPassFailure();
      }
      const bool fanInFanOut = !linear.getTransposeWeight();
      const int64_t out = w.getDimSize(fanInFanOut ? 1 : 0);
      const int64_t in = w.getDimSize(fanInFanOut ? 0 : 1);
      Type element = w.getElementType();
      std::string aName = loraParamName(c.module, "lora_A");
      std::string bName = loraParamName(c.module, "lora_B");
      auto param = [&](StringRef name, ArrayRef<int64_t> shape) {
        unsigned i = forward.getNumArguments();
        forward.insertArgument(i, RankedTensorType::get(shape, element),
                               b.getDictionaryAttr(b.getNamedAttr(
                                   "hg.param", b.getStringAttr(name))),
                               c.weight.getLoc());
        return forward.getArgument(i);
      };
      Value a = param(aName, {rank, in});
      Value bw = param(bName, {out, rank});

      // y0 + linear(linear(x, A) * scale, B): the scale on the rank-r
      // activations, the cheapest place for it.
      b.setInsertionPointAfter(linear);
      Location loc = linear.getLoc();
      Value down = b.create<LinearOp>(loc, linear.getInput(), a, Value(),
                                      /*transpose_weight=*/true);
      if (scale != 1.0) {
        auto scalarType = RankedTensorType::get({1}, element);
        Value s = b.create<ConstantOp>(
            loc,
            DenseElementsAttr::get(scalarType, b.getFloatAttr(element, scale)));
        down = b.create<MulOp>(loc, down, s);
      }
      Value up = b.create<LinearOp>(loc, down, bw, Value(),
                                    /*transpose_weight=*/true);
      Value sum = b.create<AddOp>(loc, linear.getResult(), up);
      linear.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());

      adapters.push_back(b.getDictionaryAttr({
          b.getNamedAttr("module", b.getStringAttr(c.module)),
          b.getNamedAttr("weight", b.getStringAttr(c.module + ".weight")),
          b.getNamedAttr("lora_A", b.getStringAttr(aName)),
          b.getNamedAttr("lora_B", b.getStringAttr(bName)),
          b.getNamedAttr("fan_in_fan_out", b.getBoolAttr(fanInFanOut)),
      }));
    }

    if (onlyOptimize) {
      llvm::StringSet<> adapterParams;
      for (Attribute a : adapters) {
        auto d = cast<DictionaryAttr>(a);
        adapterParams.insert(d.getAs<StringAttr>("lora_A").getValue());
        adapterParams.insert(d.getAs<StringAttr>("lora_B").getValue());
      }
      for (unsigned i = 0; i < forward.getNumArguments(); ++i)
        if (auto name = forward.getArgAttrOfType<StringAttr>(i, "hg.param");
            name && !adapterParams.contains(name.getValue()))
          forward.setArgAttr(i, kFrozenAttr, b.getUnitAttr());
    }

    SmallVector<Attribute> targetNames;
    for (const std::string &t : targets)
      targetNames.push_back(b.getStringAttr(t));
    module->setAttr(
        kLoraAttr,
        b.getDictionaryAttr({
            b.getNamedAttr("rank", b.getI64IntegerAttr(rank)),
            b.getNamedAttr("alpha", b.getF64FloatAttr(alpha)),
            b.getNamedAttr("targets", b.getArrayAttr(targetNames)),
            b.getNamedAttr("only_optimize", b.getBoolAttr(onlyOptimize)),
            b.getNamedAttr("adapters", b.getArrayAttr(adapters)),
        }));
  }
};

} // namespace
} // namespace hybridc::hg
