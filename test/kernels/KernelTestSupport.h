// Test support for the CPU kernels: owning host tensors, random inputs,
// N-d index arithmetic for the slow reference implementations, and a
// one-call way to run the kernel of a typed op (with exactly the scratch it
// declares).
#pragma once

#include "cpu/CpuKernels.h"

#include "hybrid/Float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace hybrid::cpu::test {

/// A tensor that owns its bytes.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType dt, Shape s)
      : dtype(dt), shape(std::move(s)),
        bytes(numElements(shape) * dtypeSize(dt) + 1, 0) {}

  int64_t numel() const { return numElements(shape); }
  float *f() { return reinterpret_cast<float *>(bytes.data()); }
  const float *f() const {
    return reinterpret_cast<const float *>(bytes.data());
  }
  int64_t *i() { return reinterpret_cast<int64_t *>(bytes.data()); }
  const int64_t *i() const {
    return reinterpret_cast<const int64_t *>(bytes.data());
  }
  int32_t *i32() { return reinterpret_cast<int32_t *>(bytes.data()); }
  const int32_t *i32() const {
    return reinterpret_cast<const int32_t *>(bytes.data());
  }
  uint16_t *h() { return reinterpret_cast<uint16_t *>(bytes.data()); }
  const uint16_t *h() const {
    return reinterpret_cast<const uint16_t *>(bytes.data());
  }
  uint8_t *b() { return bytes.data(); }
  const uint8_t *b() const { return bytes.data(); }

  /// Element k as a double, whatever the dtype (bf16/f16 exactly).
  double at(int64_t k) const {
    switch (dtype) {
    case DType::F32:
      return f()[k];
    case DType::BF16:
      return bf16ToFloat(h()[k]);
    case DType::F16:
      return f16ToFloat(h()[k]);
    case DType::I64:
      return static_cast<double>(i()[k]);
    case DType::I32:
      return i32()[k];
    case DType::Bool:
      return b()[k] ? 1 : 0;
    }
    return 0;
  }
  /// Sets element k to v, rounded to the dtype (floats to nearest even,
  /// integers truncated, bool v != 0).
  void set(int64_t k, double v) {
    switch (dtype) {
    case DType::F32:
      f()[k] = static_cast<float>(v);
      break;
    case DType::BF16:
      h()[k] = floatToBf16(static_cast<float>(v));
      break;
    case DType::F16:
      h()[k] = floatToF16(static_cast<float>(v));
      break;
    case DType::I64:
      i()[k] = static_cast<int64_t>(v);
      break;
    case DType::I32:
      i32()[k] = static_cast<int32_t>(v);
      break;
    case DType::Bool:
      b()[k] = v != 0;
      break;
    }
  }
  /// This tensor's values in another dtype (rounded as set() rounds).
  HostTensor to(DType dt) const {
    HostTensor t(dt, shape);
    for (int64_t k = 0; k < numel(); ++k)
      t.set(k, at(k));
    return t;
  }
  /// Every element as a double.
  std::vector<double> values() const {
    std::vector<double> v(numel());
    for (int64_t k = 0; k < numel(); ++k)
      v[k] = at(k);
    return v;
  }

  Tensor view() const {
    Tensor t;
    t.data = const_cast<uint8_t *>(bytes.data());
    t.dtype = dtype;
    t.shape = shape;
    return t;
  }
  ConstTensor cview() const { return ConstTensor(bytes.data(), dtype, shape); }
};

inline HostTensor f32(Shape s, std::vector<float> v) {
  HostTensor t(DType::F32, std::move(s));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  if (!v.empty())
    std::memcpy(t.f(), v.data(), v.size() * sizeof(float));
  return t;
}
inline HostTensor i64(Shape s, std::vector<int64_t> v) {
  HostTensor t(DType::I64, std::move(s));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  if (!v.empty())
    std::memcpy(t.i(), v.data(), v.size() * sizeof(int64_t));
  return t;
}
inline HostTensor boolean(Shape s, std::vector<uint8_t> v) {
  HostTensor t(DType::Bool, std::move(s));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  if (!v.empty())
    std::memcpy(t.b(), v.data(), v.size());
  return t;
}
/// A tensor of any dtype from values (rounded as HostTensor::set rounds).
inline HostTensor tensorOf(DType dt, Shape s, const std::vector<double> &v) {
  HostTensor t(dt, std::move(s));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t k = 0; k < v.size(); ++k)
    t.set(static_cast<int64_t>(k), v[k]);
  return t;
}

