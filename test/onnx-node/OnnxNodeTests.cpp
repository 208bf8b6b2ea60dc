// Runs ONNX's backend node tests (Debian libonnx-testdata) through the ONNX
// frontend, the compiler and the CPU runtime, for every test whose ops the
// frontend claims. Prints pass/fail/skip counts; exits non-zero if any test
// of a claimed op fails. Tests whose tensors use a dtype the runtime does not
// have (f16, f64, i8/i16/i32, u*, strings) are skipped with that reason.
#include "compiler/InitAll.h"
#include "compiler/Pipeline/Pipeline.h"
#include "frontends/onnx/OnnxImporter.h"
#include "hybrid/CpuDevice.h"
#include "hybrid/Engine.h"
#include "hybrid/HostTensor.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

enum class Outcome { Pass, Fail, SkipDtype };

struct Result {
  Outcome outcome;
  std::string detail;
};

bool readProto(const fs::path &path, google::protobuf::Message &msg) {
  std::ifstream in(path, std::ios::binary);
  return in && msg.ParseFromIstream(&in);
}

bool supportedElemType(int t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::INT64 ||
         t == onnx::TensorProto::BOOL;
}

/// The host tensor of an ONNX TensorProto (float, int64 or bool).
hybrid::HostTensor toHost(const onnx::TensorProto &t) {
  hybrid::Shape shape(t.dims().begin(), t.dims().end());
  hybrid::DType dt =
      t.data_type() == onnx::TensorProto::FLOAT   ? hybrid::DType::F32
      : t.data_type() == onnx::TensorProto::INT64 ? hybrid::DType::I64
                                                  : hybrid::DType::Bool;
  hybrid::HostTensor h = hybrid::HostTensor::allocate(dt, shape);
  int64_t n = h.numel();
  if (t.has_raw_data()) {
    if (t.raw_data().size() != h.bytes())
      throw hybrid::Error("tensor '" + t.name() + "': raw_data size mismatch");
    std::memcpy(h.data(), t.raw_data().data(), h.bytes());
    return h;
  }
  auto *p = static_cast<uint8_t *>(h.data());
  for (int64_t i = 0; i < n; ++i) {
    if (dt == hybrid::DType::F32)
      reinterpret_cast<float *>(p)[i] = t.float_data(i);
    else if (dt == hybrid::DType::I64)
      reinterpret_cast<int64_t *>(p)[i] = t.int64_data(i);
    else
      p[i] = t.int32_data(i) != 0;
  }
  return h;
}

/// Operand positions that must be compile-time constants for hybridc
/// (shapes, axes, counts): the tests feed them as graph inputs, so the
/// runner freezes them into initializers, as an exporter would.
bool isStaticOperand(const std::string &op, int index) {
  static const std::map<std::string, std::set<int>> table = {
      {"Reshape", {1}},   {"Expand", {1}},      {"Slice", {1, 2, 3, 4}},
      {"Unsqueeze", {1}}, {"Squeeze", {1}},     {"Tile", {1}},
      {"ReduceSum", {1}}, {"ReduceMean", {1}},  {"ReduceMax", {1}},
      {"ReduceMin", {1}}, {"ReduceProd", {1}},  {"Split", {1}},
      {"CumSum", {1}},    {"Range", {0, 1, 2}}, {"ConstantOfShape", {0}},
      {"Pad", {1, 2, 3}}, {"TopK", {1}},        {"OneHot", {1}},
      {"Trilu", {1}},     {"Clip", {1, 2}},
  };
  auto it = table.find(op);
  return it != table.end() && it->second.count(index);
}

