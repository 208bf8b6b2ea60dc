// attention: scaled dot-product attention with grouped KV heads, causal and
// sliding-window limits aligned to the end of the keys, an additive
// broadcast mask, ALiBi slopes, a key count read from device memory when
// the kernel runs (key_length: a KV cache's filled slots, so one captured
// decode step serves every position) and a per-row key padding mask
// (key_mask), on f32, bf16 or f16 (computed in f32), with the CPU kernel's
// semantics (a row with no visible key, or only -inf scores, gives zeros;
// keys past key_length and padding keys are never read). Two paths,
// neither with O(T x S) memory:
//  * prompts (T > kDecodeRows, head sizes <= 256): flash-style tiled
//    kernels: on tensor cores for bf16 / f16 heads of 64 or 128
//    (AttentionMma.cu), else one block per 16-32 query rows of a head,
//    key/value tiles of 32 staged in shared memory as f32, an online
//    (running-max) softmax and the output accumulated in registers;
//  * decode steps and short prompts (T <= kDecodeRows; flash-decoding), two
//    kernels:
//    - grouped (groupedDecodeKernel), where K and V rows are whole 16-byte
//      words at 16-byte addresses (stageWords), Dv <= 256 and one warp's
//      buffers fit the shared memory: one block per (batch row, KV head,
//      tile of up to 8 of the group's G * T query rows, key split), so a
//      step reads each K/V byte once for all query heads of a KV head;
//      each warp double-buffers chunks of 32 keys and values (cp.async);
//    - per row (decodeAttentionKernel) otherwise (unaligned or odd-sized
//      rows such as bf16 36/20, value heads over 256 such as 320/512, and
//      with HYBRID_CUDA_DECODE_ATTN=old or Context::oldDecodeAttention for
//      every decode step): one block per query row and key split, each
//      warp staging one chunk of 32 keys at a time.
//    Small batches split the visible keys (as many as exist when the
//    kernel runs) over many blocks whose partial maxima, sums and outputs
//    meet in scratch; the last block of a row (per row) or tile (grouped)
//    combines them (the context's zeroed counters), else a second kernel.
// An attention that appends (ops::Attention::append: the step's new keys
// and values, written into the caches first, as cache_write) does it in
// the grouped kernel itself: the first block of each (batch row, KV head)
// writes them, and every block stages them from the update instead of the
// cache, so no block waits for another; the other paths run the two
// cache writes before them.
// All but the tensor-core prompt kernel run on CUDA cores in f32.
#include "Attention.cuh"
#include "Context.h"
#include "Device.cuh"
#include "Kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace hybrid::cuda::kernels {
namespace {

/// Query rows up to which a call takes the decode path.
constexpr int64_t kDecodeRows = 8;
/// Blocks the decode path aims for (a few per multiprocessor of an H200),
/// and the fewest keys a split gets.
constexpr int64_t kDecodeTargetBlocks = 512;
constexpr int kMaxSplits = 64;
constexpr int kDecodeWarps = 4;
/// The grouped decode kernels: query rows per block at most (of the G * T
/// rows that share a KV head), blocks they aim for (three per SM of a
/// 132-SM H200, one wave) and the fewest keys a split gets: 256, two
/// chunks for each of 4 warps. Splitting a batch-1 step's 128-256 keys
/// further (32 a split, one chunk) cost more than it spread: OPT-1.3B's
/// step 1.432 -> 1.382 ms, Llama-1B's 1.371 -> 1.210 ms (H200,
/// bench/RESULTS.md), since a row of one split writes its output itself
/// while split rows meet through partials in scratch and a counter, and
/// more blocks than fit at once delay the next kernel's launch. Then the
/// chunks each warp has in its shared memory (one computed while the
/// next streams in).
constexpr int kGroupRows = 8;
constexpr int64_t kGroupedTargetBlocks = 396, kGroupedMinSplitKeys = 256;
constexpr int kDecodeStages = 2;

/// How a call runs; from shapes alone, so the scratch function and the run
/// agree.
struct AttnPlan {
  bool flash = false;
  int headBound = 0;     ///< flash: 64, 128 or 256 (>= Dh and Dv)
  int valuesPerLane = 0; ///< decode: Dv <= 32 * valuesPerLane
  int splits = 1;        ///< decode: for S keys; fewer when fewer exist
  int groupRows = 1;     ///< grouped decode: rows per block (tileRows)
  int groupedSplits = 1; ///< grouped decode: as splits
  /// Either decode kernel's partials (which one runs depends on pointer
  /// alignment and the toggle, which the declaration must not see).
  size_t scratch = 0;
};

AttnParams describe(const AttentionArgs &a) {
  AttnParams p;
  static_cast<AttentionProblem &>(p) = describeAttention(a);
  p.out = a.out.data;
  return p;
}

/// The appended keys and values of an attention that appends, checked
/// against the caches (the key and value operands' memory).
void describeAppend(const AttentionArgs &a, AttnParams &p) {
  const AttentionAppend append = describeAttentionAppend(a, p);
  p.Tn = append.Tn;
  p.kNew = append.keys;
  p.vNew = append.values;
  p.appendAt = append.at;
  p.kCache = append.keyCache;
  p.vCache = append.valueCache;
}

/// The appended keys and values written by two cache_write kernels, for
/// the paths that do not append themselves.
void appendWithCacheWrites(const AttentionArgs &a, Stream stream) {
  cacheWriteInto(*a.appendKey, *a.appendAt, *a.keyOut, 2, stream);
  cacheWriteInto(*a.appendValue, *a.appendAt, *a.valueOut, 2, stream);
}

AttnPlan planAttention(const AttnParams &p) {
  AttnPlan plan;
  const int64_t maxD = std::max(p.Dh, p.Dv);
  if (p.T > kDecodeRows && maxD <= 256) {
    plan.flash = true;
    plan.headBound = maxD <= 64 ? 64 : maxD <= 128 ? 128 : 256;
    return plan;
  }
  if (p.Dv > 512)
    fail("attention", "value head size " + std::to_string(p.Dv) +
                          " is not supported (at most 512)");
  const int64_t perLane = (p.Dv + 31) / 32;
  plan.valuesPerLane = perLane <= 1   ? 1
                       : perLane <= 2 ? 2
                       : perLane <= 4 ? 4
                       : perLane <= 8 ? 8
                                      : 16;
  // Splits for S keys (with key_length, an upper bound: each row splits
  // the keys that exist when the kernel runs, splitsFor).
  const int64_t rows = p.B * p.Hq * p.T;
  int64_t splits = 1;
  if (rows > 0 && p.S > 0) {
    const int64_t wanted = (kDecodeTargetBlocks + rows - 1) / rows;
    const int64_t bySequence = (p.S + kMinSplitKeys - 1) / kMinSplitKeys;
    splits = std::clamp<int64_t>(std::min(wanted, bySequence), 1, kMaxSplits);
  }
  plan.splits = static_cast<int>(splits);
  // The grouped kernel: a block per (b, KV head, tile of kGroupRows rows of
  // the group's G * T) and split.
  const int64_t groupRows = p.group * p.T;
  plan.groupRows = groupRows <= 1   ? 1
                   : groupRows <= 2 ? 2
                   : groupRows <= 4 ? 4
                                    : kGroupRows;
  const int64_t groupBlocks =
      p.B * p.Hkv * ((groupRows + plan.groupRows - 1) / plan.groupRows);
  int64_t groupedSplits = 1;
  if (groupBlocks > 0 && p.S > 0) {
    const int64_t wanted =
        (kGroupedTargetBlocks + groupBlocks - 1) / groupBlocks;
    const int64_t bySequence =
        (p.S + kGroupedMinSplitKeys - 1) / kGroupedMinSplitKeys;
    groupedSplits =
        std::clamp<int64_t>(std::min(wanted, bySequence), 1, kMaxSplits);
  }
  plan.groupedSplits = static_cast<int>(groupedSplits);
  const int most = std::max(plan.splits, plan.groupedSplits);
  if (most > 1)
    plan.scratch =
        static_cast<size_t>(rows) * most * (p.Dv + 2) * sizeof(float);
  return plan;
}

// ---------------------------------------------------------------------------
// Prompts: the flash-style kernel.

template <int HD> struct FlashConfig {
  static constexpr int kRows = HD <= 128 ? 8 : 4; ///< query rows per warp
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockRows = kRows * kWarps;
  static constexpr int kBlockKeys = 32; ///< one key per lane for the scores
  /// Padding keeps each lane's 16-byte key reads in distinct banks.
  static constexpr int kKeyStride = HD + 4;
  static constexpr int kCols = HD / 32; ///< output columns per lane
  static constexpr size_t kSharedBytes =
      (kBlockRows * HD + kBlockKeys * kKeyStride + kBlockKeys * HD) *
      sizeof(float);
};

template <typename S, int HD>
__global__ void __launch_bounds__(FlashConfig<HD>::kThreads)
    flashAttentionKernel(AttnParams p) {
  awaitInputs();
  using C = FlashConfig<HD>;
  constexpr int R = C::kRows;
  extern __shared__ float4 shared4[];
  float *Qs = reinterpret_cast<float *>(shared4); // [kBlockRows][HD]
  float *Ks = Qs + C::kBlockRows * HD;            // [kBlockKeys][kKeyStride]
  float *Vs = Ks + C::kBlockKeys * C::kKeyStride; // [kBlockKeys][HD]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * C::kBlockRows;
  const int64_t lastRow = std::min<int64_t>(i0 + C::kBlockRows, p.T) - 1;
  const int64_t keys = p.keyCount();

  for (int64_t bh = blockIdx.y; bh < p.B * p.Hq; bh += gridDim.y) {
    const int64_t b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
    const S *Q = static_cast<const S *>(p.q) + bh * p.T * p.Dh;
    const S *K = static_cast<const S *>(p.k) + (b * p.Hkv + hk) * p.S * p.Dh;
    const S *V = static_cast<const S *>(p.v) + (b * p.Hkv + hk) * p.S * p.Dv;
    S *O = static_cast<S *>(p.out) + bh * p.T * p.Dv;
    if (keys < 0) { // a bad key_length (keyCount); uniform over the block
      for (int64_t e = threadIdx.x; e < C::kBlockRows * p.Dv; e += C::kThreads)
        if (i0 + e / p.Dv < p.T)
          O[i0 * p.Dv + e] = fromFloat<S>(NAN);
      continue;
    }

    __syncthreads(); // the previous head may still read Qs
    for (int e = threadIdx.x; e < C::kBlockRows * HD; e += C::kThreads) {
      const int r = e / HD, d = e % HD;
      const int64_t i = i0 + r;
      Qs[e] = i < p.T && d < p.Dh ? toFloat(Q[i * p.Dh + d]) : 0.0f;
    }
    float m[R], l[R], acc[R][C::kCols];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      m[r] = -INFINITY;
      l[r] = 0;
#pragma unroll
      for (int c = 0; c < C::kCols; ++c)
        acc[r][c] = 0;
    }
    // Keys any row of the block sees (ranges move right with the row).
    int64_t first, last, unused;
    p.keyRange(i0, keys, first, unused);
    p.keyRange(lastRow, keys, unused, last);

    for (int64_t j0 = first; j0 < last; j0 += C::kBlockKeys) {
      __syncthreads(); // everyone is done with the previous tile
      // Keys past the count and padding keys are zeros here (never read):
      // their weight is 0, and 0 times whatever an unfilled slot holds
      // could be NaN.
      for (int e = threadIdx.x; e < C::kBlockKeys * HD; e += C::kThreads) {
        const int r = e / HD, d = e % HD;
        const int64_t j = j0 + r;
        const bool present = j < keys && p.keyVisible(b, j);
        Ks[r * C::kKeyStride + d] =
            present && d < p.Dh ? toFloat(K[j * p.Dh + d]) : 0.0f;
        Vs[e] = present && d < p.Dv ? toFloat(V[j * p.Dv + d]) : 0.0f;
      }
      __syncthreads();

      // Scores: lane owns key j0 + lane, for each of the warp's rows.
      float s[R];
#pragma unroll
      for (int r = 0; r < R; ++r)
        s[r] = 0;
      const float *kr = Ks + lane * C::kKeyStride;
      const float *qw = Qs + warp * R * HD;
#pragma unroll 4
      for (int d = 0; d < HD; d += 4) {
        const float4 kv = *reinterpret_cast<const float4 *>(kr + d);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const float4 qv = *reinterpret_cast<const float4 *>(qw + r * HD + d);
          s[r] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
        }
      }
      const int64_t j = j0 + lane;
      // A padding key is hidden whatever the additive mask says.
      const bool token = j < keys && p.keyVisible(b, j);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t i = i0 + warp * R + r;
        int64_t begin, end;
        p.keyRange(i, keys, begin, end);
        const bool visible = token && i < p.T && j >= begin && j < end;
        const float sc = visible ? p.score<S>(s[r], b, h, i, j) : -INFINITY;
        const float mNew = maxOf(m[r], warpMax(sc));
        if (mNew == -INFINITY) { // nothing visible yet: contributes nothing
          s[r] = 0;
          continue;
        }
        const float alpha = softmaxCarry(m[r], mNew);
        const float pj = expf(sc - mNew); // -inf gives 0
        l[r] = l[r] * alpha + warpSum(pj);
        m[r] = mNew;
#pragma unroll
        for (int c = 0; c < C::kCols; ++c)
          acc[r][c] *= alpha;
        s[r] = pj;
      }
      // Output: acc[r][c] += sum_jj p[r][jj] * V[jj][lane + 32 c].
#pragma unroll 4
      for (int jj = 0; jj < C::kBlockKeys; ++jj) {
        float vv[C::kCols];
#pragma unroll
        for (int c = 0; c < C::kCols; ++c)
          vv[c] = Vs[jj * HD + lane + 32 * c];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const float pj = __shfl_sync(0xffffffffu, s[r], jj);
#pragma unroll
          for (int c = 0; c < C::kCols; ++c)
            acc[r][c] += pj * vv[c];
        }
      }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t i = i0 + warp * R + r;
      if (i >= p.T)
        continue;
      const float inv = m[r] == -INFINITY ? 0.0f : 1.0f / l[r];