/// The float dtypes and every dtype, for tests that loop over them.
const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};
const DType kAllTypes[] = {DType::F32, DType::BF16, DType::F16,
                           DType::I64, DType::I32,  DType::Bool};

/// Comparison tolerances: a test's f32 ones, widened for bf16 (8 bits of
/// mantissa: ~1e-2 relative) and f16 (11 bits: ~1e-3) where the kernel
/// rounds its result once.
struct Tolerance {
  double atol, rtol;
};
inline Tolerance toleranceFor(DType dt, double atol, double rtol) {
  switch (dt) {
  case DType::BF16:
    return {std::max(atol, 1e-2), std::max(rtol, 1e-2)};
  case DType::F16:
    return {std::max(atol, 1e-3), std::max(rtol, 1e-3)};
  default:
    return {atol, rtol};
  }
}

/// Deterministic random inputs.
class Random {
public:
  explicit Random(uint32_t seed = 1234) : gen_(seed) {}
  float uniform(float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(gen_);
  }
  int64_t integer(int64_t lo, int64_t hi) { // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }
  HostTensor f32(Shape s, float lo = -2, float hi = 2) {
    return floats(DType::F32, std::move(s), lo, hi);
  }
  /// Uniform floats in [lo, hi) rounded to float dtype `dt`.
  HostTensor floats(DType dt, Shape s, float lo = -2, float hi = 2) {
    HostTensor t(dt, std::move(s));
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, uniform(lo, hi));
    return t;
  }
  HostTensor i64(Shape s, int64_t lo = -10, int64_t hi = 10) {
    return integers(DType::I64, std::move(s), lo, hi);
  }
  /// Uniform integers in [lo, hi] of integer dtype `dt`.
  HostTensor integers(DType dt, Shape s, int64_t lo = -10, int64_t hi = 10) {
    HostTensor t(dt, std::move(s));
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, static_cast<double>(integer(lo, hi)));
    return t;
  }
  HostTensor boolean(Shape s) {
    HostTensor t(DType::Bool, std::move(s));
    for (int64_t k = 0; k < t.numel(); ++k)
      t.b()[k] = static_cast<uint8_t>(integer(0, 1));
    return t;
  }
  /// Random values of any dtype (floats in [-2, 2), integers in [-10, 10]).
  HostTensor of(DType dt, Shape s) {
    if (dt == DType::Bool)
      return boolean(std::move(s));
    if (isIntegerDType(dt))
      return integers(dt, std::move(s));
    return floats(dt, std::move(s));
  }
  std::mt19937 &engine() { return gen_; }

private:
  std::mt19937 gen_;
};

/// Heap allocations (operator new) of the test binary while `counting`:
/// ScratchTest.cpp replaces operator new to count them, and runKernel counts
/// exactly the kernel's run.
struct HeapCounter {
  static inline std::atomic<bool> counting{false};
  static inline std::atomic<size_t> bytes{0}, calls{0};
};

/// What runKernel saw of the last run.
struct LastRun {
  size_t scratchBytes = 0;
  size_t heapBytes = 0, heapCalls = 0;
};
inline LastRun &lastRun() {
  static LastRun last;
  return last;
}

/// How runKernel sizes scratch: exactly what the kernel declares for
/// numThreads() threads, unless a test overrides it.
struct ScratchPolicy {
  /// Declared bytes -> bytes to give (default: the same).
  static inline size_t (*resize)(size_t declared) = nullptr;
};

