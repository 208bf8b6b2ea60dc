// Definitions ODS generates for the hg ops (accessors, builders, parsers,
// printers). Type inference and verifiers are in HgOpTypes.cpp, folds and
// canonicalisations in HgFolds.cpp.
#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#define GET_OP_CLASSES
#include "dialects/hg/IR/HgOps.cpp.inc"
