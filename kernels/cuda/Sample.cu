// sample: the next token of each row of logits, exactly the token the CPU
// kernel (kernels/cpu/Sample.cpp) draws for the same inputs: the argmax
// (first on ties, NaN ignored) when greedy, else a draw under temperature,
// top-k and top-p with the Philox uniform per (seed, counter, row). One
// block per row. Token weights are the integers of common/TokenWeights.h
// (the CPU's bits) and every decision compares exact integer sums, so
// finding the kept sets and the drawn token by radix selection, where the
// CPU sorts and walks, cannot change the result. sample_step, the whole
// sampling epilogue of a generation step in one launch, draws with the
// same block per row and adds the token's log-probability and the state.
#include "Context.h"
#include "Device.cuh"
#include "Kernels.h"

#include "common/Sampling.h"
#include "common/TokenWeights.h"
#include "hybrid/Philox.h"

#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

using u64 = unsigned long long; // what atomics and shuffles take

/// One block per row: a decode batch (B <= 64) is few rows, and one block
/// streams a 128K vocabulary in a few microseconds per pass.
constexpr int kSampleThreads = 1024;
constexpr int kWarps = kSampleThreads / 32;
/// Radix digits of 11 bits over keys below 2^54: passes at bits 43, 32, 21,
/// 10 and 0 (the last overlaps the one before, which is harmless).
constexpr int kDigitBits = 11, kDigits = 1 << kDigitBits, kTopShift = 43;
constexpr int kDigitsPerThread = kDigits / kSampleThreads;
/// Candidates that are sorted in shared memory once a selection has
/// narrowed them this far.
constexpr int kCapacity = 4096;
constexpr int kPerThread = kCapacity / kSampleThreads;
static_assert(kDigitsPerThread * kSampleThreads == kDigits);
static_assert(kPerThread * kSampleThreads == kCapacity);
/// Loads in flight per thread in a pass over a row of logits, 16 bytes
/// each: a pass over 50K bf16 logits waits on two L2 round trips, where one
/// logit per iteration waited on one per 1024 logits.
constexpr int kWideInFlight = 4;
/// The same for the pass that reads one logit per load: it writes the
/// keys, which are coalesced only with one token per thread and load.
constexpr int kScalarInFlight = 4;
/// The same for the selection's passes over the keys (two per load): more
/// would spill registers in sampleStepKernel (64 per thread at most).
constexpr int kKeyInFlight = 2;
/// Elements of T per 16-byte load.
template <typename T> constexpr int kPerLoad = 16 / sizeof(T);

/// A token's rank key: its weight above its complemented index. Keys are
/// distinct, 0 for weight 0, and in descending order they are the CPU's
/// walking order (weight descending, ties by index). With the index bits
/// the bit width of V, weights of at most 2^q (weightBits) keep every key
/// below 2^54.
struct KeyLayout {
  int indexBits = 0;
  u64 indexMask = 0;

  __device__ static KeyLayout of(int64_t V) {
    KeyLayout k;
    while ((static_cast<u64>(V) >> k.indexBits) != 0)
      ++k.indexBits;
    k.indexMask = (u64{1} << k.indexBits) - 1;
    return k;
  }
  __device__ u64 key(u64 weight, int64_t token) const {
    return weight ? weight << indexBits | (indexMask - token) : 0;
  }
  __device__ u64 weight(u64 key) const { return key >> indexBits; }
  __device__ int64_t token(u64 key) const {
    return static_cast<int64_t>(indexMask - (key & indexMask));
  }
};

/// Tokens counted from the start of the walking order. (No member
/// initialisers: it lives in shared memory.)
struct Prefix {
  u64 count, weight;
};

/// What a selection looks for: the first token in walking order whose
/// prefix (it and every token before it) reaches a count (top-k), a weight
/// (top-p: at least p times the kept total) or exceeds one (the draw: u
/// times the total). Weights below 2^53 convert to double exactly, so the
/// comparisons are the CPU kernel's.
struct Goal {
  enum Kind { Count, WeightAtLeast, WeightAbove } kind = Count;
  u64 count = 0;
  double weight = 0;

  __device__ bool reached(u64 n, u64 w) const {
    if (kind == Count)
      return n >= count;
    const double sum = static_cast<double>(w);
    return kind == WeightAtLeast ? sum >= weight : sum > weight;
  }
};

/// The selected token's key and the prefix through it.
struct Selected {
  u64 key;
  Prefix through;
};

struct SampleShared {
  union {
    struct {
      unsigned count[kDigits];
      u64 weight[kDigits];
    } histogram;
    u64 candidates[kCapacity];
  };
  u64 warpTotals[kWarps];
  double warpSums[kWarps];
  float warpBest[kWarps];
  int64_t warpBestIndex[kWarps];
  int chosen, lowestDigit;
  unsigned gathered;
  Prefix above;
  u64 bucketCount;
  Selected result;
};

