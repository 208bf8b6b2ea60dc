// Attention's backward (ops::AttentionGrad) as plain data the CPU and CUDA
// kernels share: the call's shapes and attributes checked once for both
// backends (either backend's call brings its optionalOperand / expect*
// checks by argument-dependent lookup, and `fail(message)` throws its
// error), and which keys a query row sees — the forward attention's rule,
// usable in host and device code.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define HYBRID_ATTENTION_GRAD_HD __host__ __device__ __forceinline__
#else
#define HYBRID_ATTENTION_GRAD_HD inline
#endif

namespace hybrid::checks {

/// Operand positions (Ops.h); the results are the gradients of the first
/// three.
enum AttentionGradOperand { Query, Key, Value, GradOut, Mask, KeyMask };

/// One call's problem. Pointers are the backend's (device memory on CUDA);
/// the structure is passed to kernels by value.
struct AttentionGradProblem {
  int64_t B = 0, Hq = 0, Hkv = 0, T = 0, S = 0, Dh = 0, Dv = 0;
  int64_t group = 1; ///< query heads per KV head (Hq / Hkv)
  DType dtype = DType::F32;
  float scale = 1;
  bool causal = false;
  int64_t window = 0;
  const void *mask = nullptr;            ///< additive, in dtype, or null
  int64_t maskStrides[4] = {0, 0, 0, 0}; ///< elements, over [B, Hq, T, S]
  const void *keyMask = nullptr;         ///< [B, S], i32 or i64, or null
  bool keyMask64 = false;

  /// Visible keys [begin, end) of query row i before the key mask: the
  /// causal and sliding-window limits aligned to the end of the keys.
  HYBRID_ATTENTION_GRAD_HD void keyRange(int64_t i, int64_t &begin,
                                         int64_t &end) const {
    const int64_t last = i + S - T; // the key aligned with query i
    begin = 0;
    end = S;
    if (causal)
      end = last + 1 < 0 ? 0 : last + 1 > S ? S : last + 1;
    if (window > 0 && last + 1 > window) // (no overflow for huge windows)
      begin = last - window + 1 < S ? last - window + 1 : S;
  }

  /// Whether key j of batch row b is a token (not padding).
  HYBRID_ATTENTION_GRAD_HD bool keyVisible(int64_t b, int64_t j) const {
    if (!keyMask)
      return true;
    const int64_t e = b * S + j;
    return keyMask64 ? static_cast<const int64_t *>(keyMask)[e] != 0
                     : static_cast<const int32_t *>(keyMask)[e] != 0;
  }

  /// Element offset of the mask's (b, h, i, j).
  HYBRID_ATTENTION_GRAD_HD int64_t maskAt(int64_t b, int64_t h, int64_t i,
                                          int64_t j) const {
    return b * maskStrides[0] + h * maskStrides[1] + i * maskStrides[2] +
           j * maskStrides[3];
  }
};

/// Checks the call against ops::AttentionGrad (ranks, matching shapes,
/// Hq % Hkv == 0, dtypes equal to the query's, a mask broadcastable to
/// [B, Hq, T, S], an integer [B, S] key mask, results shaped as query, key
/// and value) and describes it; the query's float dtype is the caller's
/// check.
template <typename Call, typename Fail>
AttentionGradProblem describeAttentionGrad(const Call &call, const char *kernel,
                                           Fail fail) {
  const auto &query = call.operands.at(Query), &key = call.operands.at(Key),
             &value = call.operands.at(Value),
             &gradOut = call.operands.at(GradOut);
  expectSameDType(key, query, kernel, "key", "query");
  expectSameDType(value, query, kernel, "value", "query");
  expectSameDType(gradOut, query, kernel, "grad_out", "query");
  expectRank(query, 4, kernel, "query");
  expectRank(key, 4, kernel, "key");
  expectRank(value, 4, kernel, "value");
  AttentionGradProblem p;
  p.dtype = query.dtype;
  p.B = query.shape[0];
  p.Hq = query.shape[1];
  p.T = query.shape[2];
  p.Dh = query.shape[3];
  p.Hkv = key.shape[1];
  p.S = key.shape[2];
  p.Dv = value.shape[3];
  if (key.shape[0] != p.B || key.shape[3] != p.Dh)
    fail("key " + shapeToString(key.shape) + " does not match query " +
         shapeToString(query.shape));
  if (value.shape[0] != p.B || value.shape[1] != p.Hkv || value.shape[2] != p.S)
    fail("value " + shapeToString(value.shape) + " does not match key " +
         shapeToString(key.shape));
  if (p.Hkv == 0 || p.Hq % p.Hkv != 0)
    fail(std::to_string(p.Hq) + " query heads are not a multiple of " +
         std::to_string(p.Hkv) + " KV heads");
  p.group = p.Hq / p.Hkv;
  expectShape(gradOut, {p.B, p.Hq, p.T, p.Dv}, kernel, "grad_out");
  const char *gradNames[] = {"grad_query", "grad_key", "grad_value"};
  for (int r = 0; r < 3; ++r) {
    expectDType(call.results.at(r), p.dtype, kernel, gradNames[r]);
    expectShape(call.results.at(r), call.operands.at(r).shape, kernel,
                gradNames[r]);
  }
  const auto &attrs = call.template attrs<ops::AttentionGrad>();
  if (attrs.slidingWindow < 0)
    fail("sliding window " + std::to_string(attrs.slidingWindow) +
         " is negative");
  p.scale = static_cast<float>(attrs.scale);
  p.causal = attrs.causal;
  p.window = attrs.slidingWindow;
  if (const auto *mask = optionalOperand(call, Mask)) {
    expectSameDType(*mask, query, kernel, "mask", "query");
    const Shape full = {p.B, p.Hq, p.T, p.S};
    if (mask->rank() > 4)
      fail("mask " + shapeToString(mask->shape) + " has rank above 4");
    const int64_t lead = 4 - mask->rank();
    int64_t stride = 1;
    for (int64_t d = 3; d >= lead; --d) {
      const int64_t dim = mask->shape[d - lead];
      if (dim != full[d] && dim != 1)
        fail("mask " + shapeToString(mask->shape) + " does not broadcast to " +
             shapeToString(full));
      p.maskStrides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
    p.mask = mask->data;
  }
  if (const auto *keyMask = optionalOperand(call, KeyMask)) {
    if (keyMask->dtype != DType::I32 && keyMask->dtype != DType::I64)
      fail(std::string("key_mask must be i32 or i64, got ") +
           dtypeName(keyMask->dtype));
    expectShape(*keyMask, {p.B, p.S}, kernel, "key_mask");
    p.keyMask = keyMask->data;
    p.keyMask64 = keyMask->dtype == DType::I64;
  }
  return p;
}

} // namespace hybrid::checks
