// The steps of flash attention on tensor cores that the prompt kernel
// (AttentionMma.cu) and the decode kernel (AttentionDecodeMma.cu) take in
// the same way for each 16-row tile of scores a warp holds (mma C
// fragments: lane g + 8 r of the rows, columns 2t, 2t + 1 of each 8-wide
// tile): the scores against a staged tile of keys, the online-softmax
// update, and the probabilities times the values. Each kernel masks and
// scales its scores itself.
#pragma once

#include "Mma.cuh"

namespace hybrid::cuda::kernels::tensorcore {

/// s = Q K^T for the warp's 16 query rows (A fragments qa, 16 of the head's
/// kHead dimensions each) against the kScoreTiles x 8 keys staged at ks
/// (rows of kStride elements).
template <typename S, int kScoreTiles, int kHead, int kStride>
__device__ __forceinline__ void scoreKeys(float (&s)[kScoreTiles][4],
                                          const unsigned (&qa)[kHead / 16][4],
                                          const S *ks, int lane) {
#pragma unroll
  for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[n][e] = 0;
#pragma unroll
  for (int kk = 0; kk < kHead / 16; ++kk)
#pragma unroll
    for (int n = 0; n < kScoreTiles; n += 2) {
      unsigned kb[4];
      loadMatrices(kb, ks + (n * 8 + (lane / 16) * 8 + lane % 8) * kStride +
                           kk * 16 + ((lane / 8) % 2) * 8);
      mma<S>(s[n], qa[kk], kb[0], kb[1]);
      mma<S>(s[n + 1], qa[kk], kb[2], kb[3]);
    }
}

/// Folds row half r (the lane's row g + 8 r) of a scored tile into the
/// running maximum m and sum l (log2 units): the scores become
/// probabilities exp2(x - max) and the output accumulators are rescaled.
/// `tileMax` is the largest of this lane's scores of the row (-inf for
/// none visible).
template <int kScoreTiles, int kOutTiles>
__device__ __forceinline__ void
softmaxStep(float (&s)[kScoreTiles][4], float (&acc)[kOutTiles][4], float &m,
            float &l, int r, float tileMax) {
  tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 1));
  tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 2));
  const float mNew = fmaxf(m, tileMax);
  // Nothing visible yet: exp2(-inf - -inf) would be NaN; the tile's
  // probabilities are all 0 and nothing is rescaled.
  const float base = mNew == -INFINITY ? 0.0f : mNew;
  const float alpha = softmaxCarry2(m, mNew);
  float sum = 0;
#pragma unroll
  for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float &x = s[n][2 * r + e];
      x = exp2f(x - base);
      sum += x;
    }
  l = l * alpha + sum;
  m = mNew;
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) {
    acc[n][2 * r] *= alpha;
    acc[n][2 * r + 1] *= alpha;
  }
}

/// acc += P V: the tile's probabilities (as A fragments, 16 keys each)
/// times the values staged at vs (kKeys rows of kStride elements).
template <typename S, int kKeys, int kOutTiles, int kStride>
__device__ __forceinline__ void
accumulateValues(const float (&s)[kKeys / 8][4], const S *vs,
                 float (&acc)[kOutTiles][4], int lane) {
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    const unsigned pa[4] = {pack<S>(s[2 * kk][0], s[2 * kk][1]),
                            pack<S>(s[2 * kk][2], s[2 * kk][3]),
                            pack<S>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                            pack<S>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int n = 0; n < kOutTiles; n += 2) {
      unsigned vb[4];
      loadMatricesTransposed(
          vb, vs + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kStride +
                  n * 8 + (lane / 16) * 8);
      mma<S>(acc[n], pa, vb[0], vb[1]);
      mma<S>(acc[n + 1], pa, vb[2], vb[3]);
    }
  }
}

} // namespace hybrid::cuda::kernels::tensorcore
