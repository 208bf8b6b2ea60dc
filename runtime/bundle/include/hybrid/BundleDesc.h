// The in-memory form of a .hyb bundle: what the compiler produces and what
// the runtime loads. Bundle.h turns it into bytes and back (FlatBuffers,
// runtime/bundle/schema/bundle.fbs); nothing here depends on MLIR.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/SymExpr.h"
#include "hybrid/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hybrid {

/// Bumped whenever a runtime of the previous version would misread a bundle.
constexpr uint32_t kBundleFormatVersion = 14;

/// Alignment of every workspace slot and of the workspace itself (what CUDA
/// kernels and cuBLASLt want).
constexpr int64_t kWorkspaceAlignment = 256;

/// How an executable may touch the parameters or a state buffer.
enum class Access : uint8_t { Read = 0, ReadWrite = 1 };

inline const char *accessName(Access a) {
  return a == Access::ReadWrite ? "read_write" : "read";
}

/// A tensor split over the ranks of a data-parallel group (ZeRO's flat
/// partition): flattened row-major and padded with zeros to a multiple of
/// worldSize elements, rank r holds elements [r * n, (r + 1) * n) with
/// n = shardElements(). Executables see that piece as a 1-D buffer.
struct ShardDesc {
  int32_t worldSize = 1;
  Shape shape; ///< the whole tensor's shape

  int64_t shardElements() const {
    return (numElements(shape) + worldSize - 1) / worldSize;
  }
};

struct ParamDesc {
  std::string name; ///< checkpoint name (HF name or ONNX initializer name)
  DType dtype = DType::F32;
  Shape shape;
  std::string layout; ///< "" = as stored in the checkpoint
  /// Set when each rank holds only its piece (ZeRO stage 3); `shape` stays
  /// the checkpoint's.
  std::optional<ShardDesc> shard;
  /// The ONNX initializer that holds the parameter's initial value when it
  /// is not `name` (torch.onnx merged equal initializers: every LayerNorm
  /// weight reads one); "" = `name`. Safetensors checkpoints bind by name.
  std::string source;
  /// No ONNX initializer holds it: torch.onnx dropped it for being zero (a
  /// linear layer's bias). Binding the ONNX model sets it to zeros.
  bool onnxZeros = false;
};

/// A named buffer the engine owns across calls and executables (KV cache,
/// gradient accumulators, optimizer moments, RNG counter, step, loss scale).
/// Its shape is given by each executable that uses it, in that executable's
/// symbols; the engine allocates it (zero-filled) on first use and every
/// later use must agree on the concrete shape.
struct StateDesc {
  std::string name;
  DType dtype = DType::F32;
  /// Set when each rank holds only its piece (optimizer state from ZeRO
  /// stage 1, gradient accumulators from stage 2).
  std::optional<ShardDesc> shard;
};

struct ConstantDesc {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> data; ///< little-endian, row-major, numel * dtypeSize
};

enum class BufferKind : uint8_t {
  Workspace = 0, ///< planned slot of the executable's workspace
  Param = 1,     ///< a parameter of the weight store (`index`)
  Input = 2,     ///< input port `index`; bytes in a planned workspace slot
  Output = 3,    ///< output port `index`; bytes in a planned workspace slot
  Constant = 4,  ///< a constant of the bundle (`index`)
  Alias = 5,     ///< the bytes of buffer `index`, seen with another shape
  State = 6,     ///< state buffer `index` of the bundle
};

/// A tensor the executable touches.
struct BufferDesc {
  BufferKind kind = BufferKind::Workspace;
  DType dtype = DType::F32;
  SymShape shape;
  int32_t index = -1; ///< param / port / constant / aliased buffer / state
  /// Byte offset into the workspace (Workspace, Input, Output). Offsets are
  /// polynomials and aligned ones are not, so the buffer starts at this
  /// value rounded up to the executable's workspaceAlignment; the plan
  /// leaves room for the rounding.
  SymExpr offset;
  std::string name; ///< for diagnostics
};

/// One operation on buffers. Operands are buffer indices, -1 for an absent
/// optional operand (see Ops.h for each op's operand order).
struct CommandDesc {
  Op op;
  std::vector<int32_t> operands;
  std::vector<int32_t> results;
  int32_t stream = 0; ///< which of the executable's streams runs it
  std::string loc;    ///< source location, for errors
};

