// Loading an executable (kernels, constants, flattened memory plan) and
// running it: bind symbols from input shapes, evaluate the plan, run.
#include "hybrid/Executable.h"

#include "hybrid/SizeMath.h"
#include "hybrid/Bundle.h"

#include <algorithm>

#include <cstring>

namespace hybrid {

namespace {

/// Every size expression of an executable, flattened into contiguous arrays
/// so that evaluating the whole plan is one tight loop.
class ExprTable {
public:
  uint32_t add(const SymExpr &e) {
    uint32_t id = static_cast<uint32_t>(exprs_.size());
    exprs_.push_back({static_cast<uint32_t>(terms_.size()),
                      static_cast<uint32_t>(e.terms().size())});
    for (const auto &[mono, coeff] : e.terms()) {
      terms_.push_back({coeff, static_cast<uint32_t>(symbols_.size()),
                        static_cast<uint32_t>(mono.size())});
      symbols_.insert(symbols_.end(), mono.begin(), mono.end());
    }
    return id;
  }

  size_t size() const { return exprs_.size(); }

  /// Evaluates every expression into `values`. Returns false on overflow.
  bool evaluate(const std::vector<int64_t> &symbolValues,
                std::vector<int64_t> &values) const {
    values.resize(exprs_.size());
    for (size_t e = 0; e < exprs_.size(); ++e) {
      int64_t sum = 0;
      const Expr &x = exprs_[e];
      for (uint32_t t = x.termBegin; t < x.termBegin + x.termCount; ++t) {
        int64_t v = terms_[t].coeff;
        for (uint32_t s = 0; s < terms_[t].symCount; ++s)
          if (detail::mulOverflows(
                  v, symbolValues[symbols_[terms_[t].symBegin + s]], v))
            return false;
        if (detail::addOverflows(sum, v, sum))
          return false;
      }
      values[e] = sum;
    }
    return true;
  }

private:
  struct Term {
    int64_t coeff;
    uint32_t symBegin, symCount;
  };
  struct Expr {
    uint32_t termBegin, termCount;
  };
  std::vector<Expr> exprs_;
  std::vector<Term> terms_;
  std::vector<uint8_t> symbols_;
};

std::string symShapeString(const SymShape &shape,
                           const std::vector<std::string> &symbols) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "," : "") + shape[d].str(symbols);
  return s + "]";
}

} // namespace

struct Executable::Impl {
  std::shared_ptr<const BundleDesc> bundle;
  const ExecutableDesc *desc = nullptr;
  std::shared_ptr<Device> device;
  const WeightStore *weights = nullptr;
  std::vector<std::string> inputNames, outputNames;

  /// A buffer of the plan: where its memory comes from and which
  /// expressions give its dims (`rank` consecutive ids from `dim0`).
  struct PlanBuffer {
    BufferKind kind;
    DType dtype;
    int32_t index;
    uint32_t root; // the buffer that owns the memory (itself unless Alias)
    uint32_t dim0, rank;
    uint32_t offsetExpr;
  };
  std::vector<PlanBuffer> buffers;
  ExprTable exprs;
  uint32_t workspaceExpr = 0;
  size_t workspaceAlignment = 64;
  std::vector<DeviceAllocation> constants; // by constant index; unused empty

  std::vector<std::unique_ptr<PreparedCommand>> commands;
  std::vector<std::string> commandContext; // "forward: command 3 'add' (loc)"

  /// How each dimension of an input is checked or binds a symbol.
  struct DimRule {
    enum Kind { Symbol, Constant, Computed } kind;
    int64_t value; // the symbol index, or the constant
  };
  std::vector<std::vector<DimRule>> inputRules;

  // State of the calls (see the class comment on thread safety).
  std::vector<int64_t> symbols;     // values bound by the current call
  std::vector<int64_t> lastSymbols; // values the plan was evaluated for
  std::vector<std::pair<int32_t, int32_t>> boundBy; // (input, dim) per symbol
  bool planValid = false;
  uint64_t planEpoch = 0;
  std::vector<uint64_t> commandEpoch;
  std::vector<int64_t> exprValues;
  std::vector<BufferView> views;
  std::vector<int64_t> bufferBytes;
  int64_t workspaceBytes = 0;
  DeviceAllocation workspace;
  std::vector<DeviceAllocation>
      staging; // inputs then outputs, non-host devices

