// Reductions over a set of axes (all when empty), keepdims or not, with the
// CPU kernel's numerics: floats (f32, bf16, f16) sum/mean/prod accumulate in
// double, max/min compare in f32 and propagate NaN; integers (i32, i64) wrap
// (mean truncates); bool max/min are any/all. The input is seen as merged
// runs of kept and reduced dimensions. When the contiguous innermost run is
// reduced, a warp (or a block, for long reductions) folds each output, and
// few long outputs (a whole-tensor norm) split over many blocks;
// when it is kept, threads run along it (coalesced; whole rows [rows, L] ->
// [L], a bias gradient, with one 16-byte load per thread and row) and split
// the reduced rows between them, and between blocks when the outputs alone
// are too few to fill the GPU (partials in scratch, combined in a fixed
// order by the last block to arrive).
#include "Context.h"
#include "Elementwise.cuh"
#include "Kernels.h"

#include "common/Reduce.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

namespace hybrid::cuda::kernels {
namespace {

/// How the shared folds (common/Reduce.h) read and write floats.
struct Elements {
  template <typename S> __device__ static float toFloat(S x) {
    return cuda::toFloat(x);
  }
  template <typename S> __device__ static S fromFloat(float x) {
    return cuda::fromFloat<S>(x);
  }
};

using Folds = ReduceFolds<Elements>;

/// The input as merged runs of kept and reduced dimensions.
struct ReduceLayout {
  int keptRank = 0, reducedRank = 0;
  int64_t keptDims[kMaxDims] = {}, keptStrides[kMaxDims] = {};
  int64_t reducedDims[kMaxDims] = {}, reducedStrides[kMaxDims] = {};
  int64_t innerLength = 1; ///< the innermost (contiguous) run
  bool innerReduced = true;
  int64_t reducedCombos = 1; ///< index combinations of the reduced runs
  int64_t count = 1;         ///< elements folded into each output
  int64_t outCount = 0;

  /// Input offset of kept index o (row-major over keptDims).
  __device__ int64_t keptOffset(int64_t o) const {
    int64_t offset = 0;
    for (int d = keptRank - 1; d >= 0; --d) {
      const int64_t q = o / keptDims[d];
      offset += (o - q * keptDims[d]) * keptStrides[d];
      o = q;
    }
    return offset;
  }
  /// Input offset of reduced combination c.
  __device__ int64_t reducedOffset(int64_t c) const {
    int64_t offset = 0;
    for (int d = reducedRank - 1; d >= 0; --d) {
      const int64_t q = c / reducedDims[d];
      offset += (c - q * reducedDims[d]) * reducedStrides[d];
      c = q;
    }
    return offset;
  }
};

ReduceLayout planReduction(const Shape &shape, const std::vector<bool> &reduced,
                           const char *kernel) {
  ReduceLayout layout;
  std::vector<int64_t> dims;
  std::vector<bool> kinds;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!dims.empty() && kinds.back() == reduced[d]) {
      dims.back() *= shape[d];
    } else {
      dims.push_back(shape[d]);
      kinds.push_back(reduced[d]);
    }
  }
  if (dims.empty())
    return layout; // one element
  const int count = static_cast<int>(dims.size());
  layout.innerLength = dims[count - 1];
  layout.innerReduced = kinds[count - 1];
  std::vector<int64_t> kd, ks, rd, rs; // innermost first
  int64_t stride = layout.innerLength;
  for (int i = count - 1; i-- > 0;) {
    if (kinds[i]) {
      rd.push_back(dims[i]);
      rs.push_back(stride);
      layout.reducedCombos *= dims[i];
    } else {
      kd.push_back(dims[i]);
      ks.push_back(stride);
    }
    stride *= dims[i];
  }
  if (kd.size() > static_cast<size_t>(kMaxDims) ||
      rd.size() > static_cast<size_t>(kMaxDims))
    fail(kernel, "too many alternating kept and reduced dimensions in " +
                     shapeToString(shape));
  layout.keptRank = static_cast<int>(kd.size());
  layout.reducedRank = static_cast<int>(rd.size());
  for (int i = 0; i < layout.keptRank; ++i) {
    layout.keptDims[layout.keptRank - 1 - i] = kd[i];
    layout.keptStrides[layout.keptRank - 1 - i] = ks[i];
  }
  for (int i = 0; i < layout.reducedRank; ++i) {
    layout.reducedDims[layout.reducedRank - 1 - i] = rd[i];
    layout.reducedStrides[layout.reducedRank - 1 - i] = rs[i];
  }
  layout.count =
      layout.reducedCombos * (layout.innerReduced ? layout.innerLength : 1);
  return layout;
}

