// embedding_grad: the table gradient of embedding, grad_out's rows summed
// per id, deterministically (no float atomics). A counting sort in scratch
// lists each id's positions in position order: the ids are counted (integer
// atomics, whose totals do not depend on the order), one block scans the
// counts into each id's start, and each position's place is its id's start
// plus the number of earlier positions with the same id (counted through
// shared-memory tiles of the ids, M^2 / 2 integer compares: a few
// microseconds for the usual 4k-16k positions). Then one block per table
// row sums that id's grad_out rows in position order in f32, 16-byte
// words at a time where aligned, and rounds once (zero for an id never
// seen), the sum the CPU kernel forms too. Ids outside [0, rows) add
// nothing.
#include "Device.cuh"
#include "Kernels.h"
#include "common/EmbeddingGrad.h"

#include <limits>

namespace hybrid::cuda::kernels {
namespace {

constexpr int kScanThreads = 1024;
constexpr int kScanItems = 8;
constexpr int kRankThreads = 256;
constexpr int kSumThreads = 256;

/// Scratch: each id's start [rows + 1] (its count until the scan), then,
/// at startsBytes, the positions sorted by id [positions], both i32.
size_t startsBytes(const EmbeddingGradProblem &s) {
  return ((static_cast<size_t>(s.rows) + 1) * sizeof(int32_t) + 255) / 256 *
         256;
}
size_t scratchFor(const EmbeddingGradProblem &s) {
  return startsBytes(s) + static_cast<size_t>(s.positions) * sizeof(int32_t);
}

template <typename I>
__device__ __forceinline__ int64_t validId(const I *ids, int64_t i,
                                           int64_t rows) {
  return tableRowOf(indexAt(ids, i), rows);
}

__global__ void zeroCountsKernel(int32_t *counts, int64_t n) {
  awaitInputs();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    counts[i] = 0;
}

template <typename I>
__global__ void countIdsKernel(const I *ids, int64_t positions, int64_t rows,
                               int32_t *counts) {
  awaitInputs();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < positions; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (const int64_t id = validId(ids, i, rows); id >= 0)
      atomicAdd(&counts[id], 1);
}

/// One block: counts[0, n) become their exclusive prefix sums, counts[n]
/// the total (n + 1 entries).
__global__ void __launch_bounds__(kScanThreads)
    scanCountsKernel(int32_t *counts, int64_t n) {
  awaitInputs();
  __shared__ int32_t warpTotals[kScanThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int32_t carry = 0;
  for (int64_t tile = 0; tile < n; tile += kScanThreads * kScanItems) {
    const int64_t first = tile + threadIdx.x * kScanItems;
    int32_t items[kScanItems], total = 0;
#pragma unroll
    for (int k = 0; k < kScanItems; ++k) {
      items[k] = first + k < n ? counts[first + k] : 0;
      total += items[k];
    }
    // Inclusive scan of the threads' totals: within warps, then warps.
    int32_t inclusive = total;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int32_t up = __shfl_up_sync(0xffffffffu, inclusive, o);
      if (lane >= o)
        inclusive += up;
    }
    if (lane == 31)
      warpTotals[warp] = inclusive;
    __syncthreads();
    int32_t before = carry;
    for (int w = 0; w < warp; ++w)
      before += warpTotals[w];
    int32_t tileTotal = 0;
    for (int w = 0; w < kScanThreads / 32; ++w)
      tileTotal += warpTotals[w];
    int32_t running = before + inclusive - total;
#pragma unroll
    for (int k = 0; k < kScanItems; ++k)
      if (first + k < n) {
        counts[first + k] = running;
        running += items[k];
      }
    carry += tileTotal;
    __syncthreads(); // warpTotals is reused by the next tile
  }
  if (threadIdx.x == 0)
    counts[n] = carry;
}

/// Each position's place in the sorted order: its id's start plus the
/// earlier positions with the same id, counted over tiles of the ids.
template <typename I>
__global__ void __launch_bounds__(kRankThreads)
    placePositionsKernel(const I *ids, int64_t positions, int64_t rows,
                         const int32_t *starts, int32_t *order) {
  awaitInputs();
  __shared__ int64_t tileIds[kRankThreads];
  const int64_t blockFirst = static_cast<int64_t>(blockIdx.x) * kRankThreads;
  const int64_t i = blockFirst + threadIdx.x;
  const int64_t id = i < positions ? validId(ids, i, rows) : -1;
  int32_t earlier = 0;
  for (int64_t tile = 0; tile < blockFirst + kRankThreads && tile < positions;
       tile += kRankThreads) {
    const int64_t j = tile + threadIdx.x;
    tileIds[threadIdx.x] = j < positions ? validId(ids, j, rows) : -2;
    __syncthreads();
    if (id >= 0) {
      const int64_t upTo = i - tile < kRankThreads ? i - tile : kRankThreads;
      for (int64_t k = 0; k < upTo; ++k)
        earlier += tileIds[k] == id;
    }
    __syncthreads();
  }
  if (id >= 0)
    order[starts[id] + earlier] = static_cast<int32_t>(i);
}

/// N consecutive elements of grad_out's row p added into sum.
template <typename S, int N>
__device__ __forceinline__ void addChunk(const S *p, float (&sum)[N]) {
  float v[N];
  loadChunk<S, N>(p, v);
#pragma unroll
  for (int k = 0; k < N; ++k)
    sum[k] += v[k];
}

/// One block per table row: the row's positions summed in order.
template <typename S, int N>
__global__ void __launch_bounds__(kSumThreads)
    sumRowsKernel(const S *g, const int32_t *starts, const int32_t *order,
                  int64_t features, S *out) {
  awaitInputs();
  const int64_t r = blockIdx.x;
  const int32_t begin = starts[r], end = starts[r + 1];
  const int64_t chunks = features / N;
  S *row = out + r * features;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float sum[N] = {};
    // Unrolled so that several rows' loads are in flight (a frequent id, a
    // pad token, has thousands); the additions stay in position order.
#pragma unroll 4
    for (int32_t k = begin; k < end; ++k)
      addChunk<S, N>(g + order[k] * features + c * N, sum);
    storeChunk<S, N>(row + c * N, sum);
  }
}

} // namespace

