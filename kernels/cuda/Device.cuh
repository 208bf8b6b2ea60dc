// Device-side element types and launch helpers shared by the .cu files:
// bf16/f16 storage (computed in f32, rounded to nearest even once), dtype
// dispatch on the host, grid sizing for grid-stride loops, and the NaN-
// propagating max/min every kernel uses so they agree with the CPU oracle.
#pragma once

#include "Check.h"
#include "common/Dispatch.h"
#ifdef HYBRID_CUDA_TIMELINE
#include "Timeline.h"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace hybrid::cuda {

using Bf16 = __nv_bfloat16;
using F16 = __half;

template <typename S>
constexpr bool kIsFloat = std::is_same_v<S, float> || std::is_same_v<S, Bf16> ||
                          std::is_same_v<S, F16>;

/// A stored float element as f32.
__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(Bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float toFloat(F16 x) { return __half2float(x); }

/// f32 to storage type S, rounding to nearest even (NaN stays NaN, overflow
/// goes to inf), as hybrid/Float16.h does on the host.
template <typename S> __device__ __forceinline__ S fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <> __device__ __forceinline__ Bf16 fromFloat<Bf16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ F16 fromFloat<F16>(float x) {
  return __float2half_rn(x);
}

/// N consecutive elements at p as f32: one 16-byte load when N > 1 (N =
/// 16 / sizeof(S), p 16-byte aligned).
template <typename S, int N>
__device__ __forceinline__ void loadChunk(const S *p, float (&v)[N]) {
  static_assert(N == 1 || N * sizeof(S) == 16);
  if constexpr (N == 1) {
    v[0] = toFloat(*p);
  } else {
    const uint4 word = *reinterpret_cast<const uint4 *>(p);
    const S *e = reinterpret_cast<const S *>(&word);
#pragma unroll
    for (int i = 0; i < N; ++i)
      v[i] = toFloat(e[i]);
  }
}

/// v rounded to S into N consecutive elements at p: one 16-byte store when
/// N > 1 (as loadChunk).
template <typename S, int N>
__device__ __forceinline__ void storeChunk(S *p, const float (&v)[N]) {
  static_assert(N == 1 || N * sizeof(S) == 16);
  if constexpr (N == 1) {
    *p = fromFloat<S>(v[0]);
  } else {
    uint4 word;
    S *e = reinterpret_cast<S *>(&word);
#pragma unroll
    for (int i = 0; i < N; ++i)
      e[i] = fromFloat<S>(v[i]);
    *reinterpret_cast<uint4 *>(p) = word;
  }
}

/// NaN-propagating maximum / minimum (torch.maximum, the CPU kernels).
__device__ __forceinline__ float maxOf(float m, float v) {
  return (v > m || v != v) && m == m ? v : m;
}
__device__ __forceinline__ float minOf(float m, float v) {
  return (v < m || v != v) && m == m ? v : m;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = maxOf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <typename T> __device__ __forceinline__ T warpSum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Whether this block (one-dimensional: thread 0 counts) is the last of
/// `blocks` to arrive at `counter`, for work split over blocks and finished
/// by whichever block ends last (split K, split keys): every thread of the
/// block calls it after the block wrote what the last one reads. The last block
/// resets the counter to zero for the next call (counters are left zeroed) and,
/// when this returns true, sees every other block's writes.
__device__ __forceinline__ bool lastBlockToArrive(unsigned *counter,
                                                  unsigned blocks) {
  __shared__ bool last;
  __threadfence(); // this block's writes, visible before it counts
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == blocks - 1;
    if (last)
      *counter = 0; // every block has counted
  }
  __syncthreads();
  if (last)
    __threadfence();
  return last;
}

/// Threads per block of the simple elementwise kernels.
constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n items: enough to fill the GPU a few
/// times over, never more than the items need.
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = 8192;
  return static_cast<unsigned>(blocks < 1            ? 1
                               : blocks > kMaxBlocks ? kMaxBlocks
                                                     : blocks);
}

