// Declarations and registration of the hg passes (Passes.td).
#pragma once

#include "mlir/Pass/Pass.h"

#include <memory>

namespace hybridc::hg {

#define GEN_PASS_DECL
#include "dialects/hg/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/hg/Transforms/Passes.h.inc"

} // namespace hybridc::hg