#pragma unroll
      for (int c = 0; c < C::kCols; ++c) {
        const int d = lane + 32 * c;
        if (d < p.Dv)
          O[i * p.Dv + d] = fromFloat<S>(acc[r][c] * inv);
      }
    }
  }
}

template <typename S, int HD>
void launchFlash(const AttnParams &p, Context *context, cudaStream_t stream) {
  using C = FlashConfig<HD>;
  if (C::kSharedBytes > 48 * 1024)
    allowSharedMemory(
        context, reinterpret_cast<const void *>(flashAttentionKernel<S, HD>),
        C::kSharedBytes, "attention");
  const int64_t blocksT = (p.T + C::kBlockRows - 1) / C::kBlockRows;
  if (blocksT > 0x7fffffff)
    fail("attention", "too many query rows");
  const dim3 grid(static_cast<unsigned>(blocksT),
                  static_cast<unsigned>(std::min<int64_t>(p.B * p.Hq, 65535)));
  launch(flashAttentionKernel<S, HD>, grid, C::kThreads, C::kSharedBytes,
         stream, p);
  checkLaunch("attention");
}

// ---------------------------------------------------------------------------
// Decode steps: one block per (query row, key split).

/// The decode kernel's shared memory (all dynamic). Per warp: the query
/// row (f32; each warp its own copy, so no block barrier stands between
/// loading it and staging the first keys), then a chunk of 32 key rows and
/// 32 value rows in the storage type. Key rows are padded to an odd number
/// of 16-byte words, so the 8 lanes of a quarter warp reading 16 bytes of 8
/// different rows hit distinct banks. After the warps' areas, the block's
/// combine: each warp's running maximum and sum, and its 32 * VPL output
/// columns.
struct DecodeShared {
  int64_t qBytes = 0, keyStride = 0, keyBytes = 0, perWarp = 0;
  int64_t combineFloats = 0; ///< per warp

