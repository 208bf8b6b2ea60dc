// The in-memory form of a .hyb bundle: what the compiler produces and what
// the runtime loads. Bundle.h turns it into bytes and back (FlatBuffers,
// runtime/schema/bundle.fbs); nothing here depends on MLIR.
#pragma once

#include "hybrid/SymExpr.h"
#include "hybrid/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

/// Bumped whenever a runtime of the previous version would misread a bundle.
constexpr uint32_t kBundleFormatVersion = 1;

struct ParamDesc {
  std::string name; ///< checkpoint name (HF name or ONNX initializer name)
  DType dtype = DType::F32;
  Shape shape;
  std::string layout; ///< "" = as stored in the checkpoint
};

struct ConstantDesc {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> data; ///< little-endian, row-major, numel * dtypeSize
};

enum class BufferKind : uint8_t {
  Workspace = 0,
  Param = 1,
  Input = 2,
  Output = 3,
  Constant = 4,
  Alias = 5,
};

/// A tensor the executable touches; see bundle.fbs for the meaning of kinds.
struct BufferDesc {
  BufferKind kind = BufferKind::Workspace;
  DType dtype = DType::F32;
  SymShape shape;
  int32_t index = -1; ///< param / input / output / constant / aliased buffer
  SymExpr offset;     ///< workspace byte offset (Workspace only)
  std::string name;   ///< for diagnostics
};

struct AttrDesc {
  std::string name;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct CommandDesc {
  std::string kernel; ///< e.g. "add", "linear", "attention"
  std::vector<int32_t> operands;
  std::vector<int32_t> results;
  std::vector<AttrDesc> attrs;
  std::string loc;
};

struct PortDesc {
  std::string name;
  int32_t buffer = -1;
};

struct ExecutableDesc {
  std::string name;                 ///< "forward"
  std::vector<std::string> symbols; ///< dynamic dimension names
  std::vector<BufferDesc> buffers;
  std::vector<CommandDesc> commands;
  std::vector<PortDesc> inputs;
  std::vector<PortDesc> outputs;
  SymExpr workspaceBytes;
  int64_t workspaceAlignment = 64;
};

struct BundleDesc {
  std::string producer;
  std::string model;
  std::string source;
  std::vector<ParamDesc> params;
  std::vector<ConstantDesc> constants;
  std::vector<ExecutableDesc> executables;
  /// Checkpoint tensors that duplicate a parameter (a tied LM head): a
  /// checkpoint may hold them; binding skips them.
  std::vector<std::string> tied;
};

} // namespace hybrid
