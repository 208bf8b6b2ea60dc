// Phases of hybridc's compilation (see Pipeline.h).
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Target/Bundle/HrtToBundle.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hrt/IR/HrtOps.h"
#include "dialects/hrt/Transforms/Passes.h"
#include "frontends/NestingDepth.h"
#include "frontends/hf/HfImporter.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

namespace hybridc {

static llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("import", Phase::Import)
      .Case("hg", Phase::Hg)
      .Case("hrt", Phase::Hrt)
      .Case("bundle", Phase::Bundle)
      .Default(std::nullopt);
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &context, const std::string &path,
            const CompileOptions &options,
            std::vector<std::string> *inputFiles) {
  if (!llvm::sys::fs::exists(path))
    return error(path + ": no such file or directory");
  bool isFolder = llvm::sys::fs::is_directory(path);
  if (inputFiles)
    inputFiles->push_back(isFolder ? path + "/config.json" : path);
  if (isFolder || llvm::sys::path::filename(path) == "config.json")
    return hf::importHfConfig(context, path, options.dtype,
                              options.head == CompileOptions::Head::Value
                                  ? hf::ModelHead::Value
                                  : hf::ModelHead::CausalLm);
  if (options.head != CompileOptions::Head::CausalLm)
    return error("--head value applies to HF config.json models; " + path +
                 " keeps the outputs it was written with");
  if (!options.dtype.empty())
    return error("--dtype applies to HF config.json models; " + path +
                 " keeps the element types it was written with");
  if (llvm::sys::path::extension(path) == ".onnx") {
    onnx::OnnxImportOptions onnxOptions;
    onnxOptions.externalDataFiles = inputFiles;
    onnxOptions.training = options.train;
    return onnx::importOnnxModel(context, path, onnxOptions);
  }
  if (llvm::sys::path::extension(path) == ".mlir") {
    // An hg module as text (what --compile-to=hg printed, edited or
    // hand-written), or an hrt module to serialise.
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return error(path + ": cannot read: " + buffer.getError().message());
    NestingSyntax mlirSyntax;
    mlirSyntax.lineComments = mlirSyntax.angleBrackets = true;
    if (std::optional<std::string> where =
            findExcessiveNesting((*buffer)->getBuffer(), mlirSyntax))
      return error(path + ": nested deeper than " +
                   llvm::Twine(kMaxNestingDepth) + " levels (at " + *where +
                   ")");
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(
        sources, mlir::ParserConfig(&context));
    if (!module)
      return error(path + ": not a valid hg or hrt module (see the "
                          "diagnostics above)");
    return module;
  }
  return error(path + ": expected an .onnx file, an .mlir module or a "
                      "folder holding config.json");
}

bool isHrtModule(mlir::ModuleOp module) {
  return !module.getOps<hrt::ExecutableOp>().empty();
}

void buildHgPipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  if (options.fuse)
    hg::buildOnnxCleanupPipeline(pm);
  else {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  // On the fused linears (an ONNX model's matmuls become linears above),
  // before any epilogue fusion.
  if (options.loraRank > 0) {
    hg::LoraOptions lora;
    lora.rank = options.loraRank;
    lora.alpha = options.loraAlpha;
    lora.targets = options.loraTargets;
    lora.onlyOptimize = options.loraOnlyOptimize;
    pm.addPass(hg::createLora(lora));
  }
}

/// Runs the passes `build` adds. Diagnostics from passes reach the user
/// through the context's handler; a failure means a pass rejected the IR.
static llvm::Error
runPhase(mlir::ModuleOp module, const CompileOptions &options,
         void (*build)(mlir::OpPassManager &, const CompileOptions &),
         const char *failure) {
  mlir::PassManager pm(module.getContext());
  build(pm, options);
  if (mlir::failed(pm.run(module)))
    return error(failure);
  return llvm::Error::success();
}

llvm::Error runHgPipeline(mlir::ModuleOp module,
                          const CompileOptions &options) {
  return runPhase(module, options, buildHgPipeline,
                  "the hg pipeline failed (see the diagnostics above)");
}

/// Whether @forward takes input_ids [batch, seq] and returns a result
/// named `result` of rank `rank` (whose last dim is static).
static bool forwardMaps(mlir::ModuleOp module, llvm::StringRef result,
                        int64_t rank) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward)
    return false;
  bool ids = false, found = false;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, "hg.name");
    auto dims = forward.getArgAttrOfType<mlir::ArrayAttr>(i, "hg.dims");
    if (name && name.getValue() == "input_ids" && dims && dims.size() == 2 &&
        dims[0] == mlir::StringAttr::get(module.getContext(), "batch") &&
        dims[1] == mlir::StringAttr::get(module.getContext(), "seq"))
      ids = true;
  }
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    auto name = forward.getResultAttrOfType<mlir::StringAttr>(i, "hg.name");
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(
        forward.getFunctionType().getResult(i));
    if (name && name.getValue() == result && type && type.getRank() == rank &&
        (rank == 2 || !type.isDynamicDim(rank - 1)))
      found = true;
  }
  return ids && found;
}