/// The sum of v over the block, for every thread, through one slot per
/// warp (exact for the integer weights; in warp order for floats).
template <typename T> __device__ T blockSum(T v, T (&slots)[kWarps]) {
  v = warpSum(v);
  __syncthreads(); // earlier readers of the slots are done
  if (threadIdx.x % 32 == 0)
    slots[threadIdx.x / 32] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < kWarps; ++w)
    total += slots[w];
  return total;
}

/// The sum of v over the threads before this one, and over all of them.
__device__ u64 blockExclusiveScan(u64 v, SampleShared &sh, u64 &total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  u64 inclusive = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 t = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o)
      inclusive += t;
  }
  __syncthreads();
  if (lane == 31)
    sh.warpTotals[warp] = inclusive;
  __syncthreads();
  u64 before = 0;
  total = 0;
  for (int w = 0; w < kWarps; ++w) {
    const u64 t = sh.warpTotals[w];
    before += w < warp ? t : 0;
    total += t;
  }
  return before + inclusive - v;
}

/// fn(j, row[j]) for every j < n this thread owns, in no fixed order (the
/// callers' reductions are exact or order-independent): N elements per
/// load (N = 1, or 16 bytes of them from the row's first 16-byte boundary
/// on, the fewer than 2N before it and after the last whole load one per
/// thread), U loads in flight before any is used.
template <int N, int U, typename T, typename Fn>
__device__ void forEachElement(const T *row, int64_t n, Fn &&fn) {
  int64_t head = 0; // the elements before the first 16-byte boundary
  if constexpr (N > 1) {
    // (Rows of odd length in a batch, or a view's offset, start anywhere.)
    const unsigned misaligned = reinterpret_cast<uintptr_t>(row) % 16;
    head = misaligned ? (16 - misaligned) / sizeof(T) : 0;
    head = head < n ? head : n;
  }
  // Whole 16-byte words stay packed until used (not one register per
  // bf16), so U of them in flight cost 4U registers.
  using Word = std::conditional_t<N == 1, T, uint4>;
  static_assert(sizeof(Word) == N * sizeof(T));
  const Word *body = reinterpret_cast<const Word *>(row + head);
  const int64_t loads = (n - head) / N;
  for (int64_t c = threadIdx.x; c < loads; c += U * kSampleThreads) {
    Word w[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c + u * kSampleThreads < loads)
        w[u] = body[c + u * kSampleThreads];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c + u * kSampleThreads < loads) {
        const T *e = reinterpret_cast<const T *>(&w[u]);
#pragma unroll
        for (int i = 0; i < N; ++i)
          fn(head + (c + u * kSampleThreads) * N + i, e[i]);
      }
  }
  const int64_t tail = head + loads * N, rest = head + (n - tail);
  if (threadIdx.x < rest) {
    const int64_t t = threadIdx.x;
    const int64_t j = t < head ? t : tail + (t - head);
    fn(j, row[j]);
  }
}

/// A row of logits as f32, with the logit of token `banned` (-1: none) at
/// -inf: the EOS token before min_new tokens.
template <typename S> struct RowLogits {
  const S *row;
  int64_t banned;

  __device__ float of(int64_t j, S stored) const {
    return j == banned ? -INFINITY : toFloat(stored);
  }
  __device__ float operator()(int64_t j) const { return of(j, row[j]); }
};

/// fn(j, logit(j)) for every token this thread owns (as forEachElement),
/// 16 bytes of logits per load when N > 1.
template <int N, int U, typename S, typename Fn>
__device__ void forEachLogit(const RowLogits<S> &logit, int64_t V, Fn &&fn) {
  forEachElement<N, U>(
      logit.row, V, [&](int64_t j, S stored) { fn(j, logit.of(j, stored)); });
}

/// The statistics of log_softmax(logits / divisor) that a sample_step's
/// log-probability needs: the NaN-propagating max and the sum in double of
/// exp(l / divisor - max), as kernels/cpu/Softmax.h computes them (in
/// another order).
struct RowStats {
  float divisor, max;
  double sum;

  __device__ float term(float l) const { return expf(l / divisor - max); }
};

/// Whether (value b, index i) precedes (best, index) in the argmax order:
/// by value, then the lower index. (-inf, kNone), where nothing was seen
/// yet, loses to any real element.
__device__ bool precedes(float b, int64_t i, float best, int64_t index) {
  return b > best || (b == best && i < index);
}

/// argmaxOrNone's index when the row holds nothing but NaN (or nothing).
constexpr int64_t kNone = INT64_MAX;

/// (best, index) combined over the warp in the argmax order: every lane
/// ends with the warp's first largest ((-inf, kNone) where no lane has one).
__device__ __forceinline__ void warpArgmax(float &best, int64_t &index) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float b = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t i = __shfl_xor_sync(0xffffffffu, index, o);
    if (precedes(b, i, best, index)) {
      best = b;
      index = i;
    }
  }
}

