// Opening a device backend by name ("cpu", "cuda", "cuda:1"): what tools
// and tests use to run the same code on every backend this build has.
#pragma once

#include "hybrid/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace hybrid {

struct DeviceOptions {
  int cpuThreads = 0; ///< CPU kernel threads; 0 keeps the default
};

/// The device `spec` names: "cpu", "cuda" (= "cuda:0") or "cuda:N".
/// Throws hybrid::Error, one line: an unknown name (listing the known
/// ones), a build without the CUDA backend, no CUDA device or no such
/// ordinal (saying why).
std::shared_ptr<Device> openDevice(const std::string &spec,
                                   const DeviceOptions &options = {});

/// Whether `spec` names a device at all ("cpu", "cuda", "cuda:N"), present
/// in this build and machine or not.
bool isDeviceName(const std::string &spec);

/// Whether openDevice(spec) can succeed here; when not and `why` is given,
/// why not ("no CUDA device (...)", "this build has no CUDA backend").
bool deviceAvailable(const std::string &spec, std::string *why = nullptr);

/// Whether this build has the CUDA backend (GPU present or not).
bool cudaBackendBuilt();

/// The backends a conformance test runs on: "cpu" and "cuda", whether or
/// not a GPU is present (tests skip what is unavailable, saying so).
std::vector<std::string> backendNames();

} // namespace hybrid
