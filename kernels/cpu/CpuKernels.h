// The CPU kernel library: float32 reference-quality kernels behind a name
// table, used by the CPU backend (the numerical oracle) and by compile-time
// evaluation. No dependency on MLIR or on the runtime's bundle code.
#pragma once

#include "hybrid/Types.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hybrid::cpu {

/// A dense row-major tensor view. Does not own `data`.
struct Tensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numel() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// Attributes of one call, as stored in the bundle (name -> value).
class Attrs {
public:
  struct Value {
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<int64_t> ints;
    std::vector<double> floats;
  };
  void set(std::string name, Value v) {
    values_[std::move(name)] = std::move(v);
  }
  bool has(std::string_view name) const {
    return values_.count(std::string(name));
  }
  int64_t getInt(std::string_view name, int64_t dflt = 0) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? dflt : it->second.i;
  }
  double getFloat(std::string_view name, double dflt = 0) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? dflt : it->second.f;
  }
  std::string getString(std::string_view name, std::string dflt = {}) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? dflt : it->second.s;
  }
  std::vector<int64_t> getInts(std::string_view name) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? std::vector<int64_t>{} : it->second.ints;
  }
  std::vector<double> getFloats(std::string_view name) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? std::vector<double>{} : it->second.floats;
  }

private:
  std::unordered_map<std::string, Value> values_;
};

/// One kernel invocation: operand and result views with concrete shapes (the
/// results are allocated by the caller with the shapes the compiler planned),
/// and the op's attributes.
struct KernelCall {
  std::vector<Tensor> operands;
  std::vector<Tensor> results;
  const Attrs *attrs = nullptr;
};

/// Kernels throw hybrid::Error for inputs they cannot handle (unsupported
/// dtype, inconsistent shapes); they never abort.
using KernelFn = void (*)(const KernelCall &);

/// The kernel registered under `name` (an hg op mnemonic such as "add",
/// "layer_norm", "attention"), or nullptr.
KernelFn findKernel(std::string_view name);

/// All registered kernel names, sorted (for diagnostics and docs).
std::vector<std::string> kernelNames();

/// Sets the number of worker threads kernels may use (0 = hardware threads).
void setNumThreads(int n);
int numThreads();

} // namespace hybrid::cpu
