// safetensors reader (memory-mapped, fully validated) and atomic writer.
#include "hybrid/SafeTensors.h"

#include "hybrid/FileIO.h"
#include "hybrid/Float16.h"
#include "hybrid/SizeMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>
#include <unordered_map>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors and bundles are little-endian; so is this runtime");

namespace hybrid {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20; // the format's own limit

std::optional<SafeTensorsDType> parseDType(const std::string &s) {
  static const std::pair<const char *, SafeTensorsDType> table[] = {
      {"F32", SafeTensorsDType::F32},   {"F16", SafeTensorsDType::F16},
      {"BF16", SafeTensorsDType::BF16}, {"I64", SafeTensorsDType::I64},
      {"I32", SafeTensorsDType::I32},   {"BOOL", SafeTensorsDType::BOOL},
      {"U8", SafeTensorsDType::U8}};
  for (auto &[name, t] : table)
    if (s == name)
      return t;
  return std::nullopt;
}

template <typename T> T load(const uint8_t *p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

} // namespace

const char *safeTensorsDTypeName(SafeTensorsDType t) {
  switch (t) {
  case SafeTensorsDType::F32:
    return "F32";
  case SafeTensorsDType::F16:
    return "F16";
  case SafeTensorsDType::BF16:
    return "BF16";
  case SafeTensorsDType::I64:
    return "I64";
  case SafeTensorsDType::I32:
    return "I32";
  case SafeTensorsDType::BOOL:
    return "BOOL";
  case SafeTensorsDType::U8:
    return "U8";
  }
  return "?";
}

size_t safeTensorsDTypeSize(SafeTensorsDType t) {
  switch (t) {
  case SafeTensorsDType::F32:
  case SafeTensorsDType::I32:
    return 4;
  case SafeTensorsDType::F16:
  case SafeTensorsDType::BF16:
    return 2;
  case SafeTensorsDType::I64:
    return 8;
  case SafeTensorsDType::BOOL:
  case SafeTensorsDType::U8:
    return 1;
  }
  return 0;
}

std::optional<DType> toDType(SafeTensorsDType t) {
  switch (t) {
  case SafeTensorsDType::F32:
    return DType::F32;
  case SafeTensorsDType::F16:
    return DType::F16;
  case SafeTensorsDType::BF16:
    return DType::BF16;
  case SafeTensorsDType::I64:
    return DType::I64;
  case SafeTensorsDType::I32:
    return DType::I32;
  case SafeTensorsDType::BOOL:
    return DType::Bool;
  case SafeTensorsDType::U8:
    break;
  }
  return std::nullopt;
}

SafeTensorsDType fromDType(DType t) {
  switch (t) {
  case DType::F32:
    return SafeTensorsDType::F32;
  case DType::F16:
    return SafeTensorsDType::F16;
  case DType::BF16:
    return SafeTensorsDType::BF16;
  case DType::I64:
    return SafeTensorsDType::I64;
  case DType::I32:
    return SafeTensorsDType::I32;
  case DType::Bool:
    return SafeTensorsDType::BOOL;
  }
  return SafeTensorsDType::U8;
}

bool safeTensorsConvertible(SafeTensorsDType from, DType to) {
  bool floatFrom = from == SafeTensorsDType::F32 ||
                   from == SafeTensorsDType::F16 ||
                   from == SafeTensorsDType::BF16;
  bool intFrom = from == SafeTensorsDType::I64 || from == SafeTensorsDType::I32;
  bool boolFrom =
      from == SafeTensorsDType::BOOL || from == SafeTensorsDType::U8;
  return (isFloatDType(to) && floatFrom) || (isIntegerDType(to) && intFrom) ||
         (to == DType::Bool && boolFrom);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

struct SafeTensorsFile::Impl {
  detail::MappedFile file;
  std::vector<SafeTensorsEntry> entries;
  std::unordered_map<std::string, size_t> byName;
  std::map<std::string, std::string> metadata;
};

SafeTensorsFile::SafeTensorsFile(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
SafeTensorsFile::SafeTensorsFile(SafeTensorsFile &&) noexcept = default;
SafeTensorsFile &
SafeTensorsFile::operator=(SafeTensorsFile &&) noexcept = default;
SafeTensorsFile::~SafeTensorsFile() = default;

const std::string &SafeTensorsFile::path() const { return impl_->file.path(); }
const std::vector<SafeTensorsEntry> &SafeTensorsFile::entries() const {
  return impl_->entries;
}
const std::map<std::string, std::string> &SafeTensorsFile::metadata() const {
  return impl_->metadata;
}

const SafeTensorsEntry *SafeTensorsFile::find(const std::string &name) const {
  auto it = impl_->byName.find(name);
  return it == impl_->byName.end() ? nullptr : &impl_->entries[it->second];
}

const SafeTensorsEntry &SafeTensorsFile::get(const std::string &name) const {
  if (const SafeTensorsEntry *e = find(name))
    return *e;
  throw Error(path() + ": no tensor '" + name + "'");
}

SafeTensorsFile SafeTensorsFile::open(const std::string &path) {
  auto impl = std::make_unique<Impl>();
  impl->file = detail::MappedFile(path);
  const uint8_t *base = impl->file.data();
  uint64_t size = impl->file.size();
  auto fail = [&](const std::string &msg) -> void {
    throw Error(path + ": " + msg);
  };
  if (size < 8)
    fail("not a safetensors file (" + std::to_string(size) +
         " bytes, shorter than the 8-byte header length)");
  uint64_t headerLen = load<uint64_t>(base, 0);
  if (headerLen > size - 8)
    fail("not a safetensors file or truncated: header length " +
         std::to_string(headerLen) + " exceeds the file (" +
         std::to_string(size) + " bytes)");
  if (headerLen > kMaxHeaderBytes)
    fail("safetensors header of " + std::to_string(headerLen) +
         " bytes exceeds the 100 MB limit");
  if (headerLen < 2)
    fail("not a safetensors file: empty header");
  const char *hb = reinterpret_cast<const char *>(base + 8);
  const uint8_t *dataBase = base + 8 + headerLen;
  uint64_t dataSize = size - 8 - headerLen;

  // Duplicate top-level keys would silently shadow each other in the parsed
  // object; catch them while parsing.
  std::string duplicate;
  std::set<std::string> seen;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(
        hb, hb + headerLen,
        [&](int depth, nlohmann::json::parse_event_t event,
            nlohmann::json &parsed) {
          if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
              !seen.insert(parsed.get<std::string>()).second &&
              duplicate.empty())
            duplicate = parsed.get<std::string>();
          return true;
        });
  } catch (const nlohmann::json::exception &e) {
    fail(std::string("not a safetensors file: bad JSON header: ") + e.what());
  }
  if (!duplicate.empty())
    fail("safetensors header names '" + duplicate + "' twice");
  if (!header.is_object())
    fail("not a safetensors file: the header is not a JSON object");

  struct Range {
    uint64_t begin, end;
    size_t entry;
  };
  std::vector<Range> ranges;
  std::vector<SafeTensorsEntry> entries;
  for (auto &[name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object())
        fail("__metadata__ is not a JSON object");
      for (auto &[k, v] : info.items()) {
        if (!v.is_string())
          fail("__metadata__ value of '" + k + "' is not a string");
        impl->metadata[k] = v.get<std::string>();
      }
      continue;
    }
    std::string ctx = "tensor '" + name + "'";
    if (!info.is_object())
      fail(ctx + ": header entry is not a JSON object");
    auto dt = info.find("dtype");
    if (dt == info.end() || !dt->is_string())
      fail(ctx + ": missing or non-string dtype");
    std::optional<SafeTensorsDType> dtype = parseDType(dt->get<std::string>());
    if (!dtype)
      fail(ctx + ": unsupported dtype '" + dt->get<std::string>() +
           "' (this runtime reads F32, F16, BF16, I64, I32, BOOL, U8)");
    auto sh = info.find("shape");
    if (sh == info.end() || !sh->is_array())
      fail(ctx + ": missing or non-array shape");
    Shape shape;
    for (auto &d : *sh) {
      if (!d.is_number_unsigned())
        fail(ctx + ": shape holds " + d.dump() +
             ", not a non-negative integer");
      uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX))
        fail(ctx + ": dimension " + std::to_string(v) + " is too large");
      shape.push_back(static_cast<int64_t>(v));
    }
    auto off = info.find("data_offsets");
    if (off == info.end() || !off->is_array() || off->size() != 2 ||
        !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      fail(ctx + ": data_offsets must be two non-negative integers");
    uint64_t begin = (*off)[0].get<uint64_t>();
    uint64_t end = (*off)[1].get<uint64_t>();
    if (begin > end || end > dataSize)
      fail(ctx + ": data_offsets [" + std::to_string(begin) + ", " +
           std::to_string(end) + "] lie outside the " +
           std::to_string(dataSize) + " data bytes (truncated file?)");
    int64_t numel = detail::checkedNumel(shape);
    int64_t want;
    if (numel < 0 ||
        detail::mulOverflows(
            numel, static_cast<int64_t>(safeTensorsDTypeSize(*dtype)), want))
      fail(ctx + ": shape " + shapeToString(shape) + " is too large");
    if (static_cast<uint64_t>(want) != end - begin)
      fail(ctx + ": " + safeTensorsDTypeName(*dtype) + " " +
           shapeToString(shape) + " needs " + std::to_string(want) +
           " bytes but data_offsets span " + std::to_string(end - begin));
    SafeTensorsEntry e;
    e.name = name;
    e.dtype = *dtype;
    e.shape = std::move(shape);
    e.data = dataBase + begin;
    e.bytes = end - begin;
    ranges.push_back({begin, end, entries.size()});
    entries.push_back(std::move(e));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range *prev = nullptr;
  for (const Range &r : ranges) {
    if (r.begin == r.end)
      continue; // empty tensors occupy no bytes
    if (prev && r.begin < prev->end)
      fail("tensors '" + entries[prev->entry].name + "' and '" +
           entries[r.entry].name + "' overlap in the file");
    prev = &r;
  }
  for (const Range &r : ranges) {
    impl->byName[entries[r.entry].name] = impl->entries.size();
    impl->entries.push_back(std::move(entries[r.entry]));
  }
  return SafeTensorsFile(std::move(impl));
}

