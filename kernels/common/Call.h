// The kernel interface every backend shares: tensor views, one kernel call
// (operands, results, attributes, scratch) and the checks that bind a
// call's operands by name (KernelArgs.h, generated from ops.py). A backend
// adds what only it needs (the CUDA call's stream); kernels see hybrid_base
// and this, nothing of the runtime.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

namespace hybrid::kernels {

/// A dense row-major tensor a kernel writes (a result), in the backend's
/// memory (host for the CPU, device for CUDA).
struct Tensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numel() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A dense row-major tensor a kernel only reads (an operand). An absent
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
/// shapes the compiler planned; `op` holds the typed attributes. Kernels
/// read operands by name through their op's Args (KernelArgs.h).
struct Call {
  const Op *op = nullptr;
  std::vector<ConstTensor> operands;
  std::vector<Tensor> results;
  /// At least the kernel's scratch bytes for this call, aligned as the
  /// backend promises (64 bytes on the CPU, 256 on CUDA); null when zero.
  void *scratch = nullptr;
  size_t scratchBytes = 0;

  /// The op's attributes as family T (the table only routes matching ops).
  template <typename T> const T &attrs() const { return std::get<T>(*op); }
};

/// What binding a call checks: everything (a kernel about to run), or all
/// but the data pointers (a scratch function, which sees shapes alone).
enum class Binding { Run, ShapesOnly };

/// Checks `call` has `operands` operands (absent optional ones counted), or
/// `least` when the op lets a call leave off its last ones (an attention
/// that does not append: its appended keys), and `results` results, that
/// operand i is present where bit i of `required` is set, that shapes are
/// non-negative, dtypes valid and, for Binding::Run, that non-empty tensors
/// have data. Throws hybrid::Error("<kernel>: ...").
void checkCall(const Call &call, const char *kernel, size_t least,
               size_t operands, uint64_t required, size_t results,
               Binding binding = Binding::Run);

/// Operand `i` when present, else null.
inline const ConstTensor *optional(const Call &call, size_t i) {
  return i < call.operands.size() && call.operands[i].present
             ? &call.operands[i]
             : nullptr;
}

/// Result `i` when the call has it, else null.
inline const Tensor *optionalResult(const Call &call, size_t i) {
  return i < call.results.size() ? &call.results[i] : nullptr;
}

} // namespace hybrid::kernels
