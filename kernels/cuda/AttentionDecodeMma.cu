// Decode attention on tensor cores: the grouped decode step (the G x T
// query rows that share a KV head against its cached keys) with both
// products on mma.sync (m16n8k16, f32 accumulation), for bf16 and f16 with
// head size 64 or 128 and at most 16 rows per KV head. The CUDA-core
// grouped kernel (Attention.cu) spends ~1,800 instructions per warp on each
// chunk of 32 keys (a dot product per lane, conversions, a broadcast per
// key of the value product); Nsight Compute had it issue-bound at 12 warps
// per SM, streaming the PPO-shaped step's cache at 1.6 TB/s. Here a chunk
// is 16 mma and 8 ldmatrix per product.
//
// A block takes one (batch row, KV head) and one split of the keys any of
// its rows sees; its rows are one 16-row A tile (rows past G x T zero).
// It has 8 warps where the grid fits on the GPU at once (a batch-1 step),
// else 4 (decodeWarps).
// Each warp streams chunks of kKeys keys and values (warp w takes chunks
// w, w + warps, ...) through two shared buffers of its own with cp.async,
// keys that do not exist or are padding staged as zeros and scored -inf
// (an unfilled slot's bytes never reach a result), each chunk's key-mask
// bits loaded one chunk ahead. Scores take the accumulator layout of the
// prompt kernel (AttentionMma.cu), so the probabilities become the value
// product's A fragments in registers; an online softmax in base 2 per
// row. The warps then meet in shared memory; one split writes the rows,
// several write partials (maxima in natural-log units, as the CUDA-core
// kernels' partials) that the last block of the tile combines (counters)
// or the combine kernel does. An appending step writes the new keys and
// values into the caches from the first block of each (batch row, KV
// head) and stages them from the update, as the grouped kernel does.
#include "Attention.cuh"
#include "AttentionTile.cuh"
#include "Context.h"
#include "Mma.cuh"

#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

using namespace tensorcore;

template <int HD, int W = 4> struct DecodeMmaConfig {
  static constexpr int kWarps = W;
  /// Keys per warp chunk: one buffer of keys and values is ~9 KB either way.
  static constexpr int kKeys = HD == 64 ? 32 : 16;
  /// Rows padded by 16 bytes: the 8 rows one ldmatrix reads then start in
  /// 8 different 16-byte bank groups.
  static constexpr int kStride = HD + 8; ///< elements
  static constexpr int kChunks = HD / 8; ///< 16-byte words per row
  static constexpr int kStages = 2;
  static constexpr int kStageElements = 2 * kKeys * kStride; ///< K, then V
  static constexpr size_t kWarpBytes = kStages * kStageElements * 2;
  static constexpr size_t kSharedBytes = kWarps * kWarpBytes;
  /// After the loop a warp's buffers hold its f32 outputs [16][HD], then
  /// the rows' maxima [16] and sums [16].
  static_assert(16 * (HD + 2) * sizeof(float) <= kWarpBytes,
                "a warp's results fit in its buffers");
};

constexpr float kLn2 = 0.6931471805599453f;

/// The shared memory a block of `warps` warps takes for heads of Dh.
size_t decodeSharedBytes(int64_t Dh, int warps) {
  if (warps == 8)
    return Dh == 64 ? DecodeMmaConfig<64, 8>::kSharedBytes
                    : DecodeMmaConfig<128, 8>::kSharedBytes;
  return Dh == 64 ? DecodeMmaConfig<64>::kSharedBytes
                  : DecodeMmaConfig<128>::kSharedBytes;
}

/// Warps a block gets: 8 where the grid (a block per batch row, KV head
/// and split) fits on the GPU at once and the device gives a block their
/// shared memory (~140 KB), so a batch-1 step's 256 keys take one chunk a
/// warp instead of two (H200, OPT-1.3B: 1.344 -> 1.281 ms a step); else
/// 4, as more and smaller blocks stream a batch's cache faster (batch 32:
/// 2.140 ms with 4, 2.557 with 8). HYBRID_CUDA_DECODE_WARPS=4 or 8 (read
/// once) overrides the grid's rule, to measure.
int decodeWarps(const AttnParams &p, const Context *context) {
  static const int forced = [] {
    const int n = envInteger("HYBRID_CUDA_DECODE_WARPS", 4, 8, 0);
    return n == 4 || n == 8 ? n : 0;
  }();
  const bool fits = decodeSharedBytes(p.Dh, 8) <= sharedLimit(context);
  if (forced)
    return fits ? forced : 4;
  return fits && context && p.B * p.Hkv * p.splits <= context->smCount ? 8 : 4;
}

