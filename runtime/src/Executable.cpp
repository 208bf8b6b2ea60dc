// Loading an executable (prepared commands, constants, flattened memory
// plan) and running it: bind a bucket, lay it out in one device allocation,
// enqueue the commands; plus the host edge (run).
#include "hybrid/Executable.h"

#include "hybrid/Float16.h"

#include "hybrid/Bundle.h"
#include "hybrid/SizeMath.h"

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

constexpr size_t kNone = ~size_t(0);

} // namespace

std::string symShapeString(const SymShape &shape,
                           const std::vector<std::string> &symbols) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "," : "") + shape[d].str(symbols);
  return s + "]";
}

struct Executable::Impl {
  std::shared_ptr<const BundleDesc> bundle;
  const ExecutableDesc *desc = nullptr;
  std::shared_ptr<Device> device;
  const WeightStore *weights = nullptr;
  /// Set only when the executable's param access is read-write.
  WeightStore *writableWeights = nullptr;
  StateStore *states = nullptr;
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
  int64_t alignment = kWorkspaceAlignment;
  bool usesParams = false;
  /// Per bundle state: the declared access, or none.
  std::vector<std::optional<Access>> stateAccess;

  DeviceAllocation constantMemory;
  std::vector<size_t> constantOffset; // by constant index; kNone if unused

  std::vector<std::unique_ptr<PreparedCommand>> commands; // null for events
  std::vector<std::string> commandContext; // "forward: command 3 'add' at loc"
  std::vector<std::unique_ptr<Stream>> ownStreams; // command streams 1..n-1
  std::unique_ptr<Stream> hostStream;              // what run() uses
  std::vector<std::unique_ptr<Event>> events;      // the declared events
  /// Fork (index 0) and one join per own stream, when there are several.
  std::vector<std::unique_ptr<Event>> forkJoin;

  /// How each dimension of an input is checked or binds a symbol.
  struct DimRule {
    enum Kind { Symbol, Constant, Computed } kind;
    int64_t value; // the symbol index, or the constant
  };
  std::vector<std::vector<DimRule>> inputRules;

  // The bound bucket (see the class comment on thread safety).
  std::vector<int64_t> bound; // symbol values; empty when none
  bool planValid = false;
  uint64_t planEpoch = 0;
  std::vector<uint64_t> commandEpoch;
  std::vector<int64_t> exprValues;
  std::vector<BufferView> views;
  std::vector<int64_t> bufferBytes;
  int64_t workspace = 0;
  std::vector<size_t> streamScratch, scratchOffset;
  size_t scratchTotal = 0;
  DeviceAllocation memory;
  bool paramsResolved = false;
  uint64_t stateEpoch = ~uint64_t(0);
  // Counts the times buffer addresses were (re)computed: every bind,
  // parameter and state resolution ends in resolveAliases, which bumps it.
  // A captured graph bakes the addresses in: it serves while this stays
  // what it was when the graph was captured (enqueueGraph).
  uint64_t viewsEpoch = 0;
  std::unique_ptr<Graph> graph;
  static constexpr uint64_t kNoEpoch = ~uint64_t(0);
  uint64_t graphEpoch = kNoEpoch, warmEpoch = kNoEpoch;
  // For bindShapes.
  std::vector<int64_t> shapeSymbols;
  std::vector<std::pair<int32_t, int32_t>> boundBy;

  [[noreturn]] void fail(const std::string &msg) const {
    throw Error(desc->name + ": " + msg);
  }

  std::string bindingString(const std::vector<int64_t> &values) const {
    std::string s;
    for (size_t i = 0; i < values.size(); ++i)
      s += (i ? ", " : "") + desc->symbols[i] + "=" + std::to_string(values[i]);
    return s.empty() ? "no symbols" : s;
  }

