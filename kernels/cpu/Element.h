// Element types as the kernels see them: bf16/f16 storage wrappers that load
// to and store from f32, and dispatch from a DType to a C++ type, so one
// templated loop serves every dtype a kernel accepts.
#pragma once

#include "KernelCheck.h"
#include "common/Dispatch.h"

#include "hybrid/Float16.h"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace hybrid::cpu {

/// bfloat16 / IEEE half as stored in a tensor (computed in f32).
struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

inline float toFloat(float x) { return x; }
inline float toFloat(Bf16 x) { return bf16ToFloat(x.bits); }
inline float toFloat(F16 x) { return f16ToFloat(x.bits); }

/// f32 -> storage type S, rounding to nearest even.
template <typename S> S fromFloat(float x);
template <> inline float fromFloat<float>(float x) { return x; }
template <> inline Bf16 fromFloat<Bf16>(float x) { return {floatToBf16(x)}; }
template <> inline F16 fromFloat<F16>(float x) { return {floatToF16(x)}; }

template <typename S>
constexpr bool kIsFloatStorage =
    std::is_same_v<S, float> || std::is_same_v<S, Bf16> ||
    std::is_same_v<S, F16>;

/// What kernels compute with for storage type S (kernels/common's
/// per-element math takes these): f32 for every float, integers and bool
/// (uint8_t) as they are.
template <typename S>
using Compute = std::conditional_t<kIsFloatStorage<S>, float, S>;

/// An element as its compute value.
template <typename S> Compute<S> load(S x) {
  if constexpr (kIsFloatStorage<S>)
    return toFloat(x);
  else
    return x;
}
/// A computed value stored as R (floats round once).
template <typename R, typename V> R store(V v) {
  if constexpr (kIsFloatStorage<R>)
    return fromFloat<R>(v);
  else
    return static_cast<R>(v);
}

/// The DType of storage type S.
template <typename S> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<S, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<S, Bf16>)
    return DType::BF16;
  else if constexpr (std::is_same_v<S, F16>)
    return DType::F16;
  else if constexpr (std::is_same_v<S, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<S, int32_t>)
    return DType::I32;
  else
    return DType::Bool;
}

/// The CPU's 16-bit storage types, for kernels/common's dispatch.
struct Storage {
  using Bf16 = cpu::Bf16;
  using F16 = cpu::F16;
};

/// Calls fn(S{}) with S the storage type of float dtype `dt`.
template <typename Fn>
decltype(auto) visitFloat(DType dt, const char *kernel, const char *what,
                          Fn &&fn) {
  return visitFloatAs<Storage>(dt, kernel, what, std::forward<Fn>(fn));
}

/// Calls fn(T{}) for any float or integer dtype (not bool).
template <typename Fn>
decltype(auto) visitNumeric(DType dt, const char *kernel, const char *what,
                            Fn &&fn) {
  return visitNumericAs<Storage>(dt, kernel, what, std::forward<Fn>(fn));
}

/// An index tensor's element `i` (i32 or i64, checked by the caller).
inline int64_t indexAt(const ConstTensor &t, int64_t i) {
  return t.dtype == DType::I32 ? t.as<int32_t>()[i] : t.as<int64_t>()[i];
}

/// Unsigned words of each element size, for kernels that only move bytes.
template <size_t Size> struct WordOf;
template <> struct WordOf<1> { using type = uint8_t; };
template <> struct WordOf<2> { using type = uint16_t; };
template <> struct WordOf<4> { using type = uint32_t; };
template <> struct WordOf<8> { using type = uint64_t; };

} // namespace hybrid::cpu
