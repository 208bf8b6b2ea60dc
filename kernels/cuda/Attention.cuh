// What one attention call computes, as its CUDA kernels read it
// (Attention.cu describes a call; AttentionMma.cu and Attention.cu's
// kernels run it): operands, shapes, limits, masks and the per-score math
// that every path shares, so the paths agree with the CPU kernel and with
// each other.
#pragma once

#include "Device.cuh"

#include "common/Attention.h"

#include <cstdint>

namespace hybrid::cuda::kernels {

/// The fewest keys a decode split gets (AttnParams::minSplitKeys).
constexpr int64_t kMinSplitKeys = 64;

/// One call as the CUDA kernels run it: the shared problem (shapes, limits,
/// masks; kernels/common/Attention.h) plus the launch's own state.
struct AttnParams : AttentionProblem {
  /// An appending grouped decode: the new keys and values [B, Hkv, Tn, D],
  /// where they go (i64 [1]) and the caches to write (the memory of k, v);
  /// null kNew otherwise.
  const void *kNew = nullptr, *vNew = nullptr;
  const int64_t *appendAt = nullptr;
  void *kCache = nullptr, *vCache = nullptr;
  int64_t Tn = 0;
  void *out = nullptr;
  float *partial = nullptr; ///< split-K partials: [rows][splits][Dv + 2]
  /// decode with splits: one zeroed counter per row, with which the row's
  /// last block combines the partials (left zeroed), or null for the
  /// combine kernel.
  unsigned *counters = nullptr;
  int splits = 1; ///< decode: the most blocks a row's keys split over
  /// decode: the fewest keys a split gets (splitsFor).
  int minSplitKeys = kMinSplitKeys;
  /// grouped decode: query rows per block (1, 2, 4 or kGroupRows).
  int tileRows = 1;
  /// decode: K and V rows are whole 16-byte words at 16-byte addresses
  /// (staged with 16-byte copies, else element by element).
  bool stageWords = false;
  /// Set for the statistics attention's backward needs (AttentionGradMma.cu),
  /// which the tensor-core prompt kernel then writes instead of `out`:
  /// per query row (b, h, i) at (b Hq + h) T + i, rowLse = the log2 of the
  /// row's softmax denominator in the base-2 score units (score x log2 e)
  /// and rowDsum = rowsum(gradOut o out), f32; -inf and 0 for a row that
  /// sees no key.
  const void *gradOut = nullptr;
  float *rowLse = nullptr, *rowDsum = nullptr;

  /// The keys that exist, [0, keys): key_length's value, read when the
  /// kernel runs, else S; S stays the buffers' stride. -1 for a key_length
  /// outside [0, S], which the device cannot report without a host sync:
  /// the rows then become NaN (the CPU kernel raises an error), so the
  /// mistake shows instead of passing for attention over a clamped cache.
  __device__ int64_t keyCount() const {
    if (!keyLength)
      return S;
    const int64_t n = *keyLength;
    return n >= 0 && n <= S ? n : -1;
  }

  /// The blocks a decode row (or a grouped block's rows) with `len`
  /// visible keys uses: at least about minSplitKeys keys each, at most
  /// `splits`. The decode kernel and the combine compute it from the same
  /// key count.
  __device__ int splitsFor(int64_t len) const {
    const int64_t wanted = (len + minSplitKeys - 1) / minSplitKeys;
    return wanted < 1 ? 1 : wanted > splits ? splits : static_cast<int>(wanted);
  }

  /// Score of query row i of head (b, h) against key j from its raw dot
  /// product: scaled, then the mask and ALiBi bias added (CPU order).
  template <typename S>
  __device__ float score(float dot, int64_t b, int64_t h, int64_t i,
                         int64_t j) const {
    float s = dot * scale;
    if (mask)
      s += toFloat(static_cast<const S *>(mask)[maskAt(b, h, i, j)]);
    if (slopes)
      s += alibiBias(toFloat(static_cast<const S *>(slopes)[h]), i, j);
    return s;
  }
};

// The decode kernels' shared pieces: which rows a grouped block takes,
// the keys they see, and how split partials combine.

/// Combines the `used` splits of `row`: rescales every partial to the
/// row's maximum and normalises once.
template <typename S>
__device__ inline void combineParts(const AttnParams &p, int64_t row,
                                    int used) {
  S *O = static_cast<S *>(p.out) + row * p.Dv;
  const float *part = p.partial + row * p.splits * (p.Dv + 2);
  const int64_t width = p.Dv + 2;
  float mRow = -INFINITY;
  for (int s = 0; s < used; ++s)
    mRow = maxOf(mRow, __ldcg(part + s * width));
  float lRow = 0;
  for (int s = 0; s < used; ++s) {
    const float ms = __ldcg(part + s * width);
    lRow += __ldcg(part + s * width + 1) * softmaxCarry(ms, mRow);
  }
  const float inv = mRow == -INFINITY ? 0.0f : 1.0f / lRow;
  for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x) {
    float v = 0;
    for (int s = 0; s < used; ++s) {
      v += __ldcg(part + s * width + 2 + d) *
           softmaxCarry(__ldcg(part + s * width), mRow);
    }
    O[d] = fromFloat<S>(v * inv);
  }
}

