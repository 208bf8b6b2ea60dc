// Element types, shapes and the error type shared by the runtime, the kernels
// and the compiler (hybrid_base; no dependency beyond the C++ library).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid {

/// Element type of a tensor. The numeric values are part of the bundle format
/// (runtime/bundle/schema/bundle.fbs) and must not change.
enum class DType : uint8_t {
  F32 = 0,
  I64 = 1,
  Bool = 2,
  BF16 = 3,
  F16 = 4,
  I32 = 5,
};

/// Number of dtypes (for tables indexed by dtype).
constexpr int kNumDTypes = 6;

/// True for a DType value a bundle or a caller may hold (bundles and
/// checkpoints are untrusted).
inline bool isValidDType(uint8_t v) { return v < kNumDTypes; }

inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I32:
    return 4;
  }
  return 0;
}

inline bool isFloatDType(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}
inline bool isIntegerDType(DType t) {
  return t == DType::I64 || t == DType::I32;
}

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I32:
    return "i32";
  }
  return "?";
}

/// The DType named `name` ("f32", "bf16", ... as dtypeName prints), if any.
inline bool parseDType(const std::string &name, DType &out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtypeName(static_cast<DType>(i))) {
      out = static_cast<DType>(i);
      return true;
    }
  return false;
}

using Shape = std::vector<int64_t>;

inline int64_t numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

inline std::string shapeToString(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// Errors a user can cause (bad file, bad input, unsupported model). Tools
/// print `what()` as one line and exit non-zero; nothing else catches them.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

} // namespace hybrid
