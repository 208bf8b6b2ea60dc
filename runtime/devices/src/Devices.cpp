// Opening device backends by name; the CUDA one only when this build has it.
#include "hybrid/Devices.h"

#include "hybrid/CpuDevice.h"
#ifdef HYBRIDC_CUDA_BACKEND
#include "hybrid/CudaDevice.h"
#endif

#include <cerrno>
#include <cstdlib>

namespace hybrid {

namespace {

/// The ordinal of "cuda" / "cuda:N"; -1 for anything else.
int cudaOrdinal(const std::string &spec) {
  if (spec == "cuda")
    return 0;
  if (spec.rfind("cuda:", 0) != 0 || spec.size() == 5)
    return -1;
  const char *digits = spec.c_str() + 5;
  for (const char *p = digits; *p; ++p)
    if (*p < '0' || *p > '9')
      return -1;
  errno = 0;
  long n = std::strtol(digits, nullptr, 10);
  return errno || n > 1024 ? -1 : static_cast<int>(n);
}

[[noreturn]] void unknown(const std::string &spec) {
  throw Error("unknown device '" + spec + "' (devices: cpu, cuda, cuda:N)");
}

} // namespace

bool cudaBackendBuilt() {
#ifdef HYBRIDC_CUDA_BACKEND
  return true;
#else
  return false;
#endif
}

std::vector<std::string> backendNames() { return {"cpu", "cuda"}; }

bool isDeviceName(const std::string &spec) {
  return spec == "cpu" || cudaOrdinal(spec) >= 0;
}

bool deviceAvailable(const std::string &spec, std::string *why) {
  if (spec == "cpu")
    return true;
  int ordinal = cudaOrdinal(spec);
  if (ordinal < 0) {
    if (why)
      *why = "unknown device '" + spec + "'";
    return false;
  }
#ifdef HYBRIDC_CUDA_BACKEND
  std::string reason;
  int count = CudaDevice::deviceCount(&reason);
  if (count == 0) {
    if (why)
      *why = "no CUDA device (" + reason + ")";
    return false;
  }
  if (ordinal >= count) {
    if (why)
      *why = "no device cuda:" + std::to_string(ordinal) + " (" +
             std::to_string(count) + " present)";
    return false;
  }
  return true;
#else
  if (why)
    *why = "this build has no CUDA backend (configure with a CUDA toolkit)";
  return false;
#endif
}

std::shared_ptr<Device> openDevice(const std::string &spec,
                                   const DeviceOptions &options) {
  if (spec == "cpu")
    return std::make_shared<CpuDevice>(options.cpuThreads);
  int ordinal = cudaOrdinal(spec);
  if (ordinal < 0)
    unknown(spec);
#ifdef HYBRIDC_CUDA_BACKEND
  return std::make_shared<CudaDevice>(ordinal);
#else
  throw Error("device " + spec +
              ": this build has no CUDA backend (configure with a CUDA "
              "toolkit)");
#endif
}

} // namespace hybrid
