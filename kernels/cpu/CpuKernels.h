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

#include "common/Ema.h"
#include "common/KernelArgs.h"
#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <variant>
#include <vector>

namespace hybrid::cpu {

// The kernel interface every backend shares (kernels/common): tensor views,
// the call, its checks and each op's named operands (KernelArgs.h).
using namespace ::hybrid::kernels;
/// One kernel invocation on the CPU: the shared call as it is.
using KernelCall = ::hybrid::kernels::Call;

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

/// The weights' moving average, ema = lerp(param, ema, beta) per element
/// over every span (common/Ema.h), in place; not an op of any graph (the
/// engine's updateEma runs it). Throws hybrid::Error as checkEmaSpans.
void emaUpdate(const std::vector<::hybrid::kernels::EmaSpan> &spans,
               float beta);

/// Sets the number of worker threads kernels may use (0 = hardware threads).
void setNumThreads(int n);
int numThreads();

} // namespace hybrid::cpu