bool isLanguageModel(mlir::ModuleOp module) {
  return forwardMaps(module, "logits", 3);
}

bool isValueModel(mlir::ModuleOp module) {
  return forwardMaps(module, "values", 2);
}

void buildGenerationPipeline(mlir::OpPassManager &pm,
                             const CompileOptions &options) {
  pm.addPass(hg::createSplitGeneration());
  // Before the fusions: the base linears' epilogues fuse as without LoRA.
  if (options.loraRank > 0 &&
      options.loraGeneration == CompileOptions::LoraGeneration::Fused)
    pm.addPass(hg::createLoraFusedGeneration());
  pm.addNestedPass<mlir::func::FuncOp>(hg::createKvCache());
  pm.addNestedPass<mlir::func::FuncOp>(hg::createUnitTransposes());
  pm.addNestedPass<mlir::func::FuncOp>(hg::createFuseEpilogues());
  pm.addNestedPass<mlir::func::FuncOp>(hg::createSinkSlices());
  if (options.normPrologues)
    pm.addNestedPass<mlir::func::FuncOp>(hg::createFuseNormPrologues());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

llvm::Error runGenerationPipeline(mlir::ModuleOp module,
                                  const CompileOptions &options,
                                  std::string *declined) {
  if (!declined)
    return runPhase(
        module, options, buildGenerationPipeline,
        "the generation lowering failed (see the diagnostics above)");
  mlir::PassManager pm(module.getContext());
  buildGenerationPipeline(pm, options);
  // On a copy, with the diagnostics kept: the module changes only when
  // the whole lowering succeeds.
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  std::string messages;
  {
    mlir::ScopedDiagnosticHandler keep(
        module.getContext(), [&](mlir::Diagnostic &d) {
          if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::success();
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          d.getLocation().print(os);
          os << ": " << d.str();
          return mlir::success();
        });
    if (mlir::failed(pm.run(*copy))) {
      *declined = messages.empty() ? "the lowering failed" : messages;
      return llvm::Error::success();
    }
  }
  module.getBodyRegion().takeBody(copy->getBodyRegion());
  return llvm::Error::success();
}

void buildTrainPipeline(mlir::OpPassManager &pm,
                        const CompileOptions &options) {
  const bool valueHead = options.head == CompileOptions::Head::Value;
  hg::AutodiffOptions autodiff;
  autodiff.function = "forward_loss";
  // What the optimizer unscales by, where a parameter is f16.
  autodiff.lossScale = "opt.loss_scale";
  autodiff.lossScaleF16Only = true;
  // A value model has no loss of its own: @backward and @step, and with
  // ppo the critic's loss.
  if (!valueHead) {
    pm.addPass(hg::createCausalLmLoss());
    pm.addPass(hg::createAutodiff(autodiff));
  }
  if (options.ppo) {
    hg::PpoLossesOptions ppo;
    ppo.clipLow = options.clipLow;
    ppo.clipHigh = options.clipHigh;
    ppo.cliprangeValue = options.cliprangeValue;
    ppo.promptLength = options.promptLength;
    ppo.clipRewardValue = options.clipRewardValue;
    ppo.gamma = options.gamma;
    ppo.lambda = options.lambda;
    ppo.grpo = options.grpo;
    ppo.groupSize = options.groupSize;
    ppo.klBeta = options.klBeta;
    ppo.perSequence = options.perSequence;
    ppo.scaleAdvantages = options.scaleAdvantages;
    pm.addPass(hg::createPpoLosses(ppo));
    llvm::SmallVector<llvm::StringRef, 2> losses;
    if (valueHead)
      losses.push_back("critic_loss");
    else
      losses.push_back("ppo_actor_loss");
    if (options.grpo && !valueHead)
      losses.push_back("grpo_loss");
    for (llvm::StringRef loss : losses) {
      hg::AutodiffOptions differentiate = autodiff;
      differentiate.function = loss.str();
      pm.addPass(hg::createAutodiff(differentiate));
    }
  }
  if (options.reward && valueHead) {
    pm.addPass(hg::createRewardLoss());
    hg::AutodiffOptions differentiate = autodiff;
    differentiate.function = "reward_loss";
    pm.addPass(hg::createAutodiff(differentiate));
  }
  // @forward_vjp: the same backward pass seeded by the cotangent of the
  // logits or values (a loss computed outside the model: PPO), for
  // @backward.
  hg::AutodiffOptions vjp = autodiff;
  vjp.function = "forward";
  vjp.cotangent = valueHead ? "values" : "logits";
  pm.addPass(hg::createAutodiff(vjp));
  if (options.optimizer == CompileOptions::Optimizer::Sgd)
    pm.addPass(hg::createSgd());
  else
    pm.addPass(hg::createAdamW());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  // With the backward built, a linear whose only use is an add takes it as
  // its residual epilogue: the gradients summed over a value's consumers
  // (q, k and v of one norm) and the forward's residual adds. Activations
  // stay apart where the backward reads the pre-activation (hg-fuse-epilogues
  // fuses only a linear with no other use).
  if (options.fuse)
    pm.addNestedPass<mlir::func::FuncOp>(hg::createFuseEpilogues());
}

llvm::Error runTrainPipeline(mlir::ModuleOp module,
                             const CompileOptions &options) {
  return runPhase(module, options, buildTrainPipeline,
                  "the training lowering failed (see the diagnostics above)");
}

void buildHrtPipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  ConvertHgToHrtOptions lowering;
  // Under ZeRO a sharded update reaches the replicated weights through the
  // copy the partition turns into a gather.
  lowering.paramsInPlace = options.worldSize == 1;
  pm.addPass(createConvertHgToHrt(lowering));
  if (options.worldSize != 1) {
    hrt::ZeroPartitionOptions zero;
    zero.stage = options.zeroStage;
    zero.worldSize = options.worldSize;
    zero.maxReuseDistance = options.maxReuseDistance;
    pm.addPass(hrt::createZeroPartition(zero));
    hrt::ZeroPrefetchOptions prefetch;
    prefetch.bucketSize = options.prefetchBucketSize;
    pm.addNestedPass<hrt::ExecutableOp>(hrt::createZeroPrefetch(prefetch));
  }
  // The command fusions, before planning (a group writes some results
  // earlier than the linears did, which the plan's lifetimes must see);
  // --no-fuse leaves one command per op.
  if (options.fuse) {
    pm.addNestedPass<hrt::ExecutableOp>(hrt::createGroupLinears());
    pm.addNestedPass<hrt::ExecutableOp>(hrt::createFoldKvAppends());
  }
  // Executables that already have a plan (a planned hrt module given as
  // input) keep it.
  hrt::PlanMemoryOptions plan;
  plan.keepPlans = true;
  pm.addNestedPass<hrt::ExecutableOp>(hrt::createPlanMemory(plan));
}

