// embedding_grad's host-side checks and sizes, shared by every backend.
#include "common/EmbeddingGrad.h"

#include "common/Check.h"

namespace hybrid::kernels {

EmbeddingGradProblem embeddingGradShape(const Shape &ids, const Shape &gradOut,
                                        const Shape &out) {
  EmbeddingGradProblem p;
  p.positions = numElements(ids);
  p.rows = out.empty() ? 0 : out[0];
  p.features = gradOut.empty() ? 0 : gradOut.back();
  return p;
}

EmbeddingGradProblem describeEmbeddingGrad(const EmbeddingGradArgs &a) {
  constexpr const char *kKernel = "embedding_grad";
  expectIndex(a.ids.dtype, kKernel, "ids");
  expectRank(a.out, 2, kKernel, "result");
  EmbeddingGradProblem p =
      embeddingGradShape(a.ids.shape, a.gradOut.shape, a.out.shape);
  p.dtype = a.gradOut.dtype;
  Shape wanted = a.ids.shape;
  wanted.push_back(p.features);
  expectShape(a.gradOut, wanted, kKernel, "grad_out");
  expectShape(a.out, {p.rows, p.features}, kKernel, "result");
  expectSameDType(a.out, a.gradOut, kKernel, "result", "grad_out");
  expectFloat(a.gradOut.dtype, kKernel, "grad_out");
  return p;
}

} // namespace hybrid::kernels