  [[noreturn]] void fail(const std::string &msg) const {
    throw Error(desc->name + ": " + msg);
  }

  std::string bindingString() const {
    std::string s;
    for (size_t i = 0; i < symbols.size(); ++i)
      s +=
          (i ? ", " : "") + desc->symbols[i] + "=" + std::to_string(symbols[i]);
    return s.empty() ? "no symbols" : s;
  }

  void load();
  void bindSymbols(const std::vector<HostTensor> &inputs);
  void evaluatePlan();
  std::vector<HostTensor> run(const std::vector<HostTensor> &inputs);
};

Executable::Executable(std::shared_ptr<const BundleDesc> bundle, size_t index,
                       std::shared_ptr<Device> device,
                       const WeightStore &weights)
    : impl_(std::make_unique<Impl>()) {
  if (!bundle || index >= bundle->executables.size())
    throw Error("Executable: no executable #" + std::to_string(index));
  if (!device)
    throw Error("Executable: no device");
  impl_->bundle = std::move(bundle);
  impl_->desc = &impl_->bundle->executables[index];
  impl_->device = std::move(device);
  impl_->weights = &weights;
  impl_->load();
}

Executable::~Executable() = default;

void Executable::Impl::load() {
  const BundleDesc &b = *bundle;
  const ExecutableDesc &e = *desc;
  // Cheap next to loading, and a hand-built bundle may not have been checked.
  validateBundle(b, "bundle");
  if (weights->size() != b.params.size())
    fail("the weight store holds " + std::to_string(weights->size()) +
         " parameters, the bundle " + std::to_string(b.params.size()));
  for (size_t i = 0; i < b.params.size(); ++i)
    if (weights->name(i) != b.params[i].name ||
        weights->shape(i) != b.params[i].shape ||
        weights->dtype(i) != b.params[i].dtype)
      fail("the weight store's parameter " + std::to_string(i) + " '" +
           weights->name(i) + "' differs from the bundle's");

  for (const PortDesc &p : e.inputs)
    inputNames.push_back(p.name);
  for (const PortDesc &p : e.outputs)
    outputNames.push_back(p.name);

  constants.resize(b.constants.size());
  for (size_t i = 0; i < e.buffers.size(); ++i) {
    const BufferDesc &bd = e.buffers[i];
    PlanBuffer pb;
    pb.kind = bd.kind;
    pb.dtype = bd.dtype;
    pb.index = bd.index;
    uint32_t root = static_cast<uint32_t>(i);
    while (e.buffers[root].kind == BufferKind::Alias)
      root = static_cast<uint32_t>(e.buffers[root].index);
    pb.root = root;
    pb.dim0 = static_cast<uint32_t>(exprs.size());
    pb.rank = static_cast<uint32_t>(bd.shape.size());
    for (const SymExpr &d : bd.shape)
      exprs.add(d);
    pb.offsetExpr = exprs.add(bd.offset);
    buffers.push_back(pb);
    if (bd.kind == BufferKind::Constant && !constants[bd.index].get()) {
      const ConstantDesc &c = b.constants[bd.index];
      constants[bd.index] = DeviceAllocation(device, c.data.size(), 64);
      device->copyHostToDevice(constants[bd.index].get(), c.data.data(),
                               c.data.size());
    }
  }
  workspaceExpr = exprs.add(e.workspaceBytes);
  workspaceAlignment =
      std::max<size_t>(64, static_cast<size_t>(e.workspaceAlignment));

  for (const PortDesc &p : e.inputs) {
    std::vector<DimRule> rules;
    for (const SymExpr &d : e.buffers[p.buffer].shape) {
      if (auto s = d.asSymbol())
        rules.push_back({DimRule::Symbol, static_cast<int64_t>(*s)});
      else if (auto c = d.constant())
        rules.push_back({DimRule::Constant, *c});
      else
        rules.push_back({DimRule::Computed, 0});
    }
    inputRules.push_back(std::move(rules));
  }

  for (size_t c = 0; c < e.commands.size(); ++c) {
    const CommandDesc &cmd = e.commands[c];
    commands.push_back(device->prepare(cmd, e));
    commandContext.push_back(e.name + ": command " + std::to_string(c) + " '" +
                             cmd.kernel + "'" +
                             (cmd.loc.empty() ? "" : " at " + cmd.loc));
  }
  commandEpoch.assign(commands.size(), ~uint64_t(0));
  views.resize(buffers.size());
  bufferBytes.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    views[i].dtype = buffers[i].dtype;
    views[i].shape.resize(buffers[i].rank);
  }
  symbols.assign(e.symbols.size(), -1);
  boundBy.assign(e.symbols.size(), {-1, -1});
}

