// Building strided plans on the host (see Strided.h).
#include "Strided.h"

#include "Check.h"

#include <climits>
#include <vector>

namespace hybrid::cuda {
namespace {

/// Merges dimensions of `out` where every operand steps over the inner one
/// exactly; size-1 dimensions vanish. strides[d][k] is operand k's stride
/// along out[d].
template <int N>
StridedPlan<N> merge(const Shape &out,
                     const std::vector<std::vector<int64_t>> &strides,
                     const char *kernel) {
  StridedPlan<N> plan;
  plan.numel = numElements(out);
  // Innermost first while merging.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> dimStrides;
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1)
      continue;
    if (!dims.empty()) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        mergeable &= strides[d][k] == dimStrides.back()[k] * dims.back();
      if (mergeable) {
        dims.back() *= out[d];
        continue;
      }
    }
    dims.push_back(out[d]);
    dimStrides.push_back(strides[d]);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    fail(kernel, "too many dimensions in " + shapeToString(out) +
                     " after merging (at most " + std::to_string(kMaxDims) +
                     ")");
  plan.rank = static_cast<int>(dims.size());
  for (int i = 0; i < plan.rank; ++i) {
    const int d = plan.rank - 1 - i; // outermost first
    plan.dims[d] = dims[i];
    for (int k = 0; k < N; ++k)
      plan.strides[k][d] = dimStrides[i][k];
  }
  // Direct when, after merging, there is at most one dimension and each
  // operand steps by 1 or 0 along it.
  plan.direct = plan.rank <= 1;
  for (int k = 0; k < N && plan.direct; ++k) {
    const int64_t s = plan.rank == 0 ? 0 : plan.strides[k][0];
    plan.direct = s == 0 || s == 1;
    plan.unit[k] = s;
  }
  plan.small = plan.numel <= INT32_MAX;
  plan.grouped = plan.rank >= 1 && plan.dims[plan.rank - 1] % kGroup == 0;
  for (int k = 0; k < N; ++k) {
    const int64_t s = plan.rank == 0 ? 0 : plan.strides[k][plan.rank - 1];
    plan.inner[k] = s;
    plan.grouped = plan.grouped && (s == 0 || s == 1);
    bool aligned = s == 1;
    for (int d = 0; d + 1 < plan.rank; ++d)
      aligned = aligned && plan.strides[k][d] % kGroup == 0;
    plan.groupAligned[k] = aligned;
  }
  return plan;
}

} // namespace

template <int N>
StridedPlan<N> broadcastPlan(const Shape &out,
                             std::initializer_list<const Shape *> shapes,
                             const char *kernel) {
  const size_t rank = out.size();
  std::vector<std::vector<int64_t>> strides(rank, std::vector<int64_t>(N, 0));
  int k = 0;
  for (const Shape *s : shapes) {
    if (s->size() > rank)
      fail(kernel, "operand of shape " + shapeToString(*s) +
                       " cannot broadcast to " + shapeToString(out));
    const size_t lead = rank - s->size();
    int64_t stride = 1;
    for (size_t i = s->size(); i-- > 0;) {
      const int64_t d = (*s)[i];
      if (d == out[lead + i])
        strides[lead + i][k] = d == 1 ? 0 : stride;
      else if (d != 1)
        fail(kernel, "operand of shape " + shapeToString(*s) +
                         " cannot broadcast to " + shapeToString(out));
      stride *= d;
    }
    ++k;
  }
  return merge<N>(out, strides, kernel);
}

StridedPlan<1> stridedPlan(const Shape &out, const int64_t *strides,
                           const char *kernel) {
  std::vector<std::vector<int64_t>> s(out.size(), std::vector<int64_t>(1));
  for (size_t d = 0; d < out.size(); ++d)
    s[d][0] = out[d] == 1 ? 0 : strides[d];
  return merge<1>(out, s, kernel);
}

template StridedPlan<1> broadcastPlan<1>(const Shape &,
                                         std::initializer_list<const Shape *>,
                                         const char *);
template StridedPlan<2> broadcastPlan<2>(const Shape &,
                                         std::initializer_list<const Shape *>,
                                         const char *);
template StridedPlan<3> broadcastPlan<3>(const Shape &,
                                         std::initializer_list<const Shape *>,
                                         const char *);

} // namespace hybrid::cuda