  void load();
  void checkSymbols(const std::vector<int64_t> &values) const;
  size_t layout(const std::vector<int64_t> &values);
  void grow(size_t bytes);
  void bind(const std::vector<int64_t> &values);
  void bindShapes(const std::vector<Shape> &shapes);
  void resolveParams();
  void resolveStates();
  void resolveAliases();
  void prepareCall();
  void enqueueCommands(Stream &stream);
  void enqueue(Stream &stream);
  void enqueueGraph(Stream &stream);
  /// Whether `views` are `before` (addresses and shapes).
  bool sameViews(const std::vector<BufferView> &before) const;
  /// resolveStates after a state epoch change; whether a view changed (the
  /// caller then resolves the aliases, which makes graphs capture anew).
  bool refreshStates();
  bool viewsDirty = false; ///< a refresh failed part-way
  size_t captures = 0;     ///< graphs captured (graphCaptures)
  void captureGraph(Stream &stream, const StepState &state);
  std::vector<HostTensor> run(const std::vector<HostTensor> &inputs);
  DeviceTensor port(const PortDesc &p) const;
};

Executable::Executable(std::shared_ptr<const BundleDesc> bundle, size_t index,
                       std::shared_ptr<Device> device, WeightStore &weights,
                       StateStore &states)
    : impl_(std::make_unique<Impl>()) {
  if (!bundle || index >= bundle->executables.size())
    throw Error("Executable: no executable #" + std::to_string(index));
  if (!device)
    throw Error("Executable: no device");
  impl_->bundle = std::move(bundle);
  impl_->desc = &impl_->bundle->executables[index];
  impl_->device = std::move(device);
  impl_->weights = &weights;
  if (impl_->desc->paramAccess == Access::ReadWrite)
    impl_->writableWeights = &weights;
  impl_->states = &states;
  impl_->load();
}

Executable::~Executable() {
  // Commands still enqueued may use the allocation this frees.
  if (impl_ && impl_->memory.get())
    impl_->device->synchronize();
}

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
  if (states->size() != b.states.size())
    fail("the state store holds " + std::to_string(states->size()) +
         " states, the bundle " + std::to_string(b.states.size()));
  for (size_t i = 0; i < b.states.size(); ++i)
    if (states->desc(i).name != b.states[i].name ||
        states->desc(i).dtype != b.states[i].dtype)
      fail("the state store's state " + std::to_string(i) + " '" +
           states->desc(i).name + "' differs from the bundle's");
  stateAccess.assign(b.states.size(), std::nullopt);
  for (const StateUse &u : e.states)
    stateAccess[u.state] = u.access;

  for (const PortDesc &p : e.inputs)
    inputNames.push_back(p.name);
  for (const PortDesc &p : e.outputs)
    outputNames.push_back(p.name);

  hostStream = device->createStream();
  constantOffset.assign(b.constants.size(), kNone);
  size_t constantBytes = 0;
  for (size_t i = 0; i < e.buffers.size(); ++i) {
    const BufferDesc &bd = e.buffers[i];
    PlanBuffer pb;
    pb.kind = bd.kind;
    pb.dtype = bd.dtype;
    pb.index = bd.index;
    pb.root = static_cast<uint32_t>(aliasRoot(e, i));
    pb.dim0 = static_cast<uint32_t>(exprs.size());
    pb.rank = static_cast<uint32_t>(bd.shape.size());
    for (const SymExpr &d : bd.shape)
      exprs.add(d);
    pb.offsetExpr = exprs.add(bd.offset);
    buffers.push_back(pb);
    usesParams |= bd.kind == BufferKind::Param;
    if (bd.kind == BufferKind::Constant && constantOffset[bd.index] == kNone) {
      constantOffset[bd.index] = constantBytes;
      constantBytes += static_cast<size_t>(detail::alignUp(
          static_cast<int64_t>(b.constants[bd.index].data.size()),
          kWorkspaceAlignment));
    }
  }
  // One allocation for the constants, uploaded once.
  constantMemory = DeviceAllocation(device, constantBytes, kWorkspaceAlignment);
  for (size_t c = 0; c < b.constants.size(); ++c)
    if (constantOffset[c] != kNone && !b.constants[c].data.empty())
      device->copyHostToDevice(
          static_cast<uint8_t *>(constantMemory.get()) + constantOffset[c],
          b.constants[c].data.data(), b.constants[c].data.size(), *hostStream);
  device->synchronize(*hostStream);

  workspaceExpr = exprs.add(e.workspaceBytes);
  alignment = e.workspaceAlignment;

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

  for (int32_t s = 1; s < e.numStreams; ++s)
    ownStreams.push_back(device->createStream());
  for (int32_t v = 0; v < e.numEvents; ++v)
    events.push_back(device->createEvent());
  if (e.numStreams > 1)
    for (int32_t s = 0; s < e.numStreams; ++s)
      forkJoin.push_back(device->createEvent());

  for (size_t c = 0; c < e.commands.size(); ++c) {
    const CommandDesc &cmd = e.commands[c];
    // Events are the executable's own objects; the device only records and
    // waits on them (see enqueue).
    commands.push_back(isEvent(cmd.op) ? nullptr : device->prepare(cmd, e));
    commandContext.push_back(e.name + ": command " + std::to_string(c) + " '" +
                             opName(cmd.op) + "'" +
                             (cmd.loc.empty() ? "" : " at " + cmd.loc));
  }
  commandEpoch.assign(commands.size(), ~uint64_t(0));
  views.resize(buffers.size());
  bufferBytes.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    views[i].dtype = buffers[i].dtype;
    views[i].shape.resize(buffers[i].rank);
  }
  streamScratch.assign(static_cast<size_t>(e.numStreams), 0);
  scratchOffset.assign(static_cast<size_t>(e.numStreams), 0);
  shapeSymbols.assign(e.symbols.size(), -1);
  boundBy.assign(e.symbols.size(), {-1, -1});
}