/// The argmax of the row (first on ties, NaN ignored; kNone when every
/// logit is NaN), its logit in `top` (-inf then) and whether any logit is
/// NaN.
template <typename S>
__device__ int64_t argmaxOrNone(const RowLogits<S> &logit, int64_t V,
                                float &top, bool &anyNaN, SampleShared &sh) {
  float best = -INFINITY;
  int64_t index = kNone;
  bool nan = false;
  forEachLogit<kPerLoad<S>, kWideInFlight>(logit, V, [&](int64_t j, float l) {
    if (l != l) {
      nan = true;
    } else if (precedes(l, j, best, index)) {
      best = l;
      index = j;
    }
  });
  warpArgmax(best, index);
  if (threadIdx.x % 32 == 0) {
    sh.warpBest[threadIdx.x / 32] = best;
    sh.warpBestIndex[threadIdx.x / 32] = index;
  }
  anyNaN = __syncthreads_or(nan);
  best = -INFINITY;
  index = kNone;
  for (int w = 0; w < kWarps; ++w) {
    const float b = sh.warpBest[w];
    const int64_t i = sh.warpBestIndex[w];
    if (precedes(b, i, best, index)) {
      best = b;
      index = i;
    }
  }
  top = best;
  return index;
}

/// The argmax of the row as argmaxOrNone, 0 when every logit is NaN.
template <typename S>
__device__ int64_t argmax(const RowLogits<S> &logit, int64_t V, float &top,
                          bool &anyNaN, SampleShared &sh) {
  const int64_t index = argmaxOrNone(logit, V, top, anyNaN, sh);
  return index == kNone ? 0 : index;
}

/// Whether `key` is a candidate: kept (>= lowest) and in the bucket the
/// passes so far chose (its `fixed` bits equal `prefix`).
__device__ bool isCandidate(u64 key, u64 lowest, u64 prefix, u64 fixed) {
  return key >= lowest && (key & fixed) == prefix;
}

/// The count and weight of the candidates per digit (key >> shift) % 2^11.
/// A thread adds runs of equal digits at once: most keys of a row share the
/// lowest digit (the long tail of tiny weights), and per-key atomics on one
/// address would serialise.
__device__ void histogram(const u64 *keys, int64_t V, u64 lowest, u64 prefix,
                          u64 fixed, int shift, KeyLayout layout,
                          SampleShared &sh) {
  for (int d = threadIdx.x; d < kDigits; d += kSampleThreads) {
    sh.histogram.count[d] = 0;
    sh.histogram.weight[d] = 0;
  }
  __syncthreads();
  int run = -1;
  unsigned runCount = 0;
  u64 runWeight = 0;
  forEachElement<kPerLoad<u64>, kKeyInFlight>(keys, V, [&](int64_t, u64 key) {
    if (!isCandidate(key, lowest, prefix, fixed))
      return;
    const int d = static_cast<int>((key >> shift) & (kDigits - 1));
    if (d != run) {
      if (runCount) {
        atomicAdd(&sh.histogram.count[run], runCount);
        atomicAdd(&sh.histogram.weight[run], runWeight);
      }
      run = d;
      runCount = 0;
      runWeight = 0;
    }
    ++runCount;
    runWeight += layout.weight(key);
  });
  if (runCount) {
    atomicAdd(&sh.histogram.count[run], runCount);
    atomicAdd(&sh.histogram.weight[run], runWeight);
  }
  __syncthreads();
}

