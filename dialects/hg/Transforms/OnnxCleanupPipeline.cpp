// The cleanup and fusion pipeline that follows an import.
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

namespace hybridc::hg {

void buildOnnxCleanupPipeline(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  // Norms and activations first: they shrink the graphs that rotary and
  // attention match. Linear last, so no pattern sees a half-fused layer.
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  func.addPass(createFuseNorms());
  func.addPass(createFuseActivations());
  func.addPass(createFuseRotary());
  func.addPass(createFuseAttention());
  func.addPass(createFuseLinear());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace hybridc::hg
