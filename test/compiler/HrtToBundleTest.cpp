// Serialisation of hrt into the bundle refuses what it cannot encode
// faithfully instead of writing a wrong command (the old lowering wrote
// buffer 0 for a value it had not mapped).
#include "compiler/Target/Bundle/HrtToBundle.h"
#include "compiler/InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace {

using namespace mlir;

class HrtToBundle : public ::testing::Test {
protected:
  HrtToBundle() {
    DialectRegistry registry;
    hybridc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, &context);
  }
  MLIRContext context;
};

constexpr const char *kPlanned = R"mlir(
hrt.executable @a symbols [] params read attributes {alignment = 256 : i64, workspace = 512 : i64} {
  %x = hrt.input "x" {offset = 0 : i64} : !hrt.buffer<f32, [4]>
  %y = hrt.output "y" {offset = 256 : i64} : !hrt.buffer<f32, [4]>
  hrt.unary neg %x : !hrt.buffer<f32, [4]> into %y : !hrt.buffer<f32, [4]>
}
hrt.executable @b symbols [] params read attributes {alignment = 256 : i64, workspace = 256 : i64} {
  %y = hrt.output "y" {offset = 0 : i64} : !hrt.buffer<f32, [4]>
  hrt.fill 1.0 into %y : !hrt.buffer<f32, [4]>
}
)mlir";

TEST_F(HrtToBundle, WritesTypedCommands) {
  OwningOpRef<ModuleOp> module = parse(kPlanned);
  ASSERT_TRUE(module);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_TRUE(static_cast<bool>(bundle)) << llvm::toString(bundle.takeError());
  ASSERT_EQ(bundle->executables.size(), 2u);
  const hybrid::CommandDesc &neg = bundle->executables[0].commands.at(0);
  ASSERT_TRUE(std::holds_alternative<hybrid::ops::Unary>(neg.op));
  EXPECT_EQ(std::get<hybrid::ops::Unary>(neg.op).kind, hybrid::UnaryKind::Neg);
  EXPECT_EQ(neg.operands, std::vector<int32_t>({0}));
  EXPECT_EQ(neg.results, std::vector<int32_t>({1}));
}

TEST_F(HrtToBundle, AnUndefinedBufferIsAnErrorNotBufferZero) {
  OwningOpRef<ModuleOp> module = parse(kPlanned);
  ASSERT_TRUE(module);
  // Make @b's fill write @a's output: a use no verifier would let through
  // (executables are isolated), built by hand as a buggy pass could.
  auto exes = llvm::to_vector(module->getOps<hybridc::hrt::ExecutableOp>());
  Value foreign = (*exes[0].getBlock().getOps<hybridc::hrt::OutputOp>().begin())
                      .getResult();
  auto fill = *exes[1].getBlock().getOps<hybridc::hrt::FillOp>().begin();
  fill->setOperand(0, foreign);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_FALSE(static_cast<bool>(bundle));
  EXPECT_NE(llvm::toString(bundle.takeError())
                .find("uses a buffer that no op before it in @b defines"),
            std::string::npos);
}

TEST_F(HrtToBundle, ACommandWritesEveryResultInOrder) {
  // hrt.sample_step writes seven buffers: the bundle lists them in Ops.h's
  // order (token, tokens, logprobs, lengths, finished, count, rng), after
  // its seven operands.
  OwningOpRef<ModuleOp> module = parse(R"mlir(
hrt.executable @step symbols [] params read attributes {alignment = 256 : i64, workspace = 256 : i64} {
  %l = hrt.input "logits" {offset = 0 : i64} : !hrt.buffer<f32, [2, 8]>
  %token = hrt.state "gen.token" read_write : !hrt.buffer<i64, [2]>
  %count = hrt.state "gen.count" read_write : !hrt.buffer<i64, [1]>
  %fin = hrt.state "gen.finished" read_write : !hrt.buffer<i1, [2]>
  %len = hrt.state "gen.lengths" read_write : !hrt.buffer<i64, [2]>
  %cfg = hrt.state "gen.config" read : !hrt.buffer<i64, [4]>
  %smp = hrt.state "gen.sampling" read : !hrt.buffer<f32, [3]>
  %rng = hrt.state "gen.rng" read_write : !hrt.buffer<i64, [2]>
  %toks = hrt.state "gen.tokens" read_write : !hrt.buffer<i64, [2, 5]>
  %lps = hrt.state "gen.logprobs" read_write : !hrt.buffer<f32, [2, 5]>
  hrt.sample_step %l : !hrt.buffer<f32, [2, 8]>, %cfg : !hrt.buffer<i64, [4]>, %smp : !hrt.buffer<f32, [3]>, %rng : !hrt.buffer<i64, [2]> count %count : !hrt.buffer<i64, [1]> finished %fin : !hrt.buffer<i1, [2]> lengths %len : !hrt.buffer<i64, [2]> into %token : !hrt.buffer<i64, [2]>, %toks : !hrt.buffer<i64, [2, 5]>, %lps : !hrt.buffer<f32, [2, 5]>, %len : !hrt.buffer<i64, [2]>, %fin : !hrt.buffer<i1, [2]>, %count : !hrt.buffer<i64, [1]>, %rng : !hrt.buffer<i64, [2]>
}
)mlir");
  ASSERT_TRUE(module);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_TRUE(static_cast<bool>(bundle)) << llvm::toString(bundle.takeError());
  const hybrid::CommandDesc &step = bundle->executables[0].commands.at(0);
  ASSERT_TRUE(std::holds_alternative<hybrid::ops::SampleStep>(step.op));
  EXPECT_EQ(step.operands, std::vector<int32_t>({0, 5, 6, 7, 2, 3, 4}));
  EXPECT_EQ(step.results, std::vector<int32_t>({1, 8, 9, 4, 3, 2, 7}));
}

