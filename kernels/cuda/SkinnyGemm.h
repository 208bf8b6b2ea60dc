// Our own GEMM for products with a few rows (a decode step's linear layers:
// M <= 32 against a large weight), which streams the weights once with
// 16-byte loads; Gemm.cu times it against cuBLASLt's algorithms on a
// plan's first call and keeps it only where it is faster.
#pragma once

#include "Gemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace hybrid::cuda {

/// The most rows (M) the skinny kernel takes.
constexpr int64_t kSkinnyMaxRows = 32;

/// Whether skinnyGemm runs `p`: one batch, op(A) = A (not transposed),
/// 1 <= M <= kSkinnyMaxRows, K >= 1, N >= 1, f32, bf16 or f16. bf16/f16
/// run on tensor cores (mma.sync, sm_80 and later; f32 accumulation), f32
/// on CUDA cores (exact f32). Both weight layouts (transB or not).
bool skinnyGemmSupports(const GemmProblem &p);

/// The split counts worth timing for `p` (1 first): how many blocks share
/// each column tile's K range, for shapes whose columns alone give too few
/// blocks for `smCount` multiprocessors; only those whose partial sums fit
/// in `scratchBytes`.
std::vector<int> skinnySplitCandidates(const GemmProblem &p,
                                       size_t scratchBytes, int smCount);

/// Scratch bytes skinnyGemm needs with `splits` (f32 partial sums
/// [splits][M][N] when splits > 1, else none).
size_t skinnyGemmScratchBytes(const GemmProblem &p, int splits);

/// Tile counters skinnyGemm uses for `p` when blocks split K.
size_t skinnyCounterCount(const GemmProblem &p);

/// Enqueues C = A B (+ bias[N]), the activation, then + residual, one
/// rounding per element (GemmProblem's semantics), with the K range split
/// over `splits` blocks whose partial sums go to scratch. Given at least
/// skinnyCounterCount(p) zeroed `counters` (left zeroed), the last block
/// of each column tile sums them and applies the epilogue; otherwise a
/// second kernel does (same sums, same order: the same result). Counters
/// must not be shared with kernels running at the same time (one set per
/// stream). Allocates nothing and never synchronises. Throws naming
/// `kernel` for a problem it does not support or too little scratch.
void skinnyGemm(const GemmProblem &p, int splits, void *scratch,
                size_t scratchBytes, cudaStream_t stream, const char *kernel,
                unsigned *counters = nullptr, size_t counterCount = 0);

/// Whether skinnyGemmGroup runs `problems` (count of them): each one
/// skinnyGemm runs, all sharing A (and lda), M, K, the dtype, the weight
/// layout and the activation; with several, none has a residual or a norm
/// prologue.
bool skinnyGemmGroupSupports(const GemmProblem *problems, size_t count);

/// Scratch bytes skinnyGemmGroup needs with `splits`: every member's
/// partial sums, one after another.
size_t skinnyGemmGroupScratchBytes(const GemmProblem *problems, size_t count,
                                   int splits);

/// Tile counters skinnyGemmGroup uses when blocks split K.
size_t skinnyGroupCounterCount(const GemmProblem *problems, size_t count);

/// skinnyGemm of every problem, in one launch per four of them (a linear
/// group's q, k and v): the grid covers the members' column tiles one
/// member after another and each block runs what skinnyGemm runs for its
/// member's tile (the same split of K into `splits`, the same last-block
/// finish with `counters`, one set for the launch), so each result equals
/// skinnyGemm's of its problem alone, bit for bit. Same contract as
/// skinnyGemm otherwise.
void skinnyGemmGroup(const GemmProblem *problems, size_t count, int splits,
                     void *scratch, size_t scratchBytes, cudaStream_t stream,
                     const char *kernel, unsigned *counters = nullptr,
                     size_t counterCount = 0);

} // namespace hybrid::cuda
