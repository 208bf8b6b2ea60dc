// The kernel timeline (kernels/cuda/Timeline.h): in a build configured with
// -DHYBRIDC_CUDA_TIMELINE=ON every kernel of ours stamps its arrival and
// start once, in launch order, with its grid and block size; in any other
// build enabling it says how to get one.
#include "CudaTestSupport.h"

#include "cuda/Timeline.h"

namespace hybrid::cuda::test {
namespace {

class TimelineTest : public CudaKernelTest {};

TEST_F(TimelineTest, OtherBuildsSayHowToGetOne) {
  if (timeline::built())
    GTEST_SKIP() << "this build has the timeline";
  try {
    timeline::enable(16);
    FAIL() << "enable() accepted a build without the timeline";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("HYBRIDC_CUDA_TIMELINE=ON"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(timeline::read().marks.empty());
}

TEST_F(TimelineTest, EveryKernelStampsOnceInOrder) {
  if (!timeline::built())
    GTEST_SKIP() << "built without -DHYBRIDC_CUDA_TIMELINE=ON: nothing to "
                    "stamp";
  timeline::enable(4);
  // One row of 2048: the layer norm's one-block register kernel; then a
  // 1000-element add (a grid-stride elementwise kernel), five times: more
  // launches than the log keeps.
  const HostTensor x = randomTensor(DType::F32, {1, 2048}, rng);
  const HostTensor w = randomTensor(DType::F32, {2048}, rng, 0.5, 1.5);
  const HostTensor a = randomTensor(DType::F32, {1000}, rng);
  runCuda(ops::LayerNorm{1e-5, -1}, {x, w, HostTensor::absent()},
          {HostTensor(DType::F32, {1, 2048})});
  for (int i = 0; i < 5; ++i)
    runCuda(ops::Binary{BinaryKind::Add}, {a, a},
            {HostTensor(DType::F32, {1000})});
  const timeline::Logged logged = timeline::read();
  timeline::disable();
  const std::vector<timeline::Mark> &marks = logged.marks;
  ASSERT_EQ(marks.size(), 4u);
  EXPECT_GE(logged.dropped, 2u); // the test support may launch kernels too
  for (size_t i = 0; i < marks.size(); ++i) {
    const timeline::Mark &m = marks[i];
    EXPECT_GT(m.arrive, 0u) << i;
    EXPECT_GE(m.start, m.arrive) << i;
    EXPECT_GE(m.grid[0], 1u) << i;
    EXPECT_EQ(m.grid[1], 1u) << i;
    EXPECT_GE(m.threads, 32u) << i;
    if (i > 0) {
      EXPECT_GE(m.start, marks[i - 1].start) << i;
    }
  }
  // Logging stopped: a later kernel stamps nothing.
  runCuda(ops::Binary{BinaryKind::Add}, {a, a},
          {HostTensor(DType::F32, {1000})});
  EXPECT_TRUE(timeline::read().marks.empty());
}

} // namespace
} // namespace hybrid::cuda::test
