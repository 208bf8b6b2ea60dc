// sample: the next token of each row of logits, greedy or drawn under
// temperature, top-k and top-p with a Philox uniform per (seed, counter,
// row), so every backend draws the same tokens for the same seed and step.
// Token weights are the integers of common/TokenWeights.h (the CUDA kernel
// computes the same bits), so every sum below is exact.
#include "Sample.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Sampling.h"
#include "common/TokenWeights.h"
#include "hybrid/Philox.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// The order tokens are kept and walked in: most likely first, ties by
/// index (a strict total order, so any sorting algorithm gives the same).
struct MoreLikely {
  const uint64_t *weight;
  bool operator()(int32_t a, int32_t b) const {
    return weight[a] > weight[b] || (weight[a] == weight[b] && a < b);
  }
};

/// Tokens sorted on demand: order[0, sorted) is in walking order and every
/// token after it comes later. Walks usually stop within the first few
/// dozen tokens, so a row costs O(V) (selection) rather than a full sort;
/// the worst case (a flat distribution) is O(V log V).
class RankedTokens {
public:
  RankedTokens(int32_t *order, int64_t n, const uint64_t *weight)
      : order_(order), n_(n), less_{weight} {}

  int32_t operator[](int64_t i) {
    if (i >= sorted_)
      sortFirst(i + 1);
    return order_[i];
  }

  /// Puts at least the first `count` tokens in walking order.
  void sortFirst(int64_t count) {
    // Doubling the sorted prefix keeps repeated extensions O(V log V).
    constexpr int64_t kFirstBatch = 64;
    const int64_t next =
        std::min(n_, std::max({count, 2 * sorted_, kFirstBatch}));
    if (next <= sorted_)
      return;
    if (next < n_)
      std::nth_element(order_ + sorted_, order_ + next, order_ + n_, less_);
    std::sort(order_ + sorted_, order_ + next, less_);
    sorted_ = next;
  }

private:
  int32_t *order_;
  int64_t n_, sorted_ = 0;
  MoreLikely less_;
};

ScratchLayout sampleScratch(const KernelCall &call) {
  using In = ops::Sample::In;
  const SampleProblem s = describeSampling(call.operands.at(In::logits),
                                           call.operands.at(In::sampling),
                                           call.operands.at(In::rng), "sample");
  Carve carve;
  carveSampleRow(carve, s.V);
  return {0, carve.used()};
}

/// Fills weight[j] = tokenWeight(logit j) and appends the tokens of weight
/// above 0 to `order` (by index); returns how many. The weights are the
/// bits common/TokenWeights.h defines, so any instruction set gives the
/// same.
template <typename S>
inline int64_t weighTokens(const S *logits, int64_t V, float top,
                           float temperature, int q, uint64_t *weight,
                           int32_t *order) {
  int64_t n = 0;
  for (int64_t j = 0; j < V; ++j) {
    const uint64_t w =
        sampling::tokenWeight(toFloat(logits[j]), top, temperature, q);
    if (w > 0) {
      weight[j] = w;
      order[n++] = static_cast<int32_t>(j);
    }
  }
  return n;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__FMA__)
// A build for any x86-64 compiles std::fma as a call into libm (software
// on CPUs without FMA, ~15x slower); the same loop compiled for FMA runs on
// CPUs that have it (the results are the same: fma is exact either way).
// flatten inlines the weight's whole call tree, so every fma in it is one
// instruction.
#define HYBRID_SAMPLE_FMA_DISPATCH 1
template <typename S>
__attribute__((target("fma"), flatten)) int64_t
weighTokensFma(const S *logits, int64_t V, float top, float temperature, int q,
               uint64_t *weight, int32_t *order) {
  return weighTokens(logits, V, top, temperature, q, weight, order);
}
#endif

