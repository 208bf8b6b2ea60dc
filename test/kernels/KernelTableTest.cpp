// The kernel name table: every hg op with a runtime kernel is registered.
#include "KernelTestSupport.h"

#include <algorithm>
#include <set>

namespace hybrid::cpu::test {
namespace {

// Every op mnemonic of dialects/hg/IR/HgOps.td except `constant` (the
// runtime materialises constants), plus the `copy` kernel.
const char *const kHgOps[] = {
    "add",        "sub",          "mul",           "div",        "pow",
    "max",        "min",          "mod",           "equal",      "less",
    "less_equal", "greater",      "greater_equal", "and",        "or",
    "xor",        "neg",          "abs",           "sign",       "exp",
    "log",        "sqrt",         "rsqrt",         "reciprocal", "tanh",
    "sigmoid",    "relu",         "silu",          "gelu",       "sin",
    "cos",        "erf",          "floor",         "ceil",       "not",
    "is_nan",     "is_inf",       "clip",          "select",     "cast",
    "reshape",    "broadcast_to", "transpose",     "slice",      "concat",
    "gather",     "gather_nd",    "iota",          "cumsum",     "trilu",
    "reduce_sum", "reduce_mean",  "reduce_max",    "reduce_min", "reduce_prod",
    "softmax",    "log_softmax",  "layer_norm",    "rms_norm",   "matmul",
    "linear",     "embedding",    "rotary",        "attention",  "copy"};

TEST(KernelTable, EveryHgOpHasAKernel) {
  for (const char *name : kHgOps)
    EXPECT_NE(findKernel(name), nullptr) << name;
}

TEST(KernelTable, NamesAreSortedUniqueAndFindable) {
  std::vector<std::string> names = kernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size());
  EXPECT_EQ(names.size(), std::size(kHgOps));
  for (const std::string &n : names)
    EXPECT_NE(findKernel(n), nullptr) << n;
}

TEST(KernelTable, UnknownNamesAreNull) {
  EXPECT_EQ(findKernel("constant"), nullptr);
  EXPECT_EQ(findKernel(""), nullptr);
  EXPECT_EQ(findKernel("Add"), nullptr);
  EXPECT_EQ(findKernel("zzz"), nullptr);
}

TEST(KernelTable, ThreadCountIsSettable) {
  int before = numThreads();
  setNumThreads(1);
  EXPECT_EQ(numThreads(), 1);
  setNumThreads(0);
  EXPECT_GE(numThreads(), 1);
  setNumThreads(before);
  EXPECT_EQ(numThreads(), before);
}

TEST(KernelTable, NullAttrsMeanDefaults) {
  HostTensor a = f32({2}, {1, 2}), b = f32({2}, {3, 4});
  HostTensor out(DType::F32, {2});
  KernelCall call;
  call.operands = {a.view(), b.view()};
  call.results = {out.view()};
  findKernel("add")(call);
  EXPECT_EQ(out.f()[0], 4);
  EXPECT_EQ(out.f()[1], 6);
}

} // namespace
} // namespace hybrid::cpu::test
