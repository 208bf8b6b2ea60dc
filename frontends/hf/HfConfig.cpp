// Reading config.json: file lookup, JSON parsing and typed getters that
// collect the first problem as a one-line error.
#include "frontends/hf/HfConfig.h"

#include "frontends/NestingDepth.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <functional>

namespace hybridc::hf {

namespace {

llvm::Error plainError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::StringRef kindName(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return "a boolean";
  case llvm::json::Value::Number:
    return "a number";
  case llvm::json::Value::String:
    return "a string";
  case llvm::json::Value::Array:
    return "a list";
  case llvm::json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

/// The JSON text of a value, for messages ("1.5", "\"gelu\"").
std::string render(const llvm::json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

} // namespace

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

llvm::Expected<HfConfig> HfConfig::load(llvm::StringRef path) {
  llvm::SmallString<256> file(path);
  if (llvm::sys::fs::is_directory(file))
    llvm::sys::path::append(file, "config.json");
  llvm::SmallString<256> dir(file);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (std::error_code ec = llvm::sys::fs::make_absolute(dir))
    return plainError(file + ": " + ec.message());
  llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);

  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer)
    return plainError(
        file + ": cannot read config.json: " + buffer.getError().message());
  if (std::optional<std::string> where =
          findExcessiveNesting((*buffer)->getBuffer(), NestingSyntax()))
    return plainError(file + ": nested deeper than " +
                      llvm::Twine(kMaxNestingDepth) + " levels (at " + *where +
                      ")");
  llvm::Expected<llvm::json::Value> document =
      llvm::json::parse((*buffer)->getBuffer());
  if (!document)
    return plainError(
        file + ": invalid JSON: " + llvm::toString(document.takeError()));
  return fromJson(std::move(*document), dir, file);
}

llvm::Expected<HfConfig> HfConfig::fromJson(llvm::json::Value document,
                                            llvm::StringRef sourceDir,
                                            llvm::StringRef displayName) {
  llvm::json::Object *root = document.getAsObject();
  if (!root)
    return plainError(displayName + ": expected a JSON object, got " +
                      kindName(document));
  const llvm::json::Value *type = root->get("model_type");
  if (!type || type->kind() == llvm::json::Value::Null)
    return plainError(displayName + ": missing key 'model_type'");
  std::optional<llvm::StringRef> typeName = type->getAsString();
  if (!typeName)
    return plainError(displayName +
                      ": key 'model_type' must be a string, got " +
                      kindName(*type));
  return HfConfig(std::move(*root), typeName->str(), sourceDir.str());
}

void HfConfig::addAlias(llvm::StringRef key, llvm::StringRef alias) {
  aliases_.emplace_back(key.str(), alias.str());
}

const llvm::json::Value *HfConfig::lookupPath(llvm::StringRef key) const {
  const llvm::json::Object *object = &root_;
  while (true) {
    auto [head, rest] = key.split('.');
    const llvm::json::Value *value = object->get(head);
    if (!value || value->kind() == llvm::json::Value::Null)
      return nullptr;
    if (rest.empty())
      return value;
    object = value->getAsObject();
    // A non-object where an object is expected has no such sub-key; the
    // getter reading the parent reports its type if it matters.
    if (!object)
      return nullptr;
    key = rest;
  }
}

const llvm::json::Value *HfConfig::lookup(llvm::StringRef key) const {
  if (const llvm::json::Value *value = lookupPath(key))
    return value;
  for (const auto &[name, alias] : aliases_)
    if (name == key)
      if (const llvm::json::Value *value = lookupPath(alias))
        return value;
  return nullptr;
}

bool HfConfig::has(llvm::StringRef key) const { return lookup(key); }

bool HfConfig::isPresent(llvm::StringRef key) const {
  const llvm::json::Object *object = &root_;
  while (true) {
    auto [head, rest] = key.split('.');
    const llvm::json::Value *value = object->get(head);
    if (!value || rest.empty())
      return value;
    object = value->getAsObject();
    if (!object)
      return false;
    key = rest;
  }
}

void HfConfig::reject(const llvm::Twine &message) {
  if (firstError_.empty())
    firstError_ = message.str();
}

void HfConfig::missing(llvm::StringRef key) {
  reject("missing key '" + key + "'");
}

void HfConfig::wrongType(llvm::StringRef key, llvm::StringRef expected,
                         const llvm::json::Value &got) {
  reject("key '" + key + "' must be " + expected + ", got " + kindName(got) +
         " " + render(got));
}

template <typename T, typename Read>
T HfConfig::getAs(llvm::StringRef key, T defaultValue, llvm::StringRef expected,
                  Read read) {
  const llvm::json::Value *value = lookup(key);
  if (!value)
    return defaultValue;
  if (auto typed = std::invoke(read, *value))
    return T(*typed);
  wrongType(key, expected, *value);
  return defaultValue;
}

// The getters of required keys record a missing key and return the
// placeholder their defaulted form returns for an absent one.

int64_t HfConfig::getInt(llvm::StringRef key) {
  if (!has(key))
    missing(key);
  return getInt(key, 1);
}

int64_t HfConfig::getInt(llvm::StringRef key, int64_t defaultValue) {
  return getAs(key, defaultValue, "an integer",
               &llvm::json::Value::getAsInteger);
}

std::optional<int64_t> HfConfig::getOptionalInt(llvm::StringRef key) {
  if (!has(key))
    return std::nullopt;
  return getInt(key, 0);
}

int64_t HfConfig::getSize(llvm::StringRef key) {
  if (!has(key))
    missing(key);
  return getSize(key, 1);
}

namespace {

struct SizeLimit {
  llvm::StringLiteral key;
  int64_t max;
};

// Far above any real model, low enough that a crafted config is one error
// line instead of minutes of graph building and an out-of-memory abort.
// The total parameter count has its own limit (DecoderBuilder).
constexpr int64_t kMaxLayers = 1024, kMaxHidden = 65536,
                  kMaxInner = 16 * kMaxHidden, kMaxHeads = 4096,
                  kMaxVocab = int64_t(1) << 24,
                  kMaxPositions = int64_t(1) << 24;
constexpr SizeLimit kSizeLimits[] = {
    {"num_hidden_layers", kMaxLayers},
    {"n_layer", kMaxLayers},
    {"hidden_size", kMaxHidden},
    {"n_embd", kMaxHidden},
    {"word_embed_proj_dim", kMaxHidden},
    {"head_dim", kMaxHidden},
    {"intermediate_size", kMaxInner},
    {"n_inner", kMaxInner},
    {"ffn_dim", kMaxInner},
    {"num_attention_heads", kMaxHeads},
    {"n_head", kMaxHeads},
    {"num_key_value_heads", kMaxHeads},
    {"vocab_size", kMaxVocab},
    {"max_position_embeddings", kMaxPositions},
    {"n_positions", kMaxPositions},
};

} // namespace

int64_t HfConfig::getSize(llvm::StringRef key, int64_t defaultValue) {
  int64_t size = getInt(key, defaultValue);
  if (size < 1) {
    reject("key '" + key + "' must be a positive size, got " +
           llvm::Twine(size));
    return 1;
  }
  for (const SizeLimit &limit : kSizeLimits)
    if (limit.key == key && size > limit.max) {
      reject("key '" + key + "' is " + llvm::Twine(size) +
             ", above the limit of " + llvm::Twine(limit.max));
      return 1;
    }
  return size;
}

double HfConfig::getFloat(llvm::StringRef key) {
  if (!has(key))
    missing(key);
  return getFloat(key, 1.0);
}

double HfConfig::getFloat(llvm::StringRef key, double defaultValue) {
  return getAs(key, defaultValue, "a number", &llvm::json::Value::getAsNumber);
}

double HfConfig::getEpsilon(llvm::StringRef key, double defaultValue) {
  const double v = getFloat(key, defaultValue);
  if (!(v >= 0) || !std::isfinite(v)) {
    reject("key '" + key + "' must be a finite number >= 0, got " +
           llvm::Twine(render(*lookup(key))));
    return defaultValue;
  }
  return v;
}

bool HfConfig::getBool(llvm::StringRef key, bool defaultValue) {
  return getAs(key, defaultValue, "true or false",
               &llvm::json::Value::getAsBoolean);
}

std::string HfConfig::getString(llvm::StringRef key) {
  if (!has(key))
    missing(key);
  return getString(key, "");
}

std::string HfConfig::getString(llvm::StringRef key,
                                llvm::StringRef defaultValue) {
  return getAs(key, defaultValue.str(), "a string",
               &llvm::json::Value::getAsString);
}

std::vector<std::string> HfConfig::getStringList(llvm::StringRef key) {
  std::vector<std::string> list;
  const llvm::json::Value *value = lookup(key);
  if (!value)
    return list;
  const llvm::json::Array *array = value->getAsArray();
  if (!array) {
    wrongType(key, "a list of strings", *value);
    return list;
  }
  for (const llvm::json::Value &element : *array) {
    std::optional<llvm::StringRef> text = element.getAsString();
    if (!text) {
      wrongType(key, "a list of strings", *value);
      return {};
    }
    list.push_back(text->str());
  }
  return list;
}

bool HfConfig::hasObject(llvm::StringRef key) {
  const llvm::json::Value *value = lookup(key);
  if (!value)
    return false;
  const llvm::json::Object *object = value->getAsObject();
  if (!object) {
    wrongType(key, "an object", *value);
    return false;
  }
  return !object->empty();
}

std::vector<std::string> HfConfig::getObjectKeys(llvm::StringRef key) const {
  std::vector<std::string> keys;
  if (const llvm::json::Value *value = lookup(key))
    if (const llvm::json::Object *object = value->getAsObject())
      for (const auto &member : *object)
        keys.push_back(member.first.str());
  return keys;
}

void HfConfig::requireBool(llvm::StringRef key, bool expected,
                           bool defaultValue, llvm::StringRef why) {
  if (getBool(key, defaultValue) != expected)
    reject("'" + key + "' = " + (expected ? "false" : "true") +
           " is not supported (" + why + ")");
}

void HfConfig::requireDivisible(llvm::StringRef key, int64_t value,
                                llvm::StringRef divisorKey, int64_t divisor) {
  if (!failed() && value % divisor != 0)
    reject(key + " " + llvm::Twine(value) + " is not divisible by " +
           divisorKey + " " + llvm::Twine(divisor));
}

llvm::Error HfConfig::makeError(const llvm::Twine &message) const {
  return plainError("config.json: " + message + " (model_type " + modelType_ +
                    ")");
}

llvm::Error HfConfig::setModelDtype(llvm::StringRef override) {
  std::string name = override.str();
  bool fromFlag = !name.empty();
  for (const char *key : {"torch_dtype", "dtype"})
    if (name.empty() && has(key))
      if (const llvm::json::Value *v = lookup(key))
        if (std::optional<llvm::StringRef> s = v->getAsString())
          name = s->str();
  if (name.empty() || name == "auto")
    name = "float32";
  std::string canonical =
      llvm::StringSwitch<std::string>(name)
          .Cases("float32", "float", "fp32", "f32", "float32")
          .Cases("bfloat16", "bf16", "bfloat16")
          .Cases("float16", "half", "fp16", "f16", "float16")
          .Default("");
  const char *known = "is not a floating-point type hybridc compiles "
                      "(float32, bfloat16, float16)";
  if (canonical.empty() && fromFlag)
    return plainError("--dtype '" + name + "' " + known);
  if (canonical.empty())
    return makeError("torch_dtype '" + name + "' " + known);
  modelDtype_ = canonical;
  return llvm::Error::success();
}

llvm::Error HfConfig::takeError() {
  if (firstError_.empty())
    return llvm::Error::success();
  llvm::Error error = makeError(firstError_);
  firstError_.clear();
  return error;
}

} // namespace hybridc::hf
