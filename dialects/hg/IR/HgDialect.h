// The hg dialect class (ops are declared in HgOps.h, which includes this).
#pragma once

#include "mlir/IR/Dialect.h"

#include "dialects/hg/IR/HgDialect.h.inc"