/// Threads folding one output on the reduced-inner path.
constexpr int kWarpGroup = 32, kBlockGroup = 256;

/// How the reduced-inner path covers its outputs: a warp per output below
/// 2048 elements each, a block (`wide`) from there; when the wide outputs
/// are too few to fill the GPU (a norm over a whole tensor: one output of
/// 16M elements had one block), each output's elements split over `splits`
/// blocks whose partials meet in scratch.
struct InnerPlan {
  bool wide = false;
  int splits = 1;
};

constexpr int64_t kInnerBlocks = 1024;       ///< blocks a split aims at
constexpr int64_t kElementsPerSplit = 16384; ///< a split takes at least
constexpr int kMaxInnerSplits = 256;

InnerPlan planInner(const ReduceLayout &s) {
  InnerPlan plan;
  plan.wide = s.count >= 2048;
  if (plan.wide && s.outCount < kInnerBlocks &&
      s.outCount <= static_cast<int64_t>(kTileCounters)) {
    const int64_t wanted = (kInnerBlocks + s.outCount - 1) / s.outCount;
    const int64_t most =
        std::min<int64_t>(kMaxInnerSplits, s.count / kElementsPerSplit);
    plan.splits =
        static_cast<int>(std::max<int64_t>(1, std::min(wanted, most)));
  }
  return plan;
}

