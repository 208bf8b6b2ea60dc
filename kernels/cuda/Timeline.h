// When each kernel of a captured step really starts, for builds configured
// with -DHYBRIDC_CUDA_TIMELINE=ON (off by default: the normal build's
// kernels carry none of it). In such a build every kernel of ours stamps,
// from block (0, 0, 0), the %globaltimer reading when it reached
// awaitInputs() (the kernel was resident: launched early under programmatic
// dependent launch) and when its wait returned (the kernel before it had
// finished: its work starts), with its grid and block size. One kernel's
// start to the next one's is what that kernel costs the step on its
// critical path, which neither event timing (it serialises launches) nor
// leaving ops out (it also removes a handoff) measures. cuBLASLt's kernels
// stamp nothing: their time falls to the kernel of ours before them.
// The runtime turns it on for HYBRID_CUDA_TIMELINE=FILE (CudaDevice) and
// bench/timeline.py reads the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid::cuda::timeline {

/// One kernel launch's stamps (nanoseconds of %globaltimer).
struct Mark {
  uint64_t arrive = 0; ///< block (0,0,0) reached awaitInputs()
  uint64_t start = 0;  ///< ... and its wait returned
  uint32_t grid[3] = {0, 0, 0};
  uint32_t threads = 0; ///< per block
};

/// The device-side log: `count` launches stamped so far (those past
/// `capacity` counted, not kept), then the marks.
struct Log {
  unsigned long long count;
  unsigned long long capacity;
  Mark marks[1];
};

/// Whether this kernel library was built with HYBRIDC_CUDA_TIMELINE.
bool built();

/// Starts logging up to `capacity` (>= 1) launches on the current device
/// (every kernel file's log pointer set to one new buffer). Throws
/// hybrid::Error when the build has no timeline or an allocation fails.
void enable(size_t capacity);

/// The launches logged so far, in the order their first blocks arrived,
/// and how many more ran past the capacity (not kept). Waits for the
/// device; nothing when not enabled.
struct Logged {
  std::vector<Mark> marks;
  uint64_t dropped = 0;
};
Logged read();

/// Stops logging and frees the buffer.
void disable();

/// Called once per kernel file at start-up (Device.cuh): `symbol` returns
/// the device address of that file's log pointer.
bool registerFile(void *(*symbol)());

} // namespace hybrid::cuda::timeline
