// ConversionTable: registration and opset lookup.
#include "frontends/onnx/ConversionTable.h"

#include <algorithm>

namespace hybridc::onnx {

void ConversionTable::add(llvm::StringRef opType, int sinceVersion,
                          ConversionFn fn) {
  handlers_[opType][sinceVersion] = fn;
}

void ConversionTable::add(llvm::StringRef opType,
                          std::initializer_list<int> sinceVersions,
                          ConversionFn fn) {
  for (int v : sinceVersions)
    add(opType, v, fn);
}

ConversionFn ConversionTable::lookup(llvm::StringRef opType,
                                     int64_t opset) const {
  auto it = handlers_.find(opType);
  if (it == handlers_.end())
    return nullptr;
  const std::map<int, ConversionFn> &versions = it->second;
  auto v = versions.upper_bound(static_cast<int>(opset));
  if (v == versions.begin())
    return nullptr;
  return std::prev(v)->second;
}

std::vector<std::string> ConversionTable::opTypes() const {
  std::vector<std::string> ops;
  for (const auto &entry : handlers_)
    ops.push_back(entry.getKey().str());
  std::sort(ops.begin(), ops.end());
  return ops;
}

const ConversionTable &ConversionTable::get() {
  static const ConversionTable table = [] {
    ConversionTable t;
    registerElementwiseConversions(t);
    registerShapeConversions(t);
    registerTensorConversions(t);
    registerNnConversions(t);
    return t;
  }();
  return table;
}

} // namespace hybridc::onnx