constexpr int kTileRows = 16;

template <typename S, int HD, bool kPlain, int W>
__global__ void __launch_bounds__(32 * W) decodeMmaKernel(AttnParams p) {
  awaitInputs();
  using C = DecodeMmaConfig<HD, W>;
  constexpr int kScoreTiles = C::kKeys / 8, kOutTiles = HD / 8;
  extern __shared__ float4 decodeShared4[];
  const int warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  auto warpArea = [&](int w) {
    return reinterpret_cast<char *>(decodeShared4) + w * C::kWarpBytes;
  };
  S *mine = reinterpret_cast<S *>(warpArea(warp));
  const GroupTile tile = groupTile(p);
  const int64_t b = tile.bk / p.Hkv, hk = tile.bk % p.Hkv;
  const int split = blockIdx.y;
  // Appending: as the grouped kernel (Attention.cu).
  int64_t at = -1;
  if (p.kNew) {
    at = *p.appendAt;
    if (at < 0 || at > p.S - p.Tn)
      at = -1;
  }
  if (at >= 0 && split == 0) {
    const int64_t words = p.Tn * HD / 8;
    const uint4 *kSrc = static_cast<const uint4 *>(p.kNew) + tile.bk * words;
    const uint4 *vSrc = static_cast<const uint4 *>(p.vNew) + tile.bk * words;
    uint4 *kDst = reinterpret_cast<uint4 *>(static_cast<S *>(p.kCache) +
                                            (tile.bk * p.S + at) * HD);
    uint4 *vDst = reinterpret_cast<uint4 *>(static_cast<S *>(p.vCache) +
                                            (tile.bk * p.S + at) * HD);
    for (int64_t e = threadIdx.x; e < words; e += blockDim.x) {
      kDst[e] = kSrc[e];
      vDst[e] = vSrc[e];
    }
  }
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount); split rows: the combine
    if (p.splits == 1 || (p.counters && split == 0))
      for (int64_t e = threadIdx.x; e < tile.rows * HD; e += blockDim.x)
        static_cast<S *>(p.out)[tile.row0 * HD + e] = fromFloat<S>(NAN);
    return;
  }
  int64_t begin, end;
  groupKeyRange(p, tile.r0, tile.rows, keys, begin, end);
  const int used = p.splitsFor(end - begin);
  if (split >= used)
    return;
  const int64_t share = (end - begin + used - 1) / used;
  begin += split * share;
  end = std::min<int64_t>(end, begin + share);

  const S *K = static_cast<const S *>(p.k) + tile.bk * p.S * HD;
  const S *V = static_cast<const S *>(p.v) + tile.bk * p.S * HD;
  // The appended rows, indexed by key: row j is KNew[j] for j in
  // [at, at + Tn).
  const S *KNew =
      at < 0 ? nullptr
             : static_cast<const S *>(p.kNew) + (tile.bk * p.Tn - at) * HD;
  const S *VNew =
      at < 0 ? nullptr
             : static_cast<const S *>(p.vNew) + (tile.bk * p.Tn - at) * HD;
  // Whether key c0 + lane is staged: it exists in the split and is a token.
  auto present = [&](int64_t c0) {
    const int64_t j = c0 + lane;
    return lane < C::kKeys && j < end && p.keyVisible(b, j);
  };
  // Stages the chunk at c0 into `buffer` (absent rows as zeros); returns
  // the bits of the rows staged.
  auto stage = [&](int64_t c0, int buffer, bool mine0) {
    const unsigned rows = __ballot_sync(0xffffffffu, mine0);
    S *ks = mine + buffer * C::kStageElements;
    S *vs = ks + C::kKeys * C::kStride;
#pragma unroll
    for (int i = 0; i < C::kKeys * C::kChunks / 32; ++i) {
      const int e = lane + 32 * i;
      const int r = e / C::kChunks, c = e % C::kChunks;
      const int64_t j = c0 + r;
      const bool on = rows >> r & 1;
      const bool fresh = at >= 0 && j >= at && j < at + p.Tn;
      const S *kRow = on ? (fresh ? KNew : K) + j * HD + c * 8 : K;
      const S *vRow = on ? (fresh ? VNew : V) + j * HD + c * 8 : V;
      copy16(ks + r * C::kStride + c * 8, kRow, on);
      copy16(vs + r * C::kStride + c * 8, vRow, on);
    }
    commitCopies();
    return rows;
  };
  // The first chunk streams in while the warp loads its query rows.
  const int64_t step = static_cast<int64_t>(C::kKeys) * warps;
  int64_t c0 = begin + static_cast<int64_t>(C::kKeys) * warp;
  unsigned staged = c0 < end ? stage(c0, 0, present(c0)) : 0u;
  bool presentNext = present(c0 + step);

  // Query rows g and g + 8 of the tile as A fragments (zeros past it).
  unsigned qa[HD / 16][4];
  {
    const S *Q = static_cast<const S *>(p.q) + tile.row0 * HD;
    const bool lo = g < tile.rows, hi = g + 8 < tile.rows;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const int d = kk * 16 + 2 * t;
      auto word = [&](int row, int col, bool on) {
        return on ? *reinterpret_cast<const unsigned *>(Q + row * HD + col)
                  : 0u;
      };
      qa[kk][0] = word(g, d, lo);
      qa[kk][1] = word(g + 8, d, hi);
      qa[kk][2] = word(g, d + 8, lo);
      qa[kk][3] = word(g + 8, d + 8, hi);
    }
  }
  // This thread's two rows (tile rows g, g + 8): their visible keys,
  // running max (log2 units), partial sum and output columns.
  int64_t rowBegin[2], rowEnd[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    rowBegin[r] = rowEnd[r] = 0;
    if (row < tile.rows)
      p.keyRange((tile.r0 + row) % p.T, keys, rowBegin[r], rowEnd[r]);
  }
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
  float acc[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[n][e] = 0;
  const float scaleLog2 = p.scale * kLog2e;

  for (int n = 0; c0 < end; ++n, c0 += step) {
    const int64_t next = c0 + step;
    unsigned stagedNext = 0;
    if (next < end) {
      stagedNext = stage(next, (n + 1) % C::kStages, presentNext);
      presentNext = present(next + step); // lands while this chunk computes
      waitCopies<1>(); // chunk c0 has landed, the next may not have
    } else {
      waitCopies<0>();
    }
    __syncwarp();
    const S *ks = mine + (n % C::kStages) * C::kStageElements;
    const S *vs = ks + C::kKeys * C::kStride;

    float s[kScoreTiles][4];
    scoreKeys<S, kScoreTiles, HD, C::kStride>(s, qa, ks, lane);

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float chunkMax = -INFINITY;
#pragma unroll
      for (int j = 0; j < kScoreTiles; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = j * 8 + 2 * t + e;
          const int64_t key = c0 + col;
          const bool visible =
              (staged >> col & 1) && key >= rowBegin[r] && key < rowEnd[r];
          float &x = s[j][2 * r + e];
          if constexpr (kPlain) {
            x = visible ? x * scaleLog2 : -INFINITY;
          } else {
            const int64_t row = tile.r0 + g + 8 * r;
            x = visible ? p.score<S>(x, b, hk * p.group + row / p.T, row % p.T,
                                     key) *
                              kLog2e
                        : -INFINITY;
          }
          chunkMax = fmaxf(chunkMax, x);
        }
      softmaxStep(s, acc, m[r], l[r], r, chunkMax);
    }

    accumulateValues<S, C::kKeys, kOutTiles, C::kStride>(s, vs, acc, lane);
    __syncwarp(); // every lane is done with this buffer
    staged = stagedNext;
  }

  // The warp's results into its buffers (no copy is in flight: the last
  // chunk waited for all): outputs [16][HD], maxima [16], sums [16].
  float *outs = reinterpret_cast<float *>(mine);
  float *maxima = outs + 16 * HD, *sums = maxima + 16;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = l[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    const int row = g + 8 * r;
    if (t == 0) {
      maxima[row] = m[r];
      sums[row] = total;
    }
#pragma unroll
    for (int o = 0; o < kOutTiles; ++o)
      *reinterpret_cast<float2 *>(outs + row * HD + o * 8 + 2 * t) =
          make_float2(acc[o][2 * r], acc[o][2 * r + 1]);
  }
  __syncthreads();

  for (int64_t e = threadIdx.x; e < tile.rows * HD; e += blockDim.x) {
    const int r = static_cast<int>(e / HD), d = static_cast<int>(e % HD);
    float mBlock = -INFINITY;
    for (int w = 0; w < warps; ++w)
      mBlock = fmaxf(mBlock,
                     reinterpret_cast<const float *>(warpArea(w))[16 * HD + r]);
    float lBlock = 0, v = 0;
    for (int w = 0; w < warps; ++w) {
      const float *area = reinterpret_cast<const float *>(warpArea(w));
      const float mw = area[16 * HD + r];
      const float factor = softmaxCarry2(mw, mBlock);
      lBlock += area[16 * HD + 16 + r] * factor;
      v += area[r * HD + d] * factor;
    }
    const int64_t row = tile.row0 + r;
    if (used == 1) { // one split: no partials
      const float inv = mBlock == -INFINITY ? 0.0f : 1.0f / lBlock;
      static_cast<S *>(p.out)[row * HD + d] = fromFloat<S>(v * inv);
      continue;
    }
    float *part = p.partial + (row * p.splits + split) * (HD + 2);
    if (d == 0) {
      part[0] = mBlock * kLn2; // natural-log units, as combineParts reads
      part[1] = lBlock;
    }
    part[2 + d] = v;
  }
  if (used == 1 || !p.counters)
    return;
  // The tile's last block to finish combines its rows (in split order).
  if (lastBlockToArrive(p.counters + blockIdx.x, static_cast<unsigned>(used)))
    for (int r = 0; r < tile.rows; ++r)
      combineParts<S>(p, tile.row0 + r, used);
}

