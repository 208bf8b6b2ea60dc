// The shared fixtures' safetensors files read into HostTensors, for the
// kernel tests that compare against them (ModelParityTest, RlhfOpsTest).
#pragma once

#include "KernelTestSupport.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace hybrid::cpu::test {

/// The tensors of a safetensors file, by name (F32 and I64 only).
inline std::map<std::string, HostTensor>
readSafeTensors(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  uint64_t headerSize = 0;
  in.read(reinterpret_cast<char *>(&headerSize), 8);
  std::string header(headerSize, '\0');
  in.read(header.data(), headerSize);
  std::stringstream rest;
  rest << in.rdbuf();
  const std::string data = rest.str();
  std::map<std::string, HostTensor> tensors;
  const nlohmann::json index = nlohmann::json::parse(header);
  for (auto &[name, info] : index.items()) {
    if (name == "__metadata__")
      continue;
    std::string dtype = info["dtype"];
    HostTensor t(dtype == "I64" ? DType::I64 : DType::F32,
                 info["shape"].get<Shape>());
    EXPECT_TRUE(dtype == "F32" || dtype == "I64") << name << " " << dtype;
    size_t begin = info["data_offsets"][0], end = info["data_offsets"][1];
    EXPECT_EQ(end - begin, t.numel() * dtypeSize(t.dtype)) << name;
    std::memcpy(t.b(), data.data() + begin, end - begin);
    tensors.emplace(name, std::move(t));
  }
  return tensors;
}

} // namespace hybrid::cpu::test
