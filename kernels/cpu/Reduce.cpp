// Reductions over a set of axes (all when empty), keepdims or not. Floats
// (f32, bf16, f16): sum/mean/prod accumulate in double, max/min compare in
// f32 and propagate NaN; each output is rounded once. Integers (i32, i64)
// wrap (mean truncates); bool max/min are any/all.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace hybrid::cpu::kernels {
namespace {

template <typename S> constexpr bool kFloat = kIsFloatStorage<S>;

/// The integer type of S for the integer reductions (S itself; int for the
/// float types, where it is unused).
template <typename S>
using IntegerOf =
    std::conditional_t<kFloat<S> || std::is_same_v<S, uint8_t>, int, S>;

template <typename S> struct SumReducer {
  using Acc =
      std::conditional_t<kFloat<S>, double, std::make_unsigned_t<IntegerOf<S>>>;
  static Acc init() { return 0; }
  static Acc step(Acc a, S x) {
    if constexpr (kFloat<S>)
      return a + toFloat(x);
    else
      return a + static_cast<Acc>(x);
  }
  static S finish(Acc a, int64_t) {
    if constexpr (kFloat<S>)
      return fromFloat<S>(static_cast<float>(a));
    else
      return static_cast<S>(a);
  }
};

template <typename S> struct MeanReducer : SumReducer<S> {
  using Acc = typename SumReducer<S>::Acc;
  static S finish(Acc a, int64_t count) {
    if constexpr (kFloat<S>)
      return fromFloat<S>(static_cast<float>(a / static_cast<double>(count)));
    else
      return static_cast<S>(static_cast<S>(a) / count); // count > 0, checked
  }
};

template <typename S> struct ProdReducer {
  using Acc = typename SumReducer<S>::Acc;
  static Acc init() { return 1; }
  static Acc step(Acc a, S x) {
    if constexpr (kFloat<S>)
      return a * toFloat(x);
    else
      return a * static_cast<Acc>(x);
  }
  static S finish(Acc a, int64_t) { return SumReducer<S>::finish(a, 1); }
};

/// max/min compare floats in f32 (exact for bf16/f16) and keep NaN.
template <typename S> struct MaxReducer {
  using Acc = std::conditional_t<kFloat<S>, float, S>;
  static Acc init() {
    if constexpr (kFloat<S>)
      return -std::numeric_limits<float>::infinity();
    else
      return std::numeric_limits<S>::min(); // bool: "any" of nothing is 0
  }
  static Acc step(Acc a, S s) {
    Acc x;
    if constexpr (kFloat<S>)
      x = toFloat(s);
    else
      x = s;
    return (x > a || x != x) && a == a ? x : a;
  }
  static S finish(Acc a, int64_t) {
    if constexpr (kFloat<S>)
      return fromFloat<S>(a);
    else
      return a;
  }
};

template <typename S> struct MinReducer {
  using Acc = std::conditional_t<kFloat<S>, float, S>;
  static Acc init() {
    if constexpr (kFloat<S>)
      return std::numeric_limits<float>::infinity();
    else if constexpr (std::is_same_v<S, uint8_t>)
      return 1; // bool: "all" of nothing is true
    else
      return std::numeric_limits<S>::max();
  }
  static Acc step(Acc a, S s) {
    Acc x;
    if constexpr (kFloat<S>)
      x = toFloat(s);
    else
      x = s;
    return (x < a || x != x) && a == a ? x : a;
  }
  static S finish(Acc a, int64_t) { return MaxReducer<S>::finish(a, 1); }
};

/// The input seen as merged runs of kept and reduced dimensions, in fixed
/// arrays (kernels allocate nothing while they run).
struct ReductionLayout {
  static constexpr int kMaxRank = 64;
  // Kept dimensions (outermost first) and their input strides, excluding the
  // innermost run when that run is kept; the same for reduced ones.
  int keptRank = 0, reducedRank = 0;
  int64_t keptDims[kMaxRank], keptStrides[kMaxRank];
  int64_t reducedDims[kMaxRank], reducedStrides[kMaxRank];
  int64_t innerLength = 1; // length of the innermost (contiguous) run
  bool innerReduced = true;
  int64_t reducedCombos = 1; // index combinations of the reduced dims
  int64_t reduceCount = 1;   // elements folded into each output
};

ReductionLayout planReduction(const Shape &shape, const bool *reduced,
                              const char *kernel) {
  ReductionLayout layout;
  if (shape.size() > ReductionLayout::kMaxRank)
    fail(kernel, "too many dimensions in " + shapeToString(shape));
  // Merge neighbouring dimensions of the same kind; size-1 ones vanish.
  int64_t dims[ReductionLayout::kMaxRank];
  bool kinds[ReductionLayout::kMaxRank];
  int count = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (count > 0 && kinds[count - 1] == reduced[d]) {
      dims[count - 1] *= shape[d];
    } else {
      dims[count] = shape[d];
      kinds[count] = reduced[d];
      ++count;
    }
  }
  if (count == 0)
    return layout; // one element
  layout.innerLength = dims[count - 1];
  layout.innerReduced = kinds[count - 1];
  int64_t stride = layout.innerLength;
  for (int i = count - 1; i-- > 0;) {
    if (kinds[i]) {
      layout.reducedDims[layout.reducedRank] = dims[i];
      layout.reducedStrides[layout.reducedRank++] = stride;
      layout.reducedCombos *= dims[i];
    } else {
      layout.keptDims[layout.keptRank] = dims[i];
      layout.keptStrides[layout.keptRank++] = stride;
    }
    stride *= dims[i];
  }
  // Collected innermost first; the walks want outermost first.
  std::reverse(layout.keptDims, layout.keptDims + layout.keptRank);
  std::reverse(layout.keptStrides, layout.keptStrides + layout.keptRank);
  std::reverse(layout.reducedDims, layout.reducedDims + layout.reducedRank);
  std::reverse(layout.reducedStrides,
               layout.reducedStrides + layout.reducedRank);
  layout.reduceCount =
      layout.reducedCombos * (layout.innerReduced ? layout.innerLength : 1);
  return layout;
}

