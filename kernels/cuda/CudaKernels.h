// The CUDA kernel library: a kernel (or a cuBLASLt / cuDNN call) for every
// typed op of hybrid/Ops.h, used by the CUDA backend. Depends on hybrid_base
// and the CUDA toolkit only (no MLIR, no runtime). The CPU kernels
// (kernels/cpu) are the oracle every kernel here is tested against.
//
// Dtypes: as the CPU kernels — floating ops on f32, bf16 and f16 (bf16/f16
// computed with f32 accumulation), integer ops on i32 and i64, data movement
// on every dtype.
//
// Memory and streams: a kernel allocates nothing and never synchronises the
// host; it enqueues work on `stream` and returns. Temporary device memory
// (cuBLASLt workspace, split-K partials, softmax statistics) comes from
// CudaCall::scratch, sized by the kernel's scratch function for the same
// shapes before the first launch. Every call can be captured in a CUDA
// graph: no host-device copies, no cudaMalloc, no synchronisation.
#pragma once

#include "common/Ema.h"
#include "common/KernelArgs.h"
#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <variant>
#include <vector>

// Keep CUDA headers out of this interface: streams and library handles
// travel as opaque pointers, so the runtime's C++ code compiles without
// nvcc and without cuda_runtime.h.
struct CUstream_st;

namespace hybrid::cuda {

using Stream = CUstream_st *; ///< a cudaStream_t

// The kernel interface every backend shares (kernels/common): tensor views
// (here over device memory), the call, its checks and each op's named
// operands (KernelArgs.h).
using namespace ::hybrid::kernels;

/// Per-device library state kernels share (cuBLASLt handle, device
/// properties). Created once by the backend for its device; kernels must
/// not create their own. Not thread-safe: one host thread per stream.
struct Context;

/// Creates / destroys the context of the current CUDA device. Throws
/// hybrid::Error naming the failing call.
Context *createContext();
void destroyContext(Context *context);

/// One kernel invocation on a CUDA device: the shared call (operands
/// positional as in Ops.h, results with the shapes the compiler planned,
/// the op's typed attributes, device scratch 256-byte aligned) plus the
/// stream to enqueue on and the device's library state.
struct CudaCall : ::hybrid::kernels::Call {
  Stream stream = nullptr;
  Context *context = nullptr;
  /// Operands (bit i: operand i) whose bytes were final before the kernel
  /// before this one on the stream began: parameters of an executable that
  /// does not write them, constants, and never on the first kernel of an
  /// executable's stream. A kernel may read these before awaitInputs()
  /// (Device.cuh), e.g. start streaming a weight while the kernel before
  /// it drains; every other operand only after.
  uint32_t settledOperands = 0;

  bool settled(size_t operand) const {
    return operand < 32 && (settledOperands >> operand & 1u);
  }
};

/// Enqueues the kernel. Throws hybrid::Error for inputs it cannot handle
/// (unsupported dtype, inconsistent shapes, too little scratch) and for a
/// failed launch or library call (naming it); never aborts.
using KernelFn = void (*)(const CudaCall &);
/// Device scratch bytes the kernel needs for the call's shapes and dtypes
/// (data pointers may be null). Never throws.
using ScratchFn = size_t (*)(const CudaCall &);

struct KernelEntry {
  KernelFn run = nullptr;
  ScratchFn scratch = nullptr; ///< null: the kernel needs none
};

/// The kernel for `op`; run is null when there is none (events are the
/// backend's business; collectives go through NCCL in the backend).
KernelEntry findKernel(const Op &op);

inline size_t scratchBytes(const KernelEntry &entry, const CudaCall &call) {
  return entry.scratch ? entry.scratch(call) : 0;
}

/// The weights' moving average, ema = lerp(param, ema, beta) per element
/// over every span (common/Ema.h; the CPU's bits), in place, enqueued on
/// `stream` (graph-capturable); not an op of any graph (the engine's
/// updateEma runs it). Throws hybrid::Error as checkEmaSpans, or naming a
/// failed launch.
void emaUpdate(const std::vector<::hybrid::kernels::EmaSpan> &spans, float beta,
               Stream stream);

/// Whether this process sees a CUDA device (false on CI machines: GPU tests
/// then skip, saying so).
bool deviceAvailable();

} // namespace hybrid::cuda