/// The keys [begin, end) that any of the rows r0 .. r0 + nRows - 1 of a
/// group (row r: query row r % T) sees among `keys`; empty as [0, 0).
__device__ inline void groupKeyRange(const AttnParams &p, int64_t r0, int nRows,
                                     int64_t keys, int64_t &begin,
                                     int64_t &end) {
  begin = keys;
  end = 0;
  for (int r = 0; r < nRows; ++r) {
    int64_t b, e;
    p.keyRange((r0 + r) % p.T, keys, b, e);
    if (e > b) {
      begin = b < begin ? b : begin;
      end = e > end ? e : end;
    }
  }
  if (end <= begin)
    begin = end = 0;
}

/// The block's rows: tile blockIdx.x % tiles of the G * T rows of (b, hk)
/// = blockIdx.x / tiles, which are the consecutive rows
/// (b * Hq + hk * G) * T + r of q and the output.
struct GroupTile {
  int64_t bk = 0, r0 = 0, row0 = 0;
  int rows = 0;
};

__device__ inline GroupTile groupTile(const AttnParams &p) {
  const int64_t groupRows = p.group * p.T;
  const int64_t tiles = (groupRows + p.tileRows - 1) / p.tileRows;
  GroupTile t;
  t.bk = blockIdx.x / tiles;
  t.r0 = (blockIdx.x % tiles) * p.tileRows;
  t.rows = static_cast<int>(groupRows - t.r0 < p.tileRows ? groupRows - t.r0
                                                          : p.tileRows);
  t.row0 = t.bk * groupRows + t.r0;
  return t;
}

/// Runs a prompt attention (p.T rows, no append) on tensor cores when it
/// can: bf16 or f16 (S), Dh == Dv of 64 or 128, rows at 16-byte addresses,
/// compute capability 8.0 or later. Returns false, having launched
/// nothing, otherwise. With p.rowLse set it writes the backward's row
/// statistics instead of the output. AttentionMma.cu.
bool launchPromptMma(const AttnParams &p, DType dtype, Context *context,
                     cudaStream_t stream);

/// Whether a grouped decode step (p.T <= 8 rows, the grouped kernel's
/// alignment) can run on tensor cores: bf16 or f16, Dh == Dv of 64 or 128,
/// at most 16 query rows per KV head (group x T), q and out at 16-byte
/// addresses, compute capability 8.0 or later, its shared memory allowed.
bool decodeMmaApplies(const AttnParams &p, DType dtype, Context *context);

/// Launches the tensor-core decode kernel for a call decodeMmaApplies
/// accepted, with p.tileRows = 16 (one tile per batch row and KV head) and
/// p.splits, p.counters, p.partial and the append fields set as for the
/// grouped kernel; without counters the caller combines split rows.
/// AttentionDecodeMma.cu.
void launchDecodeMma(const AttnParams &p, DType dtype, Context *context,
                     cudaStream_t stream);

/// Attention's backward on tensor cores (AttentionGradMma.cu): planned from
/// shapes alone (bf16 / f16, heads of 64), run with a context of compute
/// capability 8.0 or later on operands and results at 16-byte addresses
/// (else it fails, naming the call), in attentionGradMmaScratch bytes of
/// scratch: the rows' statistics. in = q, k, v, grad_out; out = dq, dk, dv.
bool attentionGradMmaPlanned(const AttentionProblem &p);
size_t attentionGradMmaScratch(const AttentionProblem &p);
void attentionGradMma(const AttentionProblem &p, const void *const (&in)[4],
                      void *const (&out)[3], void *scratch, Context *context,
                      cudaStream_t stream);

} // namespace hybrid::cuda::kernels