/// The innermost run is reduced: blockDim.x threads fold each output
/// (blockDim.y outputs per block), striding over its `count` elements, or
/// over blockIdx.y's share of them when `splits` > 1 (wide blocks only, one
/// output per block: one-dimensional, as lastBlockToArrive wants); the
/// output's last block to arrive then combines the partials ([splits]
/// [outCount] in scratch) in split order.
template <typename S, typename R>
__global__ void reduceInnerKernel(const S *in, S *out, ReduceLayout s,
                                  int splits, typename R::Acc *partials,
                                  unsigned *counters) {
  awaitInputs();
  using Acc = typename R::Acc;
  __shared__ Acc partial[kBlockGroup / 32];
  const int64_t L = s.innerLength;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t share = (s.count + splits - 1) / splits;
  const int64_t r0 = blockIdx.y * share;
  const int64_t r1 = std::min<int64_t>(r0 + share, s.count);
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
       o - threadIdx.y < s.outCount;
       o += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    Acc acc = R::init();
    if (o < s.outCount) {
      const S *base = in + s.keptOffset(o);
      if (s.reducedCombos == 1) {
        for (int64_t l = r0 + threadIdx.x; l < r1; l += blockDim.x)
          acc = R::step(acc, base[l]);
      } else {
        for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
          const int64_t c = r / L;
          acc = R::step(acc, base[s.reducedOffset(c) + (r - c * L)]);
        }
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      acc = R::combine(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (blockDim.x > 32) { // one output per block: combine the warps
      if (lane == 0)
        partial[warp] = acc;
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
          acc = R::combine(acc, partial[w]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && o < s.outCount) {
      if (splits == 1)
        out[o] = R::finish(acc, s.count);
      else
        partials[blockIdx.y * s.outCount + o] = acc;
    }
    if (splits > 1 && lastBlockToArrive(counters + o, splits) &&
        threadIdx.x == 0) {
      acc = __ldcg(partials + o); // other blocks' writes: past L1
      for (int split = 1; split < splits; ++split)
        acc = R::combine(acc, __ldcg(partials + split * s.outCount + o));
      out[o] = R::finish(acc, s.count);
    }
  }
}

constexpr int kColumns = 32, kColumnSplit = 8;

/// How the kept-inner path covers its outputs: tiles of kColumns outputs,
/// and, when those tiles alone are too few blocks to fill the GPU (a bias
/// gradient: 2048 outputs over 4096 rows is 64 tiles), the reduced rows
/// split over `splits` blocks per tile whose partials meet in scratch.
struct OuterPlan {
  int64_t tiles = 0;
  int splits = 1;
};

constexpr int64_t kOuterBlocks = 1024; ///< blocks a split aims at
constexpr int64_t kRowsPerSplit = 64;  ///< reduced rows a split takes at least
constexpr int kMaxSplits = 64;

/// Columns a thread of reduceRowsKernel folds: one 16-byte load per row.
int64_t rowVector(int64_t elementSize) { return 16 / elementSize; }

/// Whether the kept-inner reduction is of whole rows, [rows, L] -> [L] (a
/// bias gradient), with L a multiple of rowVector: reduceRowsKernel's case,
/// from shapes alone (the run also wants the input at a 16-byte address).
bool rowsCase(const ReduceLayout &s, int64_t elementSize) {
  return !s.innerReduced && s.keptRank == 0 && s.reducedRank == 1 &&
         elementSize >= 2 && elementSize <= 8 &&
         s.innerLength % rowVector(elementSize) == 0;
}

OuterPlan planOuter(const ReduceLayout &s, int64_t elementSize) {
  OuterPlan plan;
  const int64_t columns =
      rowsCase(s, elementSize) ? kColumns * rowVector(elementSize) : kColumns;
  plan.tiles =
      (s.outCount / s.innerLength) * ((s.innerLength + columns - 1) / columns);
  if (plan.tiles < kOuterBlocks &&
      plan.tiles <= static_cast<int64_t>(kTileCounters)) {
    const int64_t wanted = (kOuterBlocks + plan.tiles - 1) / plan.tiles;
    const int64_t most =
        std::min<int64_t>(kMaxSplits, s.reducedCombos / kRowsPerSplit);
    plan.splits =
        static_cast<int>(std::max<int64_t>(1, std::min(wanted, most)));
  }
  return plan;
}

/// Scratch for a reduction whose blocks split their work `splits` ways:
/// one partial (an accumulator: at most 8 bytes) per output and split.
size_t partialsBytes(const ReduceLayout &s, int splits) {
  return splits > 1 ? static_cast<size_t>(s.outCount) * splits * 8 : 0;
}

/// The scratch either path's plan needs.
size_t scratchOf(const ReduceLayout &s, int64_t elementSize) {
  return partialsBytes(s, s.innerReduced ? planInner(s).splits
                                         : planOuter(s, elementSize).splits);
}

/// The innermost run (L outputs) is kept: kColumns threads run along it,
/// kColumnSplit groups of them split a tile's reduced rows; partials meet in
/// shared memory. With blockIdx.y over `splits` > 1, each block folds its share
/// of the rows into `partials` ([splits][outCount]) and the tile's last block
/// to arrive combines them, split by split (the same order every run).
template <typename S, typename R>
__global__ void reduceOuterKernel(const S *in, S *out, ReduceLayout s,
                                  OuterPlan plan, typename R::Acc *partials,
                                  unsigned *counters) {
  awaitInputs();
  using Acc = typename R::Acc;
  __shared__ Acc partial[kColumnSplit][kColumns];
  // A one-dimensional block (as lastBlockToArrive wants) as 32 x 8.
  const int tx = threadIdx.x % kColumns, ty = threadIdx.x / kColumns;
  const int64_t L = s.innerLength;
  const int64_t tilesPerGroup = (L + kColumns - 1) / kColumns;
  const int64_t share = (s.reducedCombos + plan.splits - 1) / plan.splits;
  const int64_t c0 = blockIdx.y * share;
  const int64_t c1 = std::min<int64_t>(c0 + share, s.reducedCombos);
  for (int64_t t = blockIdx.x; t < plan.tiles; t += gridDim.x) {
    const int64_t g = t / tilesPerGroup;
    const int64_t l = (t - g * tilesPerGroup) * kColumns + tx;
    const int64_t o = g * L + l;
    Acc acc = R::init();
    if (l < L) {
      const S *base = in + s.keptOffset(g) + l;
      if (s.reducedRank == 1) // (no division per element)
        for (int64_t c = c0 + ty; c < c1; c += kColumnSplit)
          acc = R::step(acc, base[c * s.reducedStrides[0]]);
      else
        for (int64_t c = c0 + ty; c < c1; c += kColumnSplit)
          acc = R::step(acc, base[s.reducedOffset(c)]);
    }
    partial[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && l < L) {
      for (int y = 1; y < kColumnSplit; ++y)
        acc = R::combine(acc, partial[y][tx]);
      if (plan.splits == 1)
        out[o] = R::finish(acc, s.count);
      else
        partials[blockIdx.y * s.outCount + o] = acc;
    }
    if (plan.splits > 1 && lastBlockToArrive(counters + t, plan.splits) &&
        ty == 0 && l < L) {
      acc = __ldcg(partials + o); // other blocks' writes: past L1
      for (int split = 1; split < plan.splits; ++split)
        acc = R::combine(acc, __ldcg(partials + split * s.outCount + o));
      out[o] = R::finish(acc, s.count);
    }
    __syncthreads();
  }
}

/// rowsCase: [rows, L] -> [L]. A tile is 32 x V columns (V = 16 bytes of
/// S), lane x of a warp folds columns 32-lane-wide tile + V x .. + V - 1
/// with one 16-byte load per row; the kColumnSplit warps split the tile's
/// (or the split's) rows and meet in shared memory; splits as
/// reduceOuterKernel's (partials, the tile's last block combines them in
/// split order).
template <typename S, typename R>
__global__ void __launch_bounds__(kColumns *kColumnSplit)
    reduceRowsKernel(const S *in, S *out, ReduceLayout s, OuterPlan plan,
                     typename R::Acc *partials, unsigned *counters) {
  awaitInputs();
  using Acc = typename R::Acc;
  constexpr int V = 16 / sizeof(S), kTile = kColumns * V;
  __shared__ Acc partial[kColumnSplit][kTile];
  const int tx = threadIdx.x % kColumns, ty = threadIdx.x / kColumns;
  const int64_t L = s.innerLength, stride = s.reducedStrides[0];
  const int64_t share = (s.reducedCombos + plan.splits - 1) / plan.splits;
  const int64_t c0 = blockIdx.y * share;
  const int64_t c1 = std::min<int64_t>(c0 + share, s.reducedCombos);
  for (int64_t t = blockIdx.x; t < plan.tiles; t += gridDim.x) {
    const int64_t l0 = t * kTile + tx * V;
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      acc[v] = R::init();
    if (l0 < L) {
      const S *base = in + l0;
#pragma unroll 4
      for (int64_t c = c0 + ty; c < c1; c += kColumnSplit) {
        const uint4 word = __ldcs(reinterpret_cast<const uint4 *>(
            base + c * stride)); // read once: past L1
        const S *e = reinterpret_cast<const S *>(&word);
#pragma unroll
        for (int v = 0; v < V; ++v)
          acc[v] = R::step(acc[v], e[v]);
      }
    }
#pragma unroll
    for (int v = 0; v < V; ++v)
      partial[ty][tx * V + v] = acc[v];
    __syncthreads();
    const int j = threadIdx.x; // the tile's column this thread finishes
    const int64_t l = t * kTile + j;
    const bool mine = j < kTile && l < L;
    if (mine) {
      Acc a = partial[0][j];
      for (int y = 1; y < kColumnSplit; ++y)
        a = R::combine(a, partial[y][j]);
      if (plan.splits == 1)
        out[l] = R::finish(a, s.count);
      else
        partials[blockIdx.y * s.outCount + l] = a;
    }
    if (plan.splits > 1 && lastBlockToArrive(counters + t, plan.splits) &&
        mine) {
      Acc a = __ldcg(partials + l); // other blocks' writes: past L1
      for (int split = 1; split < plan.splits; ++split)
        a = R::combine(a, __ldcg(partials + split * s.outCount + l));
      out[l] = R::finish(a, s.count);
    }
    __syncthreads();
  }
}

template <typename S, typename R>
__global__ void identityKernel(S *out, int64_t n) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = R::identity();
}

template <template <typename> class R>
void reduce(const CudaCall &call, const char *kernel) {
  const auto a = ReduceArgs::bind(call, kernel);
  const ReduceProblem r = describeReduce(a, kernel);
  const ConstTensor &input = a.input;
  const int64_t outCount = a.out.numel();
  const cudaStream_t stream = streamOf(call);
  auto run = [&](auto zero) {
    using S = decltype(zero);
    using Reducer = R<S>;
    if (outCount == 0)
      return;
    S *out = static_cast<S *>(a.out.data);
    const S *in = static_cast<const S *>(input.data);
    if (r.reduceCount == 0) {
      if constexpr (std::is_same_v<Reducer, Folds::Mean<S>> && !kFoldsFloat<S>)
        fail(kernel, "mean over an empty integer reduction");
      launch(identityKernel<S, Reducer>, gridFor(outCount), kThreads, 0, stream,
             out, outCount);
      checkLaunch(kernel);
      return;
    }
    ReduceLayout layout = planReduction(input.shape, r.reduced, kernel);
    layout.outCount = outCount;
    if (layout.innerReduced) {
      InnerPlan plan = planInner(layout);
      unsigned *counters = nullptr;
      if (plan.splits > 1) {
        expectScratch(call, partialsBytes(layout, plan.splits), kernel);
        counters = tileCounters(*call.context, call.stream, kernel);
        if (!counters) // a capture that met no split kernel before
          plan.splits = 1;
      }
      const dim3 block(plan.wide ? kBlockGroup : kWarpGroup,
                       plan.wide ? 1 : kBlockGroup / kWarpGroup);
      const int64_t blocks = (outCount + block.y - 1) / block.y;
      const dim3 grid(plan.splits > 1 ? static_cast<unsigned>(outCount)
                                      : gridFor(blocks, 1),
                      static_cast<unsigned>(plan.splits));
      launch(reduceInnerKernel<S, Reducer>, grid, block, 0, stream, in, out,
             layout, plan.splits,
             static_cast<typename Reducer::Acc *>(call.scratch), counters);
    } else {
      OuterPlan plan = planOuter(layout, sizeof(S));
      unsigned *counters = nullptr;
      if (plan.splits > 1) {
        expectScratch(call, partialsBytes(layout, plan.splits), kernel);
        counters = tileCounters(*call.context, call.stream, kernel);
        if (!counters) // a capture that met no split kernel before
          plan.splits = 1;
      }
      const bool rows = rowsCase(layout, sizeof(S)) &&
                        reinterpret_cast<uintptr_t>(in) % 16 == 0;
      if (!rows) // the generic kernel's tiles (the same split count)
        plan.tiles = (outCount / layout.innerLength) *
                     ((layout.innerLength + kColumns - 1) / kColumns);
      if (plan.splits > 1 && plan.tiles > static_cast<int64_t>(kTileCounters))
        plan.splits = 1; // (more tiles than counters: no splits needed)
      dim3 grid(gridFor(plan.tiles, 1), static_cast<unsigned>(plan.splits));
      launch(rows ? reduceRowsKernel<S, Reducer>
                  : reduceOuterKernel<S, Reducer>,
             grid, kColumns * kColumnSplit, 0, stream, in, out, layout, plan,
             static_cast<typename Reducer::Acc *>(call.scratch), counters);
    }
    checkLaunch(kernel);
  };
  if (input.dtype == DType::Bool) {
    if constexpr (R<uint8_t>::kTakesBool)
      return run(uint8_t{});
    failUnsupported(kernel, input.dtype, "input", "f32, bf16, f16, i32 or i64");
  }
  visitNumeric(input.dtype, kernel, "input", run);
}

} // namespace

