// HF config frontend entry points: reads config.json and dispatches on
// model_type to the family that builds the graph.
#include "frontends/hf/HfImporter.h"

#include "frontends/hf/Families.h"
#include "frontends/hf/HfConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace hybridc::hf {

namespace {

struct ModelFamily {
  llvm::StringLiteral modelType;
  ImportResult (*import)(mlir::MLIRContext &, HfConfig &);
};

constexpr ModelFamily kFamilies[] = {
    {"gpt2", importGpt2},   {"opt", importOpt},
    {"llama", importLlama}, {"mistral", importLlama},
    {"qwen2", importLlama}, {"gpt_neox", importGptNeoX},
    {"phi3", importPhi3},   {"bloom", importBloom},
};

const llvm::SmallVector<llvm::StringRef> &modelTypeNames() {
  static const llvm::SmallVector<llvm::StringRef> names = [] {
    llvm::SmallVector<llvm::StringRef> list;
    for (const ModelFamily &family : kFamilies)
      list.push_back(family.modelType);
    return list;
  }();
  return names;
}

} // namespace

llvm::ArrayRef<llvm::StringRef> supportedModelTypes() {
  return modelTypeNames();
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importHfConfig(mlir::MLIRContext &context, llvm::StringRef dir,
               llvm::StringRef dtype, ModelHead head) {
  llvm::Expected<HfConfig> config = HfConfig::load(dir);
  if (!config)
    return config.takeError();
  if (llvm::Error e = config->setModelDtype(dtype))
    return std::move(e);
  config->setHead(head);
  const ModelFamily *family =
      llvm::find_if(kFamilies, [&](const ModelFamily &f) {
        return f.modelType == config->modelType();
      });
  if (family == std::end(kFamilies))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "config.json: unsupported model_type '" + config->modelType() +
            "' (supported: " + llvm::join(supportedModelTypes(), ", ") + ")");
  // Quantized checkpoints store other tensors (qweight, scales, ...) under
  // the same module names; the graph would bind the wrong things.
  if (config->has("quantization_config"))
    return config->makeError("quantized checkpoints (quantization_config) "
                             "are not supported");
  return family->import(context, *config);
}

} // namespace hybridc::hf