/// After a histogram: the highest digit whose bucket holds the goal (the
/// highest non-empty one whose cumulative prefix from the top reaches it;
/// the goal is monotone along the walking order), then `above` grows by the
/// buckets above it and `count` becomes its size. Thread t owns the digits
/// 2047 - 2t and 2046 - 2t, so the thread order is the walking order.
__device__ int chooseDigit(const Goal &goal, Prefix &above, u64 &count,
                           SampleShared &sh) {
  unsigned n[kDigitsPerThread];
  u64 w[kDigitsPerThread], ownCount = 0, ownWeight = 0;
#pragma unroll
  for (int e = 0; e < kDigitsPerThread; ++e) {
    const int d = kDigits - 1 - (threadIdx.x * kDigitsPerThread + e);
    n[e] = sh.histogram.count[d];
    w[e] = sh.histogram.weight[d];
    ownCount += n[e];
    ownWeight += w[e];
  }
  if (threadIdx.x == 0) {
    sh.chosen = -1;
    sh.lowestDigit = kDigits;
  }
  u64 unused;
  u64 countBefore = blockExclusiveScan(ownCount, sh, unused);
  u64 weightBefore = blockExclusiveScan(ownWeight, sh, unused);
#pragma unroll
  for (int e = 0; e < kDigitsPerThread; ++e) {
    const int d = kDigits - 1 - (threadIdx.x * kDigitsPerThread + e);
    countBefore += n[e];
    weightBefore += w[e];
    if (n[e] == 0)
      continue;
    atomicMin(&sh.lowestDigit, d);
    if (goal.reached(above.count + countBefore, above.weight + weightBefore))
      atomicMax(&sh.chosen, d);
  }
  __syncthreads();
  // (Unreachable: the candidates always hold the goal. The CPU kernel then
  // takes the last kept token; the lowest bucket holds it.)
  const int chosen = sh.chosen >= 0 ? sh.chosen : sh.lowestDigit;
  // The owner of the chosen digit publishes the prefix before its bucket.
  countBefore -= ownCount;
  weightBefore -= ownWeight;
#pragma unroll
  for (int e = 0; e < kDigitsPerThread; ++e) {
    const int d = kDigits - 1 - (threadIdx.x * kDigitsPerThread + e);
    if (d == chosen) {
      sh.above.count = above.count + countBefore;
      sh.above.weight = above.weight + weightBefore;
      sh.bucketCount = n[e];
    }
    countBefore += n[e];
    weightBefore += w[e];
  }
  __syncthreads();
  above = sh.above;
  count = sh.bucketCount;
  __syncthreads(); // everyone has read sh before it is reused
  return chosen;
}

/// Copies the candidates into shared memory (order lost) and returns how
/// many; at most kCapacity.
__device__ int gatherCandidates(const u64 *keys, int64_t V, u64 lowest,
                                u64 prefix, u64 fixed, SampleShared &sh) {
  if (threadIdx.x == 0)
    sh.gathered = 0;
  __syncthreads();
  forEachElement<kPerLoad<u64>, kKeyInFlight>(keys, V, [&](int64_t, u64 key) {
    if (!isCandidate(key, lowest, prefix, fixed))
      return;
    // The takers of a warp that run together reserve their slots with one
    // atomic (the loop's trip count differs between lanes, so it cannot
    // be the whole warp).
    const cooperative_groups::coalesced_group takers =
        cooperative_groups::coalesced_threads();
    unsigned first = 0;
    if (takers.thread_rank() == 0)
      first = atomicAdd(&sh.gathered, takers.size());
    const unsigned slot = takers.shfl(first, 0) + takers.thread_rank();
    if (slot < kCapacity)
      sh.candidates[slot] = key;
  });
  __syncthreads();
  return sh.gathered < kCapacity ? static_cast<int>(sh.gathered) : kCapacity;
}

/// Sorts candidates[0, c) descending (walking order): a bitonic sort over
/// the next power of two, padded with 0 keys, which sort last.
__device__ void sortCandidates(int c, SampleShared &sh) {
  int size = 1;
  while (size < c)
    size <<= 1;
  for (int i = c + threadIdx.x; i < size; i += kSampleThreads)
    sh.candidates[i] = 0;
  __syncthreads();
  for (int k = 2; k <= size; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < size; i += kSampleThreads) {
        const int partner = i ^ j;
        if (partner <= i)
          continue;
        const u64 a = sh.candidates[i], b = sh.candidates[partner];
        const bool descending = (i & k) == 0;
        if (descending ? a < b : a > b) {
          sh.candidates[i] = b;
          sh.candidates[partner] = a;
        }
      }
      __syncthreads();
    }
}

/// The goal's token among candidates[0, c), sorted, which follow `above`
/// in the walking order. Thread t owns positions [4t, 4t + 4).
__device__ Selected resolveSorted(int c, const Goal &goal, Prefix above,
                                  KeyLayout layout, SampleShared &sh) {
  u64 w[kPerThread], own = 0;
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    const int pos = threadIdx.x * kPerThread + e;
    w[e] = pos < c ? layout.weight(sh.candidates[pos]) : 0;
    own += w[e];
  }
  if (threadIdx.x == 0)
    sh.chosen = c;
  u64 unused;
  const u64 before = above.weight + blockExclusiveScan(own, sh, unused);
  u64 cumulative = before;
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    const int pos = threadIdx.x * kPerThread + e;
    if (pos >= c)
      break;
    cumulative += w[e];
    if (goal.reached(above.count + pos + 1, cumulative)) {
      atomicMin(&sh.chosen, pos);
      break;
    }
  }
  __syncthreads();
  // (c - 1, the last candidate, is unreachable, as in chooseDigit; so is
  // c = 0, where position 0 holds a padding key.)
  const int found = sh.chosen < c ? sh.chosen : c > 0 ? c - 1 : 0;
  if (found / kPerThread == static_cast<int>(threadIdx.x)) {
    cumulative = before;
    for (int e = 0; e <= found % kPerThread; ++e)
      cumulative += w[e];
    sh.result.key = sh.candidates[found];
    sh.result.through.count = above.count + found + 1;
    sh.result.through.weight = cumulative;
  }
  __syncthreads();
  const Selected result = sh.result;
  __syncthreads(); // everyone has read sh before it is reused
  return result;
}

