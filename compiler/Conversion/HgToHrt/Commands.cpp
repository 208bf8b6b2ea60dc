// hg -> hrt: the ops that are a command's graph form (runtime/base/ops/
// ops.py's `hg`), each its command one to one; the patterns are generated
// with the ops, so such an op needs no lowering written by hand.
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {

#include "compiler/Conversion/HgToHrt/CommandPatterns.inc"

} // namespace hybridc
