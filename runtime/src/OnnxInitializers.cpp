// ONNX initializers through a minimal protobuf wire-format decoder. Only the
// path ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto is
// decoded; everything else is skipped by wire type. External data is mapped
// from its files beside the model.
#include "hybrid/OnnxInitializers.h"

#include "hybrid/FileIO.h"
#include "hybrid/Float16.h"
#include "hybrid/OnnxElementTypes.h"
#include "hybrid/OnnxExternalData.h"
#include "hybrid/SizeMath.h"
#include "hybrid/SafeTensors.h"

#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace hybrid {

namespace {

// onnx.TensorProto.DataType values this reader decodes (names, sizes and
// what each converts to come from hybrid/OnnxElementTypes.h).
enum OnnxType : int32_t {
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct WireError {
  std::string msg;
};

/// Reads protobuf wire format from a byte range. Every read is bounds
/// checked and throws WireError on malformed input.
class WireReader {
public:
  WireReader(const uint8_t *begin, const uint8_t *end) : p_(begin), end_(end) {}

  bool done() const { return p_ >= end_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_)
        throw WireError{"truncated varint"};
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    throw WireError{"varint longer than 10 bytes"};
  }

  /// Field number and wire type of the next field.
  std::pair<uint32_t, int> tag() {
    uint64_t t = varint();
    uint64_t field = t >> 3;
    if (field == 0 || field > 0x1fffffff)
      throw WireError{"invalid field number " + std::to_string(field)};
    return {static_cast<uint32_t>(field), static_cast<int>(t & 7)};
  }

  std::pair<const uint8_t *, size_t> bytes() {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_))
      throw WireError{"length-delimited field of " + std::to_string(n) +
                      " bytes runs past its message (truncated file?)"};
    const uint8_t *b = p_;
    p_ += n;
    return {b, static_cast<size_t>(n)};
  }

  uint32_t fixed32() {
    if (end_ - p_ < 4)
      throw WireError{"truncated fixed32"};
    uint32_t v;
    std::memcpy(&v, p_, 4);
    p_ += 4;
    return v;
  }

  uint64_t fixed64() {
    if (end_ - p_ < 8)
      throw WireError{"truncated fixed64"};
    uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }

  void skip(int wire) {
    switch (wire) {
    case kVarint:
      varint();
      return;
    case kFixed64:
      fixed64();
      return;
    case kLengthDelimited:
      bytes();
      return;
    case kFixed32:
      fixed32();
      return;
    default:
      throw WireError{"unsupported wire type " + std::to_string(wire)};
    }
  }

private:
  const uint8_t *p_;
  const uint8_t *end_;
};

/// Appends the values of a repeated scalar field, packed or not. `one` reads
/// a single value of the field's scalar wire type `scalarWire`.
template <typename T, typename ReadOne>
void repeated(WireReader &r, int wire, int scalarWire, std::vector<T> &out,
              ReadOne one, const char *field) {
  if (wire == scalarWire) {
    out.push_back(one(r));
  } else if (wire == kLengthDelimited) {
    auto [b, n] = r.bytes();
    WireReader packed(b, b + n);
    while (!packed.done())
      out.push_back(one(packed));
  } else {
    throw WireError{std::string("TensorProto.") + field + " has wire type " +
                    std::to_string(wire)};
  }
}

/// The typed-field contents of one TensorProto before conversion to bytes.
struct TensorFields {
  std::vector<int64_t> dims;
  int32_t dataType = 0;
  std::string name;
  const uint8_t *raw = nullptr;
  size_t rawBytes = 0;
  bool hasRaw = false;
  std::vector<float> floats;
  std::vector<int64_t> int32s; // int32_data, widened
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
  size_t strings = 0;
  bool external = false;
  std::vector<std::pair<std::string, std::string>> externalData;
};

