// Names, arities and result counts of the typed operations (see Ops.h),
// generated from runtime/base/ops/ops.py.
#include "hybrid/Ops.h"

namespace hybrid {

#include "OpNames.inc"

} // namespace hybrid
