// The weight store: one device allocation for all parameters, bound from
// safetensors (single or sharded), ONNX initializers, or random values.
#include "hybrid/WeightStore.h"

#include "hybrid/FileIO.h"
#include "hybrid/Float16.h"
#include "hybrid/OnnxInitializers.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/SizeMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>

namespace hybrid {

namespace {

std::string describe(const ParamDesc &p) {
  return std::string(dtypeName(p.dtype)) + " " + shapeToString(p.shape);
}

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The open shards of a safetensors checkpoint and an index of their
/// tensors.
struct SafeTensorsCheckpoint {
  std::string what; // path as the user gave it, for messages
  std::vector<SafeTensorsFile> files;
  std::map<std::string, std::pair<size_t, const SafeTensorsEntry *>> tensors;

  void add(SafeTensorsFile file) {
    files.push_back(std::move(file));
    size_t f = files.size() - 1;
    for (const SafeTensorsEntry &e : files[f].entries()) {
      auto [it, inserted] = tensors.emplace(e.name, std::make_pair(f, &e));
      if (!inserted)
        throw Error(what + ": tensor '" + e.name + "' appears in both " +
                    files[it->second.first].path() + " and " + files[f].path());
    }
  }
};

SafeTensorsCheckpoint openIndex(const std::string &indexPath,
                                const std::string &what) {
  std::ifstream in(indexPath);
  if (!in)
    throw Error(indexPath + ": cannot open: " + detail::systemError(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception &e) {
    throw Error(indexPath + ": bad JSON: " + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") ||
      !index["weight_map"].is_object())
    throw Error(indexPath + ": not a safetensors index (no weight_map object)");
  std::map<std::string, std::vector<std::string>> byShard;
  for (auto &[name, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      throw Error(indexPath + ": weight_map entry '" + name +
                  "' is not a file name");
    std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos)
      throw Error(indexPath + ": weight_map entry '" + name +
                  "' names shard '" + file + "' outside the checkpoint folder");
    byShard[file].push_back(name);
  }
  SafeTensorsCheckpoint ckpt;
  ckpt.what = what;
  std::string dir = dirName(indexPath);
  for (auto &[file, names] : byShard) {
    ckpt.add(SafeTensorsFile::open(dir + "/" + file));
    const SafeTensorsFile &shard = ckpt.files.back();
    for (const std::string &name : names)
      if (!shard.find(name))
        throw Error(shard.path() + ": no tensor '" + name + "' although " +
                    indexPath + " places it there");
  }
  return ckpt;
}

SafeTensorsCheckpoint openCheckpoint(const std::string &path) {
  if (detail::isDirectory(path)) {
    std::string single = path + "/model.safetensors";
    std::string index = path + "/model.safetensors.index.json";
    if (detail::pathExists(single)) {
      SafeTensorsCheckpoint ckpt;
      ckpt.what = single;
      ckpt.add(SafeTensorsFile::open(single));
      return ckpt;
    }
    if (detail::pathExists(index))
      return openIndex(index, path);
    throw Error(path + ": folder holds neither model.safetensors nor "
                       "model.safetensors.index.json");
  }
  if (endsWith(path, ".json"))
    return openIndex(path, path);
  SafeTensorsCheckpoint ckpt;
  ckpt.what = path;
  ckpt.add(SafeTensorsFile::open(path));
  return ckpt;
}

std::string andMore(size_t more, const char *what) {
  return more ? " (and " + std::to_string(more) + " more " + what + ")" : "";
}

// splitmix64: a tiny, well-mixed generator; identical on every platform.
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

WeightStore::WeightStore(std::vector<ParamDesc> params,
                         std::shared_ptr<Device> device)
    : params_(std::move(params)), device_(std::move(device)) {
  if (!device_)
    throw Error("WeightStore: no device");
  size_t offset = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc &p = params_[i];
    if (!byName_.emplace(p.name, i).second)
      throw Error("WeightStore: duplicate parameter '" + p.name + "'");
    size_t bytes =
        detail::tensorBytes(p.dtype, p.shape, "parameter '" + p.name + "'");
    int64_t aligned;
    if (detail::addOverflows(
            detail::alignUp(static_cast<int64_t>(offset), kWorkspaceAlignment),
            static_cast<int64_t>(bytes), aligned))
      throw Error("WeightStore: the parameters' total size overflows");
    offset = static_cast<size_t>(
        detail::alignUp(static_cast<int64_t>(offset), kWorkspaceAlignment));
    offsets_.push_back(offset);
    sizes_.push_back(bytes);
    offset += bytes;
    totalBytes_ += bytes;
  }
  storageBytes_ = offset;
  stream_ = device_->createStream();
}

void WeightStore::ensureStorage() {
  if (storage_.get())
    return;
  storage_ = DeviceAllocation(device_, storageBytes_, kWorkspaceAlignment);
  device_->fillZero(storage_.get(), storageBytes_, *stream_);
  device_->synchronize(*stream_);
}

void WeightStore::upload(const std::vector<const void *> &host) {
  for (size_t i = 0; i < params_.size(); ++i)
    device_->copyHostToDevice(mutableData(i), host[i], sizes_[i], *stream_);
  device_->synchronize(*stream_);
}

const void *WeightStore::data(size_t i) const {
  if (!storage_.get())
    throw Error("weights are not loaded (bind a checkpoint or initialise "
                "them first)");
  return static_cast<const uint8_t *>(storage_.get()) + offsets_.at(i);
}

void *WeightStore::mutableData(size_t i) {
  if (!storage_.get())
    throw Error("weights are not loaded (bind a checkpoint or initialise "
                "them first)");
  return static_cast<uint8_t *>(storage_.get()) + offsets_.at(i);
}

int64_t WeightStore::totalElements() const {
  int64_t n = 0;
  for (const ParamDesc &p : params_)
    n += numElements(p.shape);
  return n;
}

std::optional<size_t> WeightStore::find(const std::string &name) const {
  auto it = byName_.find(name);
  if (it == byName_.end())
    return std::nullopt;
  return it->second;
}

void WeightStore::bindFromSafeTensors(
    const std::string &path, const std::set<std::string> &allowedExtra) {
  CheckpointBinding binding;
  binding.allowedExtra = allowedExtra;
  bindFromSafeTensors(path, binding);
}

std::vector<std::string>
WeightStore::bindFromSafeTensors(const std::string &path,
                                 const CheckpointBinding &binding) {
  SafeTensorsCheckpoint ckpt = openCheckpoint(path);
  const std::string &what = ckpt.what;
  for (const std::string &name : binding.only)
    if (!byName_.count(name))
      throw Error(what + ": '" + name + "' is no parameter of the bundle");
  if (!binding.only.empty() && !bound_)
    throw Error(what + ": bind the other parameters first (this file binds " +
                std::to_string(binding.only.size()) + " of them)");
  auto selectedParam = [&](const std::string &name) {
    return binding.only.empty() || binding.only.count(name);
  };
  for (const std::string &name : binding.zeroIfMissing)
    if (!byName_.count(name))
      throw Error(what + ": '" + name +
                  "' may start at zero, but the bundle has no such parameter");

  // Which tensor each parameter reads: the one named as it is, or with one
  // of the binding's parameter prefixes, after binding.prefix.
  using Source = std::pair<size_t, const SafeTensorsEntry *>;
  std::unordered_map<std::string, std::pair<std::string, Source>> bound;
  std::string firstExtra;
  size_t extra = 0;
  bool selected = false;
  auto startsWith = [](std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
  };
  for (const auto &[tensor, where] : ckpt.tensors) {
    std::string_view name = tensor;
    if (!binding.prefix.empty()) {
      if (!startsWith(name, binding.prefix))
        continue;
      name.remove_prefix(binding.prefix.size());
      selected = true;
    }
    std::string param(name);
    for (auto prefix = binding.parameterPrefixes.begin();
         !byName_.count(param) && prefix != binding.parameterPrefixes.end();
         ++prefix)
      if (startsWith(name, *prefix))
        param = name.substr(prefix->size());
    if (!byName_.count(param) || !selectedParam(param)) {
      if (!binding.allowedExtra.count(std::string(name)) && !extra++)
        firstExtra = tensor;
      continue;
    }
    auto [it, inserted] = bound.emplace(param, std::make_pair(tensor, where));
    if (!inserted)
      throw Error(what + ": tensors '" + it->second.first + "' and '" + tensor +
                  "' both hold parameter '" + param + "'");
  }
  if (!binding.prefix.empty() && !selected)
    throw Error(what + ": no tensor name starts with '" + binding.prefix + "'");

  // Validate everything before copying anything.
  std::vector<const SafeTensorsEntry *> sources(params_.size());
  std::vector<const SafeTensorsFile *> files(params_.size());
  std::vector<std::vector<uint8_t>> narrowed(params_.size());
  std::string firstMissing;
  size_t missing = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc &p = params_[i];
    if (!selectedParam(p.name))
      continue;
    auto found = bound.find(p.name);
    if (found == bound.end()) {
      if (!binding.zeroIfMissing.count(p.name) && !missing++)
        firstMissing = p.name;
      continue;
    }
    const Source *it = &found->second.second;
    const std::string &tensor = found->second.first;
    const SafeTensorsEntry &e = *it->second;
    if (!p.layout.empty())
      throw Error(what + ": parameter '" + p.name + "' has layout '" +
                  p.layout + "', which this runtime cannot load");
    if (e.shape != p.shape)
      throw Error(what + ": tensor '" + tensor + "' has shape " +
                  shapeToString(e.shape) + ", the bundle expects " +
                  shapeToString(p.shape));
    if (!safeTensorsConvertible(e.dtype, p.dtype))
      throw Error(what + ": tensor '" + tensor + "' is " +
                  safeTensorsDTypeName(e.dtype) + ", the bundle expects " +
                  dtypeName(p.dtype));
    // Narrowing checks every value: convert now, before anything is copied.
    if (p.dtype == DType::I32 && e.dtype == SafeTensorsDType::I64) {
      narrowed[i].resize(sizes_[i]);
      ckpt.files[it->first].convertInto(e, p.dtype, narrowed[i].data());
    }
    sources[i] = &e;
    files[i] = &ckpt.files[it->first];
  }
  // Tensors named otherwise than the parameters (another model's, or under
  // a prefix not given) explain missing ones best: name one.
  if (missing)
    throw Error(what + ": missing tensor '" + binding.prefix + firstMissing +
                "' (bundle parameter " +
                describe(params_[*find(firstMissing)]) + ")" +
                andMore(missing - 1, "missing") +
                (extra ? "; the checkpoint's '" + firstExtra +
                             "' is no parameter" + andMore(extra - 1, "such")
                       : ""));
  if (extra)
    throw Error(what + ": unexpected tensor '" + firstExtra +
                "' (not a parameter of the bundle)" +
                andMore(extra - 1, "unexpected"));

  ensureStorage();
  std::vector<uint8_t> staging;
  std::vector<std::string> zeroed;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!selectedParam(params_[i].name))
      continue;
    if (!sources[i]) { // binding.zeroIfMissing
      device_->fillZero(mutableData(i), sizes_[i], *stream_);
      device_->synchronize(*stream_);
      zeroed.push_back(params_[i].name);
      continue;
    }
    const SafeTensorsEntry &e = *sources[i];
    const void *src = e.data;
    if (!narrowed[i].empty()) {
      src = narrowed[i].data();
    } else if (toDType(e.dtype) != params_[i].dtype) {
      staging.resize(sizes_[i]);
      files[i]->convertInto(e, params_[i].dtype, staging.data());
      src = staging.data();
    }
    device_->copyHostToDevice(mutableData(i), src, sizes_[i], *stream_);
    // The staging buffer is reused for the next parameter.
    device_->synchronize(*stream_);
  }
  if (binding.only.empty()) {
    bound_ = true;
    source_ = what;
  }
  return zeroed;
}

