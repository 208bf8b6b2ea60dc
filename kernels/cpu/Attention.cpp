// attention: scaled dot-product attention with grouped KV heads, causal and
// sliding-window limits aligned to the end of the keys, an additive
// broadcast mask, ALiBi slopes, a run-time key count (the filled slots of a
// KV cache) and a per-row key padding mask, on f32, bf16 or f16 (computed in
// f32). Queries run in blocks of up to 64 against 256-key blocks as GEMMs
// with an online (running-max) softmax, so scratch does not grow with the
// sequence. Key blocks start at each batch row's first visible key, so a
// left-padded row gives bitwise what it gives alone (the GEMM is batch
// invariant, see Gemm.h). A row with no visible key (or only -inf scores)
// gives zeros, not NaN. An attention that appends (ops::Attention::append)
// first writes the new keys and values into its caches, as cache_write.
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Query rows and keys per block: a 64 x 256 score block and its 64 x Dv
/// accumulator stay in L2, and each GEMM is large enough to run near the
/// kernel's peak.
constexpr int64_t kQueryBlock = 64, kKeyBlock = 256;

/// NaN-propagating maximum.
inline float maxOf(float m, float v) {
  return (v > m || v != v) && m == m ? v : m;
}

/// One call as the CPU kernel runs it: the shared problem plus the keys
/// that exist (S' <= S: key_length's value at run time, else S; only keys
/// [0, keys) are ever read, so a decode step pays for the filled slots of
/// its cache, not its capacity; S stays the buffers' stride) and the
/// result.
struct CpuAttention : AttentionProblem {
  int64_t keys = 0;
  void *out = nullptr;

  /// The first key of batch row b that is a token (`keys` when none is):
  /// where its key blocks start, so that the padding in front of a row
  /// changes neither the blocks its keys fall in nor the order they are
  /// summed in.
  int64_t firstVisible(int64_t b) const {
    int64_t j = 0;
    while (j < keys && !keyVisible(b, j))
      ++j;
    return j;
  }

  /// Query rows per block: decode steps (T = 1) take one.
  int64_t queryRows() const { return std::min(T, kQueryBlock); }

  // Element offsets of a head's first row.
  int64_t queryHead(int64_t b, int64_t h) const {
    return (b * Hq + h) * T * Dh;
  }
  int64_t keyHead(int64_t b, int64_t h) const {
    return (b * Hkv + h / group) * S * Dh;
  }
  int64_t valueHead(int64_t b, int64_t h) const {
    return (b * Hkv + h / group) * S * Dv;
  }
  int64_t outHead(int64_t b, int64_t h) const { return (b * Hq + h) * T * Dv; }
};

/// Shapes and attributes of the call, validated (no data needed).
CpuAttention describe(const KernelCall &call) {
  const auto a = AttentionArgs::bind(call, "attention", Binding::ShapesOnly);
  CpuAttention p;
  static_cast<AttentionProblem &>(p) = describeAttention(a);
  p.keys = p.S;
  p.out = a.out.data;
  return p;
}

/// One thread's scratch: a query block of R = queryRows() rows; the f32
/// copies of Q, K and V blocks exist only for bf16/f16 (f32 blocks are
/// read in place).
struct BlockBuffers {
  float *query = nullptr; // [R, Dh]
  float *key = nullptr;   // [kKeyBlock, Dh]
  float *value = nullptr; // [kKeyBlock, Dv]
  float *scores;          // [R, kKeyBlock]
  float *acc;             // [R, Dv]
  float *rowMax;          // [R]
  double *rowSum;         // [R]
};
BlockBuffers carveBlocks(Carve &carve, const CpuAttention &p) {
  const int64_t rows = p.queryRows();
  BlockBuffers b;
  if (p.dtype != DType::F32) {
    b.query = carve.take<float>(rows * p.Dh);
    b.key = carve.take<float>(kKeyBlock * p.Dh);
    b.value = carve.take<float>(kKeyBlock * p.Dv);
  }
  b.scores = carve.take<float>(rows * kKeyBlock);
  b.acc = carve.take<float>(rows * p.Dv);
  b.rowMax = carve.take<float>(rows);
  b.rowSum = carve.take<double>(rows);
  return b;
}

ScratchLayout attentionScratch(const KernelCall &call) {
  const CpuAttention p = describe(call);
  Carve carve;
  carveBlocks(carve, p);
  return {0, carve.used()};
}