void Executable::Impl::bindSymbols(const std::vector<HostTensor> &inputs) {
  const ExecutableDesc &e = *desc;
  if (inputs.size() != e.inputs.size())
    fail("expected " + std::to_string(e.inputs.size()) + " inputs, got " +
         std::to_string(inputs.size()));
  std::fill(symbols.begin(), symbols.end(), -1);
  for (size_t p = 0; p < inputs.size(); ++p) {
    const HostTensor &t = inputs[p];
    const std::string &name = e.inputs[p].name;
    const BufferDesc &bd = e.buffers[e.inputs[p].buffer];
    if (!t.valid() && t.numel() != 0)
      fail(name + ": no data");
    if (t.dtype() != bd.dtype)
      fail(name + ": expected " + dtypeName(bd.dtype) + ", got " +
           dtypeName(t.dtype()));
    const std::vector<DimRule> &rules = inputRules[p];
    if (t.shape().size() != rules.size())
      fail(name + ": expected rank " + std::to_string(rules.size()) + " " +
           symShapeString(bd.shape, e.symbols) + ", got shape " +
           shapeToString(t.shape()));
    for (size_t d = 0; d < rules.size(); ++d) {
      int64_t actual = t.shape()[d];
      const DimRule &r = rules[d];
      if (r.kind == DimRule::Constant && actual != r.value)
        fail(name + ": dim " + std::to_string(d) + " is " +
             std::to_string(actual) + ", expected " + std::to_string(r.value));
      if (r.kind != DimRule::Symbol)
        continue;
      size_t s = static_cast<size_t>(r.value);
      const std::string &sym = e.symbols[s];
      if (symbols[s] < 0) {
        if (actual < 1)
          fail(name + ": dim " + std::to_string(d) + " is " +
               std::to_string(actual) + " but " + sym + " must be at least 1");
        symbols[s] = actual;
        boundBy[s] = {static_cast<int32_t>(p), static_cast<int32_t>(d)};
      } else if (symbols[s] != actual) {
        auto [bp, bdim] = boundBy[s];
        fail(name + ": dim " + std::to_string(d) + " is " +
             std::to_string(actual) + " but " + sym + " was bound to " +
             std::to_string(symbols[s]) + " (by " + e.inputs[bp].name +
             " dim " + std::to_string(bdim) + ")");
      }
    }
  }
  for (size_t s = 0; s < symbols.size(); ++s)
    if (symbols[s] < 0)
      fail("symbol '" + e.symbols[s] +
           "' is not bound: no input has it as a whole dimension");
}

