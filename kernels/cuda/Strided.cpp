// Building strided plans on the host (see Strided.h).
#include "Strided.h"

#include "Check.h"
#include "common/MergedDims.h"

#include <cassert>
#include <climits>
#include <vector>

namespace hybrid::cuda {
namespace {

/// The plan of `out` for N operands whose strides along out[d] are
/// strides[d * N + k] (MergedDims.h).
template <int N>
StridedPlan<N> merge(const Shape &out, const int64_t *strides,
                     const char *kernel) {
  MergedDims merged;
  if (!mergeDims(out, strides, N, merged) ||
      merged.rank > static_cast<size_t>(kMaxDims))
    fail(kernel, "too many dimensions in " + shapeToString(out) +
                     " after merging (at most " + std::to_string(kMaxDims) +
                     ")");
  StridedPlan<N> plan;
  plan.numel = numElements(out);
  plan.rank = static_cast<int>(merged.rank);
  for (int i = 0; i < plan.rank; ++i) {
    const int d = plan.rank - 1 - i; // outermost first
    plan.dims[d] = merged.dims[i];
    for (int k = 0; k < N; ++k)
      plan.strides[k][d] = merged.strides[i][k];
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
  assert(shapes.size() == static_cast<size_t>(N));
  std::vector<int64_t> strides(out.size() * N);
  broadcastStrides(out, shapes, strides.data(), kernel);
  return merge<N>(out, strides.data(), kernel);
}

// Size-1 dimensions vanish when merging: their strides never count.
StridedPlan<1> stridedPlan(const Shape &out, const int64_t *strides,
                           const char *kernel) {
  return merge<1>(out, strides, kernel);
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