/// Runs the kernel of `op` on the operands (null: an absent optional
/// operand) into the preallocated `results` (an operand's tensor may be
/// one of them: updated in place). Scratch is exactly what the kernel
/// declares, filled with NaN bytes (a kernel must not rely on its
/// contents) and followed by a guard region that must stay untouched.
inline void runKernelOnResults(const Op &op,
                               const std::vector<const HostTensor *> &operands,
                               const std::vector<HostTensor *> &results) {
  KernelEntry entry = findKernel(op);
  ASSERT_NE(entry.run, nullptr) << "no kernel for " << opName(op);
  KernelCall call;
  call.op = &op;
  for (const HostTensor *t : operands)
    call.operands.push_back(t ? t->cview() : ConstTensor::absent());
  for (HostTensor *t : results)
    call.results.push_back(t->view());
  size_t bytes = scratchBytes(entry, call, numThreads());
  if (ScratchPolicy::resize)
    bytes = ScratchPolicy::resize(bytes);
  constexpr size_t kGuard = 256;
  constexpr uint8_t kGuardByte = 0xa5;
  // 64-byte aligned, as the contract promises.
  std::vector<uint64_t> storage((bytes + kGuard + 64) / 8 + 1);
  uint8_t *base = reinterpret_cast<uint8_t *>(storage.data());
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  std::memset(base, 0xff, bytes);
  std::memset(base + bytes, kGuardByte, kGuard);
  call.scratch = bytes ? base : nullptr;
  call.scratchBytes = bytes;
  lastRun() = {bytes, 0, 0};
  {
    // Count the kernel's own heap use, and stop counting if it throws.
    struct Counting {
      Counting() {
        HeapCounter::bytes = 0;
        HeapCounter::calls = 0;
        HeapCounter::counting = true;
      }
      ~Counting() {
        HeapCounter::counting = false;
        lastRun().heapBytes = HeapCounter::bytes;
        lastRun().heapCalls = HeapCounter::calls;
      }
    } counting;
    entry.run(call);
  }
  for (size_t i = 0; i < kGuard; ++i)
    ASSERT_EQ(base[bytes + i], kGuardByte)
        << opName(op) << " wrote past its " << bytes << " bytes of scratch";
}

/// runKernelOnResults for an op with one result.
inline void runKernelOn(const Op &op,
                        const std::vector<const HostTensor *> &operands,
                        HostTensor &result) {
  runKernelOnResults(op, operands, {&result});
}

inline void runKernel(const Op &op,
                      std::initializer_list<const HostTensor *> operands,
                      HostTensor &result) {
  runKernelOn(op, std::vector<const HostTensor *>(operands), result);
}

/// Runs the kernel and returns its result of the given type and shape.
inline HostTensor run(const Op &op,
                      std::initializer_list<const HostTensor *> operands,
                      DType dtype, Shape shape) {
  HostTensor result(dtype, std::move(shape));
  runKernel(op, operands, result);
  return result;
}

/// The error message of running the kernel, or "" when it did not throw.
inline std::string errorOf(const Op &op,
                           std::initializer_list<const HostTensor *> operands,
                           HostTensor result) {
  try {
    runKernel(op, operands, result);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// N-d index arithmetic.
inline std::vector<int64_t> unravel(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t> &idx, const Shape &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + idx[d];
  return flat;
}
/// The flat index in `operand` that result index `idx` reads under NumPy
/// broadcasting (right-aligned; size-1 dimensions repeat).
inline int64_t broadcastIndex(const std::vector<int64_t> &idx,
                              const Shape &operand) {
  size_t lead = idx.size() - operand.size();
  int64_t flat = 0;
  for (size_t d = 0; d < operand.size(); ++d)
    flat = flat * operand[d] + (operand[d] == 1 ? 0 : idx[lead + d]);
  return flat;
}

/// Compares every element with `want` (NaN matches NaN).
inline void expectNear(const HostTensor &got, const std::vector<double> &want,
                       double atol = 1e-5, double rtol = 1e-5,
                       const std::string &what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (int64_t k = 0; k < got.numel() && failures < 10; ++k) {
    double g = got.at(k), w = want[k];
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(g);
    else if (std::isinf(w))
      ok = g == w;
    else
      ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ADD_FAILURE() << what << " element " << k << ": got " << g << ", want "
                    << w;
      ++failures;
    }
  }
}

/// Exact comparison (integers, booleans, data movement).
inline void expectEqual(const HostTensor &got, const HostTensor &want,
                        const std::string &what = "") {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  int failures = 0;
  for (int64_t k = 0; k < got.numel() && failures < 10; ++k) {
    size_t es = dtypeSize(got.dtype);
    if (std::memcmp(got.b() + k * es, want.b() + k * es, es) != 0) {
      ADD_FAILURE() << what << " element " << k << ": got " << got.at(k)
                    << ", want " << want.at(k);
      ++failures;
    }
  }
}

} // namespace hybrid::cpu::test
