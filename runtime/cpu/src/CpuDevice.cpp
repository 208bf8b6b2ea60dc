// The CPU backend: aligned host memory and kernels from hybrid_kernels_cpu.
#include "hybrid/CpuDevice.h"

#include "cpu/CpuKernels.h"

#include <cstdlib>
#include <cstring>

namespace hybrid {

namespace {

/// A command bound to a CPU kernel. The KernelCall is built once; each run
/// only refreshes addresses (and shapes when they changed).
class CpuCommand : public PreparedCommand {
public:
  CpuCommand(cpu::KernelFn fn, cpu::Attrs attrs,
             const std::vector<int32_t> &operands, std::vector<int32_t> results)
      : fn_(fn), attrs_(std::move(attrs)), results_(std::move(results)) {
    // The CPU kernels take only present operands (attributes such as
    // has_bias say which optional ones those are), so absent ones (-1) go.
    for (int32_t op : operands)
      if (op >= 0)
        operands_.push_back(op);
    call_.operands.resize(operands_.size());
    call_.results.resize(results_.size());
    call_.attrs = &attrs_;
  }

  void run(const std::vector<BufferView> &buffers,
           bool shapesChanged) override {
    bind(buffers, operands_, call_.operands, shapesChanged);
    bind(buffers, results_, call_.results, shapesChanged);
    fn_(call_);
  }

private:
  static void bind(const std::vector<BufferView> &buffers,
                   const std::vector<int32_t> &indices,
                   std::vector<cpu::Tensor> &tensors, bool shapesChanged) {
    for (size_t i = 0; i < indices.size(); ++i) {
      const BufferView &b = buffers[indices[i]];
      cpu::Tensor &t = tensors[i];
      t.data = b.data;
      if (shapesChanged) {
        t.dtype = b.dtype;
        t.shape = b.shape;
      }
    }
  }

  cpu::KernelFn fn_;
  cpu::Attrs attrs_;
  std::vector<int32_t> operands_;
  std::vector<int32_t> results_;
  cpu::KernelCall call_;
};

} // namespace

CpuDevice::CpuDevice(int threads) {
  if (threads < 0)
    throw Error("cpu device: thread count must be >= 0, got " +
                std::to_string(threads));
  if (threads > 0)
    cpu::setNumThreads(threads);
}

void *CpuDevice::allocate(size_t bytes, size_t alignment) {
  if (alignment < 64)
    alignment = 64;
  if (alignment & (alignment - 1))
    throw Error("cpu device: alignment " + std::to_string(alignment) +
                " is not a power of two");
  if (bytes > SIZE_MAX - alignment)
    throw Error("cpu device: cannot allocate " + std::to_string(bytes) +
                " bytes");
  size_t rounded =
      bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, rounded);
  if (!p)
    throw Error("cpu device: out of memory allocating " +
                std::to_string(bytes) + " bytes");
  return p;
}

void CpuDevice::deallocate(void *ptr) { std::free(ptr); }

void CpuDevice::copyHostToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

void CpuDevice::copyDeviceToHost(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

void CpuDevice::copyDeviceToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memmove(dst, src, bytes);
}

void CpuDevice::fillZero(void *dst, size_t bytes) {
  if (bytes)
    std::memset(dst, 0, bytes);
}

std::unique_ptr<PreparedCommand> CpuDevice::prepare(const CommandDesc &command,
                                                    const ExecutableDesc &exe) {
  cpu::KernelFn fn = cpu::findKernel(command.kernel);
  if (!fn)
    throw Error("executable '" + exe.name +
                "': the cpu backend has no kernel '" + command.kernel + "'" +
                (command.loc.empty() ? "" : " (used at " + command.loc + ")"));
  cpu::Attrs attrs;
  for (const AttrDesc &a : command.attrs)
    attrs.set(a.name, cpu::Attrs::Value{a.i, a.f, a.s, a.ints, a.floats});
  return std::make_unique<CpuCommand>(fn, std::move(attrs), command.operands,
                                      command.results);
}

} // namespace hybrid
