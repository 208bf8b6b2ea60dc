// The one copy of a model's parameters, laid out per the bundle's parameter
// table, in device memory. Every executable of an engine reads it in place:
// switching between executables moves no weights.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace hybrid {

/// How a safetensors checkpoint's tensor names bind parameters, beyond a
/// tensor named as its parameter.
struct CheckpointBinding {
  // User-provided, so that this is no aggregate: a braced list of names,
  // bindFromSafeTensors(path, {"lm_head.weight"}), stays the set of allowed
  // extras of the other overload instead of becoming ambiguous.
  CheckpointBinding() {}

  /// When set, only the tensors whose names start with it are read, as
  /// their names without it; the others are ignored (one model of several
  /// in a file: "critic.").
  std::string prefix;
  /// Prefixes a tensor's name may carry before its parameter's name
  /// (BundleDesc::checkpointPrefixes: a value model's trunk under a causal
  /// LM's "transformer." or a reward model's "rwtranformer."); tried, in
  /// order, for a name that is no parameter itself.
  std::vector<std::string> parameterPrefixes;
  /// Tensors that may be present without being parameters (tied weights,
  /// registered buffers, a causal LM's head in a value model's trunk).
  std::set<std::string> allowedExtra;
  /// Parameters the checkpoint may lack: they start at zero (a fresh value
  /// head, v_head.weight, on a causal LM's trunk).
  std::set<std::string> zeroIfMissing;
  /// When not empty, only these parameters are bound (LoRA adapters from
  /// their own file): a tensor naming another parameter is unexpected, and
  /// the other parameters keep their values (they must have been bound).
  std::set<std::string> only;
};

/// Parameters may be f32, bf16, f16, i32, i64 or bool; the store holds each
/// in its bundle dtype, and checkpoints of another dtype convert on load.
///
/// Ownership: owns one device allocation holding every parameter (each at a
/// 256-byte aligned offset), made by the first successful bind or
/// initRandom (a checkpoint that does not fit the table allocates nothing),
/// so data(i) is stable from then on for the store's lifetime; the device
/// is shared. Thread safety: const methods may be called concurrently;
/// binding or initialising must not overlap any other use (an executable
/// reading the weights included).
///
/// Access: data(i) is read-only; only an executable whose parameter access
/// is read-write (the optimizer step) asks for mutableData(i).
///
/// Binding is all-or-nothing: a checkpoint is fully validated (dtypes,
/// shapes, and the values of narrowing conversions) before any byte is
/// copied, so a failed bind leaves the previous weights intact.
class WeightStore {
public:
  WeightStore(std::vector<ParamDesc> params, std::shared_ptr<Device> device);

  /// Binds every parameter from a safetensors checkpoint. `path` is a
  /// .safetensors file, a folder holding model.safetensors, or a sharded
  /// HF checkpoint (a model.safetensors.index.json, or a folder holding
  /// one). Every parameter must be present with its exact shape; F32, F16
  /// and BF16 tensors convert to any float parameter dtype, I32 and I64 to
  /// either integer dtype, BOOL and U8 to bool; other pairings are an error
  /// naming the tensor and both dtypes. A tensor no parameter uses is an
  /// error ("unexpected tensor X") unless listed in `allowedExtra` (tied
  /// weights, registered buffers). Throws hybrid::Error.
  void bindFromSafeTensors(const std::string &path,
                           const std::set<std::string> &allowedExtra = {});
  /// The same with tensors named as `binding` says. Two tensors that name
  /// one parameter are an error naming both; a binding.prefix no tensor
  /// carries, or a zeroIfMissing name that is no parameter, is an error.
  /// Returns the parameters binding.zeroIfMissing filled with zeros (the
  /// checkpoint lacked them), in table order.
  std::vector<std::string>
  bindFromSafeTensors(const std::string &path,
                      const CheckpointBinding &binding);

  /// Binds every parameter from the initializers of an ONNX model, by name
  /// (by ParamDesc::source where set: several parameters may start from one
  /// initializer; ParamDesc::onnxZeros ones are zeros), converting as
  /// OnnxInitializers::convertInto does (through f32 for bf16 and f16
  /// parameters, through i64 for i32 ones). Initializers no parameter uses are
  /// allowed (the compiler folds small ones into the bundle as constants).
  /// Throws hybrid::Error.
  void bindFromOnnx(const std::string &path);

  /// Deterministic demo weights: rank >= 2 float params ~ N(0, 0.02), float
  /// vectors named "*bias" 0 and other float vectors 1 (norm scales), integer
  /// and bool params 0. bf16/f16 params get the f32 values rounded.
  void initRandom(uint64_t seed);

  /// Writes every parameter to a safetensors file under its name, in its
  /// own dtype (atomically), with `metadata` beside {"format": "pt"}.
  /// Throws hybrid::Error when nothing is bound.
  void saveSafeTensors(
      const std::string &path,
      const std::map<std::string, std::string> &metadata = {}) const;
  /// The same for the parameters `names` only (LoRA adapters), with
  /// `metadata`; a name that is no parameter is a hybrid::Error.
  void
  saveSafeTensors(const std::string &path,
                  const std::vector<std::string> &names,
                  const std::map<std::string, std::string> &metadata) const;
  /// Parameter i's values as host bytes of its dtype (bytes(i) of them).
  std::vector<uint8_t> read(size_t i) const;
  /// Overwrites parameter i with host bytes of its dtype (bytes(i) of them);
  /// the store must be bound. Throws hybrid::Error before the first bind.
  void write(size_t i, const void *host);

  size_t size() const { return params_.size(); }
  const ParamDesc &param(size_t i) const { return params_.at(i); }
  const std::vector<ParamDesc> &params() const { return params_; }
  const std::string &name(size_t i) const { return params_.at(i).name; }
  DType dtype(size_t i) const { return params_.at(i).dtype; }
  const Shape &shape(size_t i) const { return params_.at(i).shape; }
  size_t bytes(size_t i) const { return sizes_.at(i); }
  /// Device address of parameter i (stable once bound). Throws
  /// hybrid::Error before the first successful bind or initRandom.
  const void *data(size_t i) const;
  void *mutableData(size_t i);
  /// Sum of the parameters' sizes (without alignment padding).
  size_t totalBytes() const { return totalBytes_; }
  int64_t totalElements() const;
  /// Index of the parameter named `name`.
  std::optional<size_t> find(const std::string &name) const;
  /// True once a bind or initRandom has succeeded.
  bool bound() const { return bound_; }
  /// What the weights came from ("path", "random(seed)"), for display.
  const std::string &source() const { return source_; }
  Device &device() const { return *device_; }

private:
  /// Allocates the storage on first use.
  void ensureStorage();
  /// Copies host bytes of every parameter into the storage.
  void upload(const std::vector<const void *> &host);

  std::vector<ParamDesc> params_;
  std::shared_ptr<Device> device_;
  std::vector<size_t> offsets_;
  std::vector<size_t> sizes_;
  size_t totalBytes_ = 0;
  size_t storageBytes_ = 0;
  DeviceAllocation storage_;
  std::unique_ptr<Stream> stream_;
  std::unordered_map<std::string, size_t> byName_;
  bool bound_ = false;
  std::string source_;
};

} // namespace hybrid