TEST_F(HrtToBundle, AnAdamWUpdateWritesItsParameterAndMomentsInPlace) {
  // hrt.adamw_update in place: its results (param, exp_avg, exp_avg_sq)
  // are the buffers of three of its ten operands.
  OwningOpRef<ModuleOp> module = parse(R"mlir(
hrt.executable @step symbols [] params read attributes {alignment = 256 : i64, workspace = 256 : i64} {
  %g = hrt.input "g" {offset = 0 : i64} : !hrt.buffer<f32, [3, 5]>
  %s = hrt.input "s" {offset = 64 : i64} : !hrt.buffer<f32, [1]>
  %p = hrt.state "opt.master.w" read_write : !hrt.buffer<f32, [3, 5]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [3, 5]>
  %v = hrt.state "opt.exp_avg_sq.w" read_write : !hrt.buffer<f32, [3, 5]>
  hrt.adamw_update %p : !hrt.buffer<f32, [3, 5]>, %g : !hrt.buffer<f32, [3, 5]> moments %m : !hrt.buffer<f32, [3, 5]>, %v : !hrt.buffer<f32, [3, 5]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [3, 5]>, %m : !hrt.buffer<f32, [3, 5]>, %v : !hrt.buffer<f32, [3, 5]>
}
)mlir");
  ASSERT_TRUE(module);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_TRUE(static_cast<bool>(bundle)) << llvm::toString(bundle.takeError());
  const hybrid::CommandDesc &update = bundle->executables[0].commands.at(0);
  ASSERT_TRUE(std::holds_alternative<hybrid::ops::AdamWUpdate>(update.op));
  EXPECT_EQ(update.operands,
            std::vector<int32_t>({2, 0, 3, 4, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(update.results, std::vector<int32_t>({2, 3, 4}));
}

TEST_F(HrtToBundle, AnAdamWUpdateWritesItsWorkingParameterFourth) {
  // Mixed precision: a bf16 gradient read as it is, and the working
  // parameter the fourth result (the op says it writes one).
  OwningOpRef<ModuleOp> module = parse(R"mlir(
hrt.executable @step symbols [] params read_write attributes {alignment = 256 : i64, workspace = 256 : i64} {
  %g = hrt.input "g" {offset = 0 : i64} : !hrt.buffer<bf16, [3, 5]>
  %s = hrt.input "s" {offset = 64 : i64} : !hrt.buffer<f32, [1]>
  %w = hrt.param "w" : !hrt.buffer<bf16, [3, 5]>
  %p = hrt.state "opt.master.w" read_write : !hrt.buffer<f32, [3, 5]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [3, 5]>
  %v = hrt.state "opt.exp_avg_sq.w" read_write : !hrt.buffer<f32, [3, 5]>
  hrt.adamw_update %p : !hrt.buffer<f32, [3, 5]>, %g : !hrt.buffer<bf16, [3, 5]> moments %m : !hrt.buffer<f32, [3, 5]>, %v : !hrt.buffer<f32, [3, 5]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [3, 5]>, %m : !hrt.buffer<f32, [3, 5]>, %v : !hrt.buffer<f32, [3, 5]> working %w : !hrt.buffer<bf16, [3, 5]>
}
)mlir");
  ASSERT_TRUE(module);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_TRUE(static_cast<bool>(bundle)) << llvm::toString(bundle.takeError());
  const hybrid::CommandDesc &update = bundle->executables[0].commands.at(0);
  const auto *op = std::get_if<hybrid::ops::AdamWUpdate>(&update.op);
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->workingParam);
  EXPECT_EQ(update.operands,
            std::vector<int32_t>({3, 0, 4, 5, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(update.results, std::vector<int32_t>({3, 4, 5, 2}));
}

TEST_F(HrtToBundle, AnUnplannedExecutableIsAnError) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
hrt.executable @a symbols [] params read {
  %y = hrt.output "y" : !hrt.buffer<f32, [4]>
  hrt.fill 1.0 into %y : !hrt.buffer<f32, [4]>
}
)mlir");
  ASSERT_TRUE(module);
  llvm::Expected<hybrid::BundleDesc> bundle =
      hybridc::translateHrtToBundle(*module);
  ASSERT_FALSE(static_cast<bool>(bundle));
  EXPECT_EQ(llvm::toString(bundle.takeError()),
            "@a has no memory plan (run hrt-plan-memory first)");
}

} // namespace