  __host__ __device__ int64_t bytes(int64_t warps) const {
    return warps * (perWarp + combineFloats * 4);
  }
};

__host__ __device__ inline DecodeShared
decodeShared(int64_t Dh, int64_t Dv, int64_t elementSize, int valuesPerLane) {
  DecodeShared d;
  d.qBytes = (Dh * 4 + 15) / 16 * 16;
  d.keyStride = ((Dh * elementSize + 15) / 16 | 1) * 16;
  d.keyBytes = 32 * d.keyStride;
  d.perWarp = d.qBytes + d.keyBytes + (32 * Dv * elementSize + 15) / 16 * 16;
  d.combineFloats = 2 + 32 * valuesPerLane;
  return d;
}

/// A 16-byte copy from global to shared memory that completes in the
/// background (cp.async; waitStaged waits for this thread's copies).
__device__ __forceinline__ void copy16Async(void *shared, const void *global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
               "l"(global)
               : "memory");
#else
  *static_cast<uint4 *>(shared) = *static_cast<const uint4 *>(global);
#endif
}

__device__ __forceinline__ void waitStaged() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/// Copies the rows of src (32 rows of n elements, contiguous) whose bit is
/// set in `rows` to dst (rows `stride` bytes apart), the warp's lanes over
/// consecutive 16-byte words (coalesced; all in flight at once) when
/// `words`, else element by element. Rows without their bit are not read:
/// they may be past the keys that exist, or padding.
template <typename S>
__device__ void stageRows(char *dst, int64_t stride, const S *src, int64_t n,
                          unsigned rows, bool words) {
  const int lane = threadIdx.x % 32;
  if (words) {
    const int64_t perRow = n * static_cast<int64_t>(sizeof(S)) / 16;
    for (int64_t e = lane; e < 32 * perRow; e += 32) {
      const int64_t r = e / perRow;
      if (rows >> r & 1)
        copy16Async(dst + r * stride + (e - r * perRow) * 16,
                    reinterpret_cast<const uint4 *>(src) + e);
    }
    return;
  }
  for (int64_t e = lane; e < 32 * n; e += 32) {
    const int64_t r = e / n;
    if (rows >> r & 1)
      reinterpret_cast<S *>(dst + r * stride)[e - r * n] = src[e];
  }
}

/// q . k over n entries, q in f32 and k one staged key row (both in shared
/// memory): 16-byte reads of k when the row's size allows (staged rows
/// start 16-byte aligned), else one entry at a time.
template <typename S>
__device__ __forceinline__ float dotRow(const float *q, const S *k, int64_t n) {
  constexpr int kPerLoad = 16 / sizeof(S);
  float dot = 0;
  if (n % kPerLoad == 0) {
    const uint4 *k16 = reinterpret_cast<const uint4 *>(k);
    for (int64_t v = 0; v < n / kPerLoad; ++v) {
      const uint4 word = k16[v];
      const S *e = reinterpret_cast<const S *>(&word);
#pragma unroll
      for (int t = 0; t < kPerLoad; ++t)
        dot += q[v * kPerLoad + t] * toFloat(e[t]);
    }
    return dot;
  }
  for (int64_t d = 0; d < n; ++d)
    dot += q[d] * toFloat(k[d]);
  return dot;
}

/// The row's visible keys (as many as exist when the kernel runs) are split
/// evenly over splitsFor(their number) blocks; blocks beyond that return at
/// once. Warps take chunks of 32 keys in turn: the warp stages the chunk's
/// visible key and value rows in its shared memory (copies all in flight
/// together), then a lane computes one key's dot product and lanes own
/// value columns lane + 32 c for the weighted sum. Each warp keeps its own
/// running maximum, sum and output; the block combines them, then either
/// writes the row (one split) or its partial to scratch.
template <typename S>
__device__ void combineRow(const AttnParams &p, int64_t row);

template <typename S, int VPL>
__global__ void __launch_bounds__(32 * kDecodeWarps)
    decodeAttentionKernel(AttnParams p) {
  awaitInputs();
  extern __shared__ float4 decodeShared4[];
  const DecodeShared layout = decodeShared(p.Dh, p.Dv, sizeof(S), VPL);
  const int warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  char *shared = reinterpret_cast<char *>(decodeShared4);
  float *warpM = reinterpret_cast<float *>(shared + warps * layout.perWarp);
  float *warpL = warpM + warps;
  float *warpAcc = warpL + warps; // [warps][32 * VPL]
  char *mine = shared + warp * layout.perWarp;
  float *q = reinterpret_cast<float *>(mine); // Dh
  char *keys16 = mine + layout.qBytes;
  const S *values = reinterpret_cast<const S *>(keys16 + layout.keyBytes);
  const int64_t row = blockIdx.x; // (b * Hq + h) * T + i
  const int split = blockIdx.y;
  const int64_t i = row % p.T, bh = row / p.T;
  const int64_t b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount); split rows: the combine
    if (p.splits == 1 || (p.counters && split == 0))
      for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x)
        static_cast<S *>(p.out)[row * p.Dv + d] = fromFloat<S>(NAN);
    return;
  }
  int64_t begin, end;
  p.keyRange(i, keys, begin, end);
  const int64_t len = end > begin ? end - begin : 0;
  const int used = p.splitsFor(len);
  if (split >= used)
    return;
  const int64_t share = (len + used - 1) / used;
  begin += split * share;
  end = std::min<int64_t>(end, begin + share);

  const S *Qr = static_cast<const S *>(p.q) + row * p.Dh;
  const S *K = static_cast<const S *>(p.k) + (b * p.Hkv + hk) * p.S * p.Dh;
  const S *V = static_cast<const S *>(p.v) + (b * p.Hkv + hk) * p.S * p.Dv;
  for (int64_t d = lane; d < p.Dh; d += 32)
    q[d] = toFloat(Qr[d]);

  float m = -INFINITY, l = 0, acc[VPL];
