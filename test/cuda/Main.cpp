// The CUDA kernel tests' main: without a CUDA device it says so and exits
// with 77, which ctest reports as skipped (SKIP_RETURN_CODE), not passed.
#include "cuda/CudaKernels.h"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!hybrid::cuda::deviceAvailable()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
