// A function's arguments and results by their `hg.name`: how the passes
// that build executables from @forward find its input_ids, logits, values.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace hybridc::hg {

/// The index of `f`'s result named `name`.
inline std::optional<unsigned> namedResult(mlir::func::FuncOp f,
                                           llvm::StringRef name) {
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto n = f.getResultAttrOfType<mlir::StringAttr>(i, "hg.name");
        n && n.getValue() == name)
      return i;
  return std::nullopt;
}

/// The index of `f`'s argument named `name`.
inline std::optional<unsigned> namedArgument(mlir::func::FuncOp f,
                                             llvm::StringRef name) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto n = f.getArgAttrOfType<mlir::StringAttr>(i, "hg.name");
        n && n.getValue() == name)
      return i;
  return std::nullopt;
}

} // namespace hybridc::hg
