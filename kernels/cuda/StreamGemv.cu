// The streaming GEMV (StreamGemv.h). A block owns column tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... of 16 weight rows each, and walks them in
// chunks of 512 k: a step is one (tile, chunk), copied by the whole block
// into one of kStages shared-memory stages (16 rows of 1 KB, each row
// padded by 64 bytes so that the fragment reads below are conflict-free)
// kStages - 1 steps before it is used. Warp w multiplies k [64 w, 64 w + 64)
// of each stage on tensor cores (mma m16n8k16: 16 weight rows by 8 x rows,
// the skinny kernel's fragment layout: a thread's 16 contiguous bytes of a
// row feed two products), accumulating across the tile's chunks; after a
// tile's last chunk the warps' sums meet in shared memory in warp order and
// the epilogue writes the 16 x M results. So each output is the sum over
// k in one fixed order whatever the grid: results do not depend on the
// block count.
#include "GemmEpilogue.cuh"
#include "Mma.cuh"
#include "StreamGemv.h"

#include <algorithm>
#include <atomic>

namespace hybrid::cuda {
namespace {

using kernels::tensorcore::commitCopies;
using kernels::tensorcore::copy16;
using kernels::tensorcore::mma;
using kernels::tensorcore::waitCopies;

constexpr int kCols = 16;   ///< weight rows (output columns) per tile
constexpr int kWarps = 8;   ///< each takes 64 k of a stage
constexpr int kChunk = 512; ///< k per stage
constexpr int kStages = 4;  ///< the ring: kStages - 1 steps ahead
constexpr int kBlockThreads = 32 * kWarps;
/// A stage row: 1 KB of weights and 64 bytes of padding (rows 2q and
/// 2q + 1 of a quarter warp's 16-byte reads then fall on disjoint banks).
constexpr int kRowBytes = kChunk * 2 + 64;
constexpr int kStageBytes = kCols * kRowBytes;
constexpr int kPiecesPerRow = kChunk / 8; ///< 16-byte copies
constexpr int kCopiesPerThread = kCols * kPiecesPerRow / kBlockThreads;
/// Blocks per multiprocessor the grid aims at (~70 KB of stages each).
constexpr int kBlocksPerSm = 2;
constexpr int kRowsMax = 8; ///< mma's n: x rows

static_assert(kCols * kPiecesPerRow % kBlockThreads == 0);
static_assert(kChunk == kWarps * 64);

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

/// The products of one launch: member i owns the column tiles [first[i],
/// first[i + 1]) (the last up to `tiles`).
struct GemvParams {
  GemvMember member[kMaxMembers];
  int64_t first[kMaxMembers] = {};
  int count = 1;
  const uint16_t *x = nullptr;
  int64_t M = 0, K = 0, ldx = 0;
  int64_t tiles = 0, chunks = 0;
  Activation activation = Activation::None;
  bool early = false;
};

/// The member of global tile `tile` and the tile's first row in it. The
/// loop indexes the table with constants only (a dynamic index into kernel
/// parameters would copy the table to local memory).
__device__ __forceinline__ GemvMember memberOf(const GemvParams &p,
                                               int64_t tile, int64_t &n0) {
  GemvMember m = p.member[0];
  int64_t first = 0;
#pragma unroll
  for (int i = 1; i < kMaxMembers; ++i)
    if (i < p.count && tile >= p.first[i]) {
      m = p.member[i];
      first = p.first[i];
    }
  n0 = (tile - first) * kCols;
  return m;
}

template <typename S>
__global__ void __launch_bounds__(kBlockThreads)
    streamGemvKernel(GemvParams p) {
  // Nothing but the settled weight is read before awaitInputs() below.
  extern __shared__ __align__(16) unsigned char ring[];
  __shared__ float red[kWarps][4][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t myTiles =
      p.tiles > blockIdx.x ? (p.tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int64_t steps = myTiles * p.chunks;
  auto tileOf = [&](int64_t step) {
    return static_cast<int64_t>(blockIdx.x) + step / p.chunks * gridDim.x;
  };
  // Copies step `s` into its stage (zeros past N and K), one commit group
  // per step, empty past the last, so that group counts stay uniform.
  auto issue = [&](int64_t s) {
    if (s < steps) {
      int64_t n0 = 0;
      const GemvMember m = memberOf(p, tileOf(s), n0);
      const int64_t k0 = s % p.chunks * kChunk;
      unsigned char *stage = ring + s % kStages * kStageBytes;
#pragma unroll
      for (int i = 0; i < kCopiesPerThread; ++i) {
        const int piece = threadIdx.x + i * kBlockThreads;
        const int row = piece / kPiecesPerRow, col = piece % kPiecesPerRow;
        const int64_t n = n0 + row, k = k0 + 8 * col;
        const bool present = n < m.N && k < p.K; // K % 8 == 0: whole pieces
        copy16(stage + row * kRowBytes + 16 * col,
               m.w + (present ? n * m.ldw + k : 0), present);
      }
    }
    commitCopies();
  };
  if (p.early)
    for (int s = 0; s < kStages - 1; ++s)
      issue(s);
  awaitInputs();
  if (!p.early)
    for (int s = 0; s < kStages - 1; ++s)
      issue(s);
  // x row g (rows past M read row M - 1: valid memory, never stored).
  const uint16_t *xRow = p.x + std::min<int64_t>(g, p.M - 1) * p.ldx;
  float acc[4] = {};
  for (int64_t s = 0; s < steps; ++s) {
    waitCopies<kStages - 2>(); // this thread's copies of step s are done
    __syncthreads();           // everyone's; stage (s - 1) is free again
    issue(s + kStages - 1);
    const unsigned char *stage = ring + s % kStages * kStageBytes;
    const int64_t k0 = s % p.chunks * kChunk;
    uint4 xs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t k = k0 + 64 * warp + 32 * h + 8 * t;
      xs[h] = k < p.K ? __ldg(reinterpret_cast<const uint4 *>(xRow + k))
                      : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int kl = 64 * warp + 32 * h + 8 * t;
      const uint4 a0 =
          *reinterpret_cast<const uint4 *>(stage + g * kRowBytes + 2 * kl);
      const uint4 a1 = *reinterpret_cast<const uint4 *>(
          stage + (g + 8) * kRowBytes + 2 * kl);
      const unsigned lo[4] = {a0.x, a1.x, a0.y, a1.y};
      const unsigned hi[4] = {a0.z, a1.z, a0.w, a1.w};
      mma<S>(acc, lo, xs[h].x, xs[h].y);
      mma<S>(acc, hi, xs[h].z, xs[h].w);
    }
    if (s % p.chunks != p.chunks - 1)
      continue;
      // The tile's last chunk: the warps' sums in warp order, the epilogue.
      // D element c of a lane: weight row g (+ 8 for c >= 2) of the tile,
      // x row 2t (+ 1 for odd c).
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      red[warp][c][lane] = acc[c];
      acc[c] = 0;
    }
    __syncthreads();
    if (threadIdx.x < 4 * 32) {
      const int c = threadIdx.x / 32, l = threadIdx.x % 32;
      float v = 0;
      for (int w = 0; w < kWarps; ++w)
        v += red[w][c][l];
      int64_t n0 = 0;
      const GemvMember mb = memberOf(p, tileOf(s), n0);
      const int64_t m = 2 * (l % 4) + (c & 1);
      const int64_t n = n0 + l / 4 + 8 * (c >> 1);
      if (m < p.M && n < mb.N)
        storeWithEpilogue<S>(v, m, n, mb.bias, p.activation, mb.residual,
                             mb.ldr, mb.out, mb.ldc);
    }
    // `red` is written again only after the next step's __syncthreads.
  }
  waitCopies<0>();
}

/// Lets streamGemvKernel<S> take `bytes` of dynamic shared memory on the
/// current device, once per device (not per launch: launches may be
/// captured into a graph).
template <typename S> void allowRing(size_t bytes, const char *kernel) {
  static std::atomic<bool> done[64];
  int device = 0;
  checkCuda(cudaGetDevice(&device), kernel, "cudaGetDevice");
  if (device >= 0 && device < 64 && done[device].load())
    return;
  checkCuda(cudaFuncSetAttribute(streamGemvKernel<S>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes)),
            kernel, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  if (device >= 0 && device < 64)
    done[device].store(true);
}

bool aligned16(const void *ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

} // namespace

bool streamGemvSupports(const GemmProblem &p) {
  return (p.dtype == DType::BF16 || p.dtype == DType::F16) && p.batch == 1 &&
         !p.transA && p.transB && p.M >= 1 && p.M <= kRowsMax && p.N >= 1 &&
         p.K >= 8 && p.norm == NormKind::None && p.K % 8 == 0 &&
         p.lda % 8 == 0 && p.ldb % 8 == 0 && aligned16(p.A) && aligned16(p.B);
}

bool streamGemvGroupSupports(const GemmProblem *problems, size_t count) {
  if (count == 0)
    return false;
  const GemmProblem &a = problems[0];
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem &p = problems[i];
    if (!streamGemvSupports(p) || p.dtype != a.dtype || p.M != a.M ||
        p.K != a.K || p.A != a.A || p.lda != a.lda ||
        p.activation != a.activation)
      return false;
  }
  return true;
}

void streamGemvGroup(const GemmProblem *problems, size_t count, int smCount,
                     cudaStream_t stream, const char *kernel) {
  if (!streamGemvGroupSupports(problems, count)) {
    const GemmProblem &p = problems[0];
    fail(kernel, "the streaming GEMV does not take this group of " +
                     std::to_string(count) + " products (the first " +
                     std::to_string(p.M) + " x " + std::to_string(p.K) + " x " +
                     std::to_string(p.N) + ", " + dtypeName(p.dtype) +
                     (p.transB ? ", [N, K]" : ", [K, N]") + ")");
  }
  const GemmProblem &shared = problems[0];
  const size_t ring = size_t(kStages) * kStageBytes;
  for (size_t first = 0; first < count; first += kMaxMembers) {
    const size_t last = std::min(count, first + kMaxMembers);
    GemvParams g;
    g.count = static_cast<int>(last - first);
    g.x = static_cast<const uint16_t *>(shared.A);
    g.M = shared.M;
    g.K = shared.K;
    g.ldx = shared.lda;
    g.activation = shared.activation;
    g.chunks = (shared.K + kChunk - 1) / kChunk;
    g.early = true;
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
      g.first[i - first] = g.tiles;
      g.tiles += (p.N + kCols - 1) / kCols;
      g.early = g.early && p.settledB;
    }
    // As many tiles per block as the resident blocks need, then just
    // enough blocks for them: every block walks the same number of tiles.
    const int64_t resident = std::max(1, smCount) * int64_t(kBlocksPerSm);
    const int64_t perBlock = (g.tiles + resident - 1) / resident;
    const int64_t blocks = (g.tiles + perBlock - 1) / perBlock;
    visitFloat(shared.dtype, kernel, "operands", [&](auto zero) {
      using S = decltype(zero);
      if constexpr (std::is_same_v<S, float>) {
        fail(kernel, "the streaming GEMV takes bf16 or f16");
      } else {
        allowRing<S>(ring, kernel);
        launch(streamGemvKernel<S>, dim3(static_cast<unsigned>(blocks)),
               dim3(kBlockThreads), ring, stream, g);
      }
    });
    checkLaunch(kernel);
  }
}

void streamGemv(const GemmProblem &p, int smCount, cudaStream_t stream,
                const char *kernel) {
  if (!streamGemvSupports(p))
    fail(kernel, "the streaming GEMV does not take a " + std::to_string(p.M) +
                     " x " + std::to_string(p.K) + " x " + std::to_string(p.N) +
                     " product (" + dtypeName(p.dtype) +
                     (p.transB ? ", [N, K]" : ", [K, N]") + ")");
  streamGemvGroup(&p, 1, smCount, stream, kernel);
}

} // namespace hybrid::cuda
