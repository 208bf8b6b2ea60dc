// A protobuf wire-format writer for building ONNX files by hand in tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid::test {

/// Builds protobuf wire-format bytes by hand.
class Proto {
public:
  Proto &varint(uint32_t field, uint64_t v) {
    key(field, 0);
    raw(v);
    return *this;
  }
  Proto &bytes(uint32_t field, const std::string &b) {
    key(field, 2);
    raw(b.size());
    out_ += b;
    return *this;
  }
  Proto &message(uint32_t field, const Proto &m) {
    return bytes(field, m.out_);
  }
  Proto &fixed32(uint32_t field, uint32_t v) {
    key(field, 5);
    out_.append(reinterpret_cast<const char *>(&v), 4);
    return *this;
  }
  /// A packed repeated varint field.
  Proto &packedVarints(uint32_t field, const std::vector<int64_t> &vs) {
    Proto p;
    for (int64_t v : vs)
      p.raw(static_cast<uint64_t>(v));
    return bytes(field, p.out_);
  }
  Proto &packedFloats(uint32_t field, const std::vector<float> &vs) {
    return bytes(field, std::string(reinterpret_cast<const char *>(vs.data()),
                                    vs.size() * 4));
  }
  const std::string &str() const { return out_; }
  std::vector<uint8_t> vec() const { return {out_.begin(), out_.end()}; }

private:
  void key(uint32_t field, int wire) { raw((uint64_t(field) << 3) | wire); }
  void raw(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

/// ModelProto{ir_version, producer, graph{node, initializers..., name}}.
inline Proto onnxModel(const std::vector<Proto> &initializers) {
  Proto graph;
  graph.message(1, Proto().bytes(1, "x").bytes(2, "y").bytes(4, "Relu"));
  for (const Proto &t : initializers)
    graph.message(5, t);
  graph.bytes(2, "g");
  Proto m;
  m.varint(1, 8).bytes(2, "test").message(8, Proto().varint(2, 18));
  m.message(7, graph);
  return m;
}

} // namespace hybrid::test
