// One attention call (ops::Attention, ops::AttentionGrad) as plain data the
// CPU and CUDA kernels share: the operands' shapes and attributes checked
// once for every backend, the additive mask's strides, ALiBi slopes and
// the key count, on top of the visibility rule (AttentionRules.h). Pointers
// are the backend's (device memory on CUDA); kernels take it by value.
#pragma once

#include "common/AttentionRules.h"
#include "common/KernelArgs.h"

namespace hybrid::kernels {

struct AttentionProblem : AttentionLimits {
  int64_t B = 0, Hq = 0, Hkv = 0, Dh = 0, Dv = 0;
  int64_t group = 1; ///< query heads per KV head (Hq / Hkv)
  DType dtype = DType::F32;
  float scale = 1;
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  const void *mask = nullptr;            ///< additive, in dtype, or null
  int64_t maskStrides[4] = {0, 0, 0, 0}; ///< elements, over [B, Hq, T, S]
  const void *slopes = nullptr;          ///< ALiBi [Hq], in dtype, or null
  /// i64 [1]: how many leading keys exist, read when the call runs, or
  /// null (all S).
  const int64_t *keyLength = nullptr;

  using AttentionLimits::keyRange;
  /// keyRange over all S keys (no key_length: the backward, a prompt).
  HYBRID_HOST_DEVICE void keyRange(int64_t i, int64_t &begin,
                                   int64_t &end) const {
    keyRange(i, S, begin, end);
  }

  /// Element offset of the mask's (b, h, i, j).
  HYBRID_HOST_DEVICE int64_t maskAt(int64_t b, int64_t h, int64_t i,
                                    int64_t j) const {
    return b * maskStrides[0] + h * maskStrides[1] + i * maskStrides[2] +
           j * maskStrides[3];
  }
};

/// ops::Attention's call: query [B, Hq, T, Dh] of a float type, key [B,
/// Hkv, S, Dh] and value [B, Hkv, S, Dv] of its type, Hq a multiple of Hkv,
/// the result [B, Hq, T, Dv], a mask broadcastable to [B, Hq, T, S], ALiBi
/// slopes (one per query head), key_length (i64, one element) and an
/// integer key mask [B, S]. The appended keys are describeAttentionAppend's.
AttentionProblem describeAttention(const AttentionArgs &a);

/// The appended keys and values of an attention that appends, checked
/// against its caches (the memory of key and value): where they go.
struct AttentionAppend {
  const void *keys = nullptr, *values = nullptr; ///< [B, Hkv, Tn, D]
  const int64_t *at = nullptr;                   ///< i64 [1]
  void *keyCache = nullptr, *valueCache = nullptr;
  int64_t Tn = 0;
};
AttentionAppend describeAttentionAppend(const AttentionArgs &a,
                                        const AttentionProblem &p);

/// ops::AttentionGrad's call: query, key, value, mask, ALiBi slopes and key
/// mask as describeAttention checks them (no key_length), grad_out [B,
/// Hq, T, Dv] and the gradients shaped as their inputs, all of query's
/// type.
AttentionProblem describeAttentionGrad(const AttentionGradArgs &a);

} // namespace hybrid::kernels
