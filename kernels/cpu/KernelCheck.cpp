// Validation shared by the kernels (see KernelCheck.h).
#include "KernelCheck.h"

#include "Element.h"

namespace hybrid::cpu {

void fail(const char *kernel, const std::string &message) {
  throw Error(std::string(kernel) + ": " + message);
}

namespace {

template <typename T>
void checkTensor(const T &t, const char *kernel, const char *what) {
  for (int64_t d : t.shape)
    if (d < 0)
      fail(kernel, std::string("negative dimension in ") + what + " shape " +
                       shapeToString(t.shape));
  if (!t.data && t.numel() > 0)
    fail(kernel, std::string(what) + " of shape " + shapeToString(t.shape) +
                     " has no data");
}

} // namespace

void expectOperands(const KernelCall &call, const char *kernel, size_t required,
                    size_t optional, size_t results) {
  const size_t operands = required + optional;
  if (call.operands.size() != operands || call.results.size() != results)
    fail(kernel, "expected " + std::to_string(operands) + " operand(s) and " +
                     std::to_string(results) + " result(s), got " +
                     std::to_string(call.operands.size()) + " and " +
                     std::to_string(call.results.size()));
  for (size_t i = 0; i < operands; ++i) {
    const ConstTensor &t = call.operands[i];
    if (!t.present) {
      if (i < required)
        fail(kernel, "operand " + std::to_string(i) + " is required");
      continue;
    }
    checkTensor(t, kernel, "operand");
  }
  for (const Tensor &t : call.results)
    checkTensor(t, kernel, "result");
}

void failDType(DType got, DType want, const char *kernel, const char *what) {
  fail(kernel, std::string(what) + " must be " + dtypeName(want) + ", got " +
                   dtypeName(got));
}

void failSameDType(DType a, DType b, const char *kernel, const char *whatA,
                   const char *whatB) {
  fail(kernel, std::string(whatA) + " (" + dtypeName(a) + ") and " + whatB +
                   " (" + dtypeName(b) + ") must have the same element type");
}

void failShape(const Shape &got, const Shape &want, const char *kernel,
               const char *what) {
  fail(kernel, std::string(what) + " has shape " + shapeToString(got) +
                   ", expected " + shapeToString(want));
}

void failRank(const Shape &got, int64_t rank, const char *kernel,
              const char *what) {
  fail(kernel, std::string(what) + " must have rank " + std::to_string(rank) +
                   ", got shape " + shapeToString(got));
}

int64_t normalizeAxis(int64_t axis, int64_t rank, const char *kernel) {
  if (axis < -rank || axis >= rank)
    fail(kernel, "axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> contiguousStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t product(const Shape &shape, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

void failUnsupported(const char *kernel, DType dt, const char *what,
                     const char *expected) {
  fail(kernel, std::string("unsupported element type ") + dtypeName(dt) +
                   " for " + what + " (expected " + expected + ")");
}

void expectIndexType(const ConstTensor &t, const char *kernel,
                     const char *what) {
  if (t.dtype != DType::I32 && t.dtype != DType::I64)
    failUnsupported(kernel, t.dtype, what, "i32 or i64");
}

} // namespace hybrid::cpu
