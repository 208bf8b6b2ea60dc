// The CUDA activation_grad kernel against the CPU oracle on random inputs:
// every activation and float dtype, odd sizes (the tail past the last
// 16-byte vector), wide inputs, in place, and operands that are not
// 16-byte aligned (the element-wise path).
#include "CudaTestSupport.h"

#include <cuda_runtime.h>

namespace hybrid::cuda::test {
namespace {

const Activation kActivationsWithGrad[] = {
    Activation::Relu, Activation::GeluErf, Activation::GeluTanh,
    Activation::Silu};

class ActivationGradTest : public CudaKernelTest {};

TEST_F(ActivationGradTest, MatchesCpu) {
  for (DType dt : kFloatTypes)
    for (Activation a : kActivationsWithGrad)
      for (const Shape &shape : std::vector<Shape>{
               {1}, {3}, {17}, {3, 127}, {1000}, {5, 36}, {64, 1024}, {4097}}) {
        HostTensor x = randomTensor(dt, shape, rng, -6, 6);
        HostTensor g = randomTensor(dt, shape, rng, -2, 2);
        expectMatchesCpu(ops::ActivationGrad{a}, {x, g},
                         {HostTensor(dt, shape)},
                         std::string(activationName(a)) + " " + dtypeName(dt) +
                             " " + shapeToString(shape));
      }
}

TEST_F(ActivationGradTest, WideInputs) {
  for (DType dt : kFloatTypes)
    for (Activation a : kActivationsWithGrad) {
      HostTensor x = randomTensor(dt, {4099}, rng, -30, 30);
      HostTensor g = randomTensor(dt, {4099}, rng, -3, 3);
      expectMatchesCpu(ops::ActivationGrad{a}, {x, g}, {HostTensor(dt, {4099})},
                       std::string(activationName(a)) + " wide " +
                           dtypeName(dt));
    }
}

TEST_F(ActivationGradTest, InPlaceOverGradOut) {
  // The memory plan may give grad_in grad_out's buffer.
  for (DType dt : kFloatTypes)
    for (Activation a : kActivationsWithGrad) {
      HostTensor x = randomTensor(dt, {2, 1001}, rng, -6, 6);
      HostTensor g = randomTensor(dt, {2, 1001}, rng);
      const Op op = ops::ActivationGrad{a};
      const std::vector<HostTensor> results = {HostTensor(dt, {2, 1001})};
      std::vector<HostTensor> gpu =
          runCuda(op, {x, g}, results, false, true, {1});
      std::vector<HostTensor> cpu = runCpu(op, {x, g}, results);
      expectClose(gpu[0], cpu[0], defaultTolerance(dt),
                  std::string(activationName(a)) + " in place " +
                      dtypeName(dt));
    }
}

/// Runs the kernel on device copies of x and g placed `shift` elements
/// past a 256-byte aligned allocation (the result too), and returns the
/// result.
HostTensor runShifted(const Op &op, const HostTensor &x, const HostTensor &g,
                      int64_t shift) {
  const size_t elem = dtypeSize(x.dtype), bytes = x.bytes.size();
  const size_t offset = static_cast<size_t>(shift) * elem;
  HostTensor out(x.dtype, x.shape);
  void *buffers[3] = {nullptr, nullptr, nullptr};
  for (void *&b : buffers)
    EXPECT_EQ(cudaMalloc(&b, bytes + 16), cudaSuccess);
  auto at = [&](void *b) { return static_cast<uint8_t *>(b) + offset; };
  EXPECT_EQ(
      cudaMemcpy(at(buffers[0]), x.bytes.data(), bytes, cudaMemcpyHostToDevice),
      cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(at(buffers[1]), g.bytes.data(), bytes, cudaMemcpyHostToDevice),
      cudaSuccess);
  EXPECT_EQ(cudaMemset(buffers[2], 0xFF, bytes + 16), cudaSuccess);
  CudaCall call;
  call.op = &op;
  call.context = testContext();
  call.operands.emplace_back(at(buffers[0]), x.dtype, x.shape);
  call.operands.emplace_back(at(buffers[1]), g.dtype, g.shape);
  Tensor result;
  result.data = at(buffers[2]);
  result.dtype = x.dtype;
  result.shape = x.shape;
  call.results.push_back(result);
  findKernel(op).run(call);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.bytes.data(), at(buffers[2]), bytes,
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (void *b : buffers)
    cudaFree(b);
  return out;
}

TEST_F(ActivationGradTest, UnalignedOperands) {
  for (DType dt : kFloatTypes)
    for (Activation a : kActivationsWithGrad)
      for (int64_t shift : {1, 3}) {
        HostTensor x = randomTensor(dt, {3, 333}, rng, -6, 6);
        HostTensor g = randomTensor(dt, {3, 333}, rng);
        const Op op = ops::ActivationGrad{a};
        std::vector<HostTensor> cpu =
            runCpu(op, {x, g}, {HostTensor(dt, {3, 333})});
        expectClose(runShifted(op, x, g, shift), cpu[0], defaultTolerance(dt),
                    std::string(activationName(a)) + " shifted by " +
                        std::to_string(shift) + " " + dtypeName(dt));
      }
}

TEST_F(ActivationGradTest, RejectsBadCalls) {
  HostTensor x = randomTensor(DType::F32, {5}, rng);
  EXPECT_THROW(runCuda(ops::ActivationGrad{Activation::None},
                       {x, randomTensor(DType::F32, {5}, rng)},
                       {HostTensor(DType::F32, {5})}),
               Error);
  EXPECT_THROW(runCuda(ops::ActivationGrad{Activation::Silu},
                       {x, randomTensor(DType::BF16, {5}, rng)},
                       {HostTensor(DType::F32, {5})}),
               Error);
  EXPECT_THROW(runCuda(ops::ActivationGrad{Activation::Silu},
                       {x, randomTensor(DType::F32, {4}, rng)},
                       {HostTensor(DType::F32, {5})}),
               Error);
}

} // namespace
} // namespace hybrid::cuda::test
