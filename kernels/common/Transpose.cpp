// transpose's checks, strided view and tiles (see Transpose.h).
#include "common/Transpose.h"

#include "common/Check.h"
#include "common/MergedDims.h"

namespace hybrid::kernels {

TransposeProblem describeTranspose(const TransposeArgs &a) {
  const ConstTensor &input = a.input;
  expectDType(a.out, input.dtype, "transpose", "result");
  std::vector<int64_t> perm = a.attrs.perm;
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
  TransposeProblem p;
  p.shape.resize(rank);
  p.strides.resize(rank);
  for (int64_t i = 0; i < rank; ++i) {
    p.shape[i] = input.shape[perm[i]];
    p.strides[i] = inStrides[perm[i]];
  }
  expectShape(a.out, p.shape, "transpose", "result");
  p.elementSize = dtypeSize(input.dtype);
  return p;
}

bool transposeTiles(const TransposeProblem &p, TransposeTiles &tiles) {
  MergedDims merged;
  if (!mergeDims(p.shape, p.strides.data(), 1, merged) || merged.rank < 2 ||
      merged.strides[0][0] == 1)
    return false;
  tiles.dims.clear();
  tiles.inStrides.clear();
  for (size_t i = merged.rank; i-- > 0;) {
    tiles.dims.push_back(merged.dims[i]);
    tiles.inStrides.push_back(merged.strides[i][0]);
  }
  tiles.p = 0;
  while (tiles.p < tiles.dims.size() && tiles.inStrides[tiles.p] != 1)
    ++tiles.p;
  return tiles.p < tiles.dims.size();
}

} // namespace hybrid::kernels