void embeddingGrad(const CudaCall &call) {
  constexpr const char *kKernel = "embedding_grad";
  const auto a = EmbeddingGradArgs::bind(call, kKernel);
  const EmbeddingGradProblem s = describeEmbeddingGrad(a);
  if (s.positions > std::numeric_limits<int32_t>::max() ||
      s.rows >= std::numeric_limits<int32_t>::max())
    fail(kKernel, "more than 2^31 positions or rows");
  expectScratch(call, scratchFor(s), kKernel);
  if (s.rows == 0 || s.features == 0)
    return;
  const cudaStream_t stream = streamOf(call);
  int32_t *starts = static_cast<int32_t *>(call.scratch);
  int32_t *order = reinterpret_cast<int32_t *>(
      static_cast<char *>(call.scratch) + startsBytes(s));
  auto sortPositions = [&](auto index) {
    using I = decltype(index);
    const I *idData = static_cast<const I *>(a.ids.data);
    launch(zeroCountsKernel, gridFor(s.rows + 1), kThreads, 0, stream, starts,
           s.rows + 1);
    if (s.positions > 0) {
      launch(countIdsKernel<I>, gridFor(s.positions), kThreads, 0, stream,
             idData, s.positions, s.rows, starts);
    }
    launch(scanCountsKernel, 1, kScanThreads, 0, stream, starts, s.rows);
    if (s.positions > 0)
      launch(placePositionsKernel<I>,
             static_cast<unsigned>((s.positions + kRankThreads - 1) /
                                   kRankThreads),
             kRankThreads, 0, stream, idData, s.positions, s.rows, starts,
             order);
  };
  if (a.ids.dtype == DType::I32)
    sortPositions(int32_t{});
  else
    sortPositions(int64_t{});
  visitFloat(s.dtype, kKernel, "grad_out", [&](auto zero) {
    using S = decltype(zero);
    constexpr int kWide = 16 / sizeof(S);
    const bool wide = s.features % kWide == 0 &&
                      reinterpret_cast<uintptr_t>(a.gradOut.data) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(a.out.data) % 16 == 0;
    auto run = [&](auto width) {
      constexpr int N = decltype(width)::value;
      const int64_t chunks = s.features / N;
      const int threads = chunks >= kSumThreads
                              ? kSumThreads
                              : static_cast<int>((chunks + 31) / 32 * 32);
      launch(sumRowsKernel<S, N>, static_cast<unsigned>(s.rows), threads, 0,
             stream, static_cast<const S *>(a.gradOut.data), starts, order,
             s.features, static_cast<S *>(a.out.data));
    };
    if (wide)
      run(std::integral_constant<int, kWide>{});
    else
      run(std::integral_constant<int, 1>{});
  });
  checkLaunch(kKernel);
}

size_t embeddingGradScratchBytes(const CudaCall &call) {
  try {
    using In = ops::EmbeddingGrad::In;
    return scratchFor(embeddingGradShape(
        call.operands.at(In::ids).shape, call.operands.at(In::gradOut).shape,
        call.results.at(ops::EmbeddingGrad::Out::out).shape));
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