bool close(const hybrid::HostTensor &got, const hybrid::HostTensor &want,
           std::string &why) {
  if (got.dtype() != want.dtype()) {
    why = std::string("dtype ") + hybrid::dtypeName(got.dtype()) + " vs " +
          hybrid::dtypeName(want.dtype());
    return false;
  }
  if (got.shape() != want.shape()) {
    why = "shape " + hybrid::shapeToString(got.shape()) + " vs " +
          hybrid::shapeToString(want.shape());
    return false;
  }
  int64_t n = got.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (got.dtype() == hybrid::DType::F32) {
      float a = got.as<float>()[i], b = want.as<float>()[i];
      if (std::isnan(a) && std::isnan(b))
        continue;
      if (std::isinf(b) && a == b)
        continue;
      // numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7), as ONNX's runner.
      if (!(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b))) {
        why = "element " + std::to_string(i) + ": " + std::to_string(a) +
              " vs " + std::to_string(b);
        return false;
      }
    } else if (got.dtype() == hybrid::DType::I64) {
      if (got.as<int64_t>()[i] != want.as<int64_t>()[i]) {
        why = "element " + std::to_string(i) + ": " +
              std::to_string(got.as<int64_t>()[i]) + " vs " +
              std::to_string(want.as<int64_t>()[i]);
        return false;
      }
    } else if (static_cast<const uint8_t *>(got.data())[i] !=
               static_cast<const uint8_t *>(want.data())[i]) {
      why = "element " + std::to_string(i) + " differs";
      return false;
    }
  }
  return true;
}