#pragma unroll
  for (int c = 0; c < VPL; ++c)
    acc[c] = 0;
  for (int64_t c0 = begin + 32 * warp; c0 < end; c0 += 32 * warps) {
    const int64_t j = c0 + lane;
    const bool visible = j < end && p.keyVisible(b, j);
    const unsigned rows = __ballot_sync(0xffffffffu, visible);
    __syncwarp(); // every lane is done with the previous chunk
    stageRows(keys16, layout.keyStride, K + c0 * p.Dh, p.Dh, rows,
              p.stageWords);
    stageRows(keys16 + layout.keyBytes, p.Dv * int64_t(sizeof(S)),
              V + c0 * p.Dv, p.Dv, rows, p.stageWords);
    waitStaged();
    __syncwarp(); // the chunk (and q) are in shared memory for every lane
    float sc = -INFINITY;
    if (visible)
      sc = p.score<S>(
          dotRow(q,
                 reinterpret_cast<const S *>(keys16 + lane * layout.keyStride),
                 p.Dh),
          b, h, i, j);
    // Weight 0 (masked, padding, past the end): adds nothing, and its value
    // (maybe an unwritten slot, never staged) is never read, as on the CPU.
    unsigned live = __ballot_sync(0xffffffffu, sc != -INFINITY);
    if (!live)
      continue;
    const float mNew = maxOf(m, warpMax(sc));
    const float alpha = softmaxCarry(m, mNew);
    const float pj = softmaxCarry(sc, mNew);
    l = l * alpha + warpSum(pj);
    m = mNew;
#pragma unroll
    for (int c = 0; c < VPL; ++c)
      acc[c] *= alpha;
      // The live keys' weighted values, in key order, unrolled over the 32
      // slots so that their shuffles and shared-memory loads are in flight
      // together (a loop over the live bits waited on each in turn); a slot
      // that is not live keeps acc (its row may be unstaged: never 0 * NaN).
#pragma unroll
    for (int t = 0; t < 32; ++t) {
      const float pt = __shfl_sync(0xffffffffu, pj, t);
      const bool on = live >> t & 1;
      const S *vt = values + t * p.Dv;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < p.Dv) {
          const float v = toFloat(vt[d]);
          acc[c] = on ? fmaf(pt, v, acc[c]) : acc[c];
        }
      }
    }
  }
  if (lane == 0) {
    warpM[warp] = m;
    warpL[warp] = l;
  }
#pragma unroll
  for (int c = 0; c < VPL; ++c)
    warpAcc[warp * 32 * VPL + lane + 32 * c] = acc[c];
  __syncthreads();

  float mBlock = -INFINITY;
  for (int w = 0; w < warps; ++w)
    mBlock = maxOf(mBlock, warpM[w]);
  float factor[kDecodeWarps], lBlock = 0;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    factor[w] = w >= warps ? 0.0f : softmaxCarry(warpM[w], mBlock);
    lBlock += w < warps ? warpL[w] * factor[w] : 0.0f;
  }
  // The block's output column d, unnormalised.
  auto blockSum = [&](int64_t d) {
    float v = 0;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w)
      if (w < warps)
        v += warpAcc[w * 32 * VPL + d] * factor[w];
    return v;
  };
  if (used == 1) { // one split: no partials
    S *O = static_cast<S *>(p.out) + row * p.Dv;
    const float inv = mBlock == -INFINITY ? 0.0f : 1.0f / lBlock;
    for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x)
      O[d] = fromFloat<S>(blockSum(d) * inv);
    return;
  }
  float *part = p.partial + (row * p.splits + split) * (p.Dv + 2);
  if (threadIdx.x == 0) {
    part[0] = mBlock;
    part[1] = lBlock;
  }
  for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x)
    part[2 + d] = blockSum(d);
  if (!p.counters)
    return;
  // The row's last block to finish combines (in split order: the same
  // result as the combine kernel, whichever block it is).
  if (lastBlockToArrive(p.counters + row, static_cast<unsigned>(used)))
    combineRow<S>(p, row);
}

/// Combines the splits of `row` (as many as the decode kernel used).
template <typename S>
__device__ void combineRow(const AttnParams &p, int64_t row) {
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount)
    for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x)
      static_cast<S *>(p.out)[row * p.Dv + d] = fromFloat<S>(NAN);
    return;
  }
  int64_t begin, end;
  p.keyRange(row % p.T, keys, begin, end);
  const int used = p.splitsFor(end > begin ? end - begin : 0);
  if (used > 1) // (one split wrote the row itself)
    combineParts<S>(p, row, used);
}

template <typename S> __global__ void combineSplitsKernel(AttnParams p) {
  awaitInputs();
  combineRow<S>(p, blockIdx.x);
}

/// Launches the decode kernel with as many warps (up to kDecodeWarps) as
/// the staging buffers of the head sizes leave room for in the shared
/// memory a block may have (sharedLimit(context)).
template <typename S, int VPL>
void launchDecode(const AttnParams &p, Context *context, cudaStream_t stream) {
  const size_t maxShared = sharedLimit(context);
  const int64_t rows = p.B * p.Hq * p.T;
  if (rows > 0x7fffffff)
    fail("attention", "too many query rows");
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(p.splits));
  const DecodeShared layout = decodeShared(p.Dh, p.Dv, sizeof(S), VPL);
  int64_t warps = kDecodeWarps;
  // (The kernel's own static shared memory, a flag, comes on top.)
  constexpr int64_t kStaticShared = 16;
  while (warps > 0 &&
         layout.bytes(warps) + kStaticShared > static_cast<int64_t>(maxShared))
    --warps;
  if (warps < 1)
    fail("attention", "head sizes " + std::to_string(p.Dh) + " / " +
                          std::to_string(p.Dv) +
                          " do not fit the decode kernel's shared memory");
  const size_t shared = layout.bytes(warps);
  if (shared > 48 * 1024)
    allowSharedMemory(
        context, reinterpret_cast<const void *>(decodeAttentionKernel<S, VPL>),
        shared, "attention");
  launch(decodeAttentionKernel<S, VPL>, grid, static_cast<unsigned>(32 * warps),
         shared, stream, p);
  checkLaunch("attention");
  if (p.splits > 1 && !p.counters) {
    launch(combineSplitsKernel<S>, static_cast<unsigned>(rows), 128, 0, stream,
           p);
    checkLaunch("attention");
  }
}

