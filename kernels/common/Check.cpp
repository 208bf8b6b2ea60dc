// Host-side validation every backend's kernels share (see Call.h, Check.h).
#include "common/Check.h"

#include <algorithm>

namespace hybrid::kernels {

void fail(const char *kernel, const std::string &message) {
  throw Error(std::string(kernel) + ": " + message);
}

namespace {

template <typename T>
void checkTensor(const T &t, const char *kernel, const char *what,
                 Binding binding) {
  for (int64_t d : t.shape)
    if (d < 0)
      fail(kernel, std::string("negative dimension in ") + what + " shape " +
                       shapeToString(t.shape));
  if (binding == Binding::Run && !t.data && t.numel() > 0)
    fail(kernel, std::string(what) + " of shape " + shapeToString(t.shape) +
                     " has no data");
  if (!isValidDType(static_cast<uint8_t>(t.dtype)))
    fail(kernel, std::string(what) + " has an invalid element type");
}

} // namespace

void checkCall(const Call &call, const char *kernel, size_t least,
               size_t operands, uint64_t required, size_t results,
               Binding binding) {
  const size_t given = call.operands.size();
  if ((given != least && given != operands) || call.results.size() != results)
    fail(kernel, "expected " + std::to_string(least) + " operand(s) and " +
                     std::to_string(results) + " result(s), got " +
                     std::to_string(call.operands.size()) + " and " +
                     std::to_string(call.results.size()));
  for (size_t i = 0; i < given; ++i) {
    const ConstTensor &t = call.operands[i];
    if (!t.present) {
      if (i < 64 && (required >> i & 1u))
        fail(kernel, "operand " + std::to_string(i) + " is required");
      continue;
    }
    checkTensor(t, kernel, "operand", binding);
  }
  for (const Tensor &t : call.results)
    checkTensor(t, kernel, "result", binding);
}

void expectOperands(const Call &call, const char *kernel, size_t required,
                    size_t optional, size_t results) {
  const size_t operands = required + optional;
  if (call.operands.size() != operands || call.results.size() != results)
    fail(kernel, "expected " + std::to_string(operands) + " operand(s) and " +
                     std::to_string(results) + " result(s), got " +
                     std::to_string(call.operands.size()) + " and " +
                     std::to_string(call.results.size()));
  const uint64_t mask =
      required >= 64 ? ~uint64_t(0) : (uint64_t(1) << required) - 1;
  checkCall(call, kernel, operands, operands, mask, results);
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

void failUnsupported(const char *kernel, DType dt, const char *what,
                     const char *expected) {
  fail(kernel, std::string("unsupported element type ") + dtypeName(dt) +
                   " for " + what + " (expected " + expected + ")");
}

void expectFloat(DType dt, const char *kernel, const char *what) {
  if (!isFloatDType(dt))
    failUnsupported(kernel, dt, what, "f32, bf16 or f16");
}

void expectIndex(DType dt, const char *kernel, const char *what) {
  if (!isIntegerDType(dt))
    failUnsupported(kernel, dt, what, "i32 or i64");
}

void expectScratch(const Call &call, size_t needed, const char *kernel) {
  if (needed > 0 && (call.scratchBytes < needed || !call.scratch))
    fail(kernel, "needs " + std::to_string(needed) + " bytes of scratch, got " +
                     std::to_string(call.scratch ? call.scratchBytes : 0));
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

Shape broadcastShapes(std::initializer_list<const Shape *> shapes,
                      const char *kernel) {
  size_t rank = 0;
  for (const Shape *s : shapes)
    rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape *s : shapes) {
    const size_t lead = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &o = out[lead + i];
      const int64_t d = (*s)[i];
      if (d == o || d == 1)
        continue;
      if (o != 1) {
        std::string all;
        for (const Shape *t : shapes)
          all += (all.empty() ? "" : " and ") + shapeToString(*t);
        fail(kernel, "shapes " + all + " do not broadcast together");
      }
      o = d;
    }
  }
  return out;
}

} // namespace hybrid::kernels
