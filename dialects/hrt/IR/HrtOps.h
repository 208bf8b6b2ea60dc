// Public header of the hrt dialect: the dialect, the buffer type, the shard
// attribute, the kind enums, the command interface and every op, plus the
// symbolic-shape helpers that passes over hrt share.
#pragma once

#include "hybrid/SymExpr.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include <string>
#include <vector>

#include "dialects/hrt/IR/HrtDialect.h.inc"
#include "dialects/hrt/IR/HrtEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hrt/IR/HrtTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hrt/IR/HrtAttrs.h.inc"

#include "dialects/hrt/IR/HrtInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/hrt/IR/HrtOps.h.inc"

namespace hybridc::hrt {

/// A buffer type of `elementType` with the symbolic `shape` (constant
/// entries become integers, single symbols and polynomials strings).
BufferType getBufferType(mlir::MLIRContext *context, mlir::Type elementType,
                         const hybrid::SymShape &shape,
                         const std::vector<std::string> &symbols);

/// The shape of `type` as polynomials over `symbols`; nullopt (and `why`)
/// when an entry names another symbol or is malformed.
std::optional<hybrid::SymShape>
getSymShape(BufferType type, const std::vector<std::string> &symbols,
            std::string *why = nullptr);

/// A size (an offset or a byte count) as an attribute: an integer when
/// constant, else the polynomial's text.
mlir::Attribute getSizeAttr(mlir::MLIRContext *context,
                            const hybrid::SymExpr &size,
                            const std::vector<std::string> &symbols);

/// The size an attribute made by getSizeAttr stands for.
std::optional<hybrid::SymExpr>
parseSizeAttr(mlir::Attribute attr, const std::vector<std::string> &symbols,
              std::string *why = nullptr);

/// The checks every command needs (its stream index); the verifier of a
/// generated command that has no verify() of its own in HrtOps.cpp.
mlir::LogicalResult verifyCommand(mlir::Operation *op, int32_t stream);

/// Bytes of one element of `elementType` (i1 is a byte), 0 if unsupported.
unsigned elementBytes(mlir::Type elementType);

/// The buffer that owns `buffer`'s bytes: follows hrt.view to its source.
mlir::Value getRootBuffer(mlir::Value buffer);

/// Whether `cmd` reads `root`'s bytes (an input whose root it is), writes
/// them (one of its results) or either, `root` being a root buffer.
bool readsRoot(CommandOp cmd, mlir::Value root);
bool writesRoot(CommandOp cmd, mlir::Value root);
inline bool touchesRoot(CommandOp cmd, mlir::Value root) {
  return readsRoot(cmd, root) || writesRoot(cmd, root);
}

} // namespace hybridc::hrt
