// Test support for the CUDA kernels: host tensors with random contents
// (never zeros), and one call that runs a typed op on the GPU (scratch
// exactly as the kernel declares it, followed by a guard region that must
// stay untouched; results poisoned first) and on the CPU oracle, and
// compares the two within a dtype's tolerance.
#pragma once

#include "cpu/CpuKernels.h"
#include "cuda/CudaKernels.h"

#include "hybrid/Float16.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace hybrid::cuda::test {

/// A tensor that owns its bytes on the host; `present` false stands for an
/// absent optional operand.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> bytes;
  bool present = true;

  HostTensor() = default;
  HostTensor(DType dt, Shape s)
      : dtype(dt), shape(std::move(s)),
        bytes(numElements(shape) * dtypeSize(dt), 0) {}
  static HostTensor absent() {
    HostTensor t;
    t.present = false;
    return t;
  }

  int64_t numel() const { return numElements(shape); }
  /// Element k as a double, whatever the dtype (bf16/f16 exactly).
  double at(int64_t k) const;
  /// Sets element k to v, rounded to the dtype (floats to nearest even,
  /// integers truncated, bool v != 0).
  void set(int64_t k, double v);
};

/// Random values uniform in [lo, hi] with |x| >= 1e-3 (floats), integers in
/// [lo, hi], bools half true; fixed seeds keep failures reproducible.
HostTensor randomTensor(DType dt, Shape shape, std::mt19937 &rng,
                        double lo = -2, double hi = 2);

/// A tensor of `dt` holding `values`.
HostTensor tensorOf(DType dt, Shape shape, const std::vector<double> &values);

/// |gpu - cpu| <= rtol * |cpu| + atol * (scaleByMax ? max |cpu| : 1).
struct Tolerance {
  double rtol = 0, atol = 0;
  bool scaleByMax = false;
};

/// The default tolerance of a dtype for elementwise math: f32 1e-5
/// relative, bf16 1e-2, f16 2e-3 (one rounding apart), integers exact.
Tolerance defaultTolerance(DType dt);
/// For reductions over `k` terms (GEMMs, attention): relative to the
/// result's largest magnitude.
Tolerance sumTolerance(DType dt);

/// Runs `op` on the CPU oracle; results have the given dtypes and shapes
/// and start as zeros, or with the given results' contents when `inPlace`
/// (kernels that update their result, like cache_write). Result i is
/// operand `aliases[i]`'s memory where that is >= 0 (updated in place; the
/// result holds it after the call).
std::vector<HostTensor> runCpu(const Op &op,
                               const std::vector<HostTensor> &operands,
                               const std::vector<HostTensor> &results,
                               bool inPlace = false,
                               const std::vector<int> &aliases = {});

/// Runs `op` on the GPU with exactly the declared scratch; fails the test
/// when the kernel writes past it. Results start poisoned, or with the
/// given results' contents when `inPlace`. Result i is operand
/// `aliases[i]`'s device buffer where that is >= 0 (a state updated in
/// place). `settledOperands` is the call's CudaCall::settledOperands.
std::vector<HostTensor> runCuda(const Op &op,
                                const std::vector<HostTensor> &operands,
                                const std::vector<HostTensor> &results,
                                bool inPlace = false, bool withContext = true,
                                const std::vector<int> &aliases = {},
                                uint32_t settledOperands = 0);

/// One call of `op` captured once in a CUDA graph (global capture mode, so
/// a host sync, copy or allocation in the kernel fails the capture) and
/// replayed with new operand contents: what a decode step does with its
/// position, key length and RNG counter. Operands, results (uploaded with
/// the given contents) and the declared scratch stay in device memory.
/// `withCounters`: the stream has its tile counters before the capture, as
/// a runtime stream that ran the step once does (else kernels take their
/// paths without them).
class CapturedCall {
public:
  CapturedCall(const Op &op, const std::vector<HostTensor> &operands,
               const std::vector<HostTensor> &results,
               bool withCounters = false);
  ~CapturedCall();
  CapturedCall(const CapturedCall &) = delete;
  CapturedCall &operator=(const CapturedCall &) = delete;

  /// Overwrites operand `i` (same shape and dtype) before the next replay.
  void setOperand(size_t i, const HostTensor &t);
  /// Launches the graph, waits, and returns the results.
  std::vector<HostTensor> replay();
  /// The mean GPU time of `times` back-to-back replays after one warm-up,
  /// in microseconds (each replay also pays a graph launch: for a kernel's
  /// throughput, not its latency alone).
  double replayMicroseconds(int times);

private:
  struct State;
  State *state_;
};

/// Expects `gpu` to match `cpu` element by element (NaN matches NaN).
void expectClose(const HostTensor &gpu, const HostTensor &cpu, Tolerance tol,
                 const std::string &what);

/// Runs `op` on both and compares every result; `what` names the case.
void expectMatchesCpu(const Op &op, const std::vector<HostTensor> &operands,
                      const std::vector<HostTensor> &results,
                      const std::string &what, const Tolerance *tol = nullptr,
                      uint32_t settledOperands = 0);

/// Context shared by the tests (created on first use).
Context *testContext();

/// The test fixture: skips, saying so, without a CUDA device.
class CudaKernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!deviceAvailable())
      GTEST_SKIP() << "no CUDA device: skipped";
  }
  std::mt19937 rng{1234};
};

inline const std::vector<DType> kFloatTypes = {DType::F32, DType::BF16,
                                               DType::F16};

} // namespace hybrid::cuda::test
