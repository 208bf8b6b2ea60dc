// A product of a few rows against a large [N, K] weight (a decode step's
// linear layers at batch 1-8) that keeps enough of every multiprocessor's
// weight loads in flight for HBM's latency: resident blocks walk their
// rows with two steps of 16-byte loads per thread always outstanding, the
// products in f32 FMAs (at these batches the loads, not the arithmetic,
// bound it). The skinny kernel (SkinnyGemm.h) loads one batch per block
// into registers and waits for it; timed beside it and cuBLASLt (Gemm.cu)
// on a plan's first call, this one runs where it is fastest.
#pragma once

#include "Gemm.h"

#include <cuda_runtime.h>

#include <vector>

namespace hybrid::cuda {

/// Whether streamGemv runs `p`: bf16 or f16, one batch, A not transposed, B a
/// [N, K] weight (transB), 1 <= M <= 8, K, lda and ldb multiples of 8 and
/// A, B 16-byte aligned (whole 16-byte copies); a norm prologue (layer_norm
/// or rms_norm without bias) when M * K <= 8192 and its weight and bias are
/// 16-byte aligned: each block normalises x's rows into shared memory once,
/// while its first weight loads are in flight.
bool streamGemvSupports(const GemmProblem &p);

/// Enqueues C = A B^T (+ bias, the activation, + residual; one rounding
/// per element: GemmProblem's semantics) on `stream` with blocks sized for
/// `smCount` multiprocessors. With p.settledB each thread's first two
/// steps of weight loads are issued before the wait for the previous
/// kernel. Needs no scratch, allocates nothing, never synchronises; the
/// same result bit for bit whatever the block count (each output's sum
/// runs over K in one fixed order). Throws naming `kernel` for a problem it
/// does not support. With one x row, `stash` (0-2) more steps per thread
/// are copied into shared memory beside the first two (before the wait
/// too, when settled), so more of a weight is in flight while the kernel
/// before drains; the result is the same. -1: the count
/// HYBRID_CUDA_GEMV_STASH (with a norm prologue,
/// HYBRID_CUDA_GEMV_STASH_NORM) names, else 0.
void streamGemv(const GemmProblem &p, int smCount, cudaStream_t stream,
                const char *kernel, int stash = -1);

/// The most steps a block stashes (streamGemv's `stash`).
constexpr int kStreamGemvMaxStash = 2;

/// The steps streamGemv(p, ..., stash) stashes: 0 with more than one x
/// row, else `stash` (0 to kStreamGemvMaxStash) or, for -1, the count
/// HYBRID_CUDA_GEMV_STASH (with a norm prologue, _NORM) names, else 0.
int streamGemvStashed(const GemmProblem &p, int stash);

/// The `stash` values a caller that times its candidates (GEMM tuning)
/// tries for `p`: 0 to 2 where p has one x row and HYBRID_CUDA_GEMV_STASH
/// (with a norm prologue, HYBRID_CUDA_GEMV_STASH_NORM) names no count
/// (unset or "tune"), else only -1: the count it names, 0 for more rows.
/// (-1 for an untimed product where the count is tuned: none.)
std::vector<int> streamGemvStashCandidates(const GemmProblem &p);

/// Whether streamGemvGroup runs `problems` (count of them): each one
/// streamGemv runs, all sharing A (and lda), M, K, the dtype, the
/// activation and the norm prologue.
bool streamGemvGroupSupports(const GemmProblem *problems, size_t count);

/// streamGemv of every problem, one launch per four of them (a linear
/// group's q, k and v): the members' items (rows) one after another, each
/// block's items from whichever members they fall in; each result equals
/// streamGemv's of its problem alone, bit for bit. Weights are read before
/// the wait only when every member's is settled.
void streamGemvGroup(const GemmProblem *problems, size_t count, int smCount,
                     cudaStream_t stream, const char *kernel, int stash = -1);

} // namespace hybrid::cuda
