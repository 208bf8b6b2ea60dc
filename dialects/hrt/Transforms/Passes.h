// Declarations and registration of the hrt passes (Passes.td).
#pragma once

#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hybridc::hrt {

#define GEN_PASS_DECL
#include "dialects/hrt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/hrt/Transforms/Passes.h.inc"

} // namespace hybridc::hrt