void Executable::Impl::checkSymbols(const std::vector<int64_t> &values) const {
  const ExecutableDesc &e = *desc;
  if (values.size() != e.symbols.size())
    fail("expected " + std::to_string(e.symbols.size()) +
         " symbol values, got " + std::to_string(values.size()));
  for (size_t s = 0; s < values.size(); ++s) {
    if (values[s] < 1)
      fail(e.symbols[s] + " = " + std::to_string(values[s]) +
           " but it must be at least 1");
    if (e.symbolMax[s] > 0 && values[s] > e.symbolMax[s])
      fail(e.symbols[s] + " = " + std::to_string(values[s]) +
           " exceeds its limit " + std::to_string(e.symbolMax[s]));
  }
}

/// Evaluates the plan for `values` into views/bufferBytes/workspace and the
/// per-stream scratch; returns the bytes the allocation needs. Leaves the
/// plan invalid (bind() validates it once addresses are assigned).
size_t Executable::Impl::layout(const std::vector<int64_t> &values) {
  const ExecutableDesc &e = *desc;
  planValid = false;
  checkSymbols(values);
  std::string at = bindingString(values);
  if (!exprs.evaluate(values, exprValues))
    fail("a buffer size overflows 64 bits for " + at);
  auto name = [&](size_t i) {
    return "buffer " + std::to_string(i) + " '" + e.buffers[i].name + "'";
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    Shape &shape = views[i].shape;
    for (uint32_t d = 0; d < pb.rank; ++d)
      shape[d] = exprValues[pb.dim0 + d];
    int64_t n = detail::checkedNumel(shape), bytes;
    if (n < 0 || detail::mulOverflows(
                     n, static_cast<int64_t>(dtypeSize(pb.dtype)), bytes))
      fail(name(i) + " has invalid shape " + shapeToString(shape) + " for " +
           at + " (bad bundle)");
    bufferBytes[i] = bytes;
  }
  workspace = exprValues[workspaceExpr];
  // (The upper bound keeps the alignment arithmetic below from overflowing.)
  if (workspace < 0 || workspace > (int64_t(1) << 62))
    fail("workspace size is " + std::to_string(workspace) + " for " + at +
         " (bad bundle)");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    if (pb.kind == BufferKind::Workspace || pb.kind == BufferKind::Input ||
        pb.kind == BufferKind::Output) {
      // The plan's offsets are polynomials; a buffer starts at its offset
      // rounded up to the alignment, inside room the plan reserved for that
      // (Bundle.h). The rounded offset replaces the raw one.
      int64_t &off = exprValues[pb.offsetExpr];
      int64_t end;
      if (off < 0 || off > workspace)
        fail(name(i) + " at workspace offset " + std::to_string(off) +
             " lies outside the " + std::to_string(workspace) +
             "-byte workspace for " + at + " (bad bundle)");
      off = detail::alignUp(off, alignment);
      if (detail::addOverflows(off, bufferBytes[i], end) || end > workspace)
        fail(name(i) + " at workspace offset " + std::to_string(off) + " (" +
             std::to_string(bufferBytes[i]) + " bytes) exceeds the " +
             std::to_string(workspace) + "-byte workspace for " + at +
             " (bad bundle)");
    } else if (pb.kind == BufferKind::Alias &&
               bufferBytes[i] > bufferBytes[pb.root]) {
      fail(name(i) + " (" + std::to_string(bufferBytes[i]) +
           " bytes) aliases buffer " + std::to_string(pb.root) + " '" +
           e.buffers[pb.root].name + "' of only " +
           std::to_string(bufferBytes[pb.root]) + " bytes for " + at +
           " (bad bundle)");
    }
  }
  // Scratch: commands of one stream run one after another and share a
  // region; streams may run concurrently, so each has its own.
  std::fill(streamScratch.begin(), streamScratch.end(), 0);
  for (size_t c = 0; c < commands.size(); ++c) {
    if (!commands[c])
      continue;
    size_t need;
    try {
      need = commands[c]->scratchBytes(views);
    } catch (const std::exception &err) {
      throw Error(commandContext[c] + ": " + err.what());
    }
    size_t &slot = streamScratch[e.commands[c].stream];
    slot = std::max(slot, need);
  }
  int64_t total = detail::alignUp(workspace, kWorkspaceAlignment);
  scratchTotal = 0;
  for (size_t s = 0; s < streamScratch.size(); ++s) {
    scratchOffset[s] = static_cast<size_t>(total);
    if (streamScratch[s] > (size_t(1) << 62))
      fail("the scratch for " + at + " overflows 64 bits");
    int64_t bytes = detail::alignUp(static_cast<int64_t>(streamScratch[s]),
                                    kWorkspaceAlignment);
    if (detail::addOverflows(total, bytes, total))
      fail("the workspace and scratch for " + at + " overflow 64 bits");
    scratchTotal += static_cast<size_t>(bytes);
  }
  return static_cast<size_t>(total);
}