void WeightStore::bindFromOnnx(const std::string &path) {
  OnnxInitializers onnx = OnnxInitializers::read(path);
  std::vector<const OnnxInitializer *> sources(params_.size());
  std::string firstMissing;
  size_t missing = 0;
  size_t firstMissingIndex = 0;
  // A parameter the exporter merged with equal ones reads their one
  // initializer (its source); the others are named as they are.
  auto sourceOf = [](const ParamDesc &p) -> const std::string & {
    return p.source.empty() ? p.name : p.source;
  };
  auto forParam = [&](const ParamDesc &p) {
    return p.source.empty() ? std::string()
                            : " (the source of parameter '" + p.name + "')";
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc &p = params_[i];
    if (p.onnxZeros)
      continue;
    const OnnxInitializer *e = onnx.find(sourceOf(p));
    if (!e) {
      if (!missing++) {
        firstMissing = sourceOf(p);
        firstMissingIndex = i;
      }
      continue;
    }
    if (!p.layout.empty())
      throw Error(path + ": parameter '" + p.name + "' has layout '" +
                  p.layout + "', which this runtime cannot load");
    if (e->shape != p.shape)
      throw Error(path + ": initializer '" + sourceOf(p) + "'" + forParam(p) +
                  " has shape " + shapeToString(e->shape) +
                  ", the bundle expects " + shapeToString(p.shape));
    sources[i] = e;
  }
  if (missing)
    throw Error(path + ": missing initializer '" + firstMissing +
                "' (bundle parameter " +
                (params_[firstMissingIndex].source.empty()
                     ? std::string()
                     : "'" + params_[firstMissingIndex].name + "', ") +
                describe(params_[firstMissingIndex]) + ")" +
                andMore(missing - 1, "missing"));
  // Check every conversion before writing any weight. bf16/f16 go through
  // f32 and i32 through i64: the ONNX reader converts to those.
  std::vector<std::vector<uint8_t>> converted(params_.size());
  std::vector<const void *> host(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc &p = params_[i];
    size_t n = static_cast<size_t>(numElements(p.shape));
    converted[i].resize(sizes_[i]);
    host[i] = converted[i].data();
    if (p.onnxZeros)
      continue; // zero-filled by resize
    const OnnxInitializer &e = *sources[i];
    if (p.dtype == DType::BF16 || p.dtype == DType::F16) {
      std::vector<float> wide(n);
      onnx.convertInto(e, DType::F32, wide.data());
      uint16_t *out = reinterpret_cast<uint16_t *>(converted[i].data());
      for (size_t k = 0; k < n; ++k)
        out[k] =
            p.dtype == DType::BF16 ? floatToBf16(wide[k]) : floatToF16(wide[k]);
    } else if (p.dtype == DType::I32) {
      std::vector<int64_t> wide(n);
      onnx.convertInto(e, DType::I64, wide.data());
      int32_t *out = reinterpret_cast<int32_t *>(converted[i].data());
      for (size_t k = 0; k < n; ++k) {
        if (wide[k] < INT32_MIN || wide[k] > INT32_MAX)
          throw Error(path + ": initializer '" + e.name + "' holds " +
                      std::to_string(wide[k]) + " at element " +
                      std::to_string(k) + ", which does not fit i32");
        out[k] = static_cast<int32_t>(wide[k]);
      }
    } else {
      onnx.convertInto(e, p.dtype, converted[i].data());
    }
  }
  ensureStorage();
  upload(host);
  bound_ = true;
  source_ = path;
}

