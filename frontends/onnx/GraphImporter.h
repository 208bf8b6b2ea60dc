// The state of one ONNX graph import: the ONNX value table, the symbolic
// sizes, and the builder the conversions emit hg ops with. Conversions
// (ConversionTable.h) read their inputs and define their outputs here.
#pragma once

#include "frontends/onnx/GenericNode.h"
#include "frontends/onnx/TensorValue.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace hybridc::onnx {

/// Decoded elements of an ONNX TensorProto (see decodeTensor).
struct DecodedTensor {
  ElemKind kind = ElemKind::Float;
  std::vector<int64_t> dims;
  std::vector<int64_t> ints;  ///< Int and Bool kinds
  std::vector<double> floats; ///< Float kind
};

/// The hg element kind an ONNX TensorProto data type imports as, or
/// std::nullopt when hg cannot represent it.
std::optional<ElemKind> elemKindOfOnnxType(int32_t dataType);
/// "float", "int64", ... for messages.
std::string onnxTypeName(int32_t dataType);
/// Reads a tensor's elements (inline or raw data). `what` names it in
/// errors: external data, unsupported element types, size mismatches.
llvm::Expected<DecodedTensor> decodeTensor(const ::onnx::TensorProto &tensor,
                                           const llvm::Twine &what);

/// Known tensors above this many elements are emitted as hg.constant right
/// away instead of being folded element by element.
constexpr int64_t kMaxFoldedElements = 1 << 14;

class GraphImporter {
public:
  GraphImporter(mlir::OpBuilder &builder, mlir::Location fileLoc,
                std::vector<std::string> &symbols,
                const llvm::StringMap<unsigned> &useCounts);

  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }
  /// The location of the node being converted (NameLoc of its name).
  mlir::Location loc() const { return loc_; }
  void setCurrentNode(mlir::Location loc) { loc_ = loc; }

  //===--------------------------------------------------------------------===//
  // ONNX values
  //===--------------------------------------------------------------------===//

  bool isDefined(llvm::StringRef name) const { return values_.count(name); }
  void define(llvm::StringRef name, TensorValue value);
  /// The value named by input `i`; an error when absent or undefined.
  llvm::Expected<const TensorValue *> input(const GenericNode &node, size_t i);
  /// Null for an omitted optional input.
  llvm::Expected<const TensorValue *> optionalInput(const GenericNode &node,
                                                    size_t i);
  void setOutput(const GenericNode &node, size_t i, TensorValue value);
  /// Whether any node or graph output reads the value.
  bool isUsed(llvm::StringRef name) const;
  const TensorValue *lookup(llvm::StringRef name) const;

  /// The elements of input `i` as integers (symbolic allowed); an error
  /// naming the node when the input is computed at run time (a
  /// data-dependent shape) or is not an integer tensor.
  llvm::Expected<std::vector<hybrid::SymExpr>>
  knownInts(const GenericNode &node, size_t i, llvm::StringRef what);
  /// A known integer scalar input (one element) that must be constant.
  llvm::Expected<int64_t> knownConstantInt(const GenericNode &node, size_t i,
                                           llvm::StringRef what);
  /// A known numeric scalar input (one element, constant).
  llvm::Expected<double> knownScalar(const GenericNode &node, size_t i,
                                     llvm::StringRef what);

  //===--------------------------------------------------------------------===//
  // Symbolic sizes
  //===--------------------------------------------------------------------===//

  const std::vector<std::string> &symbols() const { return symbols_; }
  std::string str(const hybrid::SymExpr &e) const { return e.str(symbols_); }
  std::string str(const hybrid::SymShape &s) const;
  /// An I64 attribute for a constant size, else the polynomial's text.
  mlir::Attribute dimAttr(const hybrid::SymExpr &e);
  mlir::ArrayAttr shapeAttr(const hybrid::SymShape &shape);
  /// An error naming `node` when a constant size in `shape` (a target shape
  /// read from the model) is negative or the product of the constant sizes
  /// exceeds 63 bits.
  llvm::Error checkShape(const GenericNode &node,
                         const hybrid::SymShape &shape);
  /// NumPy broadcast; an error when two dims cannot be shown compatible.
  llvm::Expected<hybrid::SymShape> broadcast(const GenericNode &node,
                                             const hybrid::SymShape &a,
                                             const hybrid::SymShape &b);

  //===--------------------------------------------------------------------===//
  // Emitting hg
  //===--------------------------------------------------------------------===//

  mlir::Type elementType(ElemKind kind);
  mlir::RankedTensorType tensorType(const hybrid::SymShape &shape,
                                    ElemKind kind);
  static ElemKind kindOf(mlir::Type elementType);

  /// Creates `OpTy` at the current node's location; returns its result.
  template <typename OpTy, typename... Args> mlir::Value emit(Args &&...args) {
    return builder_.create<OpTy>(loc_, std::forward<Args>(args)...).getResult();
  }
  /// Wraps an emitted value with the symbolic shape the importer computed.
  TensorValue live(mlir::Value value, hybrid::SymShape shape);

  /// The value as an SSA tensor: known values become hg.constant (symbolic
  /// integers are computed from the sizes of the dims they stand for).
  mlir::Value materialize(const TensorValue &value);
  /// hg.constant of decoded elements.
  mlir::Value constant(const DecodedTensor &tensor);
  /// A 0-D f32 / i64 constant.
  mlir::Value scalarConstant(double value, ElemKind kind);

  /// Element kind conversion (folds known values, emits hg.cast for live).
  TensorValue convert(const TensorValue &value, ElemKind kind);
  /// hg.reshape unless the shape is unchanged; folds known values.
  TensorValue reshape(const TensorValue &value, const hybrid::SymShape &shape);
  /// hg.broadcast_to unless the shape is unchanged.
  TensorValue broadcastTo(const TensorValue &value,
                          const hybrid::SymShape &shape);

private:
  mlir::Value symbolicScalar(const hybrid::SymExpr &e);
  mlir::Value symbolSize(unsigned symbol);

  mlir::OpBuilder &builder_;
  mlir::Location loc_;
  std::vector<std::string> &symbols_;
  const llvm::StringMap<unsigned> &useCounts_;
  llvm::StringMap<TensorValue> values_;
  llvm::DenseMap<unsigned, mlir::Value> symbolSizes_;
};

} // namespace hybridc::onnx