// ---------------------------------------------------------------------------
// Decode steps, grouped: one block per (batch row, KV head, tile of query
// rows, key split), every query row of the KV head's group in one block.
//
// Why this shape (H200: ~3.4 TB/s achievable, 132 SMs, 228 KB of shared
// memory per SM): a decode step is a stream of K/V bytes, so
//  * each K/V byte is read from HBM once per step: the G query heads of a
//    KV head and the T <= 8 rows of each (G * T rows, in tiles of
//    kGroupRows) all use each staged chunk;
//  * by Little's law the bytes in flight must cover bandwidth x latency:
//    3.4 TB/s x ~0.8 us ~= 2.7 MB, 21 KB per SM at least (more under
//    load). Each warp owns kDecodeStages = 2 chunk buffers and stages
//    chunk c + 1 with cp.async while it computes chunk c: a 32-key chunk
//    of 64-dim bf16 heads is 8 KB, a warp keeps 8-16 KB in flight, and
//    with 4 warps per block (~74 KB of shared memory) three blocks fit on
//    an SM: ~96-190 KB in flight per SM. Larger heads take fewer warps so
//    that two blocks still fit (128-dim bf16: 3 warps, ~106 KB);
//  * compute stays under the stream: per key a row costs Dh + Dv FMAs and
//    the key (Dh + Dv) * 2 bytes (bf16), so R rows cost R / 2 FMAs per
//    byte, 1.7 R TFMA/s at 3.4 TB/s against ~33 TFMA/s of f32 CUDA cores
//    (R = 4, Llama's groups: ~20%; with loads, conversions and shuffles
//    about twice the FMAs in instructions). A tile of 8 rows (G = 8, or
//    T = 8) is near the limit; more rows (G * T > 8) take more tiles, each
//    reading the chunk again (mostly from L2).
// Per chunk a warp: lane t computes key t's dot product with every row
// (16-byte key reads, padded rows, the rows' q as f32 broadcast from
// shared memory), one warp maximum per row (sums stay per lane until the
// end), writes the weights to shared memory, then every lane owns value
// column pairs 2 lane + 64 c (4- or 8-byte reads, conflict-free) and adds
// the 32 keys' weighted values for every row (weights read as broadcast
// 16-byte words).

/// The grouped kernel's shared memory (all dynamic): the block's query
/// rows (f32), then per warp kDecodeStages chunk buffers (32 key rows
/// padded to an odd number of 16-byte words, 32 value rows) and the
/// chunk's weights [32][rows]. At the end each warp leaves its maxima and
/// sums in its weights and its outputs [rows][Dv] (f32) in its buffers.
struct GroupedShared {
  int64_t qBytes = 0, keyStride = 0, keyBytes = 0, stageBytes = 0;
  int64_t perWarp = 0;

  __host__ __device__ int64_t bytes(int64_t warps) const {
    return qBytes + warps * perWarp;
  }
};

__host__ __device__ inline GroupedShared
groupedShared(int64_t Dh, int64_t Dv, int64_t elementSize, int rows) {
  GroupedShared g;
  g.qBytes = (rows * Dh * 4 + 15) / 16 * 16;
  g.keyStride = ((Dh * elementSize + 15) / 16 | 1) * 16;
  g.keyBytes = 32 * g.keyStride;
  g.stageBytes = g.keyBytes + (32 * Dv * elementSize + 15) / 16 * 16;
  g.perWarp = kDecodeStages * g.stageBytes + 32 * rows * 4;
  return g;
}

__device__ __forceinline__ void commitStaged() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/// Waits until at most `N` of this thread's committed groups of copies
/// are still in flight.
template <int N> __device__ __forceinline__ void waitStagedGroups() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// Copies the rows of src (32 rows of `words` 16-byte words, contiguous)
/// whose bit is set in `rows` to dst (rows `stride` bytes apart) with
/// cp.async, consecutive lanes on consecutive words (coalesced); rows
/// without their bit are not read. (Row and word advance by constant steps:
/// no division per word.)
__device__ __forceinline__ void stageWordRows(char *dst, int64_t stride,
                                              const uint4 *src, int words,
                                              unsigned rows) {
  const int lane = threadIdx.x % 32;
  const int rowStep = 32 / words, wordStep = 32 % words;
  int r = lane / words, w = lane % words;
  for (int e = lane; e < 32 * words; e += 32) {
    if (rows >> r & 1)
      copy16Async(dst + r * stride + w * 16, src + e);
    r += rowStep;
    w += wordStep;
    if (w >= words) {
      w -= words;
      ++r;
    }
  }
}

/// Two adjacent staged values as f32 (4- or 8-byte aligned).
__device__ __forceinline__ float2 pairAt(const float *v) {
  return *reinterpret_cast<const float2 *>(v);
}
__device__ __forceinline__ float2 pairAt(const Bf16 *v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(v));
}
__device__ __forceinline__ float2 pairAt(const F16 *v) {
  return __half22float2(*reinterpret_cast<const __half2 *>(v));
}