void Executable::Impl::evaluatePlan() {
  const ExecutableDesc &e = *desc;
  planValid = false;
  if (!exprs.evaluate(symbols, exprValues))
    fail("a buffer size overflows 64 bits for " + bindingString());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    Shape &shape = views[i].shape;
    for (uint32_t d = 0; d < pb.rank; ++d)
      shape[d] = exprValues[pb.dim0 + d];
    int64_t n = detail::checkedNumel(shape), bytes;
    if (n < 0 || detail::mulOverflows(
                     n, static_cast<int64_t>(dtypeSize(pb.dtype)), bytes))
      fail("buffer " + std::to_string(i) + " '" + e.buffers[i].name +
           "' has invalid shape " + shapeToString(shape) + " for " +
           bindingString() + " (bad bundle)");
    bufferBytes[i] = bytes;
  }
  workspaceBytes = exprValues[workspaceExpr];
  if (workspaceBytes < 0)
    fail("workspace size is " + std::to_string(workspaceBytes) + " for " +
         bindingString() + " (bad bundle)");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    if (pb.kind == BufferKind::Workspace) {
      int64_t off = exprValues[pb.offsetExpr], end;
      if (off < 0 || detail::addOverflows(off, bufferBytes[i], end) ||
          end > workspaceBytes)
        fail("buffer " + std::to_string(i) + " '" + e.buffers[i].name +
             "' at workspace offset " + std::to_string(off) + " (" +
             std::to_string(bufferBytes[i]) + " bytes) exceeds the " +
             std::to_string(workspaceBytes) + "-byte workspace for " +
             bindingString() + " (bad bundle)");
    } else if (pb.kind == BufferKind::Alias &&
               bufferBytes[i] > bufferBytes[pb.root]) {
      fail("buffer " + std::to_string(i) + " '" + e.buffers[i].name + "' (" +
           std::to_string(bufferBytes[i]) + " bytes) aliases buffer " +
           std::to_string(pb.root) + " '" + e.buffers[pb.root].name +
           "' of only " + std::to_string(bufferBytes[pb.root]) + " bytes for " +
           bindingString() + " (bad bundle)");
    }
  }
  lastSymbols = symbols;
  planValid = true;
  ++planEpoch;
}

std::vector<HostTensor>
Executable::Impl::run(const std::vector<HostTensor> &inputs) {
  const ExecutableDesc &e = *desc;
  if (!weights->bound() && weights->size() > 0)
    fail("weights are not loaded (bind a checkpoint or initialise them first)");
  bindSymbols(inputs);
  if (!planValid || symbols != lastSymbols)
    evaluatePlan();
  // Inputs whose dims are computed from symbols are checked once the plan
  // has their expected shape.
  for (size_t p = 0; p < inputs.size(); ++p) {
    const Shape &want = views[e.inputs[p].buffer].shape;
    const Shape &got = inputs[p].shape();
    for (size_t d = 0; d < want.size(); ++d)
      if (got[d] != want[d])
        fail(e.inputs[p].name + ": dim " + std::to_string(d) + " is " +
             std::to_string(got[d]) + ", expected " +
             e.buffers[e.inputs[p].buffer].shape[d].str(e.symbols) + " = " +
             std::to_string(want[d]));
  }

  if (static_cast<size_t>(workspaceBytes) > workspace.size() ||
      !workspace.get()) {
    workspace.reset();
    workspace = DeviceAllocation(device, static_cast<size_t>(workspaceBytes),
                                 workspaceAlignment);
  }

  std::vector<HostTensor> outputs;
  outputs.reserve(e.outputs.size());
  for (const PortDesc &p : e.outputs)
    outputs.push_back(
        HostTensor::allocate(buffers[p.buffer].dtype, views[p.buffer].shape));

  bool host = device->hostAddressable();
  staging.clear();
  auto stage = [&](size_t bytes) {
    staging.emplace_back(device, bytes, 64);
    return staging.back().get();
  };
  std::vector<void *> inputPtrs(inputs.size()), outputPtrs(outputs.size());
  for (size_t p = 0; p < inputs.size(); ++p) {
    if (host) {
      inputPtrs[p] = const_cast<void *>(inputs[p].data()); // never written
    } else {
      inputPtrs[p] = stage(inputs[p].bytes());
      device->copyHostToDevice(inputPtrs[p], inputs[p].data(),
                               inputs[p].bytes());
    }
  }
  for (size_t p = 0; p < outputs.size(); ++p) {
    if (host) {
      outputPtrs[p] = outputs[p].data();
    } else {
      outputPtrs[p] = stage(outputs[p].bytes());
      device->fillZero(outputPtrs[p], outputs[p].bytes());
    }
  }

  uint8_t *ws = static_cast<uint8_t *>(workspace.get());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    switch (pb.kind) {
    case BufferKind::Workspace:
      views[i].data = ws + exprValues[pb.offsetExpr];
      break;
    case BufferKind::Param:
      views[i].data = const_cast<void *>(weights->data(pb.index));
      break;
    case BufferKind::Constant:
      views[i].data = constants[pb.index].get();
      break;
    case BufferKind::Input:
      views[i].data = inputPtrs[pb.index];
      break;
    case BufferKind::Output:
      views[i].data = outputPtrs[pb.index];
      break;
    case BufferKind::Alias:
      break;
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == BufferKind::Alias)
      views[i].data = views[buffers[i].root].data;

  for (size_t c = 0; c < commands.size(); ++c) {
    bool changed = commandEpoch[c] != planEpoch;
    commandEpoch[c] = planEpoch;
    try {
      commands[c]->run(views, changed);
    } catch (const Error &err) {
      throw Error(commandContext[c] + ": " + err.what());
    } catch (const std::exception &err) {
      throw Error(commandContext[c] + ": " + err.what());
    }
  }

  if (!host)
    for (size_t p = 0; p < outputs.size(); ++p)
      device->copyDeviceToHost(outputs[p].data(), outputPtrs[p],
                               outputs[p].bytes());
  device->synchronize();
  staging.clear();
  return outputs;
}

