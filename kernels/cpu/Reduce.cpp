// Reductions over a set of axes (all when empty), keepdims or not:
// reduce_sum/mean/prod accumulate f32 in double; max/min propagate NaN; all
// of them also run on i64 (wrapping; mean truncates), and max/min on bool
// (any / all).
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

template <typename T> struct SumReducer {
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, uint64_t>;
  static Acc init() { return 0; }
  static Acc step(Acc a, T x) { return a + static_cast<Acc>(x); }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T> struct MeanReducer : SumReducer<T> {
  using Acc = typename SumReducer<T>::Acc;
  static T finish(Acc a, int64_t count) {
    if constexpr (std::is_same_v<T, float>)
      return static_cast<float>(a / static_cast<double>(count));
    else
      return static_cast<int64_t>(a) / count; // count > 0, checked
  }
};

template <typename T> struct ProdReducer {
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, uint64_t>;
  static Acc init() { return 1; }
  static Acc step(Acc a, T x) { return a * static_cast<Acc>(x); }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T> struct MaxReducer {
  using Acc = T;
  static Acc init() {
    if constexpr (std::is_same_v<T, float>)
      return -std::numeric_limits<float>::infinity();
    else
      return std::numeric_limits<T>::min();
  }
  static Acc step(Acc a, T x) { return (x > a || x != x) && a == a ? x : a; }
  static T finish(Acc a, int64_t) { return a; }
};

template <typename T> struct MinReducer {
  using Acc = T;
  static Acc init() {
    if constexpr (std::is_same_v<T, float>)
      return std::numeric_limits<float>::infinity();
    else if constexpr (std::is_same_v<T, uint8_t>)
      return 1; // bool: "all" of nothing is true
    else
      return std::numeric_limits<T>::max();
  }
  static Acc step(Acc a, T x) { return (x < a || x != x) && a == a ? x : a; }
  static T finish(Acc a, int64_t) { return a; }
};

/// The input seen as merged runs of kept and reduced dimensions.
struct ReductionLayout {
  // Kept dimensions (outermost first) and their input strides, excluding the
  // innermost run when that run is kept.
  std::vector<int64_t> keptDims, keptStrides;
  // Input offsets of every combination of reduced indices, excluding the
  // innermost run when that run is reduced.
  std::vector<int64_t> reducedOffsets{0};
  int64_t innerLength = 1; // length of the innermost (contiguous) run
  bool innerReduced = true;
  int64_t reduceCount = 1; // elements folded into each output
};

ReductionLayout planReduction(const Shape &shape,
                              const std::vector<bool> &reduced) {
  // Merge neighbouring dimensions of the same kind; size-1 ones vanish.
  std::vector<int64_t> dims;
  std::vector<bool> kinds;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!dims.empty() && kinds.back() == reduced[d])
      dims.back() *= shape[d];
    else {
      dims.push_back(shape[d]);
      kinds.push_back(reduced[d]);
    }
  }
  ReductionLayout layout;
  if (dims.empty())
    return layout; // one element
  std::vector<int64_t> strides = contiguousStrides(dims);
  layout.innerLength = dims.back();
  layout.innerReduced = kinds.back();
  std::vector<int64_t> redDims, redStrides;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    if (kinds[i]) {
      redDims.push_back(dims[i]);
      redStrides.push_back(strides[i]);
    } else {
      layout.keptDims.push_back(dims[i]);
      layout.keptStrides.push_back(strides[i]);
    }
  }
  layout.reducedOffsets.assign(1, 0);
  for (size_t i = 0; i < redDims.size(); ++i) {
    std::vector<int64_t> next;
    next.reserve(layout.reducedOffsets.size() * redDims[i]);
    for (int64_t off : layout.reducedOffsets)
      for (int64_t j = 0; j < redDims[i]; ++j)
        next.push_back(off + j * redStrides[i]);
    layout.reducedOffsets = std::move(next);
  }
  layout.reduceCount = static_cast<int64_t>(layout.reducedOffsets.size()) *
                       (layout.innerReduced ? layout.innerLength : 1);
  return layout;
}

/// The input offset of kept-index `o` (row-major over keptDims).
inline int64_t keptOffset(const ReductionLayout &layout, int64_t o) {
  int64_t offset = 0;
  for (size_t d = layout.keptDims.size(); d-- > 0;) {
    offset += (o % layout.keptDims[d]) * layout.keptStrides[d];
    o /= layout.keptDims[d];
  }
  return offset;
}