TensorFields readTensor(const uint8_t *b, size_t n) {
  TensorFields t;
  WireReader r(b, b + n);
  auto asVarint = [](WireReader &w) {
    return static_cast<int64_t>(w.varint());
  };
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
    case 1:
      repeated(r, wire, kVarint, t.dims, asVarint, "dims");
      break;
    case 2:
      if (wire != kVarint)
        throw WireError{"TensorProto.data_type has wire type " +
                        std::to_string(wire)};
      t.dataType = static_cast<int32_t>(r.varint());
      break;
    case 4:
      repeated(
          r, wire, kFixed32, t.floats,
          [](WireReader &w) {
            uint32_t bits = w.fixed32();
            float f;
            std::memcpy(&f, &bits, 4);
            return f;
          },
          "float_data");
      break;
    case 5:
      repeated(
          r, wire, kVarint, t.int32s,
          [](WireReader &w) {
            return static_cast<int64_t>(static_cast<int32_t>(w.varint()));
          },
          "int32_data");
      break;
    case 6:
      if (wire != kLengthDelimited)
        throw WireError{"TensorProto.string_data has wire type " +
                        std::to_string(wire)};
      r.bytes();
      ++t.strings;
      break;
    case 7:
      repeated(r, wire, kVarint, t.int64s, asVarint, "int64_data");
      break;
    case 8: {
      if (wire != kLengthDelimited)
        throw WireError{"TensorProto.name has wire type " +
                        std::to_string(wire)};
      auto [s, len] = r.bytes();
      t.name.assign(reinterpret_cast<const char *>(s), len);
      break;
    }
    case 9: {
      if (wire != kLengthDelimited)
        throw WireError{"TensorProto.raw_data has wire type " +
                        std::to_string(wire)};
      auto [s, len] = r.bytes();
      t.raw = s;
      t.rawBytes = len;
      t.hasRaw = true;
      break;
    }
    case 10:
      repeated(
          r, wire, kFixed64, t.doubles,
          [](WireReader &w) {
            uint64_t bits = w.fixed64();
            double d;
            std::memcpy(&d, &bits, 8);
            return d;
          },
          "double_data");
      break;
    case 11:
      repeated(
          r, wire, kVarint, t.uint64s, [](WireReader &w) { return w.varint(); },
          "uint64_data");
      break;
    case 13: { // external_data: StringStringEntryProto {key = 1, value = 2}
      if (wire != kLengthDelimited)
        throw WireError{"TensorProto.external_data has wire type " +
                        std::to_string(wire)};
      auto [eb, en] = r.bytes();
      WireReader entry(eb, eb + en);
      std::pair<std::string, std::string> kv;
      while (!entry.done()) {
        auto [efield, ewire] = entry.tag();
        if ((efield == 1 || efield == 2) && ewire == kLengthDelimited) {
          auto [s, len] = entry.bytes();
          (efield == 1 ? kv.first : kv.second)
              .assign(reinterpret_cast<const char *>(s), len);
        } else {
          entry.skip(ewire);
        }
      }
      t.externalData.push_back(std::move(kv));
      t.external = true;
      break;
    }
    case 14:
      if (wire != kVarint)
        throw WireError{"TensorProto.data_location has wire type " +
                        std::to_string(wire)};
      if (r.varint() == 1)
        t.external = true;
      break;
    default:
      r.skip(wire);
    }
  }
  return t;
}

template <typename T> T load(const uint8_t *p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

} // namespace

std::string onnxDataTypeName(int32_t t) { return onnxElementTypeName(t); }

struct OnnxInitializers::Impl {
  std::string path;
  detail::MappedFile file;
  /// External data files by location, mapped once; entries point into them.
  std::map<std::string, detail::MappedFile> dataFiles;
  std::vector<std::string> dataFilePaths;
  std::vector<OnnxInitializer> entries;
  std::unordered_map<std::string, size_t> byName;
  std::deque<std::vector<uint8_t>> decoded; // stable storage for entries' data
};