/// The input offset of kept-index `o` (row-major over keptDims).
inline int64_t keptOffset(const ReductionLayout &layout, int64_t o) {
  int64_t offset = 0;
  for (int d = layout.keptRank; d-- > 0;) {
    offset += (o % layout.keptDims[d]) * layout.keptStrides[d];
    o /= layout.keptDims[d];
  }
  return offset;
}

/// Calls fn(offset) for the input offset of every combination of reduced
/// indices, in row-major order (an odometer).
template <typename Fn>
void forReducedOffsets(const ReductionLayout &layout, Fn &&fn) {
  int64_t index[ReductionLayout::kMaxRank] = {};
  int64_t offset = 0;
  for (int64_t c = 0; c < layout.reducedCombos; ++c) {
    fn(offset);
    for (int d = layout.reducedRank; d-- > 0;) {
      offset += layout.reducedStrides[d];
      if (++index[d] < layout.reducedDims[d])
        break;
      offset -= layout.reducedStrides[d] * layout.reducedDims[d];
      index[d] = 0;
    }
  }
}

template <typename S, typename R>
void reduceWith(const KernelCall &call, const ReductionLayout &layout,
                const ScratchLayout &scratch, int threads, const S *in, S *out,
                int64_t outCount) {
  using Acc = typename R::Acc;
  const int64_t L = layout.innerLength;
  const int64_t count = layout.reduceCount;
  if (layout.innerReduced) {
    // Each output folds contiguous runs of L elements.
    parallelFor(
        outCount, count,
        [&](int64_t o) {
          const S *base = in + keptOffset(layout, o);
          Acc acc = R::init();
          forReducedOffsets(layout, [&](int64_t r) {
            const S *x = base + r;
            for (int64_t l = 0; l < L; ++l)
              acc = R::step(acc, x[l]);
          });
          out[o] = R::finish(acc, count);
        },
        threads);
  } else {
    // Each group of L outputs folds whole rows of L elements, into the
    // thread's accumulators.
    parallelFor(
        outCount / L, count * L,
        [&](int64_t o) {
          Acc *acc =
              static_cast<Acc *>(threadScratch(call, scratch, workerSlot()));
          std::fill(acc, acc + L, R::init());
          const S *base = in + keptOffset(layout, o);
          forReducedOffsets(layout, [&](int64_t r) {
            const S *x = base + r;
            for (int64_t l = 0; l < L; ++l)
              acc[l] = R::step(acc[l], x[l]);
          });
          S *y = out + o * L;
          for (int64_t l = 0; l < L; ++l)
            y[l] = R::finish(acc[l], count);
        },
        threads);
  }
}

