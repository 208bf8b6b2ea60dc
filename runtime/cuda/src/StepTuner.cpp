// Step tuning's loop (StepTuner.h): which options to try comes from
// kernels/cuda/StepTuning.h; this captures, replays and keeps.
#include "StepTuner.h"

#include "CudaCheck.h"

#include "cuda/Check.h"
#include "cuda/Context.h"
#include "cuda/StepTuning.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace hybrid {

using cudabackend::checkCuda;

namespace {

/// Options of another kind are tried when their time alone was within this
/// factor of the plan's fastest (stash counts always: StepTuning.h).
constexpr double kWithin = 1.25;
/// Timed replays of each graph per comparison, the medians compared:
/// HYBRID_CUDA_STEP_TUNE_REPLAYS (1 to 64), default 9.
int replays() {
  static const int n =
      cuda::envInteger("HYBRID_CUDA_STEP_TUNE_REPLAYS", 1, 64, 9);
  return n;
}
/// An option is kept when its median step is faster by this fraction of
/// the best's: HYBRID_CUDA_STEP_TUNE_MARGIN in hundredths of a percent (0
/// to 1000), default 20 (0.2 %, ~2.5 us of OPT-1.3B's 1.24 ms step at
/// batch 1; the kept wins measured 0.5-1.0 %, one graph's median moved by
/// up to 0.17 % between trials: bench/RESULTS.md, fourteenth session).
double margin() {
  static const double m =
      cuda::envInteger("HYBRID_CUDA_STEP_TUNE_MARGIN", 0, 1000, 20) / 1e4;
  return m;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Events for the timed replays, destroyed with it.
class ReplayEvents {
public:
  ReplayEvents(size_t count, const std::string &device) : events_(count) {
    for (cudaEvent_t &e : events_) {
      const cudaError_t made = cudaEventCreate(&e);
      if (made != cudaSuccess) {
        e = nullptr;
        destroy();
        checkCuda(made, device, "cudaEventCreate");
      }
    }
  }
  ~ReplayEvents() { destroy(); }
  ReplayEvents(const ReplayEvents &) = delete;
  ReplayEvents &operator=(const ReplayEvents &) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

private:
  std::vector<cudaEvent_t> events_;
  void destroy() {
    for (cudaEvent_t &e : events_)
      if (e) {
        cudaEventDestroy(e);
        e = nullptr;
      }
  }
};

} // namespace

bool stepTuningEnabled() {
  static const bool on = [] {
    const char *v = std::getenv("HYBRID_CUDA_STEP_TUNE");
    return !v || std::string(v) != "0";
  }();
  return on;
}

std::unique_ptr<Graph> tuneCapturedStep(
    cuda::Context &context, CUstream_st *stream, std::mutex &turn,
    const std::function<
        std::unique_ptr<Graph>(const std::function<void()> &began)> &capture,
    const std::function<void(Graph &)> &launch,
    const std::function<void()> &save, const std::function<void()> &restore,
    std::atomic<size_t> &trials, const std::string &device) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<cuda::UsedPlan> used;
  auto recordInto = [&](std::vector<cuda::UsedPlan> *into) {
    std::lock_guard<std::mutex> lock(turn);
    context.usedPlans = into;
    context.usedCapture = 0;
  };
  // Once the capture has begun: its id, so that only its GEMMs count.
  auto began = [&] {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    checkCuda(cudaStreamGetCaptureInfo(stream, &status, &id), device,
              "cudaStreamGetCaptureInfo");
    std::lock_guard<std::mutex> lock(turn);
    context.usedCapture = id;
  };
  recordInto(&used);
  std::unique_ptr<Graph> best;
  try {
    best = capture(began);
  } catch (...) {
    recordInto(nullptr);
    throw;
  }
  recordInto(nullptr);
  // Plans change under the launch lock: another thread's kernels read them.
  auto apply = [&](const cuda::UsedPlan &plan, const cuda::PlanOption &o) {
    std::lock_guard<std::mutex> lock(turn);
    cuda::applyOption(plan, o);
  };
  std::vector<cuda::StepChoice> choices = cuda::stepChoices(used, kWithin);
  if (choices.empty())
    return best;