void Executable::Impl::grow(size_t bytes) {
  if (memory.get() && bytes <= memory.size())
    return;
  if (memory.get()) {
    // Work enqueued earlier may still use the old allocation.
    device->synchronize();
    memory.reset();
  }
  size_t align = std::max<size_t>(static_cast<size_t>(alignment),
                                  static_cast<size_t>(kWorkspaceAlignment));
  memory = DeviceAllocation(device, bytes, align);
}

void Executable::Impl::bind(const std::vector<int64_t> &values) {
  if (planValid && values == bound) {
    if (states->epoch() != stateEpoch && refreshStates())
      resolveAliases();
    return;
  }
  grow(layout(values));
  uint8_t *base = static_cast<uint8_t *>(memory.get());
  uint8_t *constants = static_cast<uint8_t *>(constantMemory.get());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &pb = buffers[i];
    BufferView &v = views[i];
    switch (pb.kind) {
    case BufferKind::Workspace:
    case BufferKind::Output:
      v.writable = base + exprValues[pb.offsetExpr];
      v.data = v.writable;
      break;
    case BufferKind::Input:
      v.data = base + exprValues[pb.offsetExpr];
      v.writable = nullptr;
      break;
    case BufferKind::Constant:
      v.data = constants + constantOffset[pb.index];
      v.writable = nullptr;
      break;
    case BufferKind::Param:
    case BufferKind::State:
    case BufferKind::Alias:
      break; // below
    }
  }
  paramsResolved = false;
  if (weights->bound())
    resolveParams();
  resolveStates();
  resolveAliases();
  bound = values;
  planValid = true;
  ++planEpoch;
}

void Executable::Impl::resolveParams() {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].kind != BufferKind::Param)
      continue;
    size_t p = static_cast<size_t>(buffers[i].index);
    views[i].data = weights->data(p);
    views[i].writable =
        writableWeights ? writableWeights->mutableData(p) : nullptr;
  }
  paramsResolved = true;
}

void Executable::Impl::resolveStates() {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].kind != BufferKind::State)
      continue;
    size_t s = static_cast<size_t>(buffers[i].index);
    if (stateAccess[s] == Access::ReadWrite) {
      void *p = states->bindForWrite(s, views[i].shape, desc->name);
      views[i].data = p;
      views[i].writable = p;
    } else {
      views[i].data = states->bindForRead(s, views[i].shape, desc->name);
      views[i].writable = nullptr;
    }
  }
  stateEpoch = states->epoch();
}

