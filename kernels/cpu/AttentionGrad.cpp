// attention_grad: attention's backward (ops::AttentionGrad) on f32, bf16 or
// f16, computed in f32 (row sums in double), one query row at a time: the
// row's probabilities are recomputed as the forward does (scale, additive
// mask, ALiBi, causal and window limits, key padding; no visible key gives
// zeros), then dv += p^T dO, dp = dO v^T, ds = p (dp - rowsum(dp p)) scale,
// dq = ds k, dk += ds^T q. Work items are (batch row, KV head): each sums
// the query heads of its group into f32 accumulators of its own, so no two
// threads write the same gradient.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Attention.h"

#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

AttentionProblem describe(const KernelCall &call) {
  return describeAttentionGrad(
      AttentionGradArgs::bind(call, "attention_grad", Binding::ShapesOnly));
}

/// One work item's f32 buffers: its KV head's keys and values, their
/// gradients' accumulators, and one query row's vectors.
struct HeadBuffers {
  float *key, *value;         // [S, Dh], [S, Dv]
  float *gradKey, *gradValue; // [S, Dh], [S, Dv]
  float *query, *gradOut;     // [Dh], [Dv]
  float *gradQuery;           // [Dh]
  float *prob, *gradProb;     // [S]
};
HeadBuffers carveHead(Carve &carve, const AttentionProblem &p) {
  HeadBuffers h;
  h.key = carve.take<float>(p.S * p.Dh);
  h.value = carve.take<float>(p.S * p.Dv);
  h.gradKey = carve.take<float>(p.S * p.Dh);
  h.gradValue = carve.take<float>(p.S * p.Dv);
  h.query = carve.take<float>(p.Dh);
  h.gradOut = carve.take<float>(p.Dv);
  h.gradQuery = carve.take<float>(p.Dh);
  h.prob = carve.take<float>(p.S);
  h.gradProb = carve.take<float>(p.S);
  return h;
}

ScratchLayout attentionGradScratch(const KernelCall &call) {
  const AttentionProblem p = describe(call);
  Carve carve;
  carveHead(carve, p);
  return {0, carve.used()};
}

float dot(const float *a, const float *b, int64_t n) {
  float sum = 0;
  for (int64_t d = 0; d < n; ++d)
    sum += a[d] * b[d];
  return sum;
}

