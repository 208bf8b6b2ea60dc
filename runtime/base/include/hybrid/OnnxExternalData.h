// ONNX external data (a TensorProto whose bytes live in another file, as
// onnx.save_model and torch.onnx.export write models over 2 GB): how its
// reference is read and checked, shared by the ONNX frontend and the runtime
// reader so both accept and refuse the same files (header-only; no
// dependency beyond the C++ library).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hybrid {

/// TensorProto.external_data: the file (relative to the model's folder),
/// and the byte range of the tensor in it.
struct OnnxExternalRef {
  std::string location;
  uint64_t offset = 0;
  bool hasLength = false;
  uint64_t length = 0;
};

namespace detail {

/// A decimal byte count as external_data writes it; false when it is not
/// one (empty, a sign, other characters, more than 64 bits).
inline bool parseByteCount(const std::string &text, uint64_t &value) {
  if (text.empty() || text.size() > 20)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  return true;
}

} // namespace detail

/// Reads the reference from TensorProto.external_data's key/value entries
/// ("location", "offset", "length"; others such as "checksum" are ignored).
/// Returns "" or what is wrong, for a message naming the tensor. A location
/// must stay inside the model's folder: no absolute path, no ".." part
/// (with '/' or '\' as separators), no empty name.
inline std::string parseOnnxExternalRef(
    const std::vector<std::pair<std::string, std::string>> &entries,
    OnnxExternalRef &ref) {
  bool hasLocation = false;
  for (const auto &[key, value] : entries) {
    if (key == "location") {
      ref.location = value;
      hasLocation = true;
    } else if (key == "offset") {
      if (!detail::parseByteCount(value, ref.offset))
        return "external data offset '" + value + "' is not a byte count";
    } else if (key == "length") {
      if (!detail::parseByteCount(value, ref.length))
        return "external data length '" + value + "' is not a byte count";
      ref.hasLength = true;
    }
  }
  if (!hasLocation || ref.location.empty())
    return "external data has no location";
  if (ref.location.find('\0') != std::string::npos)
    return "external data location holds a NUL byte";
  if (ref.location[0] == '/' || ref.location[0] == '\\' ||
      (ref.location.size() > 1 && ref.location[1] == ':'))
    return "external data location '" + ref.location +
           "' is an absolute path; it must be relative to the model's folder";
  size_t start = 0;
  while (start <= ref.location.size()) {
    size_t end = ref.location.find_first_of("/\\", start);
    if (end == std::string::npos)
      end = ref.location.size();
    if (ref.location.compare(start, end - start, "..") == 0)
      return "external data location '" + ref.location +
             "' leaves the model's folder";
    start = end + 1;
  }
  return "";
}

/// Checks the byte range of `ref` against the data file's size and the
/// tensor's size (`want` bytes), and sets `length` (from the reference, or
/// the rest of the file). Returns "" or what is wrong.
inline std::string checkOnnxExternalRange(const OnnxExternalRef &ref,
                                          uint64_t fileSize, uint64_t want,
                                          uint64_t &length) {
  if (ref.offset > fileSize)
    return "external data offset " + std::to_string(ref.offset) +
           " is past the end of '" + ref.location + "' (" +
           std::to_string(fileSize) + " bytes)";
  length = ref.hasLength ? ref.length : fileSize - ref.offset;
  if (length > fileSize - ref.offset)
    return "external data at offset " + std::to_string(ref.offset) +
           " with length " + std::to_string(length) +
           " runs past the end of '" + ref.location + "' (" +
           std::to_string(fileSize) + " bytes)";
  if (length != want)
    return "external data holds " + std::to_string(length) + " bytes, " +
           "the tensor needs " + std::to_string(want);
  return "";
}

} // namespace hybrid
