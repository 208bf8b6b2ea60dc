// The streaming GEMV (StreamGemv.h). Work comes in items: R consecutive
// weight rows (output columns) of one member, over all of K. Thread t of a
// block owns the 16-byte pieces t, t + 256, t + 512, ... of every row (a
// warp's loads are 512 contiguous bytes of a row), taken U pieces per
// step; a step is R x U loads of 16 bytes per thread. Blocks stay resident
// and walk their items blockIdx.x, blockIdx.x + gridDim.x, ...; each
// thread holds two steps' weights in registers and refills one as soon as
// it is used, so two steps of loads per thread are always in flight (with
// the blocks a multiprocessor holds, ~100-200 KB: what HBM's latency asks
// of each multiprocessor at full bandwidth). An item's partial sums meet
// by a warp shuffle tree and then in shared memory in warp order, so each
// output is summed over K in one fixed order whatever the grid. A one-row
// product may also stash the next one or two steps in shared memory before
// its wait (HYBRID_CUDA_GEMV_STASH, HYBRID_CUDA_GEMV_STASH_NORM), which
// changes when the bytes arrive, not the order they are summed in.
//
// The tensor-core variant this replaced (a cp.async ring of 16-row tiles,
// one or two blocks per multiprocessor) ran OPT-1.3B's fc2 in 40.7 us
// against cuBLASLt's 24.4 (H200, bench/RESULTS.md): 48 KB in flight per
// multiprocessor was too little.
#include "Context.h"
#include "GemmEpilogue.cuh"
#include "Mma.cuh"
#include "NormPrologue.cuh"
#include "StreamGemv.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

namespace hybrid::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kBlockThreads = 32 * kWarps;
constexpr int kPiece = 8;   ///< elements of one 16-byte load
constexpr int kRowsMax = 8; ///< x rows (M)

/// The most products one launch runs (a linear group's members, which
/// share x; more are launched in turns).
constexpr int kMaxMembers = 4;

/// One product's own operands.
struct GemvMember {
  const uint16_t *w = nullptr;
  const void *bias = nullptr, *residual = nullptr;
  void *out = nullptr;
  int64_t N = 0, ldw = 0, ldc = 0, ldr = 0;
};

/// The products of one launch: member i owns the items [first[i],
/// first[i + 1]) (the last up to `items`).
struct GemvParams {
  GemvMember member[kMaxMembers];
  int64_t first[kMaxMembers] = {};
  int count = 1;
  const uint16_t *x = nullptr;
  int64_t M = 0, K = 0, ldx = 0;
  int64_t items = 0;   ///< over all members
  int64_t batches = 0; ///< steps per item: K in U x 256 pieces
  Activation activation = Activation::None;
  bool early = false;
  /// The norm prologue (GemmProblem's; the kernel's Norm), or None.
  NormKind norm = NormKind::None;
  const void *normWeight = nullptr, *normBias = nullptr;
  double normEpsilon = 0;
};

/// 16-byte words of the normalised rows a Norm kernel keeps in shared
/// memory (normaliseRows' capacity at kBlockThreads).
constexpr int kNormWords = kNormChunks * kBlockThreads;
static_assert(kRowsMax <= 8, "normaliseRows keeps statistics for 8 rows");

/// The member of item `item` (R rows each) and the item's first row in it.
/// The loop indexes the table with constants only (a dynamic index into
/// kernel parameters would copy the table to local memory).
template <int R>
__device__ __forceinline__ GemvMember memberOf(const GemvParams &p,
                                               int64_t item, int64_t &n0) {
  GemvMember m = p.member[0];
  int64_t first = 0;
#pragma unroll
  for (int i = 1; i < kMaxMembers; ++i)
    if (i < p.count && item >= p.first[i]) {
      m = p.member[i];
      first = p.first[i];
    }
  n0 = (item - first) * R;
  return m;
}

/// The most steps a block stashes in shared memory (streamGemvKernel's ST).
constexpr int kMaxStash = kStreamGemvMaxStash;

/// 16 bytes of a weight read once per step: not kept in L1 (x is).
__device__ __forceinline__ uint4 loadStreaming(const uint16_t *at) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(at));
  return v;
}

/// Element i of 8 16-bit elements as f32.
template <typename S>
__device__ __forceinline__ float element(const uint4 &v, int i) {
  const uint32_t word = i < 2 ? v.x : i < 4 ? v.y : i < 6 ? v.z : v.w;
  const uint16_t bits = i % 2 ? word >> 16 : word & 0xFFFF;
  if constexpr (std::is_same_v<S, Bf16>)
    return __uint_as_float(uint32_t(bits) << 16);
  else
    return __half2float(__ushort_as_half(bits));
}