void WeightStore::initRandom(uint64_t seed) {
  // Device memory first: a size the device cannot hold is an error before
  // any host memory is spent on values.
  ensureStorage();
  std::vector<uint8_t> staging;
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc &p = params_[i];
    if (!isFloatDType(p.dtype)) {
      staging.assign(sizes_[i], 0);
    } else {
      staging.resize(sizes_[i]); // every element is written below
      const size_t n = static_cast<size_t>(numElements(p.shape));
      // Element k as the parameter's dtype, straight into the staging.
      auto store = [&](size_t k, float v) {
        if (p.dtype == DType::F32)
          reinterpret_cast<float *>(staging.data())[k] = v;
        else
          reinterpret_cast<uint16_t *>(staging.data())[k] =
              p.dtype == DType::BF16 ? floatToBf16(v) : floatToF16(v);
      };
      const uint64_t start = seed * 0x9e3779b97f4a7c15ull + i;
      if (p.shape.size() >= 2) {
        // Pair k / 2 takes draws k + 1 and k + 2 of the generator, whose
        // state only advances by a constant: each pair's draws follow from
        // its index, so chunks of pairs fill in parallel with the values a
        // single sequential pass gives.
        const size_t pairs = (n + 1) / 2;
        auto fill = [&](size_t first, size_t last) {
          for (size_t pair = first; pair < last; ++pair) {
            uint64_t state = start + 2 * pair * 0x9e3779b97f4a7c15ull;
            // Box-Muller on two 53-bit uniforms in (0, 1].
            double u1 =
                (static_cast<double>(splitmix64(state) >> 11) + 1) * 0x1p-53;
            double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
            double r = std::sqrt(-2 * std::log(u1));
            const size_t k = 2 * pair;
            store(k, static_cast<float>(0.02 * r * std::cos(2 * M_PI * u2)));
            if (k + 1 < n)
              store(k + 1,
                    static_cast<float>(0.02 * r * std::sin(2 * M_PI * u2)));
          }
        };
        const size_t threads =
            std::clamp<size_t>(std::thread::hardware_concurrency(), 1,
                               std::max<size_t>(1, pairs / (1 << 16)));
        std::vector<std::thread> workers;
        for (size_t t = 1; t < threads; ++t)
          workers.emplace_back(fill, pairs * t / threads,
                               pairs * (t + 1) / threads);
        fill(0, pairs / threads);
        for (std::thread &w : workers)
          w.join();
      } else {
        // Norm weights ones, biases zeros.
        const float v = endsWith(p.name, "bias") ? 0.0f : 1.0f;
        for (size_t k = 0; k < n; ++k)
          store(k, v);
      }
    }
    device_->copyHostToDevice(mutableData(i), staging.data(), sizes_[i],
                              *stream_);
    // The staging buffer is reused for the next parameter.
    device_->synchronize(*stream_);
  }
  bound_ = true;
  source_ = "random(seed " + std::to_string(seed) + ")";
}