OnnxInitializers::OnnxInitializers(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
OnnxInitializers::OnnxInitializers(OnnxInitializers &&) noexcept = default;
OnnxInitializers &
OnnxInitializers::operator=(OnnxInitializers &&) noexcept = default;
OnnxInitializers::~OnnxInitializers() = default;

const std::string &OnnxInitializers::path() const { return impl_->path; }
const std::vector<OnnxInitializer> &OnnxInitializers::entries() const {
  return impl_->entries;
}
const std::vector<std::string> &OnnxInitializers::dataFiles() const {
  return impl_->dataFilePaths;
}
const OnnxInitializer *OnnxInitializers::find(const std::string &name) const {
  auto it = impl_->byName.find(name);
  return it == impl_->byName.end() ? nullptr : &impl_->entries[it->second];
}

OnnxInitializers OnnxInitializers::read(const std::string &path) {
  detail::MappedFile file(path);
  const uint8_t *data = file.data();
  size_t size = file.size();
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  OnnxInitializers result = parseModel(data, size, path, &folder);
  result.impl_->file = std::move(file); // the entries point into the mapping
  return result;
}

OnnxInitializers OnnxInitializers::parse(const uint8_t *data, size_t size,
                                         const std::string &what) {
  return parseModel(data, size, what, nullptr);
}

OnnxInitializers OnnxInitializers::parseModel(const uint8_t *data, size_t size,
                                              const std::string &what,
                                              const std::string *folder) {
  auto impl = std::make_unique<Impl>();
  impl->path = what;
  auto fail = [&](const std::string &msg) { throw Error(what + ": " + msg); };
  std::string current; // the tensor being decoded, for error messages
  // Points `e` at its bytes in an external data file beside the model
  // (mapped once per file), after checking the reference.
  auto readExternal =
      [&](const std::vector<std::pair<std::string, std::string>> &entries,
          uint64_t want, OnnxInitializer &e) {
        OnnxExternalRef ref;
        std::string problem = parseOnnxExternalRef(entries, ref);
        if (!problem.empty())
          fail(current + ": " + problem);
        auto it = impl->dataFiles.find(ref.location);
        if (it == impl->dataFiles.end()) {
          std::string dataPath = *folder + "/" + ref.location;
          try {
            it = impl->dataFiles
                     .emplace(ref.location, detail::MappedFile(dataPath))
                     .first;
          } catch (const Error &err) {
            fail(current + ": external data: " + err.what());
          }
          impl->dataFilePaths.push_back(dataPath);
        }
        const detail::MappedFile &file = it->second;
        uint64_t length;
        problem = checkOnnxExternalRange(ref, file.size(), want, length);
        if (!problem.empty())
          fail(current + ": " + problem);
        e.data = file.data() ? file.data() + ref.offset : nullptr;
        e.bytes = static_cast<size_t>(length);
      };
  if (size == 0)
    fail("not an ONNX model: the file is empty");
  bool sawGraph = false;
  try {
    WireReader model(data, data + size);
    while (!model.done()) {
      auto [field, wire] = model.tag();
      if (field != 7 || wire != kLengthDelimited) {
        model.skip(wire);
        continue;
      }
      sawGraph = true;
      auto [g, gn] = model.bytes();
      WireReader graph(g, g + gn);
      while (!graph.done()) {
        auto [gfield, gwire] = graph.tag();
        if (gfield != 5 || gwire != kLengthDelimited) {
          graph.skip(gwire);
          continue;
        }
        auto [tb, tn] = graph.bytes();
        current = "initializer " + std::to_string(impl->entries.size());
        TensorFields t = readTensor(tb, tn);
        if (!t.name.empty())
          current = "initializer '" + t.name + "'";
        if (t.name.empty())
          fail(current + " has no name");
        if (t.external && !folder)
          fail(current + " keeps its data outside the model file (ONNX "
                         "external data); read the model from its file, "
                         "beside its data file");
        OnnxInitializer e;
        e.name = t.name;
        e.dataType = t.dataType;
        e.shape = t.dims;
        int64_t numel = detail::checkedNumel(e.shape);
        if (numel < 0)
          fail(current + " has invalid dims " + shapeToString(e.shape));
        size_t esize = onnxElementSize(t.dataType);
        if (esize) {
          int64_t want;
          if (detail::mulOverflows(numel, static_cast<int64_t>(esize), want))
            fail(current + " is too large");
          if (t.external) {
            readExternal(t.externalData, static_cast<uint64_t>(want), e);
          } else if (t.hasRaw) {
            if (t.rawBytes != static_cast<uint64_t>(want))
              fail(current + ": raw_data holds " + std::to_string(t.rawBytes) +
                   " bytes but " + onnxDataTypeName(t.dataType) + " " +
                   shapeToString(e.shape) + " needs " + std::to_string(want));
            e.data = t.raw;
            e.bytes = t.rawBytes;
          } else {
            // Typed fields: re-encode as the element type's natural bytes.
            std::vector<uint8_t> bytes(static_cast<size_t>(want));
            size_t count = 0;
            auto put = [&](auto value, size_t i) {
              std::memcpy(bytes.data() + i * esize, &value, esize);
            };
            auto check = [&](size_t have, const char *field) {
              if (have != static_cast<uint64_t>(numel))
                fail(current + ": " + field + " holds " + std::to_string(have) +
                     " values but dims " + shapeToString(e.shape) + " need " +
                     std::to_string(numel));
              count = have;
            };
            switch (t.dataType) {
            case kFloat:
              check(t.floats.size(), "float_data");
              for (size_t i = 0; i < count; ++i)
                put(t.floats[i], i);
              break;
            case kInt64:
              check(t.int64s.size(), "int64_data");
              for (size_t i = 0; i < count; ++i)
                put(t.int64s[i], i);
              break;
            case kDouble:
              check(t.doubles.size(), "double_data");
              for (size_t i = 0; i < count; ++i)
                put(t.doubles[i], i);
              break;
            case kUint32:
              check(t.uint64s.size(), "uint64_data");
              for (size_t i = 0; i < count; ++i)
                put(static_cast<uint32_t>(t.uint64s[i]), i);
              break;
            case kUint64:
              check(t.uint64s.size(), "uint64_data");
              for (size_t i = 0; i < count; ++i)
                put(t.uint64s[i], i);
              break;
            default: // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BF16
              check(t.int32s.size(), "int32_data");
              for (size_t i = 0; i < count; ++i) {
                // Little-endian: the low `esize` bytes are the element.
                uint64_t v = static_cast<uint64_t>(t.int32s[i]);
                std::memcpy(bytes.data() + i * esize, &v, esize);
              }
            }
            impl->decoded.push_back(std::move(bytes));
            e.data = impl->decoded.back().data();
            e.bytes = impl->decoded.back().size();
          }
        }
        if (!impl->byName.emplace(e.name, impl->entries.size()).second)
          fail("two initializers are named '" + e.name + "'");
        impl->entries.push_back(std::move(e));
      }
    }
  } catch (const WireError &err) {
    if (!sawGraph)
      fail("not an ONNX model (" + err.msg + ")");
    fail("corrupt ONNX model: " + err.msg +
         (current.empty() ? "" : " (in " + current + ")"));
  }
  if (!sawGraph)
    fail("not an ONNX model (no graph)");
  return OnnxInitializers(std::move(impl));
}

void OnnxInitializers::convertInto(const OnnxInitializer &e, DType dtype,
                                   void *dst) const {
  size_t n = static_cast<size_t>(e.numel());
  const uint8_t *src = e.data;
  auto bad = [&]() {
    throw Error(path() + ": initializer '" + e.name + "' is " +
                onnxDataTypeName(e.dataType) + ", cannot be read as " +
                dtypeName(dtype));
  };
  OnnxValueClass want = dtype == DType::F32   ? OnnxValueClass::Float
                        : dtype == DType::I64 ? OnnxValueClass::Integer
                                              : OnnxValueClass::Bool;
  if (!onnxElementSize(e.dataType) || onnxValueClass(e.dataType) != want)
    bad();
  switch (dtype) {
  case DType::F32: {
    float *out = static_cast<float *>(dst);
    switch (e.dataType) {
    case kFloat:
      if (n)
        std::memcpy(out, src, n * 4);
      return;
    case kFloat16:
      for (size_t i = 0; i < n; ++i)
        out[i] = f16ToFloat(load<uint16_t>(src, i));
      return;
    case kBfloat16:
      for (size_t i = 0; i < n; ++i)
        out[i] = bf16ToFloat(load<uint16_t>(src, i));
      return;
    case kDouble:
      for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(load<double>(src, i));
      return;
    }
    break;
  }
  case DType::I64: {
    int64_t *out = static_cast<int64_t *>(dst);
    switch (e.dataType) {
    case kInt64:
      if (n)
        std::memcpy(out, src, n * 8);
      return;
    case kInt32:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<int32_t>(src, i);
      return;
    case kInt16:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<int16_t>(src, i);
      return;
    case kInt8:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<int8_t>(src, i);
      return;
    case kUint8:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<uint8_t>(src, i);
      return;
    case kUint16:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<uint16_t>(src, i);
      return;
    case kUint32:
      for (size_t i = 0; i < n; ++i)
        out[i] = load<uint32_t>(src, i);
      return;
    case kUint64:
      for (size_t i = 0; i < n; ++i) {
        uint64_t v = load<uint64_t>(src, i);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          throw Error(path() + ": initializer '" + e.name +
                      "' holds the UINT64 value " + std::to_string(v) +
                      ", which does not fit in i64");
        out[i] = static_cast<int64_t>(v);
      }
      return;
    }
    break;
  }
  case DType::Bool: {
    bool *out = static_cast<bool *>(dst);
    if (e.dataType == kBool) {
      for (size_t i = 0; i < n; ++i)
        out[i] = src[i] != 0;
      return;
    }
    break;
  }
  case DType::BF16:
  case DType::F16:
  case DType::I32:
    // The weight store reads these through F32 and I64 and narrows itself.
    break;
  }
  bad();
}

std::vector<float> OnnxInitializers::toF32(const OnnxInitializer &e) const {
  std::vector<float> out(static_cast<size_t>(e.numel()));
  convertInto(e, DType::F32, out.data());
  return out;
}

} // namespace hybrid