/// R rows by U pieces per thread and step; sums of M <= MM x rows; with
/// Norm, x's rows normalised first (the prologue; each block once, while
/// its first weight loads are in flight) and read from shared memory. With
/// ST > 0, steps 2 .. ST + 1 are copied into (dynamic) shared memory with
/// cp.async where the first two are loaded into registers — before the
/// wait when early, so that much more of the weight is in flight while the
/// kernel before drains — and the rest streams as with ST = 0.
template <typename S, int R, int U, int MM, bool Norm = false, int ST = 0>
__global__ void __launch_bounds__(kBlockThreads)
    streamGemvKernel(GemvParams p) {
  // Nothing but the settled weight is read before awaitInputs() below.
  __shared__ float red[2][kWarps][R * MM];
  __shared__ uint4 normalised[Norm ? kNormWords : 1];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t pieces = p.K / kPiece;
  const int64_t myItems =
      p.items > blockIdx.x ? (p.items - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int64_t steps = myItems * p.batches;
  auto itemOf = [&](int64_t s) {
    return static_cast<int64_t>(blockIdx.x) + s / p.batches * gridDim.x;
  };
  // This thread's first piece of step s.
  auto pieceOf = [&](int64_t s) {
    return s % p.batches * U * kBlockThreads + threadIdx.x;
  };
  // f(r, u, in, at) for each of this thread's weight words of step s: in
  // whether it lies inside the weight (not past N or K), `at` its address
  // (the weight's start where it does not).
  auto eachWord = [&](int64_t s, auto f) {
    int64_t n0 = 0;
    const GemvMember m = memberOf<R>(p, itemOf(s), n0);
    const int64_t j0 = pieceOf(s);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t n = n0 + r, j = j0 + u * kBlockThreads;
        const bool in = n < m.N && j < pieces;
        f(r, u, in, in ? m.w + n * m.ldw + kPiece * j : m.w);
      }
  };
  // Step s's weights (zeros past N and K; nothing past the last step).
  auto load = [&](uint4(&w)[R][U], int64_t s) {
    if (s >= steps)
      return;
    eachWord(s, [&](int r, int u, bool in, const uint16_t *at) {
      w[r][u] = in ? loadStreaming(at) : make_uint4(0, 0, 0, 0);
    });
  };
  // Stash slot i: step 2 + i's weights, this thread's words [i][r][u] at
  // stride kBlockThreads (each thread reads back only what it copied, so no
  // barrier is needed), one cp.async group per slot (empty past the last
  // step, so that the groups count the same in every thread).
  extern __shared__ uint4 stashed[];
  auto stashWord = [&](int i, int r, int u) -> uint4 & {
    return stashed[((i * R + r) * U + u) * kBlockThreads + threadIdx.x];
  };
  auto stash = [&](int i) {
    if (2 + i < steps)
      eachWord(2 + i, [&](int r, int u, bool in, const uint16_t *at) {
        kernels::tensorcore::copy16(&stashWord(i, r, u), at, in);
      });
    kernels::tensorcore::commitCopies();
  };
  float acc[R][MM] = {};
  // The item's sums: a shuffle tree per warp, then the warps in order.
  auto finish = [&](int64_t s) {
    int64_t n0 = 0;
    const GemvMember mb = memberOf<R>(p, itemOf(s), n0);
    const int parity = s / p.batches % 2;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int m = 0; m < MM; ++m) {
        float v = acc[r][m];
        acc[r][m] = 0;
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2)
          v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
        if (lane == 0)
          red[parity][warp][r * MM + m] = v;
      }
    // (red[parity] is written again two items on, after the next item's
    // __syncthreads, when these reads are done.)
    __syncthreads();
    if (threadIdx.x < R * MM) {
      const int r = threadIdx.x / MM, m = threadIdx.x % MM;
      float v = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w)
        v += red[parity][w][threadIdx.x];
      const int64_t n = n0 + r;
      if (m < p.M && n < mb.N)
        storeWithEpilogue<S>(v, m, n, mb.bias, p.activation, mb.residual,
                             mb.ldr, mb.out, mb.ldc);
    }
  };
  // Step s's products with its weights weight(r, u).
  auto compute = [&](auto weight, int64_t s) {
    const int64_t j0 = pieceOf(s);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = j0 + u * kBlockThreads;
      if (j >= pieces)
        break;
#pragma unroll
      for (int m = 0; m < MM; ++m) {
        if (MM > 1 && m >= p.M)
          break;
        uint4 xs;
        if constexpr (Norm)
          xs = normalised[(m * p.K) / kPiece + j];
        else
          xs = __ldg(reinterpret_cast<const uint4 *>(p.x + m * p.ldx) + j);
        float x[kPiece];
#pragma unroll
        for (int e = 0; e < kPiece; ++e)
          x[e] = element<S>(xs, e);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int e = 0; e < kPiece; ++e)
            acc[r][m] = fmaf(element<S>(weight(r, u), e), x[e], acc[r][m]);
      }
    }
  };
  // After the step's refill is issued, so that two steps stay in flight
  // through an item's reduction.
  auto finishItem = [&](int64_t s) {
    if (s % p.batches == p.batches - 1)
      finish(s);
  };

  uint4 a[R][U], b[R][U];
  // The first steps: two into registers, ST into shared memory.
  auto start = [&] {
    load(a, 0);
    load(b, 1);
    for (int i = 0; i < ST; ++i)
      stash(i);
  };
  if (p.early)
    start();
  awaitInputs();
  if (!p.early)
    start();
  if constexpr (Norm)
    normaliseRows<S, kBlockThreads>(p, normalised);
  auto inA = [&](int r, int u) { return a[r][u]; };
  auto inB = [&](int r, int u) { return b[r][u]; };
  // Steps first, first + 1, ... to the last, two by two from the registers,
  // each refilled with the step two on.
  auto streamFrom = [&](int64_t first) {
    for (int64_t s = first; s < steps; s += 2) {
      compute(inA, s);
      load(a, s + 2);
      finishItem(s);
      if (s + 1 < steps) {
        compute(inB, s + 1);
        load(b, s + 3);
        finishItem(s + 1);
      }
    }
  };
  if constexpr (ST == 0) {
    streamFrom(0);
  } else {
    // Steps 0 and 1 from the registers, which then take the first steps
    // after the stash; the stashed steps; then the rest two by two.
    constexpr int64_t resume = 2 + ST;
    if (steps > 0) {
      compute(inA, 0);
      load(a, resume);
      finishItem(0);
    }
    if (steps > 1) {
      compute(inB, 1);
      load(b, resume + 1);
      finishItem(1);
    }
#pragma unroll
    for (int i = 0; i < ST; ++i) {
      if (2 + i >= steps)
        break;
      if (i + 1 < ST) // slot i has landed; i + 1 may still be in flight
        kernels::tensorcore::waitCopies<1>();
      else
        kernels::tensorcore::waitCopies<0>();
      compute([&](int r, int u) { return stashWord(i, r, u); }, 2 + i);
      finishItem(2 + i);
    }
    streamFrom(resume);
  }
}

