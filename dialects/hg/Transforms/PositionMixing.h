// Finds the ops that combine values at different positions of a dynamic
// dim: the question a decode step asks of a forward function before it runs
// it one token at a time.
#pragma once

#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace hybridc::hg {

struct PositionMixing {
  mlir::Operation *op = nullptr; ///< the first mixing op; null if none
  std::string why;               ///< what it mixes, for a diagnostic
};

/// The first op of `func` (in order) that may compute an element from
/// elements at other positions of symbol `symbol` (e.g. "seq"), skipping
/// ops for which `handled` returns true (the caller rewrites those: cached
/// attention, position ids). When none is found, every output position
/// depends only on the inputs at that position, so running the function on
/// one position at a time (the symbol bound to 1) computes the same values.
///
/// Sound for the hg ops, with one assumption: a dim that merges the symbol
/// with other dims (`batch*seq`) has them in the same order in every tensor
/// an elementwise op combines, as reshapes after transposes back produce.
/// An op is mixing when a dim it reduces, scans, slices, concatenates,
/// gathers along, contracts or normalises over mentions the symbol; when a
/// matmul pairs positions (rows and columns both mention it); when it is an
/// iota whose length mentions it (values that are positions), or a
/// positions op or attention (both read across positions); or a reshape
/// that does not keep the elements after the symbol's dim together (the
/// product of the later dims changes, or the symbol is in more than one
/// dim). Ops whose shapes cannot be derived, and ops this analysis does not
/// know, count as mixing.
PositionMixing findPositionMixing(
    mlir::func::FuncOp func, llvm::StringRef symbol, ValueShapes &shapes,
    llvm::function_ref<bool(mlir::Operation *)> handled);

} // namespace hybridc::hg