const std::string &Executable::name() const { return impl_->desc->name; }
const ExecutableDesc &Executable::desc() const { return *impl_->desc; }
const std::vector<std::string> &Executable::inputNames() const {
  return impl_->inputNames;
}
const std::vector<std::string> &Executable::outputNames() const {
  return impl_->outputNames;
}

std::string Executable::describeInput(size_t i) const {
  const ExecutableDesc &e = *impl_->desc;
  const BufferDesc &b = e.buffers[e.inputs.at(i).buffer];
  return e.inputs[i].name + ": " + dtypeName(b.dtype) + " " +
         symShapeString(b.shape, e.symbols);
}

std::string Executable::describeOutput(size_t i) const {
  const ExecutableDesc &e = *impl_->desc;
  const BufferDesc &b = e.buffers[e.outputs.at(i).buffer];
  return e.outputs[i].name + ": " + dtypeName(b.dtype) + " " +
         symShapeString(b.shape, e.symbols);
}

std::vector<HostTensor> Executable::run(const std::vector<HostTensor> &inputs) {
  return impl_->run(inputs);
}

NamedTensors Executable::run(const NamedTensors &inputs) {
  const ExecutableDesc &e = *impl_->desc;
  std::vector<HostTensor> ordered;
  ordered.reserve(e.inputs.size());
  for (size_t p = 0; p < e.inputs.size(); ++p) {
    auto it = inputs.find(e.inputs[p].name);
    if (it == inputs.end())
      impl_->fail("missing input " + describeInput(p));
    ordered.push_back(it->second);
  }
  if (inputs.size() != e.inputs.size())
    for (auto &[name, t] : inputs)
      if (std::find(impl_->inputNames.begin(), impl_->inputNames.end(), name) ==
          impl_->inputNames.end()) {
        std::string expected;
        for (const std::string &n : impl_->inputNames)
          expected += (expected.empty() ? "" : ", ") + n;
        impl_->fail("unexpected input '" + name + "' (inputs: " + expected +
                    ")");
      }
  std::vector<HostTensor> outs = impl_->run(ordered);
  NamedTensors result;
  for (size_t p = 0; p < outs.size(); ++p)
    result.emplace(e.outputs[p].name, std::move(outs[p]));
  return result;
}

const std::vector<int64_t> &Executable::symbolValues() const {
  return impl_->lastSymbols;
}

size_t Executable::workspaceCapacity() const { return impl_->workspace.size(); }

} // namespace hybrid