template <typename T, typename R>
void reduceWith(const ReductionLayout &layout, const T *in, T *out,
                int64_t outCount) {
  using Acc = typename R::Acc;
  const int64_t L = layout.innerLength;
  const std::vector<int64_t> &roffs = layout.reducedOffsets;
  const int64_t count = layout.reduceCount;
  if (layout.innerReduced) {
    // Each output folds contiguous runs of L elements.
    parallelFor(outCount, count, [&](int64_t o) {
      const T *base = in + keptOffset(layout, o);
      Acc acc = R::init();
      for (int64_t r : roffs) {
        const T *x = base + r;
        for (int64_t l = 0; l < L; ++l)
          acc = R::step(acc, x[l]);
      }
      out[o] = R::finish(acc, count);
    });
  } else {
    // Each group of L outputs folds whole rows of L elements.
    PerThreadScratch<Acc> scratch(L);
    parallelFor(outCount / L, count * L, [&](int64_t o) {
      const T *base = in + keptOffset(layout, o);
      Acc *acc = scratch.get();
      std::fill(acc, acc + L, R::init());
      for (int64_t r : roffs) {
        const T *x = base + r;
        for (int64_t l = 0; l < L; ++l)
          acc[l] = R::step(acc[l], x[l]);
      }
      T *y = out + o * L;
      for (int64_t l = 0; l < L; ++l)
        y[l] = R::finish(acc[l], count);
    });
  }
}

/// Reductions that also run on bool (as any / all).
template <template <typename> class R> constexpr bool kRunsOnBool = false;
template <> constexpr bool kRunsOnBool<MaxReducer> = true;
template <> constexpr bool kRunsOnBool<MinReducer> = true;

template <template <typename> class R>
void reduce(const KernelCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, kernel, "result");
  const ops::Reduce &attrs = call.attrs<ops::Reduce>();
  const int64_t rank = input.rank();
  std::vector<bool> reduced(rank, false);
  const std::vector<int64_t> &axes = attrs.axes;
  for (int64_t a : axes)
    reduced[normalizeAxis(a, rank, kernel)] = true;
  if (axes.empty())
    reduced.assign(rank, true);
  const bool keepdims = attrs.keepdims;
  Shape outShape;
  int64_t reduceCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      outShape.push_back(input.shape[d]);
    else {
      reduceCount *= input.shape[d];
      if (keepdims)
        outShape.push_back(1);
    }
  }
  expectShape(result, outShape, kernel, "result");
  if ((input.dtype == DType::Bool && !kRunsOnBool<R>) ||
      (input.dtype != DType::Bool && input.dtype != DType::F32 &&
       input.dtype != DType::I64))
    fail(kernel, std::string("unsupported element type ") +
                     dtypeName(input.dtype) + " (expected f32 or i64)");
  const int64_t outCount = result.numel();
  if (outCount == 0)
    return;

  auto run = [&](auto zero) {
    using T = decltype(zero);
    T *out = result.as<T>();
    if (reduceCount == 0) {
      // An empty reduction gives the identity; a mean is 0/0.
      T v = R<T>::finish(R<T>::init(), 1);
      if constexpr (std::is_same_v<R<T>, MeanReducer<T>>) {
        if constexpr (std::is_same_v<T, float>)
          v = std::numeric_limits<float>::quiet_NaN();
        else
          fail(kernel, "mean over an empty i64 reduction");
      }
      std::fill(out, out + outCount, v);
      return;
    }
    ReductionLayout layout = planReduction(input.shape, reduced);
    reduceWith<T, R<T>>(layout, input.as<T>(), out, outCount);
  };
  if (input.dtype == DType::F32)
    run(float{});
  else if (input.dtype == DType::I64)
    run(int64_t{});
  else if constexpr (kRunsOnBool<R>)
    run(uint8_t{});
}

} // namespace

void reduceSum(const KernelCall &call) {
  reduce<SumReducer>(call, "reduce_sum");
}
void reduceMean(const KernelCall &call) {
  reduce<MeanReducer>(call, "reduce_mean");
}
void reduceMax(const KernelCall &call) {
  reduce<MaxReducer>(call, "reduce_max");
}
void reduceMin(const KernelCall &call) {
  reduce<MinReducer>(call, "reduce_min");
}
void reduceProd(const KernelCall &call) {
  reduce<ProdReducer>(call, "reduce_prod");
}

} // namespace hybrid::cpu::kernels
