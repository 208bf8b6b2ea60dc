// The ONNX tensor element types (onnx.TensorProto.DataType): one table of
// their names, sizes and how hybridc reads each, shared by the ONNX frontend
// and the runtime's initializer reader so the two agree (header-only; no
// dependency beyond the C++ library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hybrid {

/// What a value of an ONNX element type becomes: the hg element type the
/// frontend gives constants and parameters, and the DType the runtime
/// converts a weight to.
enum class OnnxValueClass : uint8_t {
  Unsupported, ///< strings, complex numbers, 8- and 4-bit floats, 4-bit ints
  Float,       ///< f32: FLOAT, and FLOAT16, BFLOAT16, DOUBLE converted
  Integer,     ///< i64: every integer type widened; UINT64 values must fit
  Bool,        ///< bool
};

struct OnnxElementType {
  int32_t code;     ///< onnx.TensorProto.DataType
  const char *name; ///< as onnx.proto spells it: "FLOAT", "INT64", ...
  size_t bytes;     ///< per element; 0 when not fixed (STRING, 4-bit)
  OnnxValueClass valueClass;
};

/// Every DataType of onnx.proto (IR version 10), indexed by code.
inline constexpr OnnxElementType kOnnxElementTypes[] = {
    {0, "UNDEFINED", 0, OnnxValueClass::Unsupported},
    {1, "FLOAT", 4, OnnxValueClass::Float},
    {2, "UINT8", 1, OnnxValueClass::Integer},
    {3, "INT8", 1, OnnxValueClass::Integer},
    {4, "UINT16", 2, OnnxValueClass::Integer},
    {5, "INT16", 2, OnnxValueClass::Integer},
    {6, "INT32", 4, OnnxValueClass::Integer},
    {7, "INT64", 8, OnnxValueClass::Integer},
    {8, "STRING", 0, OnnxValueClass::Unsupported},
    {9, "BOOL", 1, OnnxValueClass::Bool},
    {10, "FLOAT16", 2, OnnxValueClass::Float},
    {11, "DOUBLE", 8, OnnxValueClass::Float},
    {12, "UINT32", 4, OnnxValueClass::Integer},
    {13, "UINT64", 8, OnnxValueClass::Integer},
    {14, "COMPLEX64", 8, OnnxValueClass::Unsupported},
    {15, "COMPLEX128", 16, OnnxValueClass::Unsupported},
    {16, "BFLOAT16", 2, OnnxValueClass::Float},
    {17, "FLOAT8E4M3FN", 1, OnnxValueClass::Unsupported},
    {18, "FLOAT8E4M3FNUZ", 1, OnnxValueClass::Unsupported},
    {19, "FLOAT8E5M2", 1, OnnxValueClass::Unsupported},
    {20, "FLOAT8E5M2FNUZ", 1, OnnxValueClass::Unsupported},
    {21, "UINT4", 0, OnnxValueClass::Unsupported},
    {22, "INT4", 0, OnnxValueClass::Unsupported},
    {23, "FLOAT4E2M1", 0, OnnxValueClass::Unsupported},
};

/// The entry for `code`, or nullptr for a code onnx.proto does not define.
inline const OnnxElementType *findOnnxElementType(int32_t code) {
  constexpr int32_t n = static_cast<int32_t>(sizeof(kOnnxElementTypes) /
                                             sizeof(*kOnnxElementTypes));
  return code >= 0 && code < n ? &kOnnxElementTypes[code] : nullptr;
}

/// How values of `code` are read (Unsupported for unknown codes).
inline OnnxValueClass onnxValueClass(int32_t code) {
  const OnnxElementType *t = findOnnxElementType(code);
  return t ? t->valueClass : OnnxValueClass::Unsupported;
}

/// Bytes per element of `code`; 0 when not fixed or unknown.
inline size_t onnxElementSize(int32_t code) {
  const OnnxElementType *t = findOnnxElementType(code);
  return t ? t->bytes : 0;
}

/// "FLOAT", "INT64", ... or "type N" for an unknown code.
inline std::string onnxElementTypeName(int32_t code) {
  const OnnxElementType *t = findOnnxElementType(code);
  return t ? t->name : "type " + std::to_string(code);
}

} // namespace hybrid
