// The dialects and passes every hybridc tool sees; tools register through
// here so hybridc, hybridc-opt and the tests agree on one world.
#pragma once

#include "compiler/Conversion/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hrt/IR/HrtOps.h"
#include "dialects/hrt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace hybridc {

inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::BuiltinDialect, mlir::func::FuncDialect, hg::HgDialect,
                  hrt::HrtDialect>();
}

/// Registers the hg and hrt passes, the conversions, hybridc's phases as
/// pipelines and MLIR's generic transforms (canonicalize, cse, symbol-dce,
/// ...). Registration is global, so call it once per process.
inline void registerAllPasses() {
  hg::registerHgPasses();
  hrt::registerHrtPasses();
  registerConversionPasses();
  registerPipelines();
  mlir::registerTransformsPasses();
}

} // namespace hybridc
