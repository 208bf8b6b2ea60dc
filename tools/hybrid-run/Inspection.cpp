// hybrid-run compare and info: tensors side by side, what a bundle holds.
#include "CommandLine.h"

#include "hybrid/Bundle.h"
#include "hybrid/Executable.h"
#include "hybrid/TensorDiff.h"

#include <cstdio>

namespace hybrid::run {

namespace {

/// A default value as info shows it: "1", "0.5".
std::string formatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string shardText(const std::optional<ShardDesc> &s) {
  return s ? ", shard of " + std::to_string(s->shardElements()) +
                 " elements per rank"
           : std::string();
}

void printExecutable(const BundleDesc &b, const ExecutableDesc &e) {
  std::string syms;
  for (size_t i = 0; i < e.symbols.size(); ++i) {
    syms += (syms.empty() ? "" : ", ") + e.symbols[i];
    if (e.symbolMax[i] > 0)
      syms += " <= " + std::to_string(e.symbolMax[i]);
  }
  std::printf("executable %s:\n", e.name.c_str());
  std::printf("  symbols: %s\n", syms.empty() ? "(none)" : syms.c_str());
  for (const PortDesc &p : e.inputs) {
    const BufferDesc &buf = e.buffers[p.buffer];
    std::printf(
        "  input %s: %s %s%s\n", p.name.c_str(), dtypeName(buf.dtype),
        symShapeString(buf.shape, e.symbols).c_str(),
        p.defaultValue
            ? (" (default " + formatValue(*p.defaultValue) + ")").c_str()
            : "");
  }
  for (const PortDesc &p : e.outputs) {
    const BufferDesc &buf = e.buffers[p.buffer];
    std::printf("  output %s: %s %s\n", p.name.c_str(), dtypeName(buf.dtype),
                symShapeString(buf.shape, e.symbols).c_str());
  }
  std::printf("  params: %s\n", accessName(e.paramAccess));
  if (e.states.empty())
    std::printf("  states: (none)\n");
  for (const StateUse &u : e.states) {
    // The shape this executable sees the state with (symbols its own).
    std::string shape;
    for (const BufferDesc &buf : e.buffers)
      if (buf.kind == BufferKind::State && buf.index == u.state) {
        shape = " " + symShapeString(buf.shape, e.symbols);
        break;
      }
    std::printf("  state %s: %s%s, %s\n", b.states[u.state].name.c_str(),
                dtypeName(b.states[u.state].dtype), shape.c_str(),
                accessName(u.access));
  }
  if (!e.communicators.empty()) {
    std::string comms;
    for (const std::string &c : e.communicators)
      comms += (comms.empty() ? "" : ", ") + c;
    std::printf("  communicators: %s\n", comms.c_str());
  }
  std::printf("  buffers: %zu, commands: %zu, streams: %d, events: %d\n",
              e.buffers.size(), e.commands.size(), e.numStreams, e.numEvents);
  std::printf("  workspace: %s bytes (alignment %lld)\n",
              e.workspaceBytes.str(e.symbols).c_str(),
              static_cast<long long>(e.workspaceAlignment));
}

} // namespace

struct Compare {
  static constexpr const char *kName = "compare";
  std::string a, b;
  std::vector<std::string> names;
  std::optional<double> atol, rtolMax;

  void declare(CLI::App &cmd) {
    describe(cmd, "Prints max |a-b| per tensor of two safetensors files; "
                  "exits 1 if any exceeds the tolerance or shapes differ");
    cmd.add_option("A", a, "safetensors file");
    cmd.add_option("B", b, "safetensors file (the reference)");
    cmd.add_option("--name", names,
                   "a tensor to compare (NA=NB: A's NA with B's NB); "
                   "repeatable; default: every name in both")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->expected(1);
    cmd.add_option("--atol", atol, "the bound on max |a-b| (default 1e-3)")
        ->transform(nonNegativeNumber());
    cmd.add_option("--rtol-max", rtolMax, "the bound as a fraction of max |b|")
        ->transform(nonNegativeNumber());
  }

  int run(const CLI::App &cmd) const {
    if (a.empty() || b.empty())
      usageError(cmd, "expected two safetensors files A and B");
    if (atol && rtolMax)
      usageError(cmd, "give --atol or --rtol-max, not both");
    TensorTolerance tolerance;
    tolerance.atol = atol.value_or(tolerance.atol);
    tolerance.rtolMax = rtolMax;
    const std::vector<TensorDiff> diffs = compareTensors(
        SafeTensorsFile::open(a), SafeTensorsFile::open(b), names, tolerance);
    size_t failed = 0;
    for (const TensorDiff &d : diffs) {
      failed += !d.pass;
      print(d, tolerance);
    }
    if (failed)
      // Not a crash but a failed check: one error line like every failure.
      std::fprintf(stderr,
                   "hybrid-run: error: compare: %zu of %zu tensors differ "
                   "(%s %g)\n",
                   failed, diffs.size(), rtolMax ? "rtol-max" : "atol",
                   rtolMax ? *rtolMax : tolerance.atol);
    return failed ? 1 : 0;
  }