template <typename S> struct Attend {
  const CpuAttention &p;
  const S *q = static_cast<const S *>(p.q);
  const S *k = static_cast<const S *>(p.k);
  const S *v = static_cast<const S *>(p.v);
  const S *mask = static_cast<const S *>(p.mask);
  const S *slopes = static_cast<const S *>(p.slopes);
  S *out = static_cast<S *>(p.out);

  /// Adds the mask and ALiBi bias of (b, h, i) to scores[j - offset] for j
  /// in [begin, end).
  void addBias(int64_t b, int64_t h, int64_t i, int64_t begin, int64_t end,
               float *scores, int64_t offset) const {
    if (mask) {
      const S *m = mask + b * p.maskStrides[0] + h * p.maskStrides[1] +
                   i * p.maskStrides[2];
      const int64_t ms = p.maskStrides[3];
      for (int64_t j = begin; j < end; ++j)
        scores[j - offset] += toFloat(m[j * ms]);
    }
    if (slopes) {
      const float slope = toFloat(slopes[h]);
      for (int64_t j = begin; j < end; ++j)
        scores[j - offset] += alibiBias(slope, i, j);
    }
  }

  /// Sets scores[j - offset] to -inf for the padding keys of batch row b in
  /// [begin, end). After the bias: a key mask wins over any additive mask.
  void hidePadding(int64_t b, int64_t begin, int64_t end, float *scores,
                   int64_t offset) const {
    if (!p.keyMask)
      return;
    for (int64_t j = begin; j < end; ++j)
      if (!p.keyVisible(b, j))
        scores[j - offset] = kNegInf;
  }

  /// Query blocks of every head as GEMMs against key blocks, with a running
  /// maximum and sum per query row (online softmax): scratch holds one
  /// block per thread, whatever the sequence lengths. Small problems (a
  /// decode step) stay on the calling thread.
  void run(const KernelCall &call, const ScratchLayout &layout,
           int threads) const {
    const int64_t rowsPerBlock = p.queryRows();
    const int64_t blocksPerHead = (p.T + rowsPerBlock - 1) / rowsPerBlock;
    const int64_t tasks = p.B * p.Hq * blocksPerHead;
    const bool parallel = worthThreads(
        tasks, rowsPerBlock * std::max<int64_t>(p.keys, 1) * (p.Dh + p.Dv));
    parallelChunkIndices(tasks, parallel ? threads : 1, [&](int64_t task) {
      Carve carve(threadScratch(call, layout, workerSlot()));
      const BlockBuffers buf = carveBlocks(carve, p);
      const int64_t bh = task / blocksPerHead;
      const int64_t i0 = task % blocksPerHead * rowsPerBlock;
      queryBlock(bh / p.Hq, bh % p.Hq, i0, std::min(p.T, i0 + rowsPerBlock),
                 buf);
    });
  }

  /// Rows [i0, i1) of head h. A row's result depends on its own query, keys
  /// and limits only: key blocks start at the batch row's first visible key
  /// (keys before it are never read), scores past a row's own range weigh
  /// exactly 0 (finite values times 0 leave the sums' bits alone), and the
  /// GEMMs give each element the same bits whatever the block's size.
  void queryBlock(int64_t b, int64_t h, int64_t i0, int64_t i1,
                  const BlockBuffers &buf) const {
    const int64_t rows = i1 - i0;
    const S *Q = q + p.queryHead(b, h) + i0 * p.Dh;
    const S *K = k + p.keyHead(b, h), *V = v + p.valueHead(b, h);
    const float *Qf = reinterpret_cast<const float *>(Q);
    if constexpr (!std::is_same_v<S, float>) {
      for (int64_t e = 0; e < rows * p.Dh; ++e)
        buf.query[e] = toFloat(Q[e]);
      Qf = buf.query;
    }
    std::fill(buf.acc, buf.acc + rows * p.Dv, 0.0f);
    std::fill(buf.rowMax, buf.rowMax + rows, kNegInf);
    std::fill(buf.rowSum, buf.rowSum + rows, 0.0);
    // Keys any row of the block sees (ranges move right with the row), in
    // blocks counted from the row's first token.
    int64_t first, unused, last;
    p.keyRange(i0, p.keys, first, unused);
    p.keyRange(i1 - 1, p.keys, unused, last);
    const int64_t origin = p.firstVisible(b);
    const int64_t skipped =
        first > origin ? (first - origin) / kKeyBlock * kKeyBlock : 0;
    for (int64_t j0 = origin + skipped; j0 < last; j0 += kKeyBlock) {
      const int64_t keys = std::min(kKeyBlock, last - j0);
      const float *Kf = reinterpret_cast<const float *>(K + j0 * p.Dh);
      const float *Vf = reinterpret_cast<const float *>(V + j0 * p.Dv);
      if constexpr (!std::is_same_v<S, float>) {
        for (int64_t e = 0; e < keys * p.Dh; ++e)
          buf.key[e] = toFloat(K[j0 * p.Dh + e]);
        for (int64_t e = 0; e < keys * p.Dv; ++e)
          buf.value[e] = toFloat(V[j0 * p.Dv + e]);
        Kf = buf.key;
        Vf = buf.value;
      }
      gemm(false, true, rows, keys, p.Dh, p.scale, Qf, p.Dh, Kf, p.Dh, 0.0f,
           buf.scores, keys);
      for (int64_t r = 0; r < rows; ++r) {
        float *s = buf.scores + r * keys;
        float *acc = buf.acc + r * p.Dv;
        int64_t begin, end;
        p.keyRange(i0 + r, p.keys, begin, end);
        begin = std::clamp(begin, j0, j0 + keys);
        end = std::clamp(end, begin, j0 + keys);
        std::fill(s, s + (begin - j0), kNegInf);
        std::fill(s + (end - j0), s + keys, kNegInf);
        addBias(b, h, i0 + r, begin, end, s, j0);
        hidePadding(b, begin, end, s, j0);
        float blockMax = kNegInf;
        for (int64_t j = begin; j < end; ++j)
          blockMax = maxOf(blockMax, s[j - j0]);
        const float m = maxOf(buf.rowMax[r], blockMax);
        if (m == kNegInf) { // nothing visible yet: contributes nothing
          std::fill(s, s + keys, 0.0f);
          continue;
        }
        // Rescale what earlier blocks accumulated to the new maximum.
        const float rescale = softmaxCarry(buf.rowMax[r], m);
        if (rescale != 1.0f) {
          buf.rowSum[r] *= rescale;
          for (int64_t d = 0; d < p.Dv; ++d)
            acc[d] *= rescale;
        }
        buf.rowMax[r] = m;
        double sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          s[j] = std::exp(s[j] - m); // -inf gives 0
          sum += s[j];
        }
        buf.rowSum[r] += sum;
      }
      gemm(false, false, rows, p.Dv, keys, 1.0f, buf.scores, keys, Vf, p.Dv,
           1.0f, buf.acc, p.Dv);
    }
    S *O = out + p.outHead(b, h) + i0 * p.Dv;
    for (int64_t r = 0; r < rows; ++r) {
      const double sum = buf.rowSum[r];
      const float inv =
          buf.rowMax[r] == kNegInf ? 0.0f : static_cast<float>(1.0 / sum);
      for (int64_t d = 0; d < p.Dv; ++d)
        O[r * p.Dv + d] = fromFloat<S>(buf.acc[r * p.Dv + d] * inv);
    }
  }
};