/// Rows per item and pieces per thread and step for K: four 16-byte loads
/// per thread and step, of 4 rows where a thread has one piece of each (K
/// <= 2048), 2 rows of 2 pieces (K <= 4096), else 1 row of 4 pieces. A
/// function of K alone: a group's members run as they would alone.
struct Shape {
  int rows, units;
};
Shape shapeFor(int64_t K) {
  const int64_t perThread = (K / kPiece + kBlockThreads - 1) / kBlockThreads;
  return perThread <= 1   ? Shape{4, 1}
         : perThread == 2 ? Shape{2, 2}
                          : Shape{1, 4};
}

using GemvKernel = void (*)(GemvParams);

/// The kernel of `shape`, for one x row or up to kRowsMax, with or without
/// the norm prologue; one x row may stash 1 or 2 steps.
template <typename S, bool Norm>
GemvKernel kernelWith(Shape shape, int64_t M, int stash) {
  const bool one = M == 1;
  auto pick = [&](auto rows, auto units) -> GemvKernel {
    constexpr int R = decltype(rows)::value, U = decltype(units)::value;
    if (!one)
      return streamGemvKernel<S, R, U, kRowsMax, Norm>;
    if (stash == 1)
      return streamGemvKernel<S, R, U, 1, Norm, 1>;
    if (stash == 2)
      return streamGemvKernel<S, R, U, 1, Norm, 2>;
    return streamGemvKernel<S, R, U, 1, Norm>;
  };
  using I = std::integral_constant<int, 1>;
  using II = std::integral_constant<int, 2>;
  using IV = std::integral_constant<int, 4>;
  if (shape.rows == 4)
    return pick(IV{}, I{});
  if (shape.rows == 2)
    return pick(II{}, II{});
  return pick(I{}, IV{});
}
template <typename S>
GemvKernel kernelFor(Shape shape, int64_t M, bool norm, int stash) {
  return norm ? kernelWith<S, true>(shape, M, stash)
              : kernelWith<S, false>(shape, M, stash);
}

