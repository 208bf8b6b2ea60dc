// Validation shared by the kernels (see KernelCheck.h).
#include "KernelCheck.h"

namespace hybrid::cpu {

void fail(const char *kernel, const std::string &message) {
  throw Error(std::string(kernel) + ": " + message);
}

const Attrs &attrsOf(const KernelCall &call) {
  static const Attrs empty;
  return call.attrs ? *call.attrs : empty;
}

void expectArity(const KernelCall &call, const char *kernel, size_t operands,
                 size_t results) {
  if (call.operands.size() != operands || call.results.size() != results)
    fail(kernel, "expected " + std::to_string(operands) + " operand(s) and " +
                     std::to_string(results) + " result(s), got " +
                     std::to_string(call.operands.size()) + " and " +
                     std::to_string(call.results.size()));
  for (const Tensor &t : call.operands)
    for (int64_t d : t.shape)
      if (d < 0)
        fail(kernel,
             "negative dimension in operand shape " + shapeToString(t.shape));
  for (const Tensor &t : call.results)
    for (int64_t d : t.shape)
      if (d < 0)
        fail(kernel,
             "negative dimension in result shape " + shapeToString(t.shape));
  for (const Tensor &t : call.operands)
    if (!t.data && t.numel() > 0)
      fail(kernel,
           "operand of shape " + shapeToString(t.shape) + " has no data");
  for (const Tensor &t : call.results)
    if (!t.data && t.numel() > 0)
      fail(kernel,
           "result of shape " + shapeToString(t.shape) + " has no data");
}

std::vector<bool> optionalOperands(const KernelCall &call, const char *kernel,
                                   size_t required,
                                   const std::vector<const char *> &flags) {
  const Attrs &attrs = attrsOf(call);
  const size_t count = call.operands.size();
  if (count < required || count > required + flags.size())
    fail(kernel, "expected " + std::to_string(required) + " to " +
                     std::to_string(required + flags.size()) +
                     " operands, got " + std::to_string(count));
  const size_t extra = count - required;
  size_t knownPresent = 0, unknown = 0;
  for (const char *f : flags) {
    if (attrs.has(f))
      knownPresent += attrs.getInt(f) != 0;
    else
      ++unknown;
  }
  bool unknownPresent = false;
  if (unknown > 0) {
    if (knownPresent + unknown == extra)
      unknownPresent = true;
    else if (knownPresent != extra) {
      std::string names;
      for (const char *f : flags)
        names += std::string(names.empty() ? "" : ", ") + f;
      fail(kernel, std::to_string(count) +
                       " operands are ambiguous without the attributes " +
                       names);
    }
  }
  std::vector<bool> present;
  size_t total = 0;
  for (const char *f : flags) {
    present.push_back(attrs.has(f) ? attrs.getInt(f) != 0 : unknownPresent);
    total += present.back();
  }
  if (total != extra)
    fail(kernel, "the has_* attributes name " + std::to_string(total) +
                     " optional operand(s) but " + std::to_string(extra) +
                     " were passed");
  expectArity(call, kernel, count, 1);
  return present;
}

void expectDType(const Tensor &t, DType dtype, const char *kernel,
                 const char *what) {
  if (t.dtype != dtype)
    fail(kernel, std::string(what) + " must be " + dtypeName(dtype) + ", got " +
                     dtypeName(t.dtype));
}

void expectSameDType(const Tensor &a, const Tensor &b, const char *kernel,
                     const char *whatA, const char *whatB) {
  if (a.dtype != b.dtype)
    fail(kernel, std::string(whatA) + " (" + dtypeName(a.dtype) + ") and " +
                     whatB + " (" + dtypeName(b.dtype) +
                     ") must have the same element type");
}

void expectShape(const Tensor &t, const Shape &shape, const char *kernel,
                 const char *what) {
  if (t.shape != shape)
    fail(kernel, std::string(what) + " has shape " + shapeToString(t.shape) +
                     ", expected " + shapeToString(shape));
}

void expectRank(const Tensor &t, int64_t rank, const char *kernel,
                const char *what) {
  if (t.rank() != rank)
    fail(kernel, std::string(what) + " must have rank " + std::to_string(rank) +
                     ", got shape " + shapeToString(t.shape));
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

} // namespace hybrid::cpu