void Executable::Impl::resolveAliases() {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == BufferKind::Alias) {
      views[i].data = views[buffers[i].root].data;
      views[i].writable = views[buffers[i].root].writable;
    }
  ++viewsEpoch;
}

void Executable::Impl::bindShapes(const std::vector<Shape> &shapes) {
  const ExecutableDesc &e = *desc;
  if (shapes.size() != e.inputs.size())
    fail("expected " + std::to_string(e.inputs.size()) + " inputs, got " +
         std::to_string(shapes.size()));
  std::fill(shapeSymbols.begin(), shapeSymbols.end(), -1);
  for (size_t p = 0; p < shapes.size(); ++p) {
    const Shape &shape = shapes[p];
    const std::string &name = e.inputs[p].name;
    const BufferDesc &bd = e.buffers[e.inputs[p].buffer];
    const std::vector<DimRule> &rules = inputRules[p];
    if (shape.size() != rules.size())
      fail(name + ": expected rank " + std::to_string(rules.size()) + " " +
           symShapeString(bd.shape, e.symbols) + ", got shape " +
           shapeToString(shape));
    for (size_t d = 0; d < rules.size(); ++d) {
      int64_t actual = shape[d];
      const DimRule &r = rules[d];
      if (r.kind == DimRule::Constant && actual != r.value)
        fail(name + ": dim " + std::to_string(d) + " is " +
             std::to_string(actual) + ", expected " + std::to_string(r.value));
      if (r.kind != DimRule::Symbol)
        continue;
      size_t s = static_cast<size_t>(r.value);
      const std::string &sym = e.symbols[s];
      if (shapeSymbols[s] < 0) {
        if (actual < 1)
          fail(name + ": dim " + std::to_string(d) + " is " +
               std::to_string(actual) + " but " + sym + " must be at least 1");
        // The limit is checked here, before any other work.
        if (e.symbolMax[s] > 0 && actual > e.symbolMax[s])
          fail(sym + " = " + std::to_string(actual) + " exceeds its limit " +
               std::to_string(e.symbolMax[s]) + " (" + name + " dim " +
               std::to_string(d) + ")");
        shapeSymbols[s] = actual;
        boundBy[s] = {static_cast<int32_t>(p), static_cast<int32_t>(d)};
      } else if (shapeSymbols[s] != actual) {
        auto [bp, bdim] = boundBy[s];
        fail(name + ": dim " + std::to_string(d) + " is " +
             std::to_string(actual) + " but " + sym + " was bound to " +
             std::to_string(shapeSymbols[s]) + " (by " + e.inputs[bp].name +
             " dim " + std::to_string(bdim) + ")");
      }
    }
  }
  for (size_t s = 0; s < shapeSymbols.size(); ++s)
    if (shapeSymbols[s] < 0)
      fail("symbol '" + e.symbols[s] +
           "' is not bound: no input has it as a whole dimension");
  bind(shapeSymbols);
  // Dims computed from symbols are checked once the plan has their value.
  for (size_t p = 0; p < shapes.size(); ++p) {
    const Shape &want = views[e.inputs[p].buffer].shape;
    for (size_t d = 0; d < want.size(); ++d)
      if (shapes[p][d] != want[d])
        fail(e.inputs[p].name + ": dim " + std::to_string(d) + " is " +
             std::to_string(shapes[p][d]) + ", expected " +
             e.buffers[e.inputs[p].buffer].shape[d].str(e.symbols) + " = " +
             std::to_string(want[d]));
  }
}

void Executable::Impl::prepareCall() {
  if (!planValid)
    fail("no bucket is bound (bind one first, or call run)");
  bool resolved = false;
  if (usesParams && !paramsResolved) {
    if (!weights->bound())
      fail("weights are not loaded (bind a checkpoint or initialise them "
           "first)");
    resolveParams();
    resolved = true;
  }
  // A state released (or allocated) since the last call may have moved.
  if (states->epoch() != stateEpoch && refreshStates())
    resolved = true;
  if (resolved)
    resolveAliases();
}