/// Reductions that also run on bool (as any / all).
template <template <typename> class R> constexpr bool kRunsOnBool = false;
template <> constexpr bool kRunsOnBool<MaxReducer> = true;
template <> constexpr bool kRunsOnBool<MinReducer> = true;

/// The reduced-axis flags and the result shape of a reduction.
struct ReduceShape {
  bool reduced[ReductionLayout::kMaxRank] = {};
  Shape out;
  int64_t reduceCount = 1;
};

ReduceShape reduceShape(const KernelCall &call, const char *kernel) {
  const ConstTensor &input = call.operands.at(0);
  const ops::Reduce &attrs = call.attrs<ops::Reduce>();
  const int64_t rank = input.rank();
  if (rank > ReductionLayout::kMaxRank)
    fail(kernel, "too many dimensions in " + shapeToString(input.shape));
  ReduceShape r;
  for (int64_t a : attrs.axes)
    r.reduced[normalizeAxis(a, rank, kernel)] = true;
  if (attrs.axes.empty())
    std::fill(r.reduced, r.reduced + rank, true);
  for (int64_t d = 0; d < rank; ++d) {
    if (!r.reduced[d])
      r.out.push_back(input.shape[d]);
    else {
      r.reduceCount *= input.shape[d];
      if (attrs.keepdims)
        r.out.push_back(1);
    }
  }
  return r;
}

/// Per-thread accumulators when the innermost run is kept.
ScratchLayout reduceScratch(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(0);
  ReduceShape shape = reduceShape(call, "reduce");
  ReductionLayout layout = planReduction(input.shape, shape.reduced, "reduce");
  ScratchLayout scratch;
  if (!layout.innerReduced && shape.reduceCount > 0) {
    size_t accBytes = 8; // double, u64 or smaller (max/min keep f32)
    if (input.dtype == DType::I32 || input.dtype == DType::Bool)
      accBytes = 4;
    scratch.perThread = layout.innerLength * accBytes;
  }
  return scratch;
}

template <template <typename> class R>
void reduce(const KernelCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, kernel, "result");
  ReduceShape shape = reduceShape(call, kernel);
  expectShape(result, shape.out, kernel, "result");
  const int64_t outCount = result.numel();
  auto run = [&](auto zero) {
    using S = decltype(zero);
    if (outCount == 0)
      return;
    S *out = result.as<S>();
    if (shape.reduceCount == 0) {
      // An empty reduction gives the identity; a mean is 0/0.
      S v = R<S>::finish(R<S>::init(), 1);
      if constexpr (std::is_same_v<R<S>, MeanReducer<S>>) {
        if constexpr (kFloat<S>)
          v = fromFloat<S>(std::numeric_limits<float>::quiet_NaN());
        else
          fail(kernel, "mean over an empty integer reduction");
      }
      std::fill(out, out + outCount, v);
      return;
    }
    const ReductionLayout layout =
        planReduction(input.shape, shape.reduced, kernel);
    const ScratchLayout scratch = reduceScratch(call);
    const int threads = scratchThreads(call, scratch, kernel);
    reduceWith<S, R<S>>(call, layout, scratch, threads, input.as<S>(), out,
                        outCount);
  };
  if (input.dtype == DType::Bool) {
    if constexpr (kRunsOnBool<R>)
      return run(uint8_t{});
    failUnsupported(kernel, input.dtype, "input", "f32, bf16, f16, i32 or i64");
  }
  visitNumeric(input.dtype, kernel, "input", run);
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

size_t reduceScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<reduceScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
