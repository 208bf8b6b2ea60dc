// attention: scaled dot-product attention with grouped KV heads, causal and
// sliding-window limits aligned to the end of the keys, an additive
// broadcast mask and ALiBi slopes. Softmax is max-subtracted; a row with no
// visible key (or only -inf scores) gives zeros, not NaN.
#include "Gemm.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

struct AttentionProblem {
  int64_t B, Hq, Hkv, T, S, Dh, Dv;
  float scale;
  bool causal;
  int64_t window;
  const float *q, *k, *v;
  const float *mask = nullptr;
  int64_t maskStrides[4] = {0, 0, 0, 0}; // over [B, Hq, T, S]
  const float *slopes = nullptr;
  float *out;

  /// Visible keys [begin, end) of query row i.
  void keyRange(int64_t i, int64_t &begin, int64_t &end) const {
    const int64_t last = i + S - T; // the key aligned with query i
    begin = 0;
    end = S;
    if (causal)
      end = std::clamp<int64_t>(last + 1, 0, S);
    if (window > 0 && last + 1 > window) // (no overflow for huge windows)
      begin = std::min<int64_t>(last - window + 1, S);
  }

  /// Adds the mask and ALiBi bias of (b, h, i) to scores[j] for j in
  /// [begin, end).
  void addBias(int64_t b, int64_t h, int64_t i, int64_t begin, int64_t end,
               float *scores) const {
    if (mask) {
      const float *m =
          mask + b * maskStrides[0] + h * maskStrides[1] + i * maskStrides[2];
      const int64_t ms = maskStrides[3];
      for (int64_t j = begin; j < end; ++j)
        scores[j] += m[j * ms];
    }
    if (slopes) {
      const float slope = slopes[h];
      for (int64_t j = begin; j < end; ++j)
        scores[j] += slope * static_cast<float>(j - i);
    }
  }

  /// Turns scores[begin, end) into probabilities in place; false when the
  /// row is fully masked (every score -inf).
  static bool softmaxInPlace(float *scores, int64_t begin, int64_t end) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = begin; j < end; ++j)
      m = (scores[j] > m || scores[j] != scores[j]) && m == m ? scores[j] : m;
    if (m == -std::numeric_limits<float>::infinity())
      return false;
    double sum = 0;
    for (int64_t j = begin; j < end; ++j) {
      scores[j] = std::exp(scores[j] - m);
      sum += scores[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = begin; j < end; ++j)
      scores[j] *= inv;
    return true;
  }

  const float *queryHead(int64_t b, int64_t h) const {
    return q + (b * Hq + h) * T * Dh;
  }
  const float *keyHead(int64_t b, int64_t h) const {
    return k + (b * Hkv + h / (Hq / Hkv)) * S * Dh;
  }
  const float *valueHead(int64_t b, int64_t h) const {
    return v + (b * Hkv + h / (Hq / Hkv)) * S * Dv;
  }
  float *outHead(int64_t b, int64_t h) const {
    return out + (b * Hq + h) * T * Dv;
  }
};

/// Problems from this many score multiply-adds use the GEMM path.
constexpr int64_t kGemmPathWork = 1 << 18;

/// One query row at a time, heads in parallel: for decode steps and short
/// prompts, where GEMM calls would cost more than they save.
void attendByRows(const AttentionProblem &p) {
  PerThreadScratch<float> scratch(p.S);
  parallelFor(p.B * p.Hq, p.T * p.S * (p.Dh + p.Dv), [&](int64_t bh) {
    const int64_t b = bh / p.Hq, h = bh % p.Hq;
    const float *Q = p.queryHead(b, h), *K = p.keyHead(b, h),
                *V = p.valueHead(b, h);
    float *O = p.outHead(b, h);
    float *scores = scratch.get();
    for (int64_t i = 0; i < p.T; ++i) {
      float *o = O + i * p.Dv;
      std::fill(o, o + p.Dv, 0.0f);
      int64_t begin, end;
      p.keyRange(i, begin, end);
      if (begin >= end)
        continue;
      const float *qi = Q + i * p.Dh;
      for (int64_t j = begin; j < end; ++j) {
        const float *kj = K + j * p.Dh;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < p.Dh; ++d)
          dot += qi[d] * kj[d];
        scores[j] = dot * p.scale;
      }
      p.addBias(b, h, i, begin, end, scores);
      if (!AttentionProblem::softmaxInPlace(scores, begin, end))
        continue;
      for (int64_t j = begin; j < end; ++j) {
        const float w = scores[j];
        const float *vj = V + j * p.Dv;
#pragma omp simd
        for (int64_t d = 0; d < p.Dv; ++d)
          o[d] += w * vj[d];
      }
    }
  });
}

