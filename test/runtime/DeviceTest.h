// One conformance suite for every device backend: a test fixture
// parameterised by backend name ("cpu", "cuda") that skips, saying why, on
// a backend this build or machine lacks; and reading or writing device
// memory from a test (device memory is not host memory on every backend).
#pragma once

#include "hybrid/Device.h"
#include "hybrid/Devices.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace hybrid::test {

/// TEST_P(Suite, Name) bodies use device(): a fresh device of the backend
/// under test, made for the test.
class DeviceTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    std::string why;
    if (!deviceAvailable(GetParam(), &why)) {
      if (!cudaBackendBuilt())
        GTEST_SKIP() << "CUDA backend not built: skipped";
      GTEST_SKIP() << "no CUDA device: skipped (" << why << ")";
    }
    device_ = openDevice(GetParam());
  }

  const std::shared_ptr<Device> &device() const { return device_; }
  bool onCpu() const { return GetParam() == "cpu"; }

private:
  std::shared_ptr<Device> device_;
};

/// Instantiates every TEST_P of `Suite` once per backend, named by it.
#define HYBRID_TEST_ON_EVERY_DEVICE(Suite)                                     \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      Devices, Suite, ::testing::ValuesIn(::hybrid::backendNames()),           \
      [](const ::testing::TestParamInfo<std::string> &info) {                  \
        return info.param;                                                     \
      })

/// `bytes` of device memory at `src`, copied to the host (waits).
inline std::vector<uint8_t> readDevice(Device &device, const void *src,
                                       size_t bytes) {
  std::vector<uint8_t> out(bytes);
  device.copyDeviceToHost(out.data(), src, bytes, device.defaultStream());
  device.synchronize(device.defaultStream());
  return out;
}

template <typename T>
std::vector<T> readDeviceAs(Device &device, const void *src, size_t count) {
  std::vector<uint8_t> bytes = readDevice(device, src, count * sizeof(T));
  std::vector<T> out(count);
  if (count)
    std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// Copies `bytes` from the host to device memory at `dst` (waits).
inline void writeDevice(Device &device, void *dst, const void *src,
                        size_t bytes) {
  device.copyHostToDevice(dst, src, bytes, device.defaultStream());
  device.synchronize(device.defaultStream());
}

} // namespace hybrid::test