/// The first token in walking order whose prefix reaches `goal`, among the
/// `count` keys >= `lowest` (the kept tokens: a prefix of the walking
/// order that holds the goal). Radix passes narrow the candidates from the
/// top digit down until they fit in shared memory (usually after one or
/// two passes; a key is a full 54 bits after five), where they are sorted
/// and scanned.
__device__ Selected select(const u64 *keys, int64_t V, u64 lowest, u64 count,
                           const Goal &goal, KeyLayout layout,
                           SampleShared &sh) {
  Prefix above = {}; // the tokens before the candidates
  u64 prefix = 0, fixed = 0;
  for (int shift = kTopShift; count > kCapacity;
       shift = shift > kDigitBits ? shift - kDigitBits : 0) {
    histogram(keys, V, lowest, prefix, fixed, shift, layout, sh);
    const u64 digit = static_cast<u64>(chooseDigit(goal, above, count, sh));
    prefix |= digit << shift;
    fixed |= static_cast<u64>(kDigits - 1) << shift;
    if (shift == 0) // every bit fixed: one key (keys are distinct)
      break;
  }
  const int c = gatherCandidates(keys, V, lowest, prefix, fixed, sh);
  sortCandidates(c, sh);
  return resolveSorted(c, goal, above, layout, sh);
}

/// A call's {temperature, top_p, top_k} and {seed, counter}, read from
/// device memory.
struct SamplingParams {
  float temperature, topP, topK;
  uint64_t seed, counter;

  __device__ static SamplingParams read(const float *params,
                                        const int64_t *rng) {
    return {params[0], params[1], params[2], static_cast<uint64_t>(rng[0]),
            static_cast<uint64_t>(rng[1])};
  }
};

/// The token of row b of V logits, for every thread of the block; keys [V]
/// of scratch. With `stats` (divisor set), also the row's log_softmax
/// statistics, from the passes the draw makes anyway where it can.
template <typename S>
__device__ int64_t drawToken(const RowLogits<S> &logit, int64_t V,
                             const SamplingParams &params, int64_t b, u64 *keys,
                             SampleShared &sh, RowStats *stats) {
  const float temperature = params.temperature, topP = params.topP,
              topKValue = params.topK;
  float top;
  bool anyNaN;
  const int64_t best = argmax(logit, V, top, anyNaN, sh);
  // The max of l / divisor is top / divisor (NaN if any logit is): IEEE
  // division by a positive divisor is monotone and top is the largest
  // logit that is not NaN.
  if (stats)
    stats->max = anyNaN ? NAN : top / stats->divisor;
  // Greedy (a NaN temperature too), or nothing has a finite probability.
  if (!(temperature > 0) || top == -INFINITY) {
    if (stats) {
      double sum = 0;
      forEachLogit<kPerLoad<S>, kWideInFlight>(
          logit, V, [&](int64_t, float l) { sum += stats->term(l); });
      stats->sum = blockSum(sum, sh.warpSums);
    }
    return best;
  }
  const int q = sampling::weightBits(V);
  const KeyLayout layout = KeyLayout::of(V);
  u64 positive = 0, total = 0;
  double sum = 0;
  forEachLogit<1, kScalarInFlight>(logit, V, [&](int64_t j, float l) {
    const u64 w = sampling::tokenWeight(l, top, temperature, q);
    keys[j] = layout.key(w, j);
    positive += w != 0;
    total += w;
    if (stats)
      sum += stats->term(l);
  });
  positive = blockSum(positive, sh.warpTotals); // (publishes the keys)
  total = blockSum(total, sh.warpTotals);
  if (stats)
    stats->sum = blockSum(sum, sh.warpSums);
  // top_k travels as a float: truncated; <= 0 or NaN keeps all.
  const u64 topK = topKValue >= 1
                       ? static_cast<u64>(topKValue < 1e18f ? topKValue : 1e18f)
                       : 0;
  u64 lowest = 1, kept = positive; // keys >= lowest are kept
  if (topK > 0 && topK < positive) {
    Goal goal;
    goal.kind = Goal::Count;
    goal.count = topK;
    const Selected k = select(keys, V, lowest, kept, goal, layout, sh);
    lowest = k.key;
    kept = topK;
    total = k.through.weight;
  }
  if (topP < 1) { // (NaN keeps all)
    // The shortest prefix whose weight reaches top_p of the kept total.
    Goal goal;
    goal.kind = Goal::WeightAtLeast;
    goal.weight = static_cast<double>(topP) * static_cast<double>(total);
    const Selected p = select(keys, V, lowest, kept, goal, layout, sh);
    lowest = p.key;
    kept = p.through.count;
    total = p.through.weight;
  }
  // The first kept token whose cumulative weight exceeds u times the total.
  const float u =
      philoxUniform(params.seed, params.counter, static_cast<uint64_t>(b));
  Goal goal;
  goal.kind = Goal::WeightAbove;
  goal.weight = static_cast<double>(u) * static_cast<double>(total);
  const Selected drawn = select(keys, V, lowest, kept, goal, layout, sh);
  return layout.token(drawn.key);
}