bool Executable::Impl::refreshStates() {
  // Where none of this executable's states moved (another executable's
  // went, or one came back at its address), the views, and a captured
  // graph, stay as they are: a trainer's step releases its gradients, and
  // the generation's graphs serve on.
  const std::vector<BufferView> before = views;
  try {
    resolveStates();
  } catch (...) {
    // Some views may have moved: no graph serves them, and the next
    // refresh resolves the aliases whatever it finds.
    viewsDirty = true;
    ++viewsEpoch;
    throw;
  }
  const bool changed = viewsDirty || !sameViews(before);
  viewsDirty = false;
  return changed;
}

bool Executable::Impl::sameViews(const std::vector<BufferView> &before) const {
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].data != before[i].data ||
        views[i].writable != before[i].writable ||
        views[i].shape != before[i].shape)
      return false;
  return true;
}

void Executable::Impl::enqueue(Stream &stream) {
  prepareCall();
  enqueueCommands(stream);
}

void Executable::Impl::enqueueGraph(Stream &stream) {
  if (!device->supportsGraphs())
    return enqueue(stream);
  prepareCall();
  if (graph && viewsEpoch == graphEpoch)
    return device->launch(*graph, stream);
  graph.reset();
  // The first call with these addresses runs the commands as usual:
  // kernels load, GEMM plans are made and the shapes are announced outside
  // the capture.
  if (viewsEpoch != warmEpoch) {
    enqueueCommands(stream);
    warmEpoch = viewsEpoch;
    return;
  }
  graph = device->capture(stream, [&] { enqueueCommands(stream); });
  graphEpoch = viewsEpoch;
  ++captures;
  device->launch(*graph, stream);
}

void Executable::Impl::captureGraph(Stream &stream, const StepState &state) {
  if (!device->supportsGraphs())
    return;
  prepareCall();
  if (graph && viewsEpoch == graphEpoch)
    return;
  graph.reset();
  // One run outside the capture (as enqueueGraph's first call), between
  // saving and restoring the state it mutates.
  state.save(stream);
  enqueueCommands(stream);
  warmEpoch = viewsEpoch;
  state.restore(stream);
  graph = device->captureTuned(
      stream, [&] { enqueueCommands(stream); }, state);
  graphEpoch = viewsEpoch;
  ++captures;
}

void Executable::Impl::enqueueCommands(Stream &stream) {
  const ExecutableDesc &e = *desc;
  auto streamOf = [&](int32_t s) -> Stream & {
    return s == 0 ? stream : *ownStreams[static_cast<size_t>(s) - 1];
  };
  if (!ownStreams.empty()) {
    device->record(*forkJoin[0], stream);
    for (auto &own : ownStreams)
      device->wait(*own, *forkJoin[0]);
  }
  uint8_t *base = static_cast<uint8_t *>(memory.get());
  for (size_t c = 0; c < commands.size(); ++c) {
    const CommandDesc &cmd = e.commands[c];
    Stream &s = streamOf(cmd.stream);
    try {
      if (auto *rec = std::get_if<ops::RecordEvent>(&cmd.op)) {
        device->record(*events[rec->event], s);
        continue;
      }
      if (auto *w = std::get_if<ops::WaitEvent>(&cmd.op)) {
        device->wait(s, *events[w->event]);
        continue;
      }
      bool changed = commandEpoch[c] != planEpoch;
      commandEpoch[c] = planEpoch;
      size_t region = static_cast<size_t>(cmd.stream);
      void *scratch =
          streamScratch[region] ? base + scratchOffset[region] : nullptr;
      commands[c]->run(views, changed, s, scratch);
    } catch (const std::exception &err) {
      // The command's shapes must be re-announced after a failure.
      commandEpoch[c] = ~uint64_t(0);
      throw Error(commandContext[c] + ": " + err.what());
    }
  }
  for (size_t k = 0; k < ownStreams.size(); ++k) {
    device->record(*forkJoin[k + 1], *ownStreams[k]);
    device->wait(stream, *forkJoin[k + 1]);
  }
}

