// The kernel name table: each hg op mnemonic to its CPU kernel.
#include "Kernels.h"

#include <algorithm>

namespace hybrid::cpu {
namespace {

struct KernelEntry {
  std::string_view name;
  KernelFn fn;
};

// Sorted by name (kernelNames() and the lookup rely on it).
constexpr KernelEntry kKernels[] = {
    {"abs", kernels::abs},
    {"add", kernels::add},
    {"and", kernels::logicalAnd},
    {"attention", kernels::attention},
    {"broadcast_to", kernels::broadcastTo},
    {"cast", kernels::cast},
    {"ceil", kernels::ceil},
    {"clip", kernels::clip},
    {"concat", kernels::concat},
    {"copy", kernels::copy},
    {"cos", kernels::cos},
    {"cumsum", kernels::cumsum},
    {"div", kernels::div},
    {"embedding", kernels::embedding},
    {"equal", kernels::equal},
    {"erf", kernels::erf},
    {"exp", kernels::exp},
    {"floor", kernels::floor},
    {"gather", kernels::gather},
    {"gather_nd", kernels::gatherNd},
    {"gelu", kernels::gelu},
    {"greater", kernels::greater},
    {"greater_equal", kernels::greaterEqual},
    {"iota", kernels::iota},
    {"is_inf", kernels::isInf},
    {"is_nan", kernels::isNan},
    {"layer_norm", kernels::layerNorm},
    {"less", kernels::less},
    {"less_equal", kernels::lessEqual},
    {"linear", kernels::linear},
    {"log", kernels::log},
    {"log_softmax", kernels::logSoftmax},
    {"matmul", kernels::matmul},
    {"max", kernels::max},
    {"min", kernels::min},
    {"mod", kernels::mod},
    {"mul", kernels::mul},
    {"neg", kernels::neg},
    {"not", kernels::logicalNot},
    {"or", kernels::logicalOr},
    {"pow", kernels::pow},
    {"reciprocal", kernels::reciprocal},
    {"reduce_max", kernels::reduceMax},
    {"reduce_mean", kernels::reduceMean},
    {"reduce_min", kernels::reduceMin},
    {"reduce_prod", kernels::reduceProd},
    {"reduce_sum", kernels::reduceSum},
    {"relu", kernels::relu},
    {"reshape", kernels::reshape},
    {"rms_norm", kernels::rmsNorm},
    {"rotary", kernels::rotary},
    {"rsqrt", kernels::rsqrt},
    {"select", kernels::select},
    {"sigmoid", kernels::sigmoid},
    {"sign", kernels::sign},
    {"silu", kernels::silu},
    {"sin", kernels::sin},
    {"slice", kernels::slice},
    {"softmax", kernels::softmax},
    {"sqrt", kernels::sqrt},
    {"sub", kernels::sub},
    {"tanh", kernels::tanh},
    {"transpose", kernels::transpose},
    {"trilu", kernels::trilu},
    {"xor", kernels::logicalXor},
};

} // namespace

KernelFn findKernel(std::string_view name) {
  const KernelEntry *end = std::end(kKernels);
  const KernelEntry *it = std::lower_bound(
      std::begin(kKernels), end, name,
      [](const KernelEntry &e, std::string_view n) { return e.name < n; });
  return it != end && it->name == name ? it->fn : nullptr;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const KernelEntry &e : kKernels)
    names.emplace_back(e.name);
  return names;
}

} // namespace hybrid::cpu
