// CudaDevice::captureTuned's loop: capture a step while recording the GEMM
// plans it uses, then time each close option of those plans inside the
// step (kernels/cuda/StepTuning.h says why), keeping what replays faster.
#pragma once

#include "hybrid/Device.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

struct CUstream_st;

namespace hybrid::cuda {
struct Context;
}

namespace hybrid {

/// How step tuning runs (HYBRID_CUDA_STEP_TUNE, read once): "0" leaves the
/// plans as GEMM tuning chose them; unset or anything else tunes.
bool stepTuningEnabled();

/// Captures the step (`capture` wraps Device::capture of the work and calls
/// `began` once the capture has begun, before the work) with `context`
/// recording the plans it uses (set and cleared under `turn`, the device's
/// launch lock); for each plan with close options
/// (stepChoices), slowest alone first, recaptures the step with each option
/// and times its replays against the best graph so far, interleaved (the
/// median of several, each replay after state.restore, so that every
/// replay is the same step), keeping an option that is faster by more than
/// a noise margin. Every plan it looked at is settled. state.save runs
/// before the first replay and state.restore after the last, so the state
/// is as it was. Adds the options it timed to `trials`.
/// HYBRID_CUDA_TUNE_LOG=1 prints each trial. Throws
/// hybrid::Error naming `device` where CUDA fails outside the captures (an
/// option whose capture fails is skipped).
std::unique_ptr<Graph> tuneCapturedStep(
    cuda::Context &context, CUstream_st *stream, std::mutex &turn,
    const std::function<
        std::unique_ptr<Graph>(const std::function<void()> &began)> &capture,
    const std::function<void(Graph &)> &launch,
    const std::function<void()> &save, const std::function<void()> &restore,
    std::atomic<size_t> &trials, const std::string &device);

} // namespace hybrid
