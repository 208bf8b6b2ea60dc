// Element types, shapes and the error type shared by the runtime, the kernels
// and the compiler (header-only; no dependency beyond the C++ library).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid {

/// Element type of a tensor. The numeric values are part of the bundle format
/// (runtime/schema/bundle.fbs) and must not change.
enum class DType : uint8_t { F32 = 0, I64 = 1, Bool = 2 };

inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  }
  return 0;
}

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  }
  return "?";
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