/// HYBRID_CUDA_GEMV_CARVEOUT=0..100 (read once): the shared-memory
/// carveout (percent) every GEMV kernel prefers, to measure the carveout's
/// effect; -1 when unset: a stashing kernel then prefers the largest (its
/// blocks need 16-32 KB each beyond the others'), the rest the driver's
/// choice.
int carveoutFromEnvironment() {
  static const int percent =
      envInteger("HYBRID_CUDA_GEMV_CARVEOUT", 0, 100, -1);
  return percent;
}

/// How many blocks of `kernel` with `shared` bytes of dynamic shared memory
/// (a stash) a multiprocessor holds at once, asked once per kernel, size
/// and device, which first lets the kernel have that much dynamic shared
/// memory and sets its preferred carveout (carveoutFromEnvironment).
int residentBlocks(GemvKernel kernel, size_t shared, const char *name) {
  static std::mutex mutex;
  static std::map<std::tuple<GemvKernel, size_t, int>, int> known;
  int device = 0;
  checkCuda(cudaGetDevice(&device), name, "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  if (auto at = known.find({kernel, shared, device}); at != known.end())
    return at->second;
  if (shared > 0) // (once: this cache is the opt-in's record)
    allowSharedMemory(nullptr, reinterpret_cast<const void *>(kernel), shared,
                      name);
  const int asked = carveoutFromEnvironment();
  if (const int percent = asked >= 0   ? asked
                          : shared > 0 ? 100
                                       : -1;
      percent >= 0)
    checkCuda(cudaFuncSetAttribute(
                  reinterpret_cast<const void *>(kernel),
                  cudaFuncAttributePreferredSharedMemoryCarveout, percent),
              name, "cudaFuncSetAttribute (preferred carveout)");
  int blocks = 0;
  checkCuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, kernel, kBlockThreads, shared),
            name, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  blocks = std::max(1, blocks);
  known.emplace(std::make_tuple(kernel, shared, device), blocks);
  return blocks;
}

/// HYBRID_CUDA_GEMV_STASH, for products with a norm prologue
/// HYBRID_CUDA_GEMV_STASH_NORM (each read once): the steps a block stashes
/// in shared memory (streamGemvKernel's ST), 0 to kMaxStash; kTuned when
/// unset or "tune": GEMM tuning times each (streamGemvStashCandidates).
constexpr int kTuned = -1;
int stashSetting(const char *name) {
  return envInteger(name, 0, kMaxStash, kTuned);
}
int stashFromEnvironment(bool norm) {
  static const int plain = stashSetting("HYBRID_CUDA_GEMV_STASH");
  static const int normed = stashSetting("HYBRID_CUDA_GEMV_STASH_NORM");
  return norm ? normed : plain;
}

bool aligned16(const void *ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

} // namespace

bool streamGemvSupports(const GemmProblem &p) {
  if (!((p.dtype == DType::BF16 || p.dtype == DType::F16) && p.batch == 1 &&
        !p.transA && p.transB && p.M >= 1 && p.M <= kRowsMax && p.N >= 1 &&
        p.K >= 8 && p.K % 8 == 0 && p.lda % 8 == 0 && p.ldb % 8 == 0 &&
        aligned16(p.A) && aligned16(p.B)))
    return false;
  if (p.norm == NormKind::None)
    return true;
  // A prologue: the rows fit the shared words the block normalises into;
  // the norm's weight and bias are read 16 bytes at a time.
  return (p.norm == NormKind::LayerNorm || p.norm == NormKind::RmsNorm) &&
         p.M * p.K <= int64_t(8) * kNormWords &&
         (!p.normWeight || aligned16(p.normWeight)) &&
         (!p.normBias || aligned16(p.normBias)) &&
         (p.norm == NormKind::LayerNorm || !p.normBias);
}

int streamGemvStashed(const GemmProblem &p, int stash) {
  // (An untimed product where the count is tuned: none.)
  if (p.M != 1)
    return 0;
  return std::clamp(stash < 0 ? stashFromEnvironment(p.norm != NormKind::None)
                              : stash,
                    0, kMaxStash);
}

