// Phases of hybridc's compilation (see Pipeline.h).
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Conversion/HgToCommands/HgToCommands.h"
#include "dialects/hg/Transforms/Passes.h"
#include "frontends/NestingDepth.h"
#include "frontends/hf/HfImporter.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

namespace hybridc {

static llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &context, const std::string &path,
            std::vector<std::string> *inputFiles) {
  if (!llvm::sys::fs::exists(path))
    return error(path + ": no such file or directory");
  bool isFolder = llvm::sys::fs::is_directory(path);
  if (inputFiles)
    inputFiles->push_back(isFolder ? path + "/config.json" : path);
  if (isFolder || llvm::sys::path::filename(path) == "config.json")
    return hf::importHfConfig(context, path);
  if (llvm::sys::path::extension(path) == ".onnx") {
    onnx::OnnxImportOptions options;
    options.externalDataFiles = inputFiles;
    return onnx::importOnnxModel(context, path, options);
  }
  if (llvm::sys::path::extension(path) == ".mlir") {
    // An hg module as text: what --emit=hg printed, edited or hand-written.
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
      return error(path +
                   ": not a valid hg module (see the diagnostics above)");
    return module;
  }
  return error(path + ": expected an .onnx file, an .mlir hg module or a "
                      "folder holding config.json");
}

llvm::Error runHgPipeline(mlir::ModuleOp module,
                          const CompileOptions &options) {
  mlir::PassManager pm(module.getContext());
  if (options.fuse)
    hg::buildOnnxCleanupPipeline(pm);
  else {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  // Diagnostics from passes reach the user through the context's handler;
  // a failure here means a pass rejected the IR.
  if (mlir::failed(pm.run(module)))
    return error("the hg pipeline failed (see the diagnostics above)");
  return llvm::Error::success();
}

llvm::Expected<hybrid::BundleDesc> lowerToBundle(mlir::ModuleOp module) {
  hybrid::BundleDesc bundle;
  bundle.producer = "hybridc 0.1.0";
  if (auto model = module->getAttrOfType<mlir::StringAttr>("hg.model"))
    bundle.model = model.str();
  if (auto source = module->getAttrOfType<mlir::StringAttr>("hg.source"))
    bundle.source = source.str();
  if (auto tied = module->getAttrOfType<mlir::ArrayAttr>("hg.tied"))
    for (mlir::Attribute t : tied)
      if (auto s = mlir::dyn_cast<mlir::StringAttr>(t))
        bundle.tied.push_back(s.str());
  bool any = false;
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    if (llvm::Error e = lowerToExecutable(func, bundle))
      return std::move(e);
    any = true;
  }
  if (!any)
    return error("the module has no function to lower");
  return bundle;
}

} // namespace hybridc