void reduceSum(const CudaCall &call) { reduce<Folds::Sum>(call, "reduce_sum"); }
void reduceMean(const CudaCall &call) {
  reduce<Folds::Mean>(call, "reduce_mean");
}
void reduceMax(const CudaCall &call) { reduce<Folds::Max>(call, "reduce_max"); }
void reduceMin(const CudaCall &call) { reduce<Folds::Min>(call, "reduce_min"); }
void reduceProd(const CudaCall &call) {
  reduce<Folds::Prod>(call, "reduce_prod");
}

size_t reduceScratchBytes(const CudaCall &call) {
  try {
    if (call.operands.size() != 1 || call.results.size() != 1)
      return 0;
    const ConstTensor &input = call.operands[ops::Reduce::In::input];
    const Tensor &out = call.results[ops::Reduce::Out::out];
    const ReduceProblem r =
        reduceShape(input.shape, call.attrs<ops::Reduce>(), "reduce");
    if (out.dtype != input.dtype || out.shape != r.out)
      return 0; // the run reports it
    if (r.reduceCount == 0 || out.numel() == 0)
      return 0;
    ReduceLayout layout = planReduction(input.shape, r.reduced, "reduce");
    layout.outCount = out.numel();
    return scratchOf(layout, static_cast<int64_t>(dtypeSize(input.dtype)));
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