/// The token of one row of V logits with uniform u.
template <typename S>
int64_t sampleRowOf(const S *logits, int64_t V, const SamplingParams &params,
                    float u, const SampleRowScratch &buf) {
  // The argmax, first on ties, NaN ignored (0 when every logit is NaN).
  int64_t best = -1;
  float top = -kInf;
  for (int64_t j = 0; j < V; ++j) {
    const float l = toFloat(logits[j]);
    if (l == l && (best < 0 || l > top)) {
      best = j;
      top = l;
    }
  }
  if (best < 0)
    return 0;
  // Greedy (a NaN temperature too), or nothing has a finite probability.
  if (!(params.temperature > 0) || top == -kInf)
    return best;
  // Integer weights floor(2^q exp((l - max) / T)) (common/TokenWeights.h):
  // softmax(l / T) up to its normaliser. Tokens of weight 0 (NaN or -inf
  // logits, probabilities below 2^-q of the top one) are never drawn and
  // are left out of the ranking. Sums of weights are exact integers below
  // 2^53, so they are exact as doubles too.
  const int q = sampling::weightBits(V);
#ifdef HYBRID_SAMPLE_FMA_DISPATCH
  static const bool hasFma = __builtin_cpu_supports("fma");
  const int64_t n = hasFma ? weighTokensFma(logits, V, top, params.temperature,
                                            q, buf.weight, buf.order)
                           : weighTokens(logits, V, top, params.temperature, q,
                                         buf.weight, buf.order);
#else
  const int64_t n =
      weighTokens(logits, V, top, params.temperature, q, buf.weight, buf.order);
#endif
  RankedTokens ranked(buf.order, n, buf.weight);
  int64_t kept = n;
  if (params.topK > 0 && params.topK < n) {
    kept = params.topK;
    ranked.sortFirst(kept);
  }
  uint64_t total = 0;
  for (int64_t i = 0; i < kept; ++i)
    total += buf.weight[buf.order[i]];
  if (params.topP < 1) { // (NaN keeps all)
    // The shortest prefix whose probability reaches top_p; at least one.
    const double target =
        static_cast<double>(params.topP) * static_cast<double>(total);
    uint64_t cumulative = 0;
    int64_t i = 0;
    while (i < kept) {
      cumulative += buf.weight[ranked[i++]];
      if (static_cast<double>(cumulative) >= target)
        break;
    }
    kept = i;
    total = cumulative;
  }
  // Walk the kept tokens until their cumulative weight exceeds u * total.
  const double threshold = static_cast<double>(u) * static_cast<double>(total);
  uint64_t cumulative = 0;
  for (int64_t i = 0; i < kept; ++i) {
    const int32_t token = ranked[i];
    cumulative += buf.weight[token];
    if (static_cast<double>(cumulative) > threshold)
      return token;
  }
  return ranked[kept - 1]; // (unreachable: u < 1 keeps the threshold below)
}

} // namespace

void sample(const KernelCall &call) {
  const auto a = SampleArgs::bind(call, "sample");
  const SampleProblem s = describeSample(a);
  const ScratchLayout layout = sampleScratch(call);
  const int threads = scratchThreads(call, layout, "sample");
  const SamplingParams params =
      readSamplingParams(a.sampling.as<float>(), a.rng.as<int64_t>());
  if (s.B == 0)
    return;
  int64_t *out = a.out.as<int64_t>();
  const int64_t V = s.V;
  visitFloat(s.dtype, "sample", "logits", [&](auto zero) {
    using S = decltype(zero);
    const S *logits = a.logits.as<S>();
    parallelFor(
        s.B, V * 16,
        [&](int64_t b) {
          Carve carve(threadScratch(call, layout, workerSlot()));
          const SampleRowScratch buf = carveSampleRow(carve, V);
          const float u = philoxUniform(params.seed, params.counter,
                                        static_cast<uint64_t>(b));
          out[b] = sampleRowOf(logits + b * V, V, params, u, buf);
        },
        threads);
  });
}

size_t sampleScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<sampleScratch>(call, threads);
}

SamplingParams readSamplingParams(const float *sampling, const int64_t *rng) {
  SamplingParams params;
  params.temperature = sampling[0];
  params.topP = sampling[1];
  // top_k travels as a float: truncate; <= 0 or NaN means all.
  const float topK = sampling[2];
  params.topK = topK >= 1 ? static_cast<int64_t>(std::min(topK, 1e18f)) : 0;
  params.seed = static_cast<uint64_t>(rng[0]);
  params.counter = static_cast<uint64_t>(rng[1]);
  return params;
}

SampleRowScratch carveSampleRow(Carve &carve, int64_t V) {
  SampleRowScratch r;
  r.weight = carve.take<uint64_t>(V);
  r.order = carve.take<int32_t>(V);
  return r;
}

int64_t sampleRow(const float *logits, int64_t V, const SamplingParams &params,
                  float u, const SampleRowScratch &scratch) {
  return sampleRowOf(logits, V, params, u, scratch);
}

} // namespace hybrid::cpu::kernels
