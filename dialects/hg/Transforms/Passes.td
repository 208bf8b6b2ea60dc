// Passes over the hg dialect, grouped and alphabetical.
#ifndef HG_TRANSFORMS_PASSES_TD
#define HG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // HG_TRANSFORMS_PASSES_TD
