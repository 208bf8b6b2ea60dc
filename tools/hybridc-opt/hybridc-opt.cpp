// hybridc-opt: parses, verifies, transforms and prints hybridc IR, like
// mlir-opt but over the dialects and passes of compiler/InitAll.h.
#include "compiler/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  hybridc::registerAllDialects(registry);
  hybridc::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "hybridc modular optimizer driver\n", registry));
}
