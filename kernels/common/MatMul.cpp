// matmul's host-side checks and sizes, shared by every backend.
#include "common/MatMul.h"

#include "common/Check.h"

namespace hybrid::kernels {

MatMulProblem matmulShape(const Shape &lhs, const Shape &rhs) {
  if (lhs.empty() || rhs.empty())
    fail("matmul", "operands must have rank >= 1, got " + shapeToString(lhs) +
                       " and " + shapeToString(rhs));
  // 1-D operands become a row (lhs) or a column (rhs) and that dimension is
  // dropped from the result.
  Shape a = lhs, b = rhs;
  const bool dropM = a.size() == 1, dropN = b.size() == 1;
  if (dropM)
    a.insert(a.begin(), 1);
  if (dropN)
    b.push_back(1);
  MatMulProblem p;
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  if (b[b.size() - 2] != p.K)
    fail("matmul", "inner dimensions of " + shapeToString(lhs) + " and " +
                       shapeToString(rhs) + " differ");
  p.batchA.assign(a.begin(), a.end() - 2);
  p.batchB.assign(b.begin(), b.end() - 2);
  p.batch = broadcastShapes({&p.batchA, &p.batchB}, "matmul");
  p.out = p.batch;
  if (!dropM)
    p.out.push_back(p.M);
  if (!dropN)
    p.out.push_back(p.N);
  return p;
}

MatMulProblem describeMatMul(const MatMulArgs &a) {
  expectFloat(a.lhs.dtype, "matmul", "lhs");
  expectSameDType(a.rhs, a.lhs, "matmul", "rhs", "lhs");
  expectDType(a.out, a.lhs.dtype, "matmul", "result");
  MatMulProblem p = matmulShape(a.lhs.shape, a.rhs.shape);
  p.dtype = a.lhs.dtype;
  expectShape(a.out, p.out, "matmul", "result");
  return p;
}

} // namespace hybrid::kernels
