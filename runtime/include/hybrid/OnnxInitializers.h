// The initializers (weights) of an ONNX model file, read with a small
// protobuf wire-format decoder: no protobuf, ONNX or LLVM library needed, so
// GPU hosts without them can bind ONNX weights.
#pragma once

#include "hybrid/Types.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// One initializer (an ONNX TensorProto). `data` / `bytes` hold the elements
/// little-endian in the element type's natural size, pointing into the mapped
/// file (raw_data) or into bytes the reader decoded from the typed fields;
/// either way owned by the OnnxInitializers it came from.
struct OnnxInitializer {
  std::string name;
  int32_t dataType = 0; ///< onnx.TensorProto.DataType (1 = FLOAT, 7 = INT64)
  Shape shape;
  const uint8_t *data = nullptr; ///< may be unaligned
  size_t bytes = 0;

  int64_t numel() const { return numElements(shape); }
};

/// Name of an ONNX element type ("FLOAT", "INT64", ...), or "type N".
std::string onnxDataTypeName(int32_t dataType);

/// All top-level initializers of an ONNX model (ModelProto.graph.initializer).
///
/// Reading validates the protobuf framing and each tensor (dims, data size).
/// Tensors stored as external data (TensorProto.data_location EXTERNAL) are
/// mapped from their file, whose location must stay inside the model's
/// folder, with offset and length checked against it (see
/// hybrid/OnnxExternalData.h); parse() has no folder and rejects them.
/// Ownership: move-only; the entries point into the mapped files and die
/// with this object. Thread safety: const methods may be called
/// concurrently.
class OnnxInitializers {
public:
  /// Throws hybrid::Error, one line naming the file (and tensor).
  static OnnxInitializers read(const std::string &path);
  /// The same from bytes in memory (`what` names them in errors; the bytes
  /// must outlive the result).
  static OnnxInitializers parse(const uint8_t *data, size_t size,
                                const std::string &what);
  OnnxInitializers(OnnxInitializers &&) noexcept;
  OnnxInitializers &operator=(OnnxInitializers &&) noexcept;
  ~OnnxInitializers();

  const std::string &path() const;
  /// The external data files the entries point into (paths as opened).
  const std::vector<std::string> &dataFiles() const;
  const std::vector<OnnxInitializer> &entries() const;
  /// nullptr when absent.
  const OnnxInitializer *find(const std::string &name) const;

  /// Converts `e` into `dst` (numel elements of `dtype`) as the table in
  /// hybrid/OnnxElementTypes.h says: F32 from FLOAT, FLOAT16, BFLOAT16,
  /// DOUBLE; I64 from the integer types (UINT64 values must fit); Bool from
  /// BOOL. Any other pairing is a hybrid::Error naming the tensor.
  void convertInto(const OnnxInitializer &e, DType dtype, void *dst) const;
  std::vector<float> toF32(const OnnxInitializer &e) const;

private:
  struct Impl;
  /// `folder` holds the model (and its external data); null for bytes in
  /// memory.
  static OnnxInitializers parseModel(const uint8_t *data, size_t size,
                                     const std::string &what,
                                     const std::string *folder);
  explicit OnnxInitializers(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace hybrid