llvm::Error runHrtPipeline(mlir::ModuleOp module,
                           const CompileOptions &options) {
  return runPhase(module, options, buildHrtPipeline,
                  "lowering to hrt failed (see the diagnostics above)");
}

void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompileOptions &options) {
  buildHgPipeline(pm, options);
  if (options.train)
    buildTrainPipeline(pm, options);
  // A value head has no logits to sample from.
  if (options.generation != CompileOptions::Generation::Off &&
      options.head != CompileOptions::Head::Value)
    buildGenerationPipeline(pm, options);
  buildHrtPipeline(pm, options);
}

namespace {

// The registered pipelines' options: CompileOptions with hybridc's defaults,
// each pipeline taking the groups it reads (a mixin each, over Root).
using mlir::detail::PassOptions;

const CompileOptions &defaults() {
  static const CompileOptions options;
  return options;
}

template <typename Derived> struct Root : mlir::PassPipelineOptions<Derived> {
  void read(CompileOptions &) const {}
};

template <typename Base> struct FuseOption : Base {
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Run the fusion passes (hybridc --no-fuse: false)"),
      llvm::cl::init(defaults().fuse)};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.fuse = fuse;
  }
};

template <typename Base> struct NormProloguesOption : Base {
  PassOptions::Option<bool> normPrologues{
      *this, "norm-prologues",
      llvm::cl::desc("Fold @decode's norms into the linears they feed"),
      llvm::cl::init(defaults().normPrologues)};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.normPrologues = normPrologues;
  }
};

template <typename Base> struct OptimizerOption : Base {
  PassOptions::Option<CompileOptions::Optimizer> optimizer{
      *this, "optimizer", llvm::cl::desc("The training update"),
      llvm::cl::init(defaults().optimizer),
      llvm::cl::values(
          clEnumValN(CompileOptions::Optimizer::AdamW, "adamw", "AdamW"),
          clEnumValN(CompileOptions::Optimizer::Sgd, "sgd",
                     "SGD with momentum"))};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.optimizer = optimizer;
  }
};

