// NumPy broadcasting for the kernels (see Broadcast.h).
#include "Broadcast.h"

#include "KernelCheck.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace hybrid::cpu {

Shape broadcastShapes(const std::vector<Shape> &shapes, const char *kernel) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes) {
    size_t lead = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[lead + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1) {
        std::string all;
        for (const Shape &t : shapes)
          all += (all.empty() ? "" : " and ") + shapeToString(t);
        fail(kernel, "shapes " + all + " do not broadcast together");
      }
      o = s[i];
    }
  }
  return out;
}

BroadcastWalk::BroadcastWalk(const Shape &out,
                             const std::vector<Shape> &operands,
                             const char *kernel) {
  const size_t rank = out.size();
  const size_t n = operands.size();
  numOperands_ = n;
  if (n > kMaxOperands)
    fail(kernel, "too many broadcast operands");
  std::vector<int64_t> strides(rank * n, 0);
  for (size_t k = 0; k < n; ++k) {
    const Shape &s = operands[k];
    if (s.size() > rank)
      fail(kernel, "operand of shape " + shapeToString(s) +
                       " cannot broadcast to " + shapeToString(out));
    size_t lead = rank - s.size();
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == out[lead + i])
        strides[(lead + i) * n + k] = stride;
      else if (s[i] != 1)
        fail(kernel, "operand of shape " + shapeToString(s) +
                         " cannot broadcast to " + shapeToString(out));
      stride *= s[i];
    }
  }
  mergeDimensions(out, strides, kernel);
}

BroadcastWalk
BroadcastWalk::fromStrides(const Shape &out,
                           const std::vector<std::vector<int64_t>> &strides,
                           const char *kernel) {
  BroadcastWalk walk;
  const size_t rank = out.size();
  const size_t n = strides.size();
  walk.numOperands_ = n;
  if (n > kMaxOperands)
    fail(kernel, "too many strided operands");
  std::vector<int64_t> flat(rank * n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (strides[k].size() != rank)
      fail(kernel, "strides do not match the rank of " + shapeToString(out));
    for (size_t d = 0; d < rank; ++d)
      flat[d * n + k] = strides[k][d];
  }
  walk.mergeDimensions(out, flat, kernel);
  return walk;
}

void BroadcastWalk::mergeDimensions(const Shape &out,
                                    const std::vector<int64_t> &strides,
                                    const char *kernel) {
  const size_t rank = out.size();
  const size_t n = numOperands_;
  rowStrides_.assign(n, 0);
  if (hybrid::numElements(out) == 0) {
    numRows_ = 0;
    rowLength_ = 0;
    return;
  }
  // Merge from the innermost dimension out; size-1 dimensions vanish. Two
  // dimensions merge when every operand steps over the inner one exactly.
  std::vector<int64_t> dims;            // innermost first
  std::vector<std::vector<int64_t>> ds; // each merged dimension's strides
  for (size_t d = rank; d-- > 0;) {
    if (out[d] == 1)
      continue;
    std::vector<int64_t> sd(strides.begin() + d * n,
                            strides.begin() + (d + 1) * n);
    if (!dims.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < n; ++k)
        mergeable &= sd[k] == ds.back()[k] * dims.back();
      if (mergeable) {
        dims.back() *= out[d];
        continue;
      }
    }
    dims.push_back(out[d]);
    ds.push_back(std::move(sd));
  }
  if (dims.empty())
    return; // a single element
  if (dims.size() > kMaxOuterRank + 1)
    fail(kernel, "too many dimensions in " + shapeToString(out));
  rowLength_ = dims[0];
  rowStrides_ = ds[0];
  numRows_ = 1;
  for (size_t i = dims.size(); i-- > 1;) {
    outerDims_.push_back(dims[i]);
    outerStrides_.insert(outerStrides_.end(), ds[i].begin(), ds[i].end());
    numRows_ *= dims[i];
  }
}

namespace {

template <typename W>
void copyWords(const BroadcastWalk &walk, const W *src, W *dst) {
  const int64_t stride = walk.rowStride(0);
  walk.parallelForSpans(1,
                        [&](int64_t first, const int64_t *offsets, int64_t n) {
                          const W *s = src + offsets[0];
                          W *d = dst + first;
                          if (stride == 1) {
                            std::memcpy(d, s, n * sizeof(W));
                          } else if (stride == 0) {
                            std::fill(d, d + n, *s);
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              d[i] = s[i * stride];
                          }
                        });
}

} // namespace

void copyStrided(const BroadcastWalk &walk, const void *src, int64_t srcOffset,
                 void *dst, size_t elementSize) {
  switch (elementSize) {
  case 1:
    return copyWords(walk, static_cast<const uint8_t *>(src) + srcOffset,
                     static_cast<uint8_t *>(dst));
  case 4:
    return copyWords(walk, static_cast<const uint32_t *>(src) + srcOffset,
                     static_cast<uint32_t *>(dst));
  case 8:
    return copyWords(walk, static_cast<const uint64_t *>(src) + srcOffset,
                     static_cast<uint64_t *>(dst));
  }
  assert(false && "element sizes are 1, 4 or 8");
}

const float *broadcastFloats(const ConstTensor &t, const Shape &shape,
                             std::vector<float> &storage, const char *kernel,
                             const char *what) {
  if (t.dtype != DType::F32)
    fail(kernel, std::string(what) + " must be f32, got " + dtypeName(t.dtype));
  Shape own = t.shape;
  while (own.size() > shape.size() && own.front() == 1)
    own.erase(own.begin());
  if (own.size() > shape.size())
    fail(kernel, std::string(what) + " of shape " + shapeToString(t.shape) +
                     " does not broadcast to " + shapeToString(shape));
  BroadcastWalk walk(shape, {own}, kernel);
  if (t.numel() == numElements(shape))
    return t.as<float>(); // broadcastable with equal counts: same layout
  storage.resize(numElements(shape));
  copyStrided(walk, t.data, 0, storage.data(), sizeof(float));
  return storage.data();
}

} // namespace hybrid::cpu