/// ROWS = p.tileRows query rows (fewer in the last tile) against the keys
/// any of them sees, split evenly over splitsFor(their number) blocks
/// (blocks beyond that return at once). Warps take chunks of 32 keys in
/// turn, two buffers each (chunk c + 1 streams in while chunk c is
/// computed); every warp keeps each row's running maximum, sum (per lane)
/// and output columns (lane owns pairs 2 lane + 64 c, c < CP); the block
/// combines its warps, then writes the rows (one split) or their partials,
/// and the last block of a split tile combines them (counters).
/// Requires K and V rows of whole 16-byte words at 16-byte addresses
/// (stageWords) and Dv <= 64 CP.
template <typename S, int ROWS, int CP>
__global__ void __launch_bounds__(32 * kDecodeWarps)
    groupedDecodeKernel(AttnParams p) {
  awaitInputs();
  constexpr int kPerLoad = 16 / sizeof(S);
  extern __shared__ float4 groupedShared4[];
  const GroupedShared layout = groupedShared(p.Dh, p.Dv, sizeof(S), ROWS);
  const int warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  char *shared = reinterpret_cast<char *>(groupedShared4);
  float *qs = reinterpret_cast<float *>(shared); // [ROWS][Dh]
  auto warpArea = [&](int w) {
    return shared + layout.qBytes + w * layout.perWarp;
  };
  char *mine = warpArea(warp);
  float *weights = reinterpret_cast<float *>(
      mine + kDecodeStages * layout.stageBytes); // [32][ROWS]
  const GroupTile tile = groupTile(p);
  const int64_t b = tile.bk / p.Hkv, hk = tile.bk % p.Hkv;
  const int split = blockIdx.y;
  // Appending: keys [at, at + Tn) come from the update (staged from there
  // below), and the (b, hk)'s first block writes them into the caches. An
  // offset out of range appends nothing (as cache_write drops it).
  int64_t at = -1;
  if (p.kNew) {
    at = *p.appendAt;
    if (at < 0 || at > p.S - p.Tn)
      at = -1;
  }
  if (at >= 0 && tile.r0 == 0 && split == 0) {
    const int64_t keyWords = p.Tn * p.Dh / (16 / sizeof(S)),
                  valueWords = p.Tn * p.Dv / (16 / sizeof(S));
    const uint4 *kSrc = static_cast<const uint4 *>(p.kNew) + tile.bk * keyWords;
    const uint4 *vSrc =
        static_cast<const uint4 *>(p.vNew) + tile.bk * valueWords;
    uint4 *kDst = reinterpret_cast<uint4 *>(static_cast<S *>(p.kCache) +
                                            (tile.bk * p.S + at) * p.Dh);
    uint4 *vDst = reinterpret_cast<uint4 *>(static_cast<S *>(p.vCache) +
                                            (tile.bk * p.S + at) * p.Dv);
    for (int64_t e = threadIdx.x; e < keyWords; e += blockDim.x)
      kDst[e] = kSrc[e];
    for (int64_t e = threadIdx.x; e < valueWords; e += blockDim.x)
      vDst[e] = vSrc[e];
  }
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount); split rows: the combine
    if (p.splits == 1 || (p.counters && split == 0))
      for (int64_t e = threadIdx.x; e < tile.rows * p.Dv; e += blockDim.x)
        static_cast<S *>(p.out)[tile.row0 * p.Dv + e] = fromFloat<S>(NAN);
    return;
  }
  int64_t rowBegin[ROWS], rowEnd[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    rowBegin[r] = rowEnd[r] = 0; // rows past the tile see nothing
    if (r < tile.rows)
      p.keyRange((tile.r0 + r) % p.T, keys, rowBegin[r], rowEnd[r]);
  }
  int64_t begin, end;
  groupKeyRange(p, tile.r0, tile.rows, keys, begin, end);
  const int used = p.splitsFor(end - begin);
  if (split >= used)
    return;
  const int64_t share = (end - begin + used - 1) / used;
  begin += split * share;
  end = std::min<int64_t>(end, begin + share);

  const S *K = static_cast<const S *>(p.k) + tile.bk * p.S * p.Dh;
  const S *V = static_cast<const S *>(p.v) + tile.bk * p.S * p.Dv;
  // The appended rows, indexed by key: row j is K[j] for j in [at, at + Tn).
  const S *KNew =
      at < 0 ? nullptr
             : static_cast<const S *>(p.kNew) + (tile.bk * p.Tn - at) * p.Dh;
  const S *VNew =
      at < 0 ? nullptr
             : static_cast<const S *>(p.vNew) + (tile.bk * p.Tn - at) * p.Dv;
  const int keyWords = static_cast<int>(p.Dh / kPerLoad);
  const int valueWords = static_cast<int>(p.Dv / kPerLoad);
  // Stages the chunk at c0 (uniform over the warp) into buffer `buffer`:
  // the keys of the split that exist and are not padding, appended ones
  // from the update; returns them.
  auto stage = [&](int64_t c0, int buffer) {
    const int64_t j = c0 + lane;
    const unsigned rows =
        __ballot_sync(0xffffffffu, j < end && p.keyVisible(b, j));
    const unsigned appended =
        __ballot_sync(0xffffffffu, at >= 0 && j >= at && j < at + p.Tn) & rows;
    char *dst = mine + buffer * layout.stageBytes;
    stageWordRows(dst, layout.keyStride,
                  reinterpret_cast<const uint4 *>(K + c0 * p.Dh), keyWords,
                  rows & ~appended);
    stageWordRows(dst + layout.keyBytes, p.Dv * int64_t(sizeof(S)),
                  reinterpret_cast<const uint4 *>(V + c0 * p.Dv), valueWords,
                  rows & ~appended);
    if (appended) {
      stageWordRows(dst, layout.keyStride,
                    reinterpret_cast<const uint4 *>(KNew + c0 * p.Dh), keyWords,
                    appended);
      stageWordRows(dst + layout.keyBytes, p.Dv * int64_t(sizeof(S)),
                    reinterpret_cast<const uint4 *>(VNew + c0 * p.Dv),
                    valueWords, appended);
    }
    commitStaged();
    return rows;
  };
  // The first chunk streams in while the block loads its query rows.
  int64_t c0 = begin + 32 * warp;
  unsigned staged = c0 < end ? stage(c0, 0) : 0u;
  const S *Q = static_cast<const S *>(p.q) + tile.row0 * p.Dh;
  for (int64_t e = threadIdx.x; e < ROWS * p.Dh; e += blockDim.x)
    qs[e] = e < tile.rows * p.Dh ? toFloat(Q[e]) : 0.0f;
  __syncthreads();

  float m[ROWS], l[ROWS], acc[ROWS][2 * CP];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    m[r] = -INFINITY;
    l[r] = 0; // this lane's keys' share; summed over the warp at the end
