// From a DType to the C++ type a kernel computes on: one templated body
// serves every dtype it accepts. Each backend names its own 16-bit storage
// types (host structs on the CPU, the CUDA headers' __nv_bfloat16 and
// __half on the GPU) in a Storage struct {Bf16, F16}; the dispatch is
// shared.
#pragma once

#include "common/Check.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

/// Calls fn(S{}) with S the storage type of float dtype `dt`.
template <typename Storage, typename Fn>
decltype(auto) visitFloatAs(DType dt, const char *kernel, const char *what,
                            Fn &&fn) {
  switch (dt) {
  case DType::F32:
    return fn(float{});
  case DType::BF16:
    return fn(typename Storage::Bf16{});
  case DType::F16:
    return fn(typename Storage::F16{});
  default:
    failUnsupported(kernel, dt, what, "f32, bf16 or f16");
  }
}

/// Calls fn(T{}) with T the C++ type of integer dtype `dt`.
template <typename Fn>
decltype(auto) visitInteger(DType dt, const char *kernel, const char *what,
                            Fn &&fn) {
  switch (dt) {
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  default:
    failUnsupported(kernel, dt, what, "i32 or i64");
  }
}

/// Calls fn(T{}) for any float or integer dtype (not bool).
template <typename Storage, typename Fn>
decltype(auto) visitNumericAs(DType dt, const char *kernel, const char *what,
                              Fn &&fn) {
  switch (dt) {
  case DType::F32:
    return fn(float{});
  case DType::BF16:
    return fn(typename Storage::Bf16{});
  case DType::F16:
    return fn(typename Storage::F16{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  default:
    failUnsupported(kernel, dt, what, "f32, bf16, f16, i32 or i64");
  }
}

/// Calls fn(T{}) with the storage type of any dtype (bool as uint8_t).
template <typename Storage, typename Fn>
decltype(auto) visitAnyAs(DType dt, const char *kernel, const char *what,
                          Fn &&fn) {
  switch (dt) {
  case DType::F32:
    return fn(float{});
  case DType::BF16:
    return fn(typename Storage::Bf16{});
  case DType::F16:
    return fn(typename Storage::F16{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  case DType::Bool:
    return fn(uint8_t{});
  }
  failUnsupported(kernel, dt, what, "a valid dtype");
}

/// Calls fn(W{}) with W the unsigned word of `elementSize` bytes: kernels
/// that only move elements never look inside them.
template <typename Fn> decltype(auto) visitWord(size_t elementSize, Fn &&fn) {
  switch (elementSize) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

} // namespace hybrid::kernels