template <typename S> struct Backward {
  const AttentionProblem &p;
  const S *q, *k, *v, *gradOut, *mask, *slopes;
  S *gradQ, *gradK, *gradV;

  static void load(const S *from, int64_t n, float *to) {
    for (int64_t e = 0; e < n; ++e)
      to[e] = toFloat(from[e]);
  }
  static void store(const float *from, int64_t n, S *to) {
    for (int64_t e = 0; e < n; ++e)
      to[e] = fromFloat<S>(from[e]);
  }

  /// The probabilities of query row i of head (b, h) into buf.prob over
  /// [begin, end) (zeros where masked); false when the row sees no key.
  bool probabilities(const HeadBuffers &buf, int64_t b, int64_t h, int64_t i,
                     int64_t begin, int64_t end) const {
    const float slope = slopes ? toFloat(slopes[h]) : 0.0f;
    float max = kNegInf;
    for (int64_t j = begin; j < end; ++j) {
      float s = kNegInf;
      if (p.keyVisible(b, j)) {
        s = dot(buf.query, buf.key + j * p.Dh, p.Dh) * p.scale;
        if (mask)
          s += toFloat(mask[p.maskAt(b, h, i, j)]);
        if (slopes)
          s += alibiBias(slope, i, j);
      }
      buf.prob[j] = s;
      max = std::max(max, s);
    }
    if (max == kNegInf)
      return false;
    double sum = 0;
    for (int64_t j = begin; j < end; ++j) {
      buf.prob[j] = std::exp(buf.prob[j] - max);
      sum += buf.prob[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = begin; j < end; ++j)
      buf.prob[j] *= inv;
    return true;
  }

  /// Query row i of head (b, h): its dq, and its part of its KV head's dk
  /// and dv.
  void row(const HeadBuffers &buf, int64_t b, int64_t h, int64_t i) const {
    const int64_t qRow = ((b * p.Hq + h) * p.T + i) * p.Dh;
    const int64_t oRow = ((b * p.Hq + h) * p.T + i) * p.Dv;
    std::fill(buf.gradQuery, buf.gradQuery + p.Dh, 0.0f);
    int64_t begin, end;
    p.keyRange(i, begin, end);
    load(q + qRow, p.Dh, buf.query);
    if (begin < end && probabilities(buf, b, h, i, begin, end)) {
      load(gradOut + oRow, p.Dv, buf.gradOut);
      double rowSum = 0; // D = rowsum(dp p)
      for (int64_t j = begin; j < end; ++j) {
        buf.gradProb[j] = dot(buf.gradOut, buf.value + j * p.Dv, p.Dv);
        rowSum += static_cast<double>(buf.gradProb[j]) * buf.prob[j];
      }
      const float D = static_cast<float>(rowSum);
      for (int64_t j = begin; j < end; ++j) {
        const float prob = buf.prob[j];
        if (prob == 0)
          continue;
        const float ds = prob * (buf.gradProb[j] - D) * p.scale;
        float *dk = buf.gradKey + j * p.Dh, *dv = buf.gradValue + j * p.Dv;
        const float *key = buf.key + j * p.Dh;
        for (int64_t d = 0; d < p.Dh; ++d) {
          buf.gradQuery[d] += ds * key[d];
          dk[d] += ds * buf.query[d];
        }
        for (int64_t d = 0; d < p.Dv; ++d)
          dv[d] += prob * buf.gradOut[d];
      }
    }
    store(buf.gradQuery, p.Dh, gradQ + qRow);
  }

  /// Every query head of KV head (b, kv).
  void head(const HeadBuffers &buf, int64_t b, int64_t kv) const {
    const int64_t kHead = (b * p.Hkv + kv) * p.S;
    load(k + kHead * p.Dh, p.S * p.Dh, buf.key);
    load(v + kHead * p.Dv, p.S * p.Dv, buf.value);
    std::fill(buf.gradKey, buf.gradKey + p.S * p.Dh, 0.0f);
    std::fill(buf.gradValue, buf.gradValue + p.S * p.Dv, 0.0f);
    for (int64_t g = 0; g < p.group; ++g)
      for (int64_t i = 0; i < p.T; ++i)
        row(buf, b, kv * p.group + g, i);
    store(buf.gradKey, p.S * p.Dh, gradK + kHead * p.Dh);
    store(buf.gradValue, p.S * p.Dv, gradV + kHead * p.Dv);
  }

  void run(const KernelCall &call, const ScratchLayout &layout,
           int threads) const {
    const int64_t work = p.group * p.T * p.S * 2 * (p.Dh + p.Dv);
    parallelFor(
        p.B * p.Hkv, work,
        [&](int64_t item) {
          Carve carve(threadScratch(call, layout, workerSlot()));
          head(carveHead(carve, p), item / p.Hkv, item % p.Hkv);
        },
        threads);
  }
};

} // namespace

void attentionGrad(const KernelCall &call) {
  const auto a = AttentionGradArgs::bind(call, "attention_grad");
  const AttentionProblem p = describe(call);
  const ScratchLayout layout = attentionGradScratch(call);
  const int threads = scratchThreads(call, layout, "attention_grad");
  visitFloat(p.dtype, "attention_grad", "query", [&](auto zero) {
    using S = decltype(zero);
    Backward<S>{p,
                a.query.as<S>(),
                a.key.as<S>(),
                a.value.as<S>(),
                a.gradOut.as<S>(),
                a.mask ? a.mask->as<S>() : nullptr,
                a.alibiSlopes ? a.alibiSlopes->as<S>() : nullptr,
                a.gradQuery.as<S>(),
                a.gradKey.as<S>(),
                a.gradValue.as<S>()}
        .run(call, layout, threads);
  });
}

size_t attentionGradScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<attentionGradScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