#pragma unroll
    for (int c = 0; c < 2 * CP; ++c)
      acc[r][c] = 0;
  }
  for (int n = 0; c0 < end; ++n, c0 += 32 * warps) {
    const int64_t next = c0 + 32 * warps;
    unsigned stagedNext = 0;
    if (next < end) {
      stagedNext = stage(next, (n + 1) % kDecodeStages);
      waitStagedGroups<1>(); // chunk c0 has landed, the next may not have
    } else {
      waitStagedGroups<0>();
    }
    __syncwarp(); // chunk c0 is in shared memory for every lane
    const char *keyRows = mine + (n % kDecodeStages) * layout.stageBytes;
    const S *valueRows = reinterpret_cast<const S *>(keyRows + layout.keyBytes);

    // Scores: lane owns key c0 + lane, for every row.
    float s[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      s[r] = 0;
    const uint4 *k16 =
        reinterpret_cast<const uint4 *>(keyRows + lane * layout.keyStride);
#pragma unroll 2
    for (int w = 0; w < keyWords; ++w) {
      const uint4 word = k16[w];
      const S *e = reinterpret_cast<const S *>(&word);
      float kf[kPerLoad];
#pragma unroll
      for (int t = 0; t < kPerLoad; ++t)
        kf[t] = toFloat(e[t]);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float4 *qr =
            reinterpret_cast<const float4 *>(qs + r * p.Dh + w * kPerLoad);
#pragma unroll
        for (int u = 0; u < kPerLoad / 4; ++u) {
          const float4 qv = qr[u];
          s[r] = fmaf(qv.x, kf[4 * u], s[r]);
          s[r] = fmaf(qv.y, kf[4 * u + 1], s[r]);
          s[r] = fmaf(qv.z, kf[4 * u + 2], s[r]);
          s[r] = fmaf(qv.w, kf[4 * u + 3], s[r]);
        }
      }
    }
    const int64_t j = c0 + lane;
    const bool isStaged = staged >> lane & 1;
    float w8[ROWS]; // the weights of key j
    bool seen = false;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float sc = -INFINITY;
      if (isStaged && j >= rowBegin[r] && j < rowEnd[r]) {
        if (p.mask || p.slopes) {
          const int64_t gr = tile.r0 + r;
          sc = p.score<S>(s[r], b, hk * p.group + gr / p.T, gr % p.T, j);
        } else {
          sc = s[r] * p.scale;
        }
      }
      const float mNew = maxOf(m[r], warpMax(sc));
      const float alpha = softmaxCarry(m[r], mNew);
      w8[r] = softmaxCarry(sc, mNew);
      l[r] = l[r] * alpha + w8[r];
      m[r] = mNew;
#pragma unroll
      for (int c = 0; c < 2 * CP; ++c)
        acc[r][c] *= alpha;
      seen = seen || sc != -INFINITY;
    }
    // Keys no row sees (masked, padding, past the end) add nothing, and
    // their values (maybe never staged) are never used: read as 0, never
    // 0 * NaN.
    const unsigned live = __ballot_sync(0xffffffffu, seen);
    if (live) {
      float *mineW = weights + lane * ROWS;
      if constexpr (ROWS >= 4) {
#pragma unroll
        for (int r = 0; r < ROWS; r += 4)
          *reinterpret_cast<float4 *>(mineW + r) =
              make_float4(w8[r], w8[r + 1], w8[r + 2], w8[r + 3]);
      } else if constexpr (ROWS == 2) {
        *reinterpret_cast<float2 *>(mineW) = make_float2(w8[0], w8[1]);
      } else {
        mineW[0] = w8[0];
      }
      __syncwarp(); // every key's weights are in shared memory
#pragma unroll 8
      for (int t = 0; t < 32; ++t) {
        const bool on = live >> t & 1;
        float wt[ROWS];
        const float *tw = weights + t * ROWS;
        if constexpr (ROWS >= 4) {
#pragma unroll
          for (int r = 0; r < ROWS; r += 4) {
            const float4 x = *reinterpret_cast<const float4 *>(tw + r);
            wt[r] = x.x;
            wt[r + 1] = x.y;
            wt[r + 2] = x.z;
            wt[r + 3] = x.w;
          }
        } else if constexpr (ROWS == 2) {
          const float2 x = *reinterpret_cast<const float2 *>(tw);
          wt[0] = x.x;
          wt[1] = x.y;
        } else {
          wt[0] = tw[0];
        }
        const S *vt = valueRows + t * p.Dv;
#pragma unroll
        for (int c = 0; c < CP; ++c) {
          const int64_t d = 2 * lane + 64 * c;
          if (d < p.Dv) {
            float2 v = pairAt(vt + d);
            v.x = on ? v.x : 0.0f;
            v.y = on ? v.y : 0.0f;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
              acc[r][2 * c] = fmaf(wt[r], v.x, acc[r][2 * c]);
              acc[r][2 * c + 1] = fmaf(wt[r], v.y, acc[r][2 * c + 1]);
            }
          }
        }
      }
    }
    __syncwarp(); // every lane is done with this buffer and the weights
    staged = stagedNext;
  }

  // The warp's maxima and sums into its weights, its outputs into its
  // buffers (no copy is in flight: the last chunk waited for all).
  float *stats = weights;                        // [ROWS] maxima, [ROWS] sums
  float *outs = reinterpret_cast<float *>(mine); // [ROWS][Dv]
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float lr = warpSum(l[r]);
    if (lane == 0) {
      stats[r] = m[r];
      stats[ROWS + r] = lr;
    }
#pragma unroll
    for (int c = 0; c < CP; ++c) {
      const int64_t d = 2 * lane + 64 * c;
      if (r < tile.rows && d < p.Dv)
        *reinterpret_cast<float2 *>(outs + r * p.Dv + d) =
            make_float2(acc[r][2 * c], acc[r][2 * c + 1]);
    }
  }
  __syncthreads();

  for (int64_t e = threadIdx.x; e < tile.rows * p.Dv; e += blockDim.x) {
    const int r = static_cast<int>(e / p.Dv);
    const int64_t d = e - r * p.Dv;
    float mBlock = -INFINITY;
    for (int w = 0; w < warps; ++w)
      mBlock = maxOf(mBlock,
                     reinterpret_cast<const float *>(
                         warpArea(w) + kDecodeStages * layout.stageBytes)[r]);
    float lBlock = 0, v = 0;
    for (int w = 0; w < warps; ++w) {
      const float *ws = reinterpret_cast<const float *>(
          warpArea(w) + kDecodeStages * layout.stageBytes);
      const float factor = softmaxCarry(ws[r], mBlock);
      lBlock += ws[ROWS + r] * factor;
      v += reinterpret_cast<const float *>(warpArea(w))[r * p.Dv + d] * factor;
    }
    const int64_t row = tile.row0 + r;
    if (used == 1) { // one split: no partials
      const float inv = mBlock == -INFINITY ? 0.0f : 1.0f / lBlock;
      static_cast<S *>(p.out)[row * p.Dv + d] = fromFloat<S>(v * inv);
      continue;
    }
    float *part = p.partial + (row * p.splits + split) * (p.Dv + 2);
    if (d == 0) {
      part[0] = mBlock;
      part[1] = lBlock;
    }
    part[2 + d] = v;
  }
  if (used == 1 || !p.counters)
    return;
  // The tile's last block to finish combines its rows (in split order: the
  // same result as the combine kernel, whichever block it is).
  if (lastBlockToArrive(p.counters + blockIdx.x, static_cast<unsigned>(used)))
    for (int r = 0; r < tile.rows; ++r)
      combineParts<S>(p, tile.row0 + r, used);
}

/// Without counters: combines the splits of every row of a grouped block.
template <typename S> __global__ void combineGroupSplitsKernel(AttnParams p) {
  awaitInputs();
  const GroupTile tile = groupTile(p);
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount)
    for (int64_t e = threadIdx.x; e < tile.rows * p.Dv; e += blockDim.x)
      static_cast<S *>(p.out)[tile.row0 * p.Dv + e] = fromFloat<S>(NAN);
    return;
  }
  int64_t begin, end;
  groupKeyRange(p, tile.r0, tile.rows, keys, begin, end);
  const int used = p.splitsFor(end - begin);
  if (used == 1) // (one split wrote the rows itself)
    return;
  for (int r = 0; r < tile.rows; ++r)
    combineParts<S>(p, tile.row0 + r, used);
}

/// The warps (up to kDecodeWarps) a grouped block gets: as many as leave
/// room for two blocks per SM, at least one, and 0 when one warp's buffers
/// do not fit in `maxShared` bytes (the old kernel then runs).
int groupedWarps(const AttnParams &p, int64_t elementSize, int rows,
                 size_t maxShared) {
  const GroupedShared layout = groupedShared(p.Dh, p.Dv, elementSize, rows);
  // (The kernel's static shared memory, a flag, comes on top.)
  const int64_t limit = static_cast<int64_t>(maxShared) - 16;
  // Two blocks and their 1 KB reserves in an H200 SM's 228 KB.
  constexpr int64_t kTwoBlocks = 113 * 1024;
  int warps = kDecodeWarps;
  while (warps > 1 && layout.bytes(warps) > std::min(limit, kTwoBlocks))
    --warps;
  return layout.bytes(warps) <= limit ? warps : 0;
}

/// Without counters, the split rows of `blocks` grouped blocks (of either
/// grouped kernel) meet in a second kernel.
template <typename S>
void combineGroupedSplits(const AttnParams &p, int64_t blocks,
                          cudaStream_t stream) {
  launch(combineGroupSplitsKernel<S>, static_cast<unsigned>(blocks), 128, 0,
         stream, p);
  checkLaunch("attention");
}

