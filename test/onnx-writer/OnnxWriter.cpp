// onnx-writer: makes the ONNX models the lit tests need, where Python's onnx
// package may be absent. `from-text` turns protobuf text format into a model
// file; `externalize` re-saves a model with its initializers as external
// data (what torch.onnx.export and onnx.save_model write for large models).
#include <onnx/onnx_pb.h>

#include <google/protobuf/text_format.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr const char *kUsage =
    "usage: onnx-writer from-text MODEL.textproto OUT.onnx\n"
    "       onnx-writer externalize IN.onnx OUT.onnx [--location LOC]\n"
    "  externalize moves every initializer's bytes into one file, LOC\n"
    "  (default: OUT's file name + \".data\") relative to OUT's folder,\n"
    "  written where LOC points even if it leaves that folder (for tests of\n"
    "  references a reader must refuse).\n";

int fail(const std::string &msg) {
  std::fprintf(stderr, "onnx-writer: error: %s\n", msg.c_str());
  return 1;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

bool writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out.flush());
}

template <typename T, typename Field> std::string packed(const Field &field) {
  std::string bytes;
  for (auto v : field) {
    T t = static_cast<T>(v);
    bytes.append(reinterpret_cast<const char *>(&t), sizeof t);
  }
  return bytes;
}

/// The tensor's elements as little-endian raw bytes; false for typed
/// fields this tool does not convert (they stay inline).
bool rawBytes(const onnx::TensorProto &t, std::string &bytes) {
  if (t.has_raw_data()) {
    bytes = t.raw_data();
    return true;
  }
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    bytes = packed<float>(t.float_data());
    return true;
  case onnx::TensorProto::DOUBLE:
    bytes = packed<double>(t.double_data());
    return true;
  case onnx::TensorProto::INT64:
    bytes = packed<int64_t>(t.int64_data());
    return true;
  case onnx::TensorProto::INT32:
    bytes = packed<int32_t>(t.int32_data());
    return true;
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::UINT8:
    bytes = packed<uint8_t>(t.int32_data());
    return true;
  default:
    return false;
  }
}

void setEntry(onnx::TensorProto &t, const char *key, const std::string &value) {
  onnx::StringStringEntryProto *e = t.add_external_data();
  e->set_key(key);
  e->set_value(value);
}

int fromText(const std::string &in, const std::string &out) {
  std::string text;
  if (!readFile(in, text))
    return fail("cannot read " + in);
  onnx::ModelProto model;
  if (!google::protobuf::TextFormat::ParseFromString(text, &model))
    return fail(in + ": not a ModelProto in protobuf text format");
  std::string bytes;
  if (!model.SerializeToString(&bytes) || !writeFile(out, bytes))
    return fail("cannot write " + out);
  return 0;
}

int externalize(const std::string &in, const std::string &out,
                std::string location) {
  std::string bytes;
  onnx::ModelProto model;
  if (!readFile(in, bytes) || !model.ParseFromString(bytes))
    return fail("cannot read the ONNX model " + in);
  size_t slash = out.rfind('/');
  std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
  if (location.empty())
    location = out.substr(slash == std::string::npos ? 0 : slash + 1) + ".data";
  std::string data;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    std::string raw;
    if (!rawBytes(t, raw))
      continue;
    // 64-byte aligned offsets, as onnx's external-data writer may use.
    data.resize((data.size() + 63) / 64 * 64, '\0');
    std::string offset = std::to_string(data.size());
    data += raw;
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    setEntry(t, "location", location);
    setEntry(t, "offset", offset);
    setEntry(t, "length", std::to_string(raw.size()));
  }
  std::string dataPath = location[0] == '/' ? location : dir + "/" + location;
  std::string modelBytes;
  if (!writeFile(dataPath, data))
    return fail("cannot write " + dataPath);
  if (!model.SerializeToString(&modelBytes) || !writeFile(out, modelBytes))
    return fail("cannot write " + out);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::strcmp(argv[1], "from-text") == 0)
    return fromText(argv[2], argv[3]);
  if ((argc == 4 || (argc == 6 && std::strcmp(argv[4], "--location") == 0)) &&
      std::strcmp(argv[1], "externalize") == 0)
    return externalize(argv[2], argv[3], argc == 6 ? argv[5] : "");
  std::fputs(kUsage, stderr);
  return 2;
}
