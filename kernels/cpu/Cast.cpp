// cast: element type conversion between all six dtypes, one element at a
// time as kernels/common/Cast.h converts it.
#include "common/Cast.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {
namespace {

template <typename From, typename To>
void convert(const From *in, To *out, int64_t n) {
  parallelChunks(n, 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = store<To>(castValue<Compute<To>>(load(in[i])));
  });
}

} // namespace

void cast(const KernelCall &call) {
  const CastArgs a = CastArgs::bind(call, "cast");
  const CastProblem p = describeCast(a);
  if (p.same) {
    if (p.numel > 0)
      std::memcpy(a.out.data, a.input.data, p.numel * dtypeSize(a.out.dtype));
    return;
  }
  visitAnyAs<Storage>(a.input.dtype, "cast", "input", [&](auto fromZero) {
    visitAnyAs<Storage>(a.out.dtype, "cast", "result", [&](auto toZero) {
      convert(a.input.as<decltype(fromZero)>(), a.out.as<decltype(toZero)>(),
              p.numel);
    });
  });
}

} // namespace hybrid::cpu::kernels