/// Row blockIdx.x: logits [V] of type S, the call's {temperature, top_p,
/// top_k} and {seed, counter} from device memory, keys [V] of scratch.
template <typename S>
__global__ void __launch_bounds__(kSampleThreads)
    sampleKernel(const S *logits, const float *params, const int64_t *rng,
                 int64_t *out, u64 *scratch, int64_t V) {
  awaitInputs();
  __shared__ SampleShared sh;
  const int64_t b = blockIdx.x;
  const int64_t token = drawToken(
      RowLogits<S>{logits + b * V, -1}, V, SamplingParams::read(params, rng), b,
      scratch + b * V, sh, static_cast<RowStats *>(nullptr));
  if (threadIdx.x == 0)
    out[b] = token;
}

/// What a sample_step reads and writes besides the logits (Ops.h's
/// SampleStep; lengths, finished, count and rng may be updated in place).
struct StepState {
  const int64_t *config;   // [4] {eos, pad, min_new, unused}
  const float *sampling;   // [3]
  const int64_t *rng;      // [2] {seed, counter}
  const int64_t *count;    // [1]
  const uint8_t *finished; // [B]
  const int64_t *lengths;  // [B]
  int64_t *token;          // [B]
  int64_t *tokens;         // [B, N], written at column count
  float *logprobs;         // [B, N], written at column count
  int64_t *lengthsOut;     // [B]
  uint8_t *finishedOut;    // [B]
  int64_t *countOut;       // [1]
  int64_t *rngOut;         // [2]
  int64_t N;
  /// A zeroed tile counter: the last block to finish advances count and
  /// rng. Null: advanceKernel does, after this kernel.
  unsigned *counter;
};

/// One block's share of a greedy row split over several blocks: the
/// argmax of its logits (kNone when they are all NaN) and the sum of
/// exp(l / divisor - top / divisor) over them (0 when top is -inf).
struct GreedyPart {
  float top;
  int nan;
  int64_t index;
  double sum;
};
static_assert(sizeof(GreedyPart) % sizeof(u64) == 0);

/// Greedy rows of more than this many logits are split over blocks.
constexpr int64_t kGreedyPartLogits = 4096;

/// Greedy row b split over gridDim.y blocks: this block's part of the
/// argmax and the log_softmax sum into `parts` (the row's scratch), and,
/// for the row's last block to finish, the row's argmax and statistics as
/// drawToken gives them (the sum rescaled from each part's max; the same
/// terms up to the rounding of exp). Returns -1 in the other blocks.
template <typename S>
__device__ int64_t greedySplit(const RowLogits<S> &logit, int64_t V,
                               RowStats &stats, GreedyPart *parts,
                               unsigned *rowCounter, SampleShared &sh) {
  // Whole 16-byte words per part (a part then starts on a boundary).
  const int64_t span = ((V + gridDim.y - 1) / gridDim.y + 7) / 8 * 8;
  const int64_t begin = std::min<int64_t>(V, blockIdx.y * span),
                end = std::min<int64_t>(V, begin + span);
  const RowLogits<S> mine{
      logit.row + begin,
      logit.banned >= begin && logit.banned < end ? logit.banned - begin : -1};
  float top;
  bool anyNaN;
  const int64_t index = argmaxOrNone(mine, end - begin, top, anyNaN, sh);
  double sum = 0;
  if (top != -INFINITY) { // (else every term is exp(-inf) = 0 or NaN)
    const RowStats local{stats.divisor, top / stats.divisor, 0};
    forEachLogit<kPerLoad<S>, kWideInFlight>(
        mine, end - begin, [&](int64_t, float l) { sum += local.term(l); });
    sum = blockSum(sum, sh.warpSums);
  }
  if (threadIdx.x == 0)
    parts[blockIdx.y] = {top, anyNaN, index == kNone ? kNone : begin + index,
                         sum};
  if (!lastBlockToArrive(rowCounter, gridDim.y))
    return -1;
  // The first warp combines the parts (at most 64: two a lane, all loaded
  // at once, then shuffles); only thread 0 uses what it returns and
  // `stats`, the other threads 0.
  if (threadIdx.x >= 32)
    return 0;
  const unsigned lane = threadIdx.x, count = gridDim.y;
  GreedyPart own[2];
#pragma unroll
  for (int k = 0; k < 2; ++k)
    own[k] = lane + 32 * k < count ? parts[lane + 32 * k]
                                   : GreedyPart{-INFINITY, 0, kNone, 0.0};
  // (A part of NaNs alone is (-inf, kNone): it precedes nothing.)
  float best = -INFINITY;
  int64_t bestIndex = kNone;
  bool nan = false;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    nan = nan || own[k].nan;
    if (precedes(own[k].top, own[k].index, best, bestIndex)) {
      best = own[k].top;
      bestIndex = own[k].index;
    }
  }
  warpArgmax(best, bestIndex);
  nan = __any_sync(0xffffffffu, nan);
  stats.max = nan ? NAN : best / stats.divisor;
  if (nan || best == -INFINITY) {
    stats.sum = NAN; // as the terms of one pass would make it
  } else {
    double total = 0;
#pragma unroll
    for (int k = 0; k < 2; ++k)
      if (own[k].top != -INFINITY)
        total +=
            own[k].sum * ::exp(static_cast<double>(own[k].top / stats.divisor) -
                               static_cast<double>(stats.max));
    stats.sum = warpSum(total);
  }
  return bestIndex == kNone ? 0 : bestIndex;
}