/// Whole heads as two GEMMs (scores = Q K^T, out = P V) with the softmax in
/// between: for prompts. Heads run in parallel when there are enough of them,
/// else each head's GEMMs and rows do.
void attendByGemm(const AttentionProblem &p) {
  const int64_t heads = p.B * p.Hq;
  auto attendHead = [&](int64_t bh, float *probs) {
    const int64_t b = bh / p.Hq, h = bh % p.Hq;
    gemm(false, true, p.T, p.S, p.Dh, p.scale, p.queryHead(b, h), p.Dh,
         p.keyHead(b, h), p.Dh, 0.0f, probs, p.S);
    parallelFor(p.T, p.S * 16, [&](int64_t i) {
      float *row = probs + i * p.S;
      int64_t begin, end;
      p.keyRange(i, begin, end);
      bool any = begin < end;
      if (any) {
        p.addBias(b, h, i, begin, end, row);
        any = AttentionProblem::softmaxInPlace(row, begin, end);
      }
      if (!any)
        begin = end = 0;
      std::fill(row, row + begin, 0.0f);
      std::fill(row + end, row + p.S, 0.0f);
    });
    gemm(false, false, p.T, p.Dv, p.S, 1.0f, probs, p.S, p.valueHead(b, h),
         p.Dv, 0.0f, p.outHead(b, h), p.Dv);
  };
  if (heads >= omp_get_max_threads() && !omp_in_parallel()) {
    PerThreadScratch<float> scratch(p.T * p.S);
#pragma omp parallel for schedule(dynamic)
    for (int64_t bh = 0; bh < heads; ++bh)
      attendHead(bh, scratch.get());
  } else {
    std::vector<float> probs(p.T * p.S);
    for (int64_t bh = 0; bh < heads; ++bh)
      attendHead(bh, probs.data());
  }
}

} // namespace

void attention(const KernelCall &call) {
  expectOperands(call, "attention", 3, 2);
  const ConstTensor &query = call.operands[0], &key = call.operands[1],
                    &value = call.operands[2];
  const Tensor &result = call.results[0];
  for (const ConstTensor *t : {&query, &key, &value})
    expectDType(*t, DType::F32, "attention", "query, key and value");
  expectDType(result, DType::F32, "attention", "result");
  expectRank(query, 4, "attention", "query");
  expectRank(key, 4, "attention", "key");
  expectRank(value, 4, "attention", "value");
  AttentionProblem p;
  p.B = query.shape[0];
  p.Hq = query.shape[1];
  p.T = query.shape[2];
  p.Dh = query.shape[3];
  p.Hkv = key.shape[1];
  p.S = key.shape[2];
  p.Dv = value.shape[3];
  if (key.shape[0] != p.B || key.shape[3] != p.Dh)
    fail("attention", "key " + shapeToString(key.shape) +
                          " does not match query " +
                          shapeToString(query.shape));
  if (value.shape[0] != p.B || value.shape[1] != p.Hkv || value.shape[2] != p.S)
    fail("attention", "value " + shapeToString(value.shape) +
                          " does not match key " + shapeToString(key.shape));
  if (p.Hkv == 0 || p.Hq % p.Hkv != 0)
    fail("attention", std::to_string(p.Hq) +
                          " query heads are not a multiple of " +
                          std::to_string(p.Hkv) + " KV heads");
  expectShape(result, {p.B, p.Hq, p.T, p.Dv}, "attention", "result");

  const ops::Attention &attrs = call.attrs<ops::Attention>();
  p.scale = static_cast<float>(attrs.scale);
  p.causal = attrs.causal;
  p.window = attrs.slidingWindow;
  p.q = query.as<float>();
  p.k = key.as<float>();
  p.v = value.as<float>();
  p.out = result.as<float>();
  if (const ConstTensor *maskOperand = optionalOperand(call, 3)) {
    const ConstTensor &mask = *maskOperand;
    expectDType(mask, DType::F32, "attention", "mask");
    const Shape full = {p.B, p.Hq, p.T, p.S};
    if (mask.rank() > 4)
      fail("attention",
           "mask " + shapeToString(mask.shape) + " has rank above 4");
    const int64_t lead = 4 - mask.rank();
    int64_t stride = 1;
    for (int64_t d = 3; d >= lead; --d) {
      int64_t dim = mask.shape[d - lead];
      if (dim != full[d] && dim != 1)
        fail("attention", "mask " + shapeToString(mask.shape) +
                              " does not broadcast to " + shapeToString(full));
      p.maskStrides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
    p.mask = mask.as<float>();
  }
  if (const ConstTensor *slopesOperand = optionalOperand(call, 4)) {
    const ConstTensor &slopes = *slopesOperand;
    expectDType(slopes, DType::F32, "attention", "alibi_slopes");
    if (slopes.numel() != p.Hq)
      fail("attention", "alibi_slopes " + shapeToString(slopes.shape) +
                            " must hold one slope per query head (" +
                            std::to_string(p.Hq) + ")");
    p.slopes = slopes.as<float>();
  }
  if (result.numel() == 0)
    return;
  if (p.S == 0) {
    std::fill(p.out, p.out + result.numel(), 0.0f);
    return;
  }
  const bool blasSized =
      p.T <= INT_MAX && p.S <= INT_MAX && p.Dh <= INT_MAX && p.Dv <= INT_MAX;
  if (p.T > 1 && p.Dh > 0 && blasSized && p.T * p.S * p.Dh >= kGemmPathWork)
    attendByGemm(p);
  else
    attendByRows(p);
}

} // namespace hybrid::cpu::kernels