struct PortDesc {
  std::string name;
  int32_t buffer = -1;
  /// Input ports only: a caller may omit the input, which is then filled
  /// with this value (an attention_mask of ones when there is no padding).
  std::optional<double> defaultValue;
};

/// An executable's declared use of one state buffer.
struct StateUse {
  int32_t state = -1; ///< index into BundleDesc::states
  Access access = Access::Read;
};

struct ExecutableDesc {
  std::string name;                 ///< "forward", "prefill", "decode", ...
  std::vector<std::string> symbols; ///< dynamic dimension names
  /// Per symbol, the largest value a call may bind (0: no limit), e.g. seq
  /// <= the rows of a learned position table. Binding more is an error
  /// naming the symbol and the limit, before anything runs.
  std::vector<int64_t> symbolMax;
  std::vector<BufferDesc> buffers;
  std::vector<CommandDesc> commands;
  std::vector<PortDesc> inputs;
  std::vector<PortDesc> outputs;
  /// Parameters: Read, or ReadWrite for an executable that updates them
  /// (the optimizer step). Nothing else may write a parameter.
  Access paramAccess = Access::Read;
  /// The state buffers it uses; a state it does not list, it cannot touch.
  std::vector<StateUse> states;
  /// Names of the communicators its collectives use (ops::Collective's
  /// `communicator` indexes this list).
  std::vector<std::string> communicators;
  int32_t numStreams = 1; ///< commands' `stream` is in [0, numStreams)
  int32_t numEvents = 0;  ///< events' `event` is in [0, numEvents)
  SymExpr workspaceBytes;
  int64_t workspaceAlignment = kWorkspaceAlignment;
};

/// The buffer whose memory buffer `i` of `e` uses, following its alias
/// chain. `e` must be valid (validation rejects alias cycles and indices
/// out of range).
inline size_t aliasRoot(const ExecutableDesc &e, size_t i) {
  while (e.buffers[i].kind == BufferKind::Alias)
    i = static_cast<size_t>(e.buffers[i].index);
  return i;
}

/// One LoRA adapter: the weight it adapts and its two parameters, as PEFT
/// names them.
struct LoraAdapterDesc {
  std::string module;       ///< "model.layers.0.self_attn.q_proj"
  std::string weight;       ///< "<module>.weight"
  std::string loraA;        ///< "base_model.model.<module>.lora_A.weight"
  std::string loraB;        ///< "base_model.model.<module>.lora_B.weight"
  bool fanInFanOut = false; ///< W is [in, out] (GPT-2's Conv1D)
};

/// A bundle's LoRA adapters (hybridc --lora-dim): rank 0 when it has none.
struct LoraDesc {
  int32_t rank = 0;
  double alpha = 0;
  std::vector<std::string> targetModules;
  bool onlyOptimize = false;
  /// @lora_fuse / @lora_unfuse merge the adapters into their weights
  /// around generation (@prefill/@decode read the merged weights).
  bool fusedGeneration = false;
  std::vector<LoraAdapterDesc> adapters;
  bool enabled() const { return rank > 0; }
};

struct BundleDesc {
  std::string producer;
  std::string model;
  std::string source;
  std::vector<ParamDesc> params;
  std::vector<StateDesc> states;
  std::vector<ConstantDesc> constants;
  std::vector<ExecutableDesc> executables;
  /// Checkpoint tensors that duplicate a parameter (a tied LM head): a
  /// checkpoint may hold them; binding skips them.
  std::vector<std::string> tied;
  /// Ranks of the data-parallel group the executables were partitioned for
  /// (their collectives run over it) and the ZeRO stage (0-3).
  int32_t worldSize = 1;
  int32_t zeroStage = 0;
  /// Prefixes a checkpoint may put before parameter names, stripped when
  /// binding (a value model's trunk: the causal-LM checkpoint's base
  /// prefix, "transformer.", and the wrappers value-model checkpoints use).
  std::vector<std::string> checkpointPrefixes;
  /// Checkpoint tensors no parameter binds that a checkpoint may hold (a
  /// value model: the causal LM's head); binding skips them.
  std::vector<std::string> checkpointExtras;
  /// LoRA adapters: their parameters are in `params` too; checkpoints of
  /// the base model lack them (adapter files hold them).
  LoraDesc lora;
};

} // namespace hybrid