template <typename S, int HD, int W>
void launchFor(const AttnParams &p, Context *context, cudaStream_t stream) {
  using C = DecodeMmaConfig<HD, W>;
  const bool plain = !p.mask && !p.slopes;
  auto kernel = plain ? decodeMmaKernel<S, HD, true, W>
                      : decodeMmaKernel<S, HD, false, W>;
  if (C::kSharedBytes > 48 * 1024)
    allowSharedMemory(context, reinterpret_cast<const void *>(kernel),
                      C::kSharedBytes, "attention");
  const dim3 grid(static_cast<unsigned>(p.B * p.Hkv),
                  static_cast<unsigned>(p.splits));
  launch(kernel, grid, 32 * C::kWarps, C::kSharedBytes, stream, p);
  checkLaunch("attention");
}

} // namespace

bool decodeMmaApplies(const AttnParams &p, DType dtype, Context *context) {
  const bool aligned = reinterpret_cast<uintptr_t>(p.q) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
  if (!context || context->computeMajor < 8 || !aligned || !p.stageWords ||
      p.Dh != p.Dv || (p.Dh != 64 && p.Dh != 128) ||
      p.group * p.T > kTileRows || p.B * p.Hkv > 0x7fffffff ||
      (dtype != DType::BF16 && dtype != DType::F16))
    return false;
  const size_t need = decodeSharedBytes(p.Dh, decodeWarps(p, context));
  return need <= sharedLimit(context);
}

void launchDecodeMma(const AttnParams &p, DType dtype, Context *context,
                     cudaStream_t stream) {
  auto run = [&](auto warps) {
    constexpr int W = decltype(warps)::value;
    const bool bf16 = dtype == DType::BF16;
    if (p.Dh == 64)
      bf16 ? launchFor<Bf16, 64, W>(p, context, stream)
           : launchFor<F16, 64, W>(p, context, stream);
    else
      bf16 ? launchFor<Bf16, 128, W>(p, context, stream)
           : launchFor<F16, 128, W>(p, context, stream);
  };
  if (decodeWarps(p, context) == 8)
    run(std::integral_constant<int, 8>{});
  else
    run(std::integral_constant<int, 4>{});
}

} // namespace hybrid::cuda::kernels