std::vector<float> SafeTensorsFile::toF32(const SafeTensorsEntry &e) const {
  std::vector<float> out(static_cast<size_t>(e.numel()));
  convertInto(e, DType::F32, out.data());
  return out;
}

HostTensor SafeTensorsFile::toHost(const SafeTensorsEntry &e,
                                   DType dtype) const {
  HostTensor t = HostTensor::allocate(dtype, e.shape);
  convertInto(e, dtype, t.data());
  return t;
}

void SafeTensorsFile::convertInto(const SafeTensorsEntry &e, DType dtype,
                                  void *dst) const {
  size_t n = static_cast<size_t>(e.numel());
  const uint8_t *src = e.data;
  if (!safeTensorsConvertible(e.dtype, dtype))
    throw Error(path() + ": tensor '" + e.name + "' is " +
                safeTensorsDTypeName(e.dtype) + ", cannot be read as " +
                dtypeName(dtype));
  if (toDType(e.dtype) == dtype) {
    if (n)
      std::memcpy(dst, src, n * dtypeSize(dtype));
    return;
  }
  if (isFloatDType(dtype)) {
    for (size_t i = 0; i < n; ++i) {
      float v = e.dtype == SafeTensorsDType::F32 ? load<float>(src, i)
                : e.dtype == SafeTensorsDType::F16
                    ? f16ToFloat(load<uint16_t>(src, i))
                    : bf16ToFloat(load<uint16_t>(src, i));
      if (dtype == DType::F32)
        static_cast<float *>(dst)[i] = v;
      else if (dtype == DType::BF16)
        static_cast<uint16_t *>(dst)[i] = floatToBf16(v);
      else
        static_cast<uint16_t *>(dst)[i] = floatToF16(v);
    }
    return;
  }
  if (dtype == DType::I64) { // from I32
    for (size_t i = 0; i < n; ++i)
      static_cast<int64_t *>(dst)[i] = load<int32_t>(src, i);
    return;
  }
  if (dtype == DType::I32) { // from I64: every value must fit
    for (size_t i = 0; i < n; ++i) {
      int64_t v = load<int64_t>(src, i);
      if (v < INT32_MIN || v > INT32_MAX)
        throw Error(path() + ": tensor '" + e.name + "' holds " +
                    std::to_string(v) + " at element " + std::to_string(i) +
                    ", which does not fit i32");
    }
    for (size_t i = 0; i < n; ++i)
      static_cast<int32_t *>(dst)[i] =
          static_cast<int32_t>(load<int64_t>(src, i));
    return;
  }
  for (size_t i = 0; i < n; ++i) // Bool from BOOL or U8
    static_cast<bool *>(dst)[i] = src[i] != 0;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void writeSafeTensors(const std::string &path,
                      const std::vector<SafeTensorsWriteEntry> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json md = nlohmann::ordered_json::object();
    for (auto &[k, v] : metadata)
      md[k] = v;
    header["__metadata__"] = md;
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const SafeTensorsWriteEntry &t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw Error(path + ": cannot write a tensor named '" + t.name + "'");
    if (!names.insert(t.name).second)
      throw Error(path + ": tensor '" + t.name + "' given twice");
    int64_t numel = detail::checkedNumel(t.shape);
    if (numel < 0)
      throw Error(path + ": tensor '" + t.name + "' has invalid shape " +
                  shapeToString(t.shape));
    uint64_t bytes =
        static_cast<uint64_t>(numel) * safeTensorsDTypeSize(t.dtype);
    if (bytes && !t.data)
      throw Error(path + ": tensor '" + t.name + "' has no data");
    header[t.name] = {{"dtype", safeTensorsDTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    sizes.push_back(bytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t len = text.size();
  detail::writeFileAtomically(path, [&](const detail::ByteSink &write) {
    write(&len, 8);
    write(text.data(), text.size());
    for (size_t i = 0; i < tensors.size(); ++i)
      if (sizes[i])
        write(tensors[i].data, sizes[i]);
  });
}

void writeSafeTensors(const std::string &path, const NamedTensors &tensors,
                      const std::map<std::string, std::string> &metadata) {
  std::vector<SafeTensorsWriteEntry> entries;
  for (auto &[name, t] : tensors)
    entries.push_back({name, fromDType(t.dtype()), t.shape(), t.data()});
  writeSafeTensors(path, entries, metadata);
}

} // namespace hybrid
