// Element-wise comparison of safetensors tensors.
#include "hybrid/TensorDiff.h"

#include <algorithm>
#include <cmath>

namespace hybrid {

namespace {

std::vector<double> asDoubles(const SafeTensorsFile &f,
                              const SafeTensorsEntry &e) {
  std::vector<double> out(static_cast<size_t>(e.numel()));
  switch (e.dtype) {
  case SafeTensorsDType::F32:
  case SafeTensorsDType::F16:
  case SafeTensorsDType::BF16: {
    std::vector<float> v = f.toF32(e);
    out.assign(v.begin(), v.end());
    break;
  }
  case SafeTensorsDType::I64:
  case SafeTensorsDType::I32: {
    std::vector<int64_t> v(out.size());
    f.convertInto(e, DType::I64, v.data());
    for (size_t i = 0; i < v.size(); ++i)
      out[i] = static_cast<double>(v[i]);
    break;
  }
  case SafeTensorsDType::BOOL:
  case SafeTensorsDType::U8:
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = e.data[i];
    break;
  }
  return out;
}

TensorDiff compareOne(const SafeTensorsFile &a, const SafeTensorsFile &b,
                      const std::string &name,
                      const TensorTolerance &tolerance) {
  const size_t eq = name.find('=');
  const SafeTensorsEntry &ea = a.get(name.substr(0, eq));
  const SafeTensorsEntry &eb =
      b.get(eq == std::string::npos ? name : name.substr(eq + 1));
  TensorDiff d;
  d.name = name;
  d.shapeA = ea.shape;
  d.shapeB = eb.shape;
  if (ea.shape != eb.shape)
    return d;
  const std::vector<double> va = asDoubles(a, ea), vb = asDoubles(b, eb);
  for (double v : vb)
    if (std::isfinite(v))
      d.maxRef = std::max(d.maxRef, std::fabs(v));
  d.bound = tolerance.rtolMax ? *tolerance.rtolMax * d.maxRef : tolerance.atol;
  for (size_t i = 0; i < va.size(); ++i) {
    const bool na = std::isnan(va[i]), nb = std::isnan(vb[i]);
    const double diff = na || nb         ? (na && nb ? 0 : INFINITY)
                        : va[i] == vb[i] ? 0 // equal infinities
                                         : std::fabs(va[i] - vb[i]);
    if (!(diff <= d.maxDiff))
      d.maxDiff = diff;
  }
  d.pass = d.maxDiff <= d.bound;
  return d;
}

} // namespace

std::vector<TensorDiff> compareTensors(const SafeTensorsFile &a,
                                       const SafeTensorsFile &b,
                                       std::vector<std::string> names,
                                       const TensorTolerance &tolerance) {
  if (names.empty()) {
    for (const SafeTensorsEntry &e : a.entries())
      if (b.find(e.name))
        names.push_back(e.name);
    std::sort(names.begin(), names.end());
    if (names.empty())
      throw Error(a.path() + " and " + b.path() + " have no tensor in common");
  }
  std::vector<TensorDiff> diffs;
  for (const std::string &name : names)
    diffs.push_back(compareOne(a, b, name, tolerance));
  return diffs;
}

} // namespace hybrid