  // The medians of a's and b's step, replayed in turn (each after restore,
  // so every replay is the same step), after one replay of each to warm.
  const int timedReplays = replays();
  ReplayEvents events(4 * static_cast<size_t>(timedReplays), device);
  auto compare = [&](Graph &a, Graph &b) {
    for (Graph *g : {&a, &b}) {
      restore();
      launch(*g);
    }
    for (int r = 0; r < timedReplays; ++r)
      for (int k = 0; k < 2; ++k) {
        restore();
        checkCuda(cudaEventRecord(events[4 * r + 2 * k], stream), device,
                  "cudaEventRecord");
        launch(k ? b : a);
        checkCuda(cudaEventRecord(events[4 * r + 2 * k + 1], stream), device,
                  "cudaEventRecord");
      }
    checkCuda(cudaStreamSynchronize(stream), device, "cudaStreamSynchronize");
    std::vector<float> times[2];
    for (int r = 0; r < timedReplays; ++r)
      for (int k = 0; k < 2; ++k) {
        float ms = 0;
        checkCuda(cudaEventElapsedTime(&ms, events[4 * r + 2 * k],
                                       events[4 * r + 2 * k + 1]),
                  device, "cudaEventElapsedTime");
        times[k].push_back(ms);
      }
    return std::make_pair(median(times[0]), median(times[1]));
  };

  save();
  int timed = 0;
  float first = -1, last = -1;
  for (cuda::StepChoice &choice : choices) {
    for (const cuda::PlanOption &option : choice.alternatives) {
      apply(choice.plan, option);
      std::unique_ptr<Graph> trial;
      try {
        trial = capture([] {});
      } catch (const std::exception &e) {
        if (cuda::tuneLog())
          std::fprintf(stderr,
                       "hybrid: step tuning %s: %s did not capture: %s\n",
                       choice.plan.shape.c_str(),
                       cuda::optionName(option).c_str(), e.what());
      }
      bool keep = false;
      if (trial) {
        std::pair<float, float> times;
        try {
          times = compare(*best, *trial);
        } catch (...) {
          // The plan back to the option it ran before, the state put back
          // (as far as the stream still runs), then the error.
          apply(choice.plan, choice.current);
          restore();
          throw;
        }
        const auto [now, with] = times;
        ++timed;
        ++trials;
        if (first < 0)
          first = now;
        keep = with < now * (1 - margin());
        last = keep ? with : now;
        if (cuda::tuneLog())
          std::fprintf(
              stderr, "hybrid: step tuning %s: %s %.4f ms, %s %.4f ms%s\n",
              choice.plan.shape.c_str(),
              cuda::optionName(choice.current).c_str(), now,
              cuda::optionName(option).c_str(), with, keep ? " (kept)" : "");
      }
      if (keep) {
        best = std::move(trial);
        choice.current = option;
      } else {
        apply(choice.plan, choice.current);
      }
    }
    std::lock_guard<std::mutex> lock(turn);
    cuda::settle(choice.plan);
  }
  restore();
  checkCuda(cudaStreamSynchronize(stream), device, "cudaStreamSynchronize");
  if (cuda::tuneLog()) {
    // One pin per shape (PlanPins.h refuses a shape twice); plans of one
    // shape that differ only in what the pin cannot name (an epilogue)
    // and kept different options are left out, and said so.
    std::vector<std::pair<std::string, std::string>> pins;
    std::vector<std::string> split;
    for (const cuda::StepChoice &choice : choices) {
      const std::string option = cuda::optionName(choice.current);
      auto same = std::find_if(pins.begin(), pins.end(), [&](const auto &p) {
        return p.first == choice.plan.shape;
      });
      if (same == pins.end())
        pins.emplace_back(choice.plan.shape, option);
      else if (same->second != option)
        split.push_back(choice.plan.shape);
    }
    std::string plans;
    for (const auto &[shape, option] : pins)
      if (std::find(split.begin(), split.end(), shape) == split.end())
        plans += (plans.empty() ? "" : ",") + shape + "=" + option;
    for (const std::string &shape : split)
      plans += " (" + shape + ": two plans, two choices)";
    std::fprintf(
        stderr,
        "hybrid: step tuning: %d trials over %zu plans in %.2f s, the step "
        "%.4f ms in the first trial, %.4f ms in the last; as pins: "
        "HYBRID_CUDA_PLANS=%s\n",
        timed, choices.size(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      started)
            .count(),
        first, last, plans.c_str());
  }
  return best;
}

} // namespace hybrid