/// Row blockIdx.x of a sample_step (the CPU kernel's arithmetic, in
/// kernels/cpu/SampleStep.cpp): EOS banned before min_new tokens, the
/// token drawn as sampleKernel draws it, log_softmax(logits / T)[token] (T
/// = 1 when greedy) from a max and a sum over the row as the CPU's
/// log_softmax computes them (in another order; drawToken finds them in
/// the passes it makes anyway, so greedy reads the row twice and a draw
/// twice plus its selections' passes over the keys), pad for finished rows.
/// With gridDim.y > 1 (and the tile counters) a greedy row is split over
/// gridDim.y blocks (greedySplit: one block streams a 50K vocabulary's two
/// passes in ~25 us, the decode step's longest kernel after the LM head);
/// a draw takes block 0 of its row, as with one.
template <typename S>
__global__ void __launch_bounds__(kSampleThreads)
    sampleStepKernel(const S *logits, StepState st, u64 *scratch, int64_t V) {
  awaitInputs();
  __shared__ SampleShared sh;
  const int64_t b = blockIdx.x;
  // Read by every block before the last one advances them in place.
  const SamplingParams params = SamplingParams::read(st.sampling, st.rng);
  const int64_t count = *st.count;
  const int64_t eos = st.config[0], pad = st.config[1], minNew = st.config[2];
  const int64_t banned = count < minNew && eos >= 0 && eos < V ? eos : -1;
  const RowLogits<S> logit{logits + b * V, banned};
  RowStats stats{params.temperature > 0 ? params.temperature : 1.0f, 0, 0};
  int64_t token;
  if (gridDim.y > 1 && !(params.temperature > 0)) {
    token = greedySplit(logit, V, stats,
                        reinterpret_cast<GreedyPart *>(scratch + b * V),
                        st.counter + 1 + b, sh);
    if (token < 0)
      return; // another block of the row finishes it
  } else {
    if (blockIdx.y != 0)
      return;
    token = drawToken(logit, V, params, b, scratch + b * V, sh, &stats);
  }
  if (threadIdx.x == 0) {
    const float logprob = logit(token) / stats.divisor - stats.max -
                          static_cast<float>(::log(stats.sum));
    // Finished rows emit pad (and log-probability 0) from now on.
    const bool done = st.finished[b] != 0;
    const int64_t emitted = done ? pad : token;
    st.token[b] = emitted;
    // A column past the end is dropped (as cache_write drops its slice).
    if (count >= 0 && count < st.N) {
      st.tokens[b * st.N + count] = emitted;
      st.logprobs[b * st.N + count] = done ? 0.0f : logprob;
    }
    st.lengthsOut[b] = st.lengths[b] + (done ? 0 : 1);
    st.finishedOut[b] = done || emitted == eos;
  }
  if (st.counter && lastBlockToArrive(st.counter, gridDim.x) &&
      threadIdx.x == 0) {
    *st.countOut = count + 1;
    st.rngOut[0] = static_cast<int64_t>(params.seed);
    st.rngOut[1] = static_cast<int64_t>(params.counter + 1);
  }
}

/// count += 1 and rng[1] += 1 of a sample_step without a tile counter (or
/// without rows), after sampleStepKernel read them.
__global__ void advanceKernel(const int64_t *count, const int64_t *rng,
                              int64_t *countOut, int64_t *rngOut) {
  awaitInputs();
  if (threadIdx.x == 0) {
    const int64_t c = *count, seed = rng[0];
    const uint64_t counter = static_cast<uint64_t>(rng[1]);
    *countOut = c + 1;
    rngOut[0] = seed;
    rngOut[1] = static_cast<int64_t>(counter + 1);
  }
}

