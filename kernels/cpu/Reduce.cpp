// Reductions over a set of axes (all when empty), keepdims or not. Floats
// (f32, bf16, f16): sum/mean/prod accumulate in double, max/min compare in
// f32 and propagate NaN; each output is rounded once. Integers (i32, i64)
// wrap (mean truncates); bool max/min are any/all.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Reduce.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

/// How the shared folds (common/Reduce.h) read and write floats.
struct Elements {
  template <typename S> static float toFloat(S x) { return cpu::toFloat(x); }
  template <typename S> static S fromFloat(float x) {
    return cpu::fromFloat<S>(x);
  }
};

using Folds = ReduceFolds<Elements>;

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

ReductionLayout planReduction(const Shape &shape,
                              const std::vector<bool> &reduced,
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

/// Per-thread accumulators when the innermost run is kept.
ScratchLayout reduceScratch(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(ops::Reduce::In::input);
  const ReduceProblem shape =
      reduceShape(input.shape, call.attrs<ops::Reduce>(), "reduce");
  const ReductionLayout layout =
      planReduction(input.shape, shape.reduced, "reduce");
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
  const auto a = ReduceArgs::bind(call, kernel);
  const ReduceProblem shape = describeReduce(a, kernel);
  if (a.input.rank() > ReductionLayout::kMaxRank)
    fail(kernel, "too many dimensions in " + shapeToString(a.input.shape));
  const int64_t outCount = a.out.numel();
  auto run = [&](auto zero) {
    using S = decltype(zero);
    if (outCount == 0)
      return;
    S *out = a.out.as<S>();
    if (shape.reduceCount == 0) {
      if constexpr (std::is_same_v<R<S>, Folds::Mean<S>> && !kFoldsFloat<S>)
        fail(kernel, "mean over an empty integer reduction");
      std::fill(out, out + outCount, R<S>::identity());
      return;
    }
    const ReductionLayout layout =
        planReduction(a.input.shape, shape.reduced, kernel);
    const ScratchLayout scratch = reduceScratch(call);
    const int threads = scratchThreads(call, scratch, kernel);
    reduceWith<S, R<S>>(call, layout, scratch, threads, a.input.as<S>(), out,
                        outCount);
  };
  if (a.input.dtype == DType::Bool) {
    if constexpr (R<uint8_t>::kTakesBool)
      return run(uint8_t{});
    failUnsupported(kernel, a.input.dtype, "input",
                    "f32, bf16, f16, i32 or i64");
  }
  visitNumeric(a.input.dtype, kernel, "input", run);
}

} // namespace

void reduceSum(const KernelCall &call) {
  reduce<Folds::Sum>(call, "reduce_sum");
}
void reduceMean(const KernelCall &call) {
  reduce<Folds::Mean>(call, "reduce_mean");
}
void reduceMax(const KernelCall &call) {
  reduce<Folds::Max>(call, "reduce_max");
}
void reduceMin(const KernelCall &call) {
  reduce<Folds::Min>(call, "reduce_min");
}
void reduceProd(const KernelCall &call) {
  reduce<Folds::Prod>(call, "reduce_prod");
}

size_t reduceScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<reduceScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