std::vector<HostTensor>
Executable::Impl::run(const std::vector<HostTensor> &inputs) {
  const ExecutableDesc &e = *desc;
  if (inputs.size() != e.inputs.size())
    fail("expected " + std::to_string(e.inputs.size()) + " inputs, got " +
         std::to_string(inputs.size()));
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (size_t p = 0; p < inputs.size(); ++p) {
    const HostTensor &t = inputs[p];
    const std::string &name = e.inputs[p].name;
    const BufferDesc &bd = e.buffers[e.inputs[p].buffer];
    if (!t.valid() && t.numel() != 0)
      fail(name + ": no data");
    if (t.dtype() != bd.dtype)
      fail(name + ": expected " + dtypeName(bd.dtype) + ", got " +
           dtypeName(t.dtype()));
    shapes.push_back(t.shape());
  }
  if (usesParams && !weights->bound())
    fail("weights are not loaded (bind a checkpoint or initialise them "
         "first)");
  bindShapes(shapes);
  for (size_t p = 0; p < inputs.size(); ++p)
    device->copyHostToDevice(port(e.inputs[p]).data, inputs[p].data(),
                             inputs[p].bytes(), *hostStream);
  enqueue(*hostStream);
  std::vector<HostTensor> outputs;
  outputs.reserve(e.outputs.size());
  for (const PortDesc &p : e.outputs) {
    DeviceTensor t = port(p);
    outputs.push_back(HostTensor::allocate(t.dtype, t.shape));
    device->copyDeviceToHost(outputs.back().data(), t.data, t.bytes(),
                             *hostStream);
  }
  device->synchronize(*hostStream);
  return outputs;
}

DeviceTensor Executable::Impl::port(const PortDesc &p) const {
  if (!planValid)
    fail("no bucket is bound (bind one first, or call run)");
  const PlanBuffer &pb = buffers[p.buffer];
  return DeviceTensor{static_cast<uint8_t *>(memory.get()) +
                          exprValues[pb.offsetExpr],
                      pb.dtype, views[p.buffer].shape};
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

void Executable::bind(const std::vector<int64_t> &symbolValues) {
  impl_->bind(symbolValues);
}

void Executable::bindShapes(const std::vector<Shape> &inputShapes) {
  impl_->bindShapes(inputShapes);
}

void Executable::reserve(const std::vector<int64_t> &symbolValues) {
  std::vector<int64_t> previous =
      impl_->planValid ? impl_->bound : std::vector<int64_t>{};
  // layout() replaces the bound bucket's shapes: lay that out again after
  // (no allocation: the memory only grew).
  auto restore = [&] {
    impl_->bound.clear();
    if (!previous.empty())
      impl_->bind(previous);
  };
  try {
    impl_->grow(impl_->layout(symbolValues));
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

const std::vector<int64_t> &Executable::symbolValues() const {
  return impl_->bound;
}

DeviceTensor Executable::input(size_t i) const {
  return impl_->port(impl_->desc->inputs.at(i));
}

DeviceTensor Executable::output(size_t i) const {
  return impl_->port(impl_->desc->outputs.at(i));
}

static size_t portIndex(const std::vector<std::string> &names,
                        const std::string &name, const std::string &exe,
                        const char *what) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end())
    return static_cast<size_t>(it - names.begin());
  std::string all;
  for (const std::string &n : names)
    all += (all.empty() ? "" : ", ") + n;
  throw Error(exe + ": no " + what + " '" + name + "' (" + what +
              "s: " + (all.empty() ? "none" : all) + ")");
}

size_t Executable::inputIndex(const std::string &name) const {
  return portIndex(impl_->inputNames, name, impl_->desc->name, "input");
}

size_t Executable::outputIndex(const std::string &name) const {
  return portIndex(impl_->outputNames, name, impl_->desc->name, "output");
}

void Executable::enqueue(Stream &stream) { impl_->enqueue(stream); }

void Executable::enqueueGraph(Stream &stream) { impl_->enqueueGraph(stream); }

void Executable::captureGraph(Stream &stream, const StepState &state) {
  impl_->captureGraph(stream, state);
}

size_t Executable::graphCaptures() const { return impl_->captures; }

size_t Executable::graphOperations() const {
  return impl_->graph ? impl_->graph->operations() : 0;
}

std::vector<HostTensor> Executable::run(const std::vector<HostTensor> &inputs) {
  return impl_->run(inputs);
}

namespace {

/// A tensor of `shape` with every element `value` (in `dtype`).
HostTensor filledTensor(DType dtype, const Shape &shape, double value) {
  HostTensor t = HostTensor::allocate(dtype, shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    void *p = static_cast<uint8_t *>(t.data()) + i * dtypeSize(dtype);
    switch (dtype) {
    case DType::F32:
      *static_cast<float *>(p) = static_cast<float>(value);
      break;
    case DType::BF16:
      *static_cast<uint16_t *>(p) = floatToBf16(static_cast<float>(value));
      break;
    case DType::F16:
      *static_cast<uint16_t *>(p) = floatToF16(static_cast<float>(value));
      break;
    case DType::I64:
      *static_cast<int64_t *>(p) = static_cast<int64_t>(value);
      break;
    case DType::I32:
      *static_cast<int32_t *>(p) = static_cast<int32_t>(value);
      break;
    case DType::Bool:
      *static_cast<uint8_t *>(p) = value != 0;
      break;
    }
  }
  return t;
}

} // namespace

NamedTensors Executable::withDefaults(const NamedTensors &inputs) const {
  const ExecutableDesc &e = *impl_->desc;
  NamedTensors all = inputs;
  std::vector<size_t> defaulted;
  for (size_t p = 0; p < e.inputs.size(); ++p) {
    if (inputs.count(e.inputs[p].name))
      continue;
    if (!e.inputs[p].defaultValue)
      impl_->fail("missing input " + describeInput(p));
    defaulted.push_back(p);
  }
  if (defaulted.empty())
    return all;
  // An omitted input takes its shape from the symbols the given inputs
  // bind (an attention_mask of ones shaped like input_ids).
  std::vector<int64_t> symbols(e.symbols.size(), 0);
  for (size_t p = 0; p < e.inputs.size(); ++p) {
    auto it = inputs.find(e.inputs[p].name);
    const SymShape &shape = e.buffers[e.inputs[p].buffer].shape;
    if (it == inputs.end() || it->second.shape().size() != shape.size())
      continue;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::optional<unsigned> s = shape[d].asSymbol())
        symbols[*s] = it->second.shape()[d];
  }
  for (size_t p : defaulted) {
    const BufferDesc &b = e.buffers[e.inputs[p].buffer];
    Shape shape;
    for (const SymExpr &d : b.shape) {
      for (const auto &[monomial, coeff] : d.terms())
        for (uint8_t s : monomial)
          if (symbols[s] < 1)
            impl_->fail("cannot shape the omitted input " + describeInput(p) +
                        ": no given input binds '" + e.symbols[s] + "'");
      shape.push_back(d.evaluate(symbols));
    }
    all[e.inputs[p].name] =
        filledTensor(b.dtype, shape, *e.inputs[p].defaultValue);
  }
  return all;
}