#ifdef HYBRID_CUDA_TIMELINE
namespace timeline {
/// This kernel file's pointer to the timeline's log (Timeline.h): null
/// until the host enables it. One per file, as each file is its own module.
static __device__ Log *fileLog = nullptr;
static void *fileLogSymbol() {
  void *address = nullptr;
  return cudaGetSymbolAddress(&address, fileLog) == cudaSuccess ? address
                                                                : nullptr;
}
[[maybe_unused]] static const bool fileRegistered =
    registerFile(&fileLogSymbol);

__device__ __forceinline__ uint64_t now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ bool firstThread() {
  return (threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y |
          blockIdx.z) == 0;
}
/// Block (0,0,0)'s stamps: when it arrived, and now (its wait returned).
__device__ __forceinline__ void stamp(uint64_t arrive) {
  Log *log = fileLog;
  if (!log || !firstThread())
    return;
  const unsigned long long slot = atomicAdd(&log->count, 1ull);
  if (slot >= log->capacity)
    return;
  Mark &mark = log->marks[slot];
  mark.arrive = arrive;
  mark.start = now();
  mark.grid[0] = gridDim.x;
  mark.grid[1] = gridDim.y;
  mark.grid[2] = gridDim.z;
  mark.threads = blockDim.x * blockDim.y * blockDim.z;
}
} // namespace timeline
#endif

/// Programmatic dependent launch (sm_90 and later): our kernels are
/// enqueued with `launch` below, which lets a kernel's blocks start while
/// the kernel before it on the stream drains, hiding most of the launch gap
/// between the hundreds of small kernels of a decode step (they are
/// captured into the CUDA graph with the same overlap). The price is a
/// contract: the first statement of every kernel enqueued with `launch` is
/// `awaitInputs()`, which waits until the kernel before it has finished and
/// its writes are visible (nothing of ours reads or writes memory before),
/// then lets the kernel after it start launching. In a build with
/// HYBRIDC_CUDA_TIMELINE it also stamps the kernel's arrival and start
/// (Timeline.h).
__device__ __forceinline__ void awaitInputs() {
#ifdef HYBRID_CUDA_TIMELINE
  const uint64_t arrive = timeline::now();
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
#ifdef HYBRID_CUDA_TIMELINE
  timeline::stamp(arrive);
#endif
}

/// Enqueues launch(kernel, grid, block, shared, stream, args...) with launch
/// overlap where overlapLaunches(); the kernel starts with awaitInputs().
/// Launch errors are left for checkLaunch, as after <<<...>>>.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
            cudaStream_t stream, Args &&...args) {
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = overlapLaunches() ? 1 : 0;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

/// The stream of a call as the runtime API wants it.
inline cudaStream_t streamOf(const CudaCall &call) {
  return reinterpret_cast<cudaStream_t>(call.stream);
}

/// The GPU's 16-bit storage types, for kernels/common's dispatch.
struct Storage {
  using Bf16 = cuda::Bf16;
  using F16 = cuda::F16;
};

/// Calls fn(S{}) with S the device storage type of float dtype `dt`.
template <typename Fn>
void visitFloat(DType dt, const char *kernel, const char *what, Fn &&fn) {
  visitFloatAs<Storage>(dt, kernel, what, std::forward<Fn>(fn));
}

/// Calls fn(T{}) for any float or integer dtype (not bool).
template <typename Fn>
void visitNumeric(DType dt, const char *kernel, const char *what, Fn &&fn) {
  visitNumericAs<Storage>(dt, kernel, what, std::forward<Fn>(fn));
}

/// Calls fn(T{}) with the storage type of any dtype (bool as uint8_t).
template <typename Fn>
void visitAny(DType dt, const char *kernel, const char *what, Fn &&fn) {
  visitAnyAs<Storage>(dt, kernel, what, std::forward<Fn>(fn));
}

/// Calls fn(W{}) with W a word of `bytes` bytes (1, 2, 4, 8 or 16: uint4
/// for 16), for copies in the widest words sizes and addresses allow.
template <typename Fn> void visitWide(size_t bytes, Fn &&fn) {
  switch (bytes) {
  case 16:
    return fn(uint4{});
  case 8:
    return fn(uint64_t{});
  case 4:
    return fn(uint32_t{});
  case 2:
    return fn(uint16_t{});
  default:
    return fn(uint8_t{});
  }
}

/// An index tensor's element (i32 or i64).
template <typename I>
__device__ __forceinline__ int64_t indexAt(const I *p, int64_t i) {
  return static_cast<int64_t>(p[i]);
}

} // namespace hybrid::cuda