constexpr const char *kStep = "sample_step";

/// The rank keys of every row: 8 bytes per logit.
size_t keyBytes(int64_t B, int64_t V) {
  return static_cast<size_t>(B) * static_cast<size_t>(V) * sizeof(u64);
}

} // namespace

void sample(const CudaCall &call) {
  const auto a = SampleArgs::bind(call, "sample");
  const SampleProblem s = describeSample(a);
  expectScratch(call, keyBytes(s.B, s.V), "sample");
  if (s.B == 0)
    return;
  if (s.B > INT32_MAX)
    fail("sample", std::to_string(s.B) + " rows are too many");
  const cudaStream_t stream = streamOf(call);
  visitFloat(s.dtype, "sample", "logits", [&](auto zero) {
    using S = decltype(zero);
    launch(sampleKernel<S>, static_cast<unsigned>(s.B), kSampleThreads, 0,
           stream, static_cast<const S *>(a.logits.data),
           static_cast<const float *>(a.sampling.data),
           static_cast<const int64_t *>(a.rng.data),
           static_cast<int64_t *>(a.out.data), static_cast<u64 *>(call.scratch),
           s.V);
  });
  checkLaunch("sample");
}

size_t sampleScratchBytes(const CudaCall &call) {
  try {
    using In = ops::Sample::In;
    const SampleProblem s = describeSampling(
        call.operands.at(In::logits), call.operands.at(In::sampling),
        call.operands.at(In::rng), "sample");
    return keyBytes(s.B, s.V);
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

void sampleStep(const CudaCall &call) {
  const auto a = SampleStepArgs::bind(call, kStep);
  const SampleProblem s = describeSampleStep(a);
  const int64_t B = s.B, V = s.V;
  expectScratch(call, keyBytes(B, V), kStep);
  if (B > INT32_MAX)
    fail(kStep, std::to_string(B) + " rows are too many");
  const cudaStream_t stream = streamOf(call);
  const int64_t *count = static_cast<const int64_t *>(a.inCount.data);
  const int64_t *rng = static_cast<const int64_t *>(a.inRng.data);
  int64_t *countOut = static_cast<int64_t *>(a.count.data);
  int64_t *rngOut = static_cast<int64_t *>(a.rng.data);
  unsigned *counter = nullptr;
  if (B > 0) {
    if (call.context)
      counter = tileCounters(*call.context, call.stream, kStep);
    StepState st;
    st.config = static_cast<const int64_t *>(a.config.data);
    st.sampling = static_cast<const float *>(a.sampling.data);
    st.rng = rng;
    st.count = count;
    st.finished = static_cast<const uint8_t *>(a.inFinished.data);
    st.lengths = static_cast<const int64_t *>(a.inLengths.data);
    st.token = static_cast<int64_t *>(a.token.data);
    st.tokens = static_cast<int64_t *>(a.tokens.data);
    st.logprobs = static_cast<float *>(a.logprobs.data);
    st.lengthsOut = static_cast<int64_t *>(a.lengths.data);
    st.finishedOut = static_cast<uint8_t *>(a.finished.data);
    st.countOut = countOut;
    st.rngOut = rngOut;
    st.N = s.N;
    st.counter = counter;
    // Blocks per row for greedy rows (split with the counters only: a row
    // counter each after the step's own), about two waves of them at most.
    int64_t parts = 1;
    if (counter && B < static_cast<int64_t>(kTileCounters) - 1) {
      const int64_t sms = call.context->smCount > 0 ? call.context->smCount : 1;
      parts = std::min<int64_t>((V + kGreedyPartLogits - 1) / kGreedyPartLogits,
                                std::max<int64_t>(1, 2 * sms / B));
      parts =
          std::max<int64_t>(1, std::min<int64_t>(parts, 64)); // a lane's two
    }
    const dim3 grid(static_cast<unsigned>(B), static_cast<unsigned>(parts));
    visitFloat(s.dtype, kStep, "logits", [&](auto zero) {
      using S = decltype(zero);
      launch(sampleStepKernel<S>, grid, kSampleThreads, 0, stream,
             static_cast<const S *>(a.logits.data), st,
             static_cast<u64 *>(call.scratch), V);
    });
    checkLaunch(kStep);
  }
  if (!counter) {
    launch(advanceKernel, 1, 32, 0, stream, count, rng, countOut, rngOut);
    checkLaunch(kStep);
  }
}

size_t sampleStepScratchBytes(const CudaCall &call) {
  try {
    using In = ops::SampleStep::In;
    const SampleProblem s = describeSampling(
        call.operands.at(In::logits), call.operands.at(In::sampling),
        call.operands.at(In::inRng), kStep);
    return keyBytes(s.B, s.V);
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
