// The CUDA kernel table covers every op the CPU one does (all but events and
// collectives), and malformed calls are errors that name the kernel.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

std::vector<Op> everyOp() {
  std::vector<Op> ops;
  for (int k = 0; k < kBinaryKinds; ++k)
    ops.push_back(ops::Binary{static_cast<BinaryKind>(k)});
  for (int k = 0; k < kUnaryKinds; ++k)
    ops.push_back(ops::Unary{static_cast<UnaryKind>(k)});
  for (int k = 0; k < kReduceKinds; ++k)
    ops.push_back(ops::Reduce{static_cast<ReduceKind>(k)});
  ops.insert(ops.end(),
             {ops::Clip{},         ops::Select{},      ops::Cast{},
              ops::Copy{},         ops::Fill{},        ops::Transpose{},
              ops::BroadcastTo{},  ops::Slice{},       ops::Concat{},
              ops::Gather{},       ops::GatherNd{},    ops::Iota{},
              ops::CumSum{},       ops::Trilu{},       ops::Softmax{},
              ops::LayerNorm{},    ops::RmsNorm{},     ops::MatMul{},
              ops::Linear{},       ops::Embedding{},   ops::Rotary{},
              ops::Attention{},    ops::CacheWrite{},  ops::Sample{},
              ops::SampleStep{},   ops::LinearGroup{}, ops::AdamWUpdate{},
              ops::AttentionGrad{}});
  ops.insert(ops.end(), {ops::LayerNormGrad{}, ops::LabelLogProbs{},
                         ops::LabelLogProbsGrad{}, ops::EmbeddingGrad{},
                         ops::ActivationGrad{}});
  return ops;
}

// Needs no device: it runs on CI too (the binary as a whole skips there).
TEST(CudaKernelTable, EveryCpuOpHasACudaKernel) {
  for (const Op &op : everyOp()) {
    EXPECT_NE(cpu::findKernel(op).run, nullptr) << opName(op);
    EXPECT_NE(findKernel(op).run, nullptr) << opName(op);
  }
  EXPECT_EQ(findKernel(ops::Collective{}).run, nullptr);
  EXPECT_EQ(findKernel(ops::RecordEvent{}).run, nullptr);
  EXPECT_EQ(findKernel(ops::WaitEvent{}).run, nullptr);
  EXPECT_EQ(findKernel(ops::Binary{static_cast<BinaryKind>(200)}).run, nullptr);
}

class KernelErrorTest : public CudaKernelTest {};

TEST_F(KernelErrorTest, BadCallsThrowNamingTheKernel) {
  const Op add = ops::Binary{BinaryKind::Add};
  try {
    runCuda(add,
            {randomTensor(DType::F32, {3}, rng),
             randomTensor(DType::BF16, {3}, rng)},
            {HostTensor(DType::F32, {3})});
    ADD_FAILURE() << "mixed dtypes accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("add:"), std::string::npos)
        << e.what();
  }
  const Op softmax = ops::Softmax{};
  EXPECT_THROW(runCuda(softmax, {randomTensor(DType::I32, {3}, rng, 1, 5)},
                       {HostTensor(DType::I32, {3})}),
               Error);
  const Op attention = ops::Attention{};
  EXPECT_THROW(runCuda(attention,
                       {randomTensor(DType::F32, {1, 3, 2, 8}, rng),
                        randomTensor(DType::F32, {1, 2, 2, 8}, rng),
                        randomTensor(DType::F32, {1, 2, 2, 8}, rng),
                        HostTensor::absent(), HostTensor::absent(),
                        HostTensor::absent(), HostTensor::absent()},
                       {HostTensor(DType::F32, {1, 3, 2, 8})}),
               Error);
}

} // namespace
} // namespace hybrid::cuda::test