template <typename S, int ROWS, int CP>
void launchGroupedDecode(const AttnParams &p, int warps, Context *context,
                         cudaStream_t stream) {
  const int64_t groupRows = p.group * p.T;
  const int64_t blocks = p.B * p.Hkv * ((groupRows + ROWS - 1) / ROWS);
  if (blocks > 0x7fffffff)
    fail("attention", "too many query rows");
  const size_t shared = groupedShared(p.Dh, p.Dv, sizeof(S), ROWS).bytes(warps);
  // Blocks of more than 48 KB opt in.
  // (The driver sizes each SM's shared memory for the blocks that fit.)
  if (shared > 48 * 1024)
    allowSharedMemory(
        context,
        reinterpret_cast<const void *>(groupedDecodeKernel<S, ROWS, CP>),
        shared, "attention");
  const dim3 grid(static_cast<unsigned>(blocks),
                  static_cast<unsigned>(p.splits));
  launch(groupedDecodeKernel<S, ROWS, CP>, grid,
         static_cast<unsigned>(32 * warps), shared, stream, p);
  checkLaunch("attention");
  if (p.splits > 1 && !p.counters)
    combineGroupedSplits<S>(p, blocks, stream);
}

template <typename S, int ROWS>
void launchGroupedDecodeRows(const AttnParams &p, int warps, Context *context,
                             cudaStream_t stream) {
  if (p.Dv <= 64)
    return launchGroupedDecode<S, ROWS, 1>(p, warps, context, stream);
  if (p.Dv <= 128)
    return launchGroupedDecode<S, ROWS, 2>(p, warps, context, stream);
  return launchGroupedDecode<S, ROWS, 4>(p, warps, context, stream);
}

/// HYBRID_CUDA_DECODE_ATTN (read once): "old" runs every decode step on
/// the per-row kernel (decodeAttentionKernel), "grouped" on the CUDA-core
/// grouped kernel where the tensor-core one would apply, to measure each.
const char *decodeKernelRequested() {
  static const char *requested = [] {
    const char *v = std::getenv("HYBRID_CUDA_DECODE_ATTN");
    return v ? v : "";
  }();
  return requested;
}
bool oldDecodeRequested() {
  return std::strcmp(decodeKernelRequested(), "old") == 0;
}
bool coreDecodeRequested() {
  return std::strcmp(decodeKernelRequested(), "grouped") == 0;
}

} // namespace

void attention(const CudaCall &call) {
  // (An attention that does not append may leave off the last three.)
  const auto a = AttentionArgs::bind(call, "attention");
  const bool append = a.attrs.append;
  AttnParams p = describe(a);
  const AttnPlan plan = planAttention(p);
  expectScratch(call, plan.scratch, "attention");
  AttnParams appending = p;
  if (append)
    describeAppend(a, appending);
  if (p.B * p.Hq * p.T * p.Dv == 0) {
    if (append)
      appendWithCacheWrites(a, call.stream);
    return;
  }
  p.splits = plan.splits;
  p.partial = static_cast<float *>(call.scratch);
  const auto elementSize = static_cast<int64_t>(dtypeSize(p.dtype));
  p.stageWords = reinterpret_cast<uintptr_t>(p.k) % 16 == 0 &&
                 reinterpret_cast<uintptr_t>(p.v) % 16 == 0 &&
                 p.Dh * elementSize % 16 == 0 && p.Dv * elementSize % 16 == 0;
  const size_t maxShared = sharedLimit(call.context);
  // The grouped decode kernel where it applies, else the per-row one.
  const bool old = oldDecodeRequested() ||
                   (call.context && call.context->oldDecodeAttention);
  const int warps =
      plan.flash || old || !p.stageWords || p.Dv > 256
          ? 0
          : groupedWarps(p, elementSize, plan.groupRows, maxShared);
  int64_t combined = p.B * p.Hq * p.T; // rows, or grouped blocks
  bool tensorCores = false;
  if (warps > 0) {
    p.splits = plan.groupedSplits;
    p.minSplitKeys = kGroupedMinSplitKeys;
    p.tileRows = plan.groupRows;
    // The tensor-core kernel where it applies: one tile of 16 rows per
    // batch row and KV head (as many blocks as the grouped kernel's or
    // fewer, so its splits fit the planned scratch and counters).
    tensorCores = !coreDecodeRequested() &&
                  !(call.context && call.context->coreDecodeAttention) &&
                  decodeMmaApplies(p, p.dtype, call.context);
    if (tensorCores)
      p.tileRows = 16;
    combined = p.B * p.Hkv * ((p.group * p.T + p.tileRows - 1) / p.tileRows);
  }
  if (!plan.flash && p.splits > 1 && call.context &&
      combined <= static_cast<int64_t>(kTileCounters))
    p.counters = tileCounters(*call.context, call.stream, "attention");
  // The grouped kernel appends itself where the update's rows are whole
  // 16-byte words at 16-byte addresses, as the cache's; else two cache
  // writes run first.
  if (append) {
    if (warps > 0 && reinterpret_cast<uintptr_t>(appending.kNew) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(appending.vNew) % 16 == 0) {
      p.kNew = appending.kNew;
      p.vNew = appending.vNew;
      p.appendAt = appending.appendAt;
      p.kCache = appending.kCache;
      p.vCache = appending.vCache;
      p.Tn = appending.Tn;
    } else {
      appendWithCacheWrites(a, call.stream);
    }
  }
  const cudaStream_t stream = streamOf(call);
  visitFloat(p.dtype, "attention", "query", [&](auto zero) {
    using S = decltype(zero);
    if (plan.flash) {
      if (launchPromptMma(p, p.dtype, call.context, stream))
        return;
      switch (plan.headBound) {
      case 64:
        return launchFlash<S, 64>(p, call.context, stream);
      case 128:
        return launchFlash<S, 128>(p, call.context, stream);
      default:
        return launchFlash<S, 256>(p, call.context, stream);
      }
    }
    if (tensorCores) {
      launchDecodeMma(p, p.dtype, call.context, stream);
      if (p.splits > 1 && !p.counters)
        combineGroupedSplits<S>(p, combined, stream);
      return;
    }
    if (warps > 0) {
      switch (plan.groupRows) {
      case 1:
        return launchGroupedDecodeRows<S, 1>(p, warps, call.context, stream);
      case 2:
        return launchGroupedDecodeRows<S, 2>(p, warps, call.context, stream);
      case 4:
        return launchGroupedDecodeRows<S, 4>(p, warps, call.context, stream);
      default:
        return launchGroupedDecodeRows<S, kGroupRows>(p, warps, call.context,
                                                      stream);
      }
    }
    switch (plan.valuesPerLane) {
    case 1:
      return launchDecode<S, 1>(p, call.context, stream);
    case 2:
      return launchDecode<S, 2>(p, call.context, stream);
    case 4:
      return launchDecode<S, 4>(p, call.context, stream);
    case 8:
      return launchDecode<S, 8>(p, call.context, stream);
    default:
      return launchDecode<S, 16>(p, call.context, stream);
    }
  });
}

size_t attentionScratchBytes(const CudaCall &call) {
  try {
    return planAttention(describe(AttentionArgs::bind(call, "attention",
                                                      Binding::ShapesOnly)))
        .scratch;
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
