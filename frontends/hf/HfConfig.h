// Typed, error-collecting access to a HuggingFace config.json.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybridc::hf {

/// What a model ends in after its base model's final norm.
enum class ModelHead {
  /// The LM head: logits [batch, seq, vocab] (HF's *ForCausalLM).
  CausalLm,
  /// DeepSpeed-Chat's RewardModel / critic: v_head = Linear(hidden, 1,
  /// bias=False) over HF's AutoModel, per-token values and each row's
  /// score.
  Value,
};

/// A number as a message shows it: "0.5", "1e+06", "64".
std::string formatNumber(double value);

/// A parsed config.json. Keys are top-level names or dotted paths into
/// nested objects ("rope_parameters.rope_theta"); a key set to JSON null
/// counts as absent, as HF treats it as "use the default".
///
/// The getters never fail outright: a missing required key, a value of the
/// wrong type or a value the model cannot be built with is recorded (the
/// first one wins) and a placeholder is returned, so a model family reads all
/// its hyper-parameters and then checks takeError() once. Messages have the
/// form "config.json: <what> (model_type <type>)".
class HfConfig {
public:
  /// Reads `path`: a folder holding config.json, or the config.json file.
  /// Fails on an unreadable file, invalid JSON, a non-object document or a
  /// missing/non-string model_type.
  static llvm::Expected<HfConfig> load(llvm::StringRef path);

  /// Builds a config from an already parsed document (tests, tools).
  /// `displayName` names the document in messages about its shape.
  static llvm::Expected<HfConfig>
  fromJson(llvm::json::Value document, llvm::StringRef sourceDir,
           llvm::StringRef displayName = "config.json");

  llvm::StringRef modelType() const { return modelType_; }
  /// Absolute folder the config came from.
  llvm::StringRef sourceDir() const { return sourceDir_; }

  /// Reads `alias` wherever `key` is asked for and only `alias` is set, as
  /// HF's attribute_map does (GPT-2's "hidden_size" for "n_embd").
  void addAlias(llvm::StringRef key, llvm::StringRef alias);

  /// True when `key` is present and not null.
  bool has(llvm::StringRef key) const;
  /// True when `key` is in the document, even as null (for keys whose
  /// class default differs from null).
  bool isPresent(llvm::StringRef key) const;

  int64_t getInt(llvm::StringRef key);
  int64_t getInt(llvm::StringRef key, int64_t defaultValue);
  std::optional<int64_t> getOptionalInt(llvm::StringRef key);
  /// A size: an integer >= 1, and for the keys of layer counts, widths,
  /// head counts, vocabulary and positions at most a sane limit (1024
  /// layers, 65536 hidden, 2^24 vocabulary, ...); beyond it an error names
  /// the key and the limit.
  int64_t getSize(llvm::StringRef key);
  int64_t getSize(llvm::StringRef key, int64_t defaultValue);

  double getFloat(llvm::StringRef key);
  double getFloat(llvm::StringRef key, double defaultValue);
  /// A norm's epsilon: a finite number >= 0 (-1 was an internal error of
  /// the graph's verifier).
  double getEpsilon(llvm::StringRef key, double defaultValue);
  bool getBool(llvm::StringRef key, bool defaultValue);
  std::string getString(llvm::StringRef key);
  std::string getString(llvm::StringRef key, llvm::StringRef defaultValue);
  /// A list of strings; empty when absent.
  std::vector<std::string> getStringList(llvm::StringRef key);
  /// True when `key` holds a non-empty object (records an error when it
  /// holds anything but an object).
  bool hasObject(llvm::StringRef key);
  /// The member names of the object at `key`; empty when absent.
  std::vector<std::string> getObjectKeys(llvm::StringRef key) const;

  /// Records an error about the configuration (first one wins).
  void reject(const llvm::Twine &message);
  /// Records an error unless `key` is absent or equal to `expected`: for
  /// flags the frontend cannot honour in their non-default state.
  void requireBool(llvm::StringRef key, bool expected, bool defaultValue,
                   llvm::StringRef why);
  /// Records "<key> <value> is not divisible by <divisorKey> <divisor>"
  /// when it is not (and nothing is recorded yet): for sizes split evenly,
  /// such as hidden_size over the attention heads.
  void requireDivisible(llvm::StringRef key, int64_t value,
                        llvm::StringRef divisorKey, int64_t divisor);

  bool failed() const { return !firstError_.empty(); }
  /// The first recorded problem as an llvm::Error, or success.
  llvm::Error takeError();

  /// "config.json: <message> (model_type <type>)" as an llvm::Error.
  llvm::Error makeError(const llvm::Twine &message) const;

  /// The floating-point type of the model's weights and activations, as a
  /// canonical name: "float32", "bfloat16" or "float16".
  llvm::StringRef modelDtype() const { return modelDtype_; }
  /// Sets modelDtype from `override` when non-empty, else from the config's
  /// torch_dtype (or dtype, its newer name), else float32. Accepts HF's
  /// names and the short ones (f32, bf16, f16, fp16, half, float); any
  /// other is an error naming it.
  llvm::Error setModelDtype(llvm::StringRef override);

  /// The head the model is built with (a compile option, not a key).
  ModelHead head() const { return head_; }
  void setHead(ModelHead head) { head_ = head; }

private:
  HfConfig(llvm::json::Object root, std::string modelType,
           std::string sourceDir)
      : root_(std::move(root)), modelType_(std::move(modelType)),
        sourceDir_(std::move(sourceDir)) {}

  /// The value at `key` (after aliases), or null when absent or null.
  const llvm::json::Value *lookup(llvm::StringRef key) const;
  std::string modelDtype_ = "float32";
  ModelHead head_ = ModelHead::CausalLm;
  const llvm::json::Value *lookupPath(llvm::StringRef key) const;
  void missing(llvm::StringRef key);
  /// The value at `key` as `read` (a json::Value getter) gives it, or
  /// `defaultValue` when absent; a value of another type is recorded as not
  /// being `expected`.
  template <typename T, typename Read>
  T getAs(llvm::StringRef key, T defaultValue, llvm::StringRef expected,
          Read read);
  void wrongType(llvm::StringRef key, llvm::StringRef expected,
                 const llvm::json::Value &got);

  llvm::json::Object root_;
  std::string modelType_;
  std::string sourceDir_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  std::string firstError_;
};

} // namespace hybridc::hf
