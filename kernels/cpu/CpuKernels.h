// The CPU kernel library: reference-quality kernels for every typed op
// (hybrid/Ops.h), used by the CPU backend, the numerical oracle of every
// other backend. Depends on hybrid_base only (no MLIR, no runtime).
//
// Dtypes: floating ops take f32, bf16 and f16 tensors (bf16/f16 are stored as
// such and computed in f32, rounding once per result element); integer ops
// take i32 and i64; data movement takes every dtype.
//
// Memory: a kernel allocates nothing while it runs. Temporary memory comes
// from KernelCall::scratch, sized by the kernel's scratch function for the
// same shapes and thread count before the first run; the caller owns it.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <variant>
#include <vector>

namespace hybrid::cpu {

/// A dense row-major tensor that a kernel writes (a result).
struct Tensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numel() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A dense row-major tensor that a kernel only reads (an operand). An absent
/// optional operand has present == false (and no data or shape).
struct ConstTensor {
  const void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  bool present = true;

  ConstTensor() = default;
  ConstTensor(const void *d, DType t, Shape s)
      : data(d), dtype(t), shape(std::move(s)) {}
  ConstTensor(const Tensor &t) // NOLINT: a result may be read back.
      : data(t.data), dtype(t.dtype), shape(t.shape) {}
  static ConstTensor absent() {
    ConstTensor t;
    t.present = false;
    return t;
  }

  int64_t numel() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> const T *as() const {
    return static_cast<const T *>(data);
  }
};

/// One kernel invocation. Operands are positional as in Ops.h (absent
/// optional ones included); results are allocated by the caller with the
/// shapes the compiler planned; `op` holds the typed attributes.
struct KernelCall {
  const Op *op = nullptr;
  std::vector<ConstTensor> operands;
  std::vector<Tensor> results;
  /// At least scratchBytes(call) bytes, 64-byte aligned; null when zero.
  void *scratch = nullptr;
  size_t scratchBytes = 0;

  /// The op's attributes as family T (the table only routes matching ops).
  template <typename T> const T &attrs() const { return std::get<T>(*op); }
};

/// Runs the kernel. Throws hybrid::Error for inputs it cannot handle
/// (unsupported dtype, inconsistent shapes, too little scratch); never
/// aborts.
using KernelFn = void (*)(const KernelCall &);
/// Scratch bytes the kernel needs for the call's shapes and dtypes with
/// `threads` worker threads (data pointers may be null). Never throws.
using ScratchFn = size_t (*)(const KernelCall &, int threads);

struct KernelEntry {
  KernelFn run = nullptr;
  ScratchFn scratch = nullptr; ///< null: the kernel needs none
};

/// The kernel for `op` (by family, and kind where the family has kinds);
/// run is null when there is none (events and collectives are the
/// backend's business).
KernelEntry findKernel(const Op &op);

/// Scratch bytes of `entry` for `call` (0 when it declares none).
inline size_t scratchBytes(const KernelEntry &entry, const KernelCall &call,
                           int threads) {
  return entry.scratch ? entry.scratch(call, threads) : 0;
}

/// Sets the number of worker threads kernels may use (0 = hardware threads).
void setNumThreads(int n);
int numThreads();

} // namespace hybrid::cpu