std::vector<int> streamGemvStashCandidates(const GemmProblem &p) {
  if (p.M != 1 || stashFromEnvironment(p.norm != NormKind::None) != kTuned)
    return {-1};
  std::vector<int> steps;
  for (int st = 0; st <= kMaxStash; ++st)
    steps.push_back(st);
  return steps;
}

bool streamGemvGroupSupports(const GemmProblem *problems, size_t count) {
  if (count == 0)
    return false;
  const GemmProblem &a = problems[0];
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem &p = problems[i];
    if (!streamGemvSupports(p) || p.dtype != a.dtype || p.M != a.M ||
        p.K != a.K || p.A != a.A || p.lda != a.lda ||
        p.activation != a.activation || p.norm != a.norm ||
        p.normWeight != a.normWeight || p.normBias != a.normBias ||
        p.normEpsilon != a.normEpsilon)
      return false;
  }
  return true;
}

void streamGemvGroup(const GemmProblem *problems, size_t count, int smCount,
                     cudaStream_t stream, const char *kernel, int stash) {
  if (count == 0)
    fail(kernel, "the streaming GEMV was given no product");
  if (!streamGemvGroupSupports(problems, count)) {
    const GemmProblem &p = problems[0];
    fail(kernel, "the streaming GEMV does not take this group of " +
                     std::to_string(count) + " products (the first " +
                     std::to_string(p.M) + " x " + std::to_string(p.K) + " x " +
                     std::to_string(p.N) + ", " + dtypeName(p.dtype) +
                     (p.transB ? ", [N, K]" : ", [K, N]") + ")");
  }
  const GemmProblem &shared = problems[0];
  const Shape shape = shapeFor(shared.K);
  for (size_t first = 0; first < count; first += kMaxMembers) {
    const size_t last = std::min(count, first + kMaxMembers);
    GemvParams g;
    g.count = static_cast<int>(last - first);
    g.x = static_cast<const uint16_t *>(shared.A);
    g.M = shared.M;
    g.K = shared.K;
    g.ldx = shared.lda;
    g.activation = shared.activation;
    const int64_t piecesPerStep = int64_t(shape.units) * kBlockThreads;
    g.batches = (shared.K / kPiece + piecesPerStep - 1) / piecesPerStep;
    g.early = true;
    const bool norm = shared.norm != NormKind::None;
    const int stashed = streamGemvStashed(shared, stash);
    g.norm = shared.norm;
    g.normWeight = shared.normWeight;
    g.normBias = shared.normBias;
    g.normEpsilon = shared.normEpsilon;
    for (size_t i = first; i < last; ++i) {
      const GemmProblem &p = problems[i];
      GemvMember &m = g.member[i - first];
      m.w = static_cast<const uint16_t *>(p.B);
      m.bias = p.bias;
      m.residual = p.residual;
      m.out = p.C;
      m.N = p.N;
      m.ldw = p.ldb;
      m.ldc = p.ldc;
      m.ldr = p.ldr;
      g.first[i - first] = g.items;
      g.items += (p.N + shape.rows - 1) / shape.rows;
      g.early = g.early && p.settledB;
    }
    visitFloat(shared.dtype, kernel, "operands", [&](auto zero) {
      using S = decltype(zero);
      if constexpr (std::is_same_v<S, float>) {
        fail(kernel, "the streaming GEMV takes bf16 or f16");
      } else {
        // Every block resident at once, each walking its share of the
        // items (the grid changes no result).
        const GemvKernel run = kernelFor<S>(shape, shared.M, norm, stashed);
        const size_t stashBytes = size_t(stashed) * shape.rows * shape.units *
                                  kBlockThreads * sizeof(uint4);
        const int64_t resident = int64_t(std::max(1, smCount)) *
                                 residentBlocks(run, stashBytes, kernel);
        const int64_t blocks = std::min(g.items, resident);
        launch(run, dim3(static_cast<unsigned>(blocks)), dim3(kBlockThreads),
               stashBytes, stream, g);
      }
    });
    checkLaunch(kernel);
  }
}

void streamGemv(const GemmProblem &p, int smCount, cudaStream_t stream,
                const char *kernel, int stash) {
  if (!streamGemvSupports(p))
    fail(kernel, "the streaming GEMV does not take a " + std::to_string(p.M) +
                     " x " + std::to_string(p.K) + " x " + std::to_string(p.N) +
                     " product (" + dtypeName(p.dtype) +
                     (p.transB ? ", [N, K]" : ", [K, N]") + ")");
  streamGemvGroup(&p, 1, smCount, stream, kernel, stash);
}

} // namespace hybrid::cuda