  static void print(const TensorDiff &d, const TensorTolerance &tolerance) {
    const char *verdict = d.pass ? "ok" : "FAIL";
    const std::string shape = shapeToString(d.shapeA);
    if (d.shapeA != d.shapeB)
      std::printf("%s: shape %s vs %s  FAIL\n", d.name.c_str(), shape.c_str(),
                  shapeToString(d.shapeB).c_str());
    else if (tolerance.rtolMax)
      std::printf("%s: max |a-b| = %.6g = %.3g of max |b| %.6g over %s "
                  "(rtol-max %g)  %s\n",
                  d.name.c_str(), d.maxDiff,
                  d.maxRef > 0 ? d.maxDiff / d.maxRef : 0.0, d.maxRef,
                  shape.c_str(), *tolerance.rtolMax, verdict);
    else
      std::printf("%s: max |a-b| = %.6g over %s (atol %g)  %s\n",
                  d.name.c_str(), d.maxDiff, shape.c_str(), tolerance.atol,
                  verdict);
  }
};
Subcommand addCompare(CLI::App &root) { return subcommand<Compare>(root); }

struct Info {
  static constexpr const char *kName = "info";
  BundleArgument bundle;

  void declare(CLI::App &cmd) {
    describe(cmd, "Prints the bundle's model, parameters, states and, per "
                  "executable, symbols, inputs, outputs, access and sizes");
    bundle.addTo(cmd);
  }

  int run(const CLI::App &cmd) const {
    const std::string &path = bundle.get(cmd);
    const BundleDesc b = readBundle(path);
    int64_t elements = 0, bytes = 0, constBytes = 0;
    for (const ParamDesc &p : b.params) {
      elements += numElements(p.shape);
      bytes += numElements(p.shape) * static_cast<int64_t>(dtypeSize(p.dtype));
    }
    for (const ConstantDesc &c : b.constants)
      constBytes += static_cast<int64_t>(c.data.size());
    std::printf("bundle: %s (format version %u)\n", path.c_str(),
                kBundleFormatVersion);
    std::printf("producer: %s\n", b.producer.c_str());
    std::printf("model: %s\n", b.model.c_str());
    std::printf("source: %s\n", b.source.c_str());
    if (b.worldSize != 1)
      std::printf("world size: %d (ZeRO stage %d)\n", b.worldSize, b.zeroStage);
    std::printf("params: %zu (%s elements, %s)\n", b.params.size(),
                humanCount(static_cast<double>(elements)).c_str(),
                humanBytes(static_cast<double>(bytes)).c_str());
    for (const ParamDesc &p : b.params)
      std::printf("  param %s: %s %s%s%s%s\n", p.name.c_str(),
                  dtypeName(p.dtype), shapeToString(p.shape).c_str(),
                  p.layout.empty() ? "" : (" layout " + p.layout).c_str(),
                  shardText(p.shard).c_str(),
                  p.onnxZeros ? ", zeros (in no ONNX initializer)"
                  : p.source.empty()
                      ? ""
                      : (", from initializer " + p.source).c_str());
    std::printf("constants: %zu (%s)\n", b.constants.size(),
                humanBytes(static_cast<double>(constBytes)).c_str());
    auto list = [](const char *label, const std::vector<std::string> &names) {
      if (names.empty())
        return;
      std::string joined;
      for (const std::string &n : names)
        joined += (joined.empty() ? "" : ", ") + n;
      std::printf("%s: %s\n", label, joined.c_str());
    };
    list("tied", b.tied);
    list("checkpoint prefixes", b.checkpointPrefixes);
    list("checkpoint extras", b.checkpointExtras);
    if (b.lora.enabled()) {
      std::printf("lora: r %d, alpha %g (scale %g), %zu adapters, %s "
                  "generation%s\n",
                  b.lora.rank, b.lora.alpha, b.lora.alpha / b.lora.rank,
                  b.lora.adapters.size(),
                  b.lora.fusedGeneration ? "fused" : "unfused",
                  b.lora.onlyOptimize ? ", only the adapters train" : "");
      std::vector<std::string> modules;
      for (const LoraAdapterDesc &a : b.lora.adapters)
        modules.push_back(a.module);
      list("  adapted", modules);
    }
    std::printf("states: %zu\n", b.states.size());
    for (const StateDesc &st : b.states)
      std::printf("  state %s: %s%s\n", st.name.c_str(), dtypeName(st.dtype),
                  st.shard ? (" " + shapeToString(st.shard->shape) +
                              shardText(st.shard))
                                 .c_str()
                           : "");
    for (const ExecutableDesc &e : b.executables)
      printExecutable(b, e);
    return 0;
  }
};
Subcommand addInfo(CLI::App &root) { return subcommand<Info>(root); }

} // namespace hybrid::run
