// What one attention call computes, as its CUDA kernels read it
// (Attention.cu describes a call; AttentionMma.cu and Attention.cu's
// kernels run it): operands, shapes, limits, masks and the per-score math
// that every path shares, so the paths agree with the CPU kernel and with
// each other.
#pragma once

#include "Device.cuh"

#include <cstdint>

namespace hybrid::cuda::kernels {

/// The fewest keys a decode split gets (AttnParams::minSplitKeys).
constexpr int64_t kMinSplitKeys = 64;

struct AttnParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  const void *mask = nullptr, *slopes = nullptr;
  const int64_t *keyLength = nullptr; ///< i64 [1] in device memory, or null
  const void *keyMask = nullptr;      ///< [B, S], i32 or i64, or null
  bool keyMask64 = false;
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
  int64_t B = 0, Hq = 0, Hkv = 0, T = 0, S = 0, Dh = 0, Dv = 0, group = 1;
  int64_t maskStrides[4] = {0, 0, 0, 0}; ///< over [B, Hq, T, S]
  float scale = 1;
  bool causal = false;
  int64_t window = 0;
  int splits = 1; ///< decode: the most blocks a row's keys split over
  /// decode: the fewest keys a split gets (splitsFor).
  int minSplitKeys = kMinSplitKeys;
  /// grouped decode: query rows per block (1, 2, 4 or kGroupRows).
  int tileRows = 1;
  /// decode: K and V rows are whole 16-byte words at 16-byte addresses
  /// (staged with 16-byte copies, else element by element).
  bool stageWords = false;

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

  /// Visible keys [begin, end) of query row i among `keys` (as the CPU
  /// kernel: the limits align to the end of the keys that exist).
  __device__ void keyRange(int64_t i, int64_t keys, int64_t &begin,
                           int64_t &end) const {
    const int64_t last = i + keys - T; // the key aligned with query i
    begin = 0;
    end = keys;
    if (causal)
      end = last + 1 < 0 ? 0 : last + 1 > keys ? keys : last + 1;
    if (window > 0 && last + 1 > window)
      begin = last - window + 1 < keys ? last - window + 1 : keys;
  }

  /// Whether key j (< S) of batch row b is a token, not padding.
  __device__ bool keyVisible(int64_t b, int64_t j) const {
    if (!keyMask)
      return true;
    const int64_t e = b * S + j;
    return keyMask64 ? static_cast<const int64_t *>(keyMask)[e] != 0
                     : static_cast<const int32_t *>(keyMask)[e] != 0;
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
      s += toFloat(static_cast<const S *>(
          mask)[b * maskStrides[0] + h * maskStrides[1] + i * maskStrides[2] +
                j * maskStrides[3]]);
    if (slopes)
      s += toFloat(static_cast<const S *>(slopes)[h]) *
           static_cast<float>(j - i);
    return s;
  }
};

/// Runs a prompt attention (p.T rows, no append) on tensor cores when it
/// can: bf16 or f16 (S), Dh == Dv of 64 or 128, rows at 16-byte addresses,
/// compute capability 8.0 or later. Returns false, having launched
/// nothing, otherwise. AttentionMma.cu.
bool launchPromptMma(const AttnParams &p, DType dtype, Context *context,
                     cudaStream_t stream);

} // namespace hybrid::cuda::kernels
