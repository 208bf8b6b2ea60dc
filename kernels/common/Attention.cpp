// The checks and description of an attention call (see Attention.h).
#include "common/Attention.h"

#include "common/Check.h"

namespace hybrid::kernels {
namespace {

/// What forward and backward share: query, key, value, the limits, the
/// additive mask and the key mask.
AttentionProblem
describeInputs(const ConstTensor &query, const ConstTensor &key,
               const ConstTensor &value, const ConstTensor *mask,
               const ConstTensor *keyMask, double scale, bool causal,
               int64_t window, const char *kernel) {
  expectFloat(query.dtype, kernel, "query");
  expectSameDType(key, query, kernel, "key", "query");
  expectSameDType(value, query, kernel, "value", "query");
  expectRank(query, 4, kernel, "query");
  expectRank(key, 4, kernel, "key");
  expectRank(value, 4, kernel, "value");
  AttentionProblem p;
  p.dtype = query.dtype;
  p.B = query.shape[0];
  p.Hq = query.shape[1];
  p.T = query.shape[2];
  p.Dh = query.shape[3];
  p.Hkv = key.shape[1];
  p.S = key.shape[2];
  p.Dv = value.shape[3];
  if (key.shape[0] != p.B || key.shape[3] != p.Dh)
    fail(kernel, "key " + shapeToString(key.shape) + " does not match query " +
                     shapeToString(query.shape));
  if (value.shape[0] != p.B || value.shape[1] != p.Hkv || value.shape[2] != p.S)
    fail(kernel, "value " + shapeToString(value.shape) +
                     " does not match key " + shapeToString(key.shape));
  if (p.Hkv == 0 || p.Hq % p.Hkv != 0)
    fail(kernel, std::to_string(p.Hq) + " query heads are not a multiple of " +
                     std::to_string(p.Hkv) + " KV heads");
  p.group = p.Hq / p.Hkv;
  if (window < 0)
    fail(kernel, "sliding window " + std::to_string(window) + " is negative");
  p.scale = static_cast<float>(scale);
  p.causal = causal;
  p.window = window;
  if (mask) {
    expectSameDType(*mask, query, kernel, "mask", "query");
    const Shape full = {p.B, p.Hq, p.T, p.S};
    if (mask->rank() > 4)
      fail(kernel, "mask " + shapeToString(mask->shape) + " has rank above 4");
    const int64_t lead = 4 - mask->rank();
    int64_t stride = 1;
    for (int64_t d = 3; d >= lead; --d) {
      const int64_t dim = mask->shape[d - lead];
      if (dim != full[d] && dim != 1)
        fail(kernel, "mask " + shapeToString(mask->shape) +
                         " does not broadcast to " + shapeToString(full));
      p.maskStrides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
    p.mask = mask->data;
  }
  if (keyMask) {
    expectIndex(keyMask->dtype, kernel, "key_mask");
    expectShape(*keyMask, {p.B, p.S}, kernel, "key_mask");
    p.keyMask = keyMask->data;
    p.keyMask64 = keyMask->dtype == DType::I64;
  }
  p.q = query.data;
  p.k = key.data;
  p.v = value.data;
  return p;
}

/// ALiBi slopes, when present: one per query head, of query's type.
void describeSlopes(AttentionProblem &p, const ConstTensor *slopes,
                    const ConstTensor &query, const char *kernel) {
  if (!slopes)
    return;
  expectSameDType(*slopes, query, kernel, "alibi_slopes", "query");
  if (slopes->numel() != p.Hq)
    fail(kernel, "alibi_slopes " + shapeToString(slopes->shape) +
                     " must hold one slope per query head (" +
                     std::to_string(p.Hq) + ")");
  p.slopes = slopes->data;
}

} // namespace

AttentionProblem describeAttention(const AttentionArgs &a) {
  const char *kernel = "attention";
  AttentionProblem p =
      describeInputs(a.query, a.key, a.value, a.mask, a.keyMask, a.attrs.scale,
                     a.attrs.causal, a.attrs.slidingWindow, kernel);
  expectDType(a.out, p.dtype, kernel, "result");
  expectShape(a.out, {p.B, p.Hq, p.T, p.Dv}, kernel, "result");
  describeSlopes(p, a.alibiSlopes, a.query, kernel);
  if (const ConstTensor *length = a.keyLength) {
    expectDType(*length, DType::I64, kernel, "key_length");
    if (length->numel() != 1)
      fail(kernel, "key_length " + shapeToString(length->shape) +
                       " must hold one element");
    p.keyLength = length->as<int64_t>();
  }
  return p;
}

AttentionAppend describeAttentionAppend(const AttentionArgs &a,
                                        const AttentionProblem &p) {
  const char *kernel = "attention";
  if (!a.appendKey || !a.appendValue || !a.appendAt)
    fail(kernel, "appends without append_key, append_value and append_at");
  if (!a.keyOut || !a.valueOut || a.keyOut->data != a.key.data ||
      a.valueOut->data != a.value.data)
    fail(kernel, "appends into another buffer than it reads");
  const ConstTensor &keys = *a.appendKey, &values = *a.appendValue,
                    &at = *a.appendAt;
  expectSameDType(keys, a.key, kernel, "append_key", "key");
  expectSameDType(values, a.value, kernel, "append_value", "value");
  expectRank(keys, 4, kernel, "append_key");
  AttentionAppend append;
  append.Tn = keys.shape[2];
  if (append.Tn > p.S)
    fail(kernel, "append_key " + shapeToString(keys.shape) +
                     " is longer than the cache " + shapeToString(a.key.shape));
  expectShape(keys, {p.B, p.Hkv, append.Tn, p.Dh}, kernel, "append_key");
  expectShape(values, {p.B, p.Hkv, append.Tn, p.Dv}, kernel, "append_value");
  expectDType(at, DType::I64, kernel, "append_at");
  if (at.numel() != 1)
    fail(kernel,
         "append_at " + shapeToString(at.shape) + " must hold one element");
  append.keys = keys.data;
  append.values = values.data;
  append.at = at.as<int64_t>();
  append.keyCache = a.keyOut->data;
  append.valueCache = a.valueOut->data;
  return append;
}

AttentionProblem describeAttentionGrad(const AttentionGradArgs &a) {
  const char *kernel = "attention_grad";
  AttentionProblem p =
      describeInputs(a.query, a.key, a.value, a.mask, a.keyMask, a.attrs.scale,
                     a.attrs.causal, a.attrs.slidingWindow, kernel);
  describeSlopes(p, a.alibiSlopes, a.query, kernel);
  expectSameDType(a.gradOut, a.query, kernel, "grad_out", "query");
  expectShape(a.gradOut, {p.B, p.Hq, p.T, p.Dv}, kernel, "grad_out");
  const Tensor *grads[] = {&a.gradQuery, &a.gradKey, &a.gradValue};
  const ConstTensor *inputs[] = {&a.query, &a.key, &a.value};
  const char *names[] = {"grad_query", "grad_key", "grad_value"};
  for (int r = 0; r < 3; ++r) {
    expectDType(*grads[r], p.dtype, kernel, names[r]);
    expectShape(*grads[r], inputs[r]->shape, kernel, names[r]);
  }
  return p;
}

} // namespace hybrid::kernels
