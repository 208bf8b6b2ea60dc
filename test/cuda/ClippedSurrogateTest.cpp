// The CUDA clipped_surrogate and clipped_surrogate_grad against the CPU
// oracle on PPO-shaped tokens (ratios spread across both clip bounds, signed
// advantages, a padded tail masked out), symmetric and asymmetric bounds.
// Tolerance: expf against the CPU's exp, a few ulps of f32.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class ClippedSurrogateTest : public CudaKernelTest {};

TEST_F(ClippedSurrogateTest, MatchesCpu) {
  for (const Shape &shape : {Shape{1}, Shape{3, 7}, Shape{16, 256},
                             Shape{32, 512}, Shape{5, 1000}}) {
    const HostTensor logp = randomTensor(DType::F32, shape, rng, -4, 0);
    HostTensor old = logp;
    // Ratios exp(logp - old) from about 0.5 to 2: both bounds crossed.
    const HostTensor shift = randomTensor(DType::F32, shape, rng, -0.7, 0.7);
    for (int64_t i = 0; i < old.numel(); ++i)
      old.set(i, logp.at(i) + shift.at(i));
    const HostTensor adv = randomTensor(DType::F32, shape, rng, -2, 2);
    const HostTensor g = randomTensor(DType::F32, shape, rng, -1, 1);
    HostTensor mask(DType::F32, shape);
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.set(i, i % shape.back() < shape.back() * 3 / 4 ? 1.0 : 0.0);
    const Tolerance tol{1e-6, 1e-5};
    for (auto [low, high] : {std::pair{0.2, 0.2}, std::pair{0.2, 0.28}}) {
      const std::string what = shapeToString(shape) + " clip " +
                               std::to_string(low) + "/" + std::to_string(high);
      expectMatchesCpu(ops::ClippedSurrogate{low, high}, {logp, old, adv, mask},
                       {HostTensor(DType::F32, shape)},
                       "clipped_surrogate " + what, &tol);
      expectMatchesCpu(ops::ClippedSurrogateGrad{low, high},
                       {logp, old, adv, mask, g},
                       {HostTensor(DType::F32, shape)},
                       "clipped_surrogate_grad " + what, &tol);
    }
  }
}

} // namespace
} // namespace hybrid::cuda::test
