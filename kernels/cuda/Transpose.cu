// transpose: permute dimensions (result dim i = input dim perm[i]); any dtype
// (elements move as words of their size). When the permutation moves the
// input's contiguous dimension away from the result's last one, 32 x 32
// tiles go through shared memory so both reads and writes coalesce;
// otherwise it is a strided copy.
#include "Elementwise.cuh"
#include "Kernels.h"
#include "Movement.h"

#include <vector>

namespace hybrid::cuda::kernels {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

/// The merged result dimensions split into: P (input-contiguous), Q (the
/// result's last, input stride sq), and the rest (`others`: input and
/// result strides, a StridedPlan<2> over them).
struct TiledShape {
  int64_t P = 0, Q = 0, sq = 0, op = 0; // op: result stride of P
  StridedPlan<2> others;
};

template <typename W>
__global__ void tiledTransposeKernel(const W *in, W *out, TiledShape s) {
  awaitInputs();
  __shared__ W tile[kTile][kTile + 1];
  const int64_t p0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t o = blockIdx.z; o < s.others.numel; o += gridDim.z) {
    int64_t base[2];
    s.others.offsets(o, base);
    // Read along P (contiguous in the input): tile[q][p].
    for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
      const int64_t p = p0 + threadIdx.x, q = q0 + r;
      if (p < s.P && q < s.Q)
        tile[r][threadIdx.x] = in[base[0] + p + q * s.sq];
    }
    __syncthreads();
    // Write along Q (contiguous in the result).
    for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
      const int64_t p = p0 + r, q = q0 + threadIdx.x;
      if (p < s.P && q < s.Q)
        out[base[1] + p * s.op + q] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

/// Runs the tiled kernel when the permutation calls for it; false when a
/// strided copy is as good.
bool tryTiled(const Shape &outShape, const std::vector<int64_t> &strides,
              const void *in, void *out, size_t elementSize,
              cudaStream_t stream) {
  // Merge neighbouring result dimensions that stay neighbours in the input.
  std::vector<int64_t> dims, inStrides;
  for (size_t d = 0; d < outShape.size(); ++d) {
    if (outShape[d] == 1)
      continue;
    if (!dims.empty() && inStrides.back() == strides[d] * outShape[d]) {
      dims.back() *= outShape[d];
      inStrides.back() = strides[d];
    } else {
      dims.push_back(outShape[d]);
      inStrides.push_back(strides[d]);
    }
  }
  if (dims.size() < 2 || inStrides.back() == 1)
    return false;
  size_t p = 0;
  while (p < dims.size() && inStrides[p] != 1)
    ++p;
  if (p == dims.size() || dims[p] < 4)
    return false;
  const size_t q = dims.size() - 1;
  const std::vector<int64_t> outStrides = contiguousStrides(dims);
  TiledShape s;
  s.P = dims[p];
  s.Q = dims[q];
  s.sq = inStrides[q];
  s.op = outStrides[p];
  Shape otherDims;
  std::vector<int64_t> otherIn, otherOut;
  for (size_t d = 0; d < q; ++d)
    if (d != p) {
      otherDims.push_back(dims[d]);
      otherIn.push_back(inStrides[d]);
      otherOut.push_back(outStrides[d]);
    }
  if (otherDims.size() > static_cast<size_t>(kMaxDims))
    return false;
  s.others.rank = static_cast<int>(otherDims.size());
  s.others.numel = numElements(otherDims);
  s.others.direct = false;
  for (int d = 0; d < s.others.rank; ++d) {
    s.others.dims[d] = otherDims[d];
    s.others.strides[0][d] = otherIn[d];
    s.others.strides[1][d] = otherOut[d];
  }
  const int64_t tilesQ = (s.Q + kTile - 1) / kTile;
  const int64_t tilesP = (s.P + kTile - 1) / kTile;
  if (tilesQ > 0x7fffffff || tilesP > 65535)
    return false;
  const dim3 grid(
      static_cast<unsigned>(tilesQ), static_cast<unsigned>(tilesP),
      static_cast<unsigned>(std::min<int64_t>(s.others.numel, 65535)));
  const dim3 block(kTile, kRowsPerPass);
  visitWord(elementSize, [&](auto zero) {
    using W = decltype(zero);
    launch(tiledTransposeKernel<W>, grid, block, 0, stream,
           static_cast<const W *>(in), static_cast<W *>(out), s);
  });
  checkLaunch("transpose");
  return true;
}

} // namespace

void transpose(const CudaCall &call) {
  expectArity(call, "transpose", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "transpose", "result");
  std::vector<int64_t> perm = call.attrs<ops::Transpose>().perm;
  const int64_t rank = input.rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    fail("transpose", "perm has " + std::to_string(perm.size()) +
                          " entries for an input of rank " +
                          std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t &p : perm) {
    p = normalizeAxis(p, rank, "transpose");
    if (seen[p])
      fail("transpose", "perm repeats dimension " + std::to_string(p));
    seen[p] = true;
  }
  const std::vector<int64_t> inStrides = contiguousStrides(input.shape);
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = input.shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  expectShape(result, outShape, "transpose", "result");
  if (result.numel() == 0)
    return;
  const size_t es = dtypeSize(input.dtype);
  if (tryTiled(outShape, strides, input.data, result.data, es, streamOf(call)))
    return;
  copyStrided(stridedPlan(outShape, strides.data(), "transpose"), input.data,
              result.data, es, streamOf(call), "transpose");
}

} // namespace hybrid::cuda::kernels
