// Passes over the hrt dialect, alphabetical.
#ifndef HRT_TRANSFORMS_PASSES_TD
#define HRT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanMemory : Pass<"hrt-plan-memory", "::hybridc::hrt::ExecutableOp"> {
  let summary = "Assign workspace offsets to allocations and ports";
  let description = [{
    Places every `hrt.alloc`, `hrt.input` and `hrt.output` of the executable
    in one workspace and sets its `offset` (bytes, a polynomial in the
    executable's symbols), and the executable's `workspace` size. A buffer
    lives from the first to the last command that touches it, directly or
    through views; inputs are live from the start (the caller fills them)
    and outputs to the end (the caller reads them). Buffers whose lifetimes
    do not overlap share space when one is provably at least as large as the
    other for every binding of the symbols. Every buffer starts on an
    `alignment`-byte boundary: the runtime rounds each offset up to it, and
    the plan reserves room for that (see MemoryPlan.h).
  }];
  let options = [Option<"alignment", "alignment", "int64_t",
                        /*default=*/"256",
                        "byte alignment of every buffer (a power of two)">];
}

#endif // HRT_TRANSFORMS_PASSES_TD