template <typename Base> struct ZeroOptions : Base {
  PassOptions::Option<int64_t> zeroStage{*this, "zero-stage",
                                         llvm::cl::desc("ZeRO stage (0-3)"),
                                         llvm::cl::init(defaults().zeroStage)};
  PassOptions::Option<int64_t> worldSize{
      *this, "world-size", llvm::cl::desc("Data-parallel ranks (1: none)"),
      llvm::cl::init(defaults().worldSize)};
  PassOptions::Option<int64_t> prefetchBucketSize{
      *this, "prefetch-bucket-size",
      llvm::cl::desc("ZeRO-3: parameter elements gathered ahead of use"),
      llvm::cl::init(defaults().prefetchBucketSize)};
  PassOptions::Option<int64_t> maxReuseDistance{
      *this, "max-reuse-distance",
      llvm::cl::desc("ZeRO-3: keep a gathered parameter for a use within "
                     "this many elements"),
      llvm::cl::init(defaults().maxReuseDistance)};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.zeroStage = zeroStage;
    options.worldSize = worldSize;
    options.prefetchBucketSize = prefetchBucketSize;
    options.maxReuseDistance = maxReuseDistance;
  }
};

template <typename Base> struct HeadOption : Base {
  PassOptions::Option<CompileOptions::Head> head{
      *this, "head",
      llvm::cl::desc("What @forward ends in (train: the lowering it takes)"),
      llvm::cl::init(defaults().head),
      llvm::cl::values(clEnumValN(CompileOptions::Head::CausalLm, "causal-lm",
                                  "logits: the causal-LM loss"),
                       clEnumValN(CompileOptions::Head::Value, "value",
                                  "values: @backward from grad_values"))};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.head = head;
  }
};

/// Which phases the whole pipeline runs.
template <typename Base> struct PhaseOptions : Base {
  PassOptions::Option<bool> train{
      *this, "train", llvm::cl::desc("Add the training executables"),
      llvm::cl::init(defaults().train)};
  PassOptions::Option<bool> generate{*this, "generate",
                                     llvm::cl::desc("Add @prefill and @decode"),
                                     llvm::cl::init(true)};
  void read(CompileOptions &options) const {
    Base::read(options);
    options.train = train;
    options.generation = generate ? CompileOptions::Generation::On
                                  : CompileOptions::Generation::Off;
  }
};

struct HgPipelineOptions : FuseOption<Root<HgPipelineOptions>> {};
struct TrainPipelineOptions
    : HeadOption<OptimizerOption<FuseOption<Root<TrainPipelineOptions>>>> {};
struct GenerationPipelineOptions
    : NormProloguesOption<Root<GenerationPipelineOptions>> {};
struct HrtPipelineOptions : ZeroOptions<FuseOption<Root<HrtPipelineOptions>>> {
};
struct CompilePipelineOptions
    : PhaseOptions<HeadOption<ZeroOptions<OptimizerOption<
          NormProloguesOption<FuseOption<Root<CompilePipelineOptions>>>>>>> {};

/// Registers `build` as the pipeline `name`, taking Options.
template <typename Options>
void registerPipeline(llvm::StringRef name, llvm::StringRef description,
                      void (*build)(mlir::OpPassManager &,
                                    const CompileOptions &)) {
  mlir::PassPipelineRegistration<Options>(
      name, description,
      [build](mlir::OpPassManager &pm, const Options &options) {
        CompileOptions compileOptions;
        options.read(compileOptions);
        build(pm, compileOptions);
      });
}

} // namespace

void registerPipelines() {
  registerPipeline<HgPipelineOptions>(
      "hybrid-hg-pipeline", "hybridc's hg phase: canonicalise and fuse",
      buildHgPipeline);
  registerPipeline<TrainPipelineOptions>(
      "hybrid-train-pipeline",
      "hybridc --train: a language model's loss, gradients and optimizer "
      "executables (head=value: a value model's @backward and @step)",
      buildTrainPipeline);
  registerPipeline<GenerationPipelineOptions>(
      "hybrid-generation-pipeline",
      "hybridc's @prefill and @decode over a KV cache",
      buildGenerationPipeline);
  registerPipeline<HrtPipelineOptions>(
      "hybrid-hrt-pipeline",
      "hybridc's hrt phase: lower to hrt, partition over ranks, fuse "
      "commands, plan memory",
      buildHrtPipeline);
  registerPipeline<CompilePipelineOptions>(
      "hybrid-pipeline",
      "hybridc compile from the import to the planned hrt module",
      buildCompilePipeline);
}

llvm::Expected<hybrid::BundleDesc> lowerToBundle(mlir::ModuleOp module) {
  return translateHrtToBundle(module);
}

} // namespace hybridc