NamedTensors Executable::run(const NamedTensors &inputs) {
  const ExecutableDesc &e = *impl_->desc;
  for (auto &[name, t] : inputs)
    if (std::find(impl_->inputNames.begin(), impl_->inputNames.end(), name) ==
        impl_->inputNames.end()) {
      std::string expected;
      for (const std::string &n : impl_->inputNames)
        expected += (expected.empty() ? "" : ", ") + n;
      impl_->fail("unexpected input '" + name + "' (inputs: " + expected + ")");
    }
  NamedTensors all = withDefaults(inputs);
  std::vector<HostTensor> ordered(e.inputs.size());
  for (size_t p = 0; p < e.inputs.size(); ++p)
    ordered[p] = all.at(e.inputs[p].name);
  std::vector<HostTensor> outs = impl_->run(ordered);
  NamedTensors result;
  for (size_t p = 0; p < outs.size(); ++p)
    result.emplace(e.outputs[p].name, std::move(outs[p]));
  return result;
}

void Executable::release() {
  Impl &m = *impl_;
  if (!m.memory.get())
    return;
  m.device->synchronize(); // work enqueued earlier may still use it
  m.graph.reset();
  m.memory.reset();
  m.planValid = false;
  m.bound.clear();
}

size_t Executable::allocationBytes() const { return impl_->memory.size(); }

size_t Executable::workspaceBytes() const {
  return impl_->planValid ? static_cast<size_t>(impl_->workspace) : 0;
}

size_t Executable::scratchBytes() const {
  return impl_->planValid ? impl_->scratchTotal : 0;
}

const void *Executable::bufferAddress(size_t i) const {
  if (!impl_->planValid)
    impl_->fail("no bucket is bound (bind one first, or call run)");
  return impl_->views.at(i).data;
}

} // namespace hybrid