std::vector<uint8_t> WeightStore::read(size_t i) const {
  std::vector<uint8_t> host(sizes_.at(i));
  device_->copyDeviceToHost(host.data(), data(i), sizes_[i], *stream_);
  device_->synchronize(*stream_);
  return host;
}

void WeightStore::write(size_t i, const void *host) {
  if (!bound_)
    throw Error("parameter '" + name(i) +
                "': bind the weights before writing one of them");
  device_->copyHostToDevice(mutableData(i), host, sizes_.at(i), *stream_);
  device_->synchronize(*stream_);
}

void WeightStore::saveSafeTensors(
    const std::string &path, const std::vector<std::string> &names,
    const std::map<std::string, std::string> &metadata) const {
  std::vector<std::vector<uint8_t>> host;
  std::vector<SafeTensorsWriteEntry> entries;
  host.reserve(names.size());
  for (const std::string &n : names) {
    std::optional<size_t> i = find(n);
    if (!i)
      throw Error(path + ": '" + n + "' is no parameter of the bundle");
    host.push_back(read(*i));
    entries.push_back({n, fromDType(params_[*i].dtype), params_[*i].shape,
                       host.back().data()});
  }
  writeSafeTensors(path, entries, metadata);
}

void WeightStore::saveSafeTensors(
    const std::string &path,
    const std::map<std::string, std::string> &metadata) const {
  if (!storage_.get())
    throw Error(path + ": no weights to save (bind a checkpoint or "
                       "initialise them first)");
  std::vector<std::vector<uint8_t>> host(params_.size());
  std::vector<SafeTensorsWriteEntry> entries;
  for (size_t i = 0; i < params_.size(); ++i) {
    const void *src = data(i);
    if (!device_->hostAddressable()) {
      host[i].resize(sizes_[i]);
      device_->copyDeviceToHost(host[i].data(), src, sizes_[i], *stream_);
      src = host[i].data();
    }
    entries.push_back(
        {params_[i].name, fromDType(params_[i].dtype), params_[i].shape, src});
  }
  device_->synchronize(*stream_);
  std::map<std::string, std::string> all = metadata;
  all["format"] = "pt";
  writeSafeTensors(path, entries, all);
}

} // namespace hybrid