Result runTest(const fs::path &dir, mlir::MLIRContext &context,
               const std::shared_ptr<hybrid::Device> &device,
               const fs::path &scratch) {
  onnx::ModelProto model;
  if (!readProto(dir / "model.onnx", model))
    return {Outcome::Fail, "cannot read model.onnx"};
  onnx::GraphProto *graph = model.mutable_graph();
  for (const auto &vi : graph->input())
    if (!supportedElemType(vi.type().tensor_type().elem_type()))
      return {Outcome::SkipDtype, "input '" + vi.name() + "' dtype"};
  for (const auto &vi : graph->output())
    if (!supportedElemType(vi.type().tensor_type().elem_type()))
      return {Outcome::SkipDtype, "output '" + vi.name() + "' dtype"};

  fs::path dataDir = dir / "test_data_set_0";
  std::vector<onnx::TensorProto> inputs(graph->input_size());
  for (int i = 0; i < graph->input_size(); ++i)
    if (!readProto(dataDir / ("input_" + std::to_string(i) + ".pb"), inputs[i]))
      return {Outcome::Fail, "cannot read input_" + std::to_string(i)};

  // Freeze the inputs that feed static operand positions.
  std::set<std::string> frozen;
  for (const auto &node : graph->node())
    for (int i = 0; i < node.input_size(); ++i)
      if (isStaticOperand(node.op_type(), i))
        frozen.insert(node.input(i));
  hybrid::NamedTensors feeds;
  std::vector<std::string> inputNames;
  auto *gin = graph->mutable_input();
  for (int i = gin->size() - 1; i >= 0; --i) {
    const std::string name = gin->Get(i).name();
    if (!frozen.count(name)) {
      feeds[name] = toHost(inputs[i]);
      continue;
    }
    onnx::TensorProto *init = graph->add_initializer();
    *init = inputs[i];
    init->set_name(name);
    gin->DeleteSubrange(i, 1);
  }
  fs::path modelPath = scratch / (dir.filename().string() + ".onnx");
  {
    std::ofstream out(modelPath, std::ios::binary);
    model.SerializeToOstream(&out);
  }

  try {
    auto module = hybridc::importModel(context, modelPath.string());
    if (!module)
      return {Outcome::Fail, llvm::toString(module.takeError())};
    if (llvm::Error e = hybridc::runHgPipeline(module->get(), {}))
      return {Outcome::Fail, llvm::toString(std::move(e))};
    if (llvm::Error e = hybridc::runHrtPipeline(module->get()))
      return {Outcome::Fail, llvm::toString(std::move(e))};
    auto bundle = hybridc::lowerToBundle(module->get());
    if (!bundle)
      return {Outcome::Fail, llvm::toString(bundle.takeError())};
    hybrid::Engine engine = hybrid::Engine::create(std::move(*bundle), device);
    engine.loadWeights(modelPath.string());
    hybrid::NamedTensors outputs = engine.forward(feeds);
    for (int i = 0; i < graph->output_size(); ++i) {
      onnx::TensorProto want;
      if (!readProto(dataDir / ("output_" + std::to_string(i) + ".pb"), want))
        return {Outcome::Fail, "cannot read output_" + std::to_string(i)};
      const std::string &name = graph->output(i).name();
      auto it = outputs.find(name);
      if (it == outputs.end())
        return {Outcome::Fail, "no output '" + name + "'"};
      std::string why;
      if (!close(it->second, toHost(want), why))
        return {Outcome::Fail, "output '" + name + "': " + why};
    }
  } catch (const hybrid::Error &e) {
    return {Outcome::Fail, e.what()};
  }
  return {Outcome::Pass, ""};
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: hybridc-onnx-node-tests NODE_TEST_DIR [--report FILE]"
                 " [--filter SUBSTRING]\n";
    return 2;
  }
  fs::path root = argv[1];
  std::string reportPath, filter;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--report")
      reportPath = argv[i + 1];
    else if (std::string(argv[i]) == "--filter")
      filter = argv[i + 1];
  }
  if (!fs::is_directory(root)) {
    // ctest shows exit code 77 as a skipped test (SKIP_RETURN_CODE).
    std::cout << "SKIPPED: no ONNX node tests at " << root
              << " (install libonnx-testdata)\n";
    return 77;
  }
  std::set<std::string> claimed;
  for (const std::string &op : hybridc::onnx::supportedOnnxOps())
    claimed.insert(op);

  mlir::DialectRegistry registry;
  hybridc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Fusion warnings are expected on single-op graphs; keep the log readable.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  fs::path scratch = fs::temp_directory_path() /
                     ("hybridc-node-tests-" + std::to_string(::getpid()));
  fs::create_directories(scratch);

  auto device = std::make_shared<hybrid::CpuDevice>();
  std::vector<fs::path> dirs;
  for (const auto &e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  struct OpStats {
    int pass = 0, fail = 0, skip = 0;
  };
  std::map<std::string, OpStats> perOp;
  int pass = 0, fail = 0, skip = 0;
  std::vector<std::string> skipped, unreadable;
  for (const fs::path &dir : dirs) {
    if (!filter.empty() &&
        dir.filename().string().find(filter) == std::string::npos)
      continue;
    onnx::ModelProto model;
    if (!readProto(dir / "model.onnx", model)) {
      unreadable.push_back(dir.filename().string());
      continue;
    }
    std::set<std::string> ops;
    for (const auto &n : model.graph().node())
      ops.insert(n.op_type());
    if (ops.empty() || !std::all_of(ops.begin(), ops.end(),
                                    [&](auto &o) { return claimed.count(o); }))
      continue;
    // Single-op tests count for their op; expanded (multi-op) tests count
    // for the op named in the test.
    std::string op = ops.size() == 1 ? *ops.begin() : std::string("(expanded)");
    Result r = runTest(dir, context, device, scratch);
    std::string name = dir.filename().string();
    switch (r.outcome) {
    case Outcome::Pass:
      ++pass;
      ++perOp[op].pass;
      break;
    case Outcome::SkipDtype:
      ++skip;
      ++perOp[op].skip;
      skipped.push_back(name + " (" + r.detail + ")");
      break;
    case Outcome::Fail:
      ++fail;
      ++perOp[op].fail;
      std::cout << "FAIL " << name << ": " << r.detail << "\n";
      break;
    }
  }
  fs::remove_all(scratch);

  if (!reportPath.empty()) {
    std::ofstream rep(reportPath);
    rep << "| op | passed | failed | skipped (dtype) |\n|---|---|---|---|\n";
    for (auto &[op, s] : perOp)
      rep << "| " << op << " | " << s.pass << " | " << s.fail << " | " << s.skip
          << " |\n";
    rep << "\nSkipped (a tensor of a dtype the ONNX frontend does not take):\n";
    for (const std::string &name : skipped)
      rep << "* " << name << "\n";
    rep << "\nUnreadable model.onnx:\n";
    for (const std::string &name : unreadable)
      rep << "* " << name << "\n";
  }
  for (const std::string &name : unreadable)
    std::cout << "UNREADABLE " << name << "/model.onnx\n";
  std::cout << "ONNX node tests of " << claimed.size()
            << " claimed ops: " << pass << " passed, " << fail << " failed, "
            << skip << " skipped (unsupported dtype), " << unreadable.size()
            << " unreadable\n";
  return fail == 0 ? 0 : 1;
}