/// The appended keys and values written into the caches (the key and
/// value operands' memory) at append_at along axis 2: cache_write, with its
/// checks.
void appendKeysAndValues(const AttentionArgs &a, const CpuAttention &p) {
  describeAttentionAppend(a, p);
  cacheWriteInto(*a.appendKey, *a.appendAt, *a.keyOut, 2);
  cacheWriteInto(*a.appendValue, *a.appendAt, *a.valueOut, 2);
}

} // namespace

void attention(const KernelCall &call) {
  // (An attention that does not append may leave off the last three.)
  const auto a = AttentionArgs::bind(call, "attention");
  CpuAttention p = describe(call);
  if (a.attrs.append)
    appendKeysAndValues(a, p);
  const ScratchLayout layout = attentionScratch(call);
  const int threads = scratchThreads(call, layout, "attention");
  if (p.keyLength) {
    const int64_t n = *p.keyLength;
    if (n < 0 || n > p.S)
      fail("attention", "key_length " + std::to_string(n) + " is outside [0, " +
                            std::to_string(p.S) + "], the keys of key " +
                            shapeToString(a.key.shape));
    p.keys = n;
  }
  if (p.B * p.Hq * p.T * p.Dv == 0)
    return;
  checkGemmSizes(kQueryBlock, p.Dv, p.Dh, "attention");
  visitFloat(p.dtype, "attention", "query", [&](auto zero) {
    using S = decltype(zero);
    Attend<S>{p}.run(call, layout, threads);
  });
}

size_t attentionScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<attentionScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
