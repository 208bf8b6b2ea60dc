// Reading and writing safetensors files (HuggingFace's checkpoint format): a
// little-endian u64 header length, a JSON header, then raw tensor bytes.
#pragma once

#include "hybrid/HostTensor.h"
#include "hybrid/Types.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hybrid {

/// Element types a safetensors file may hold that this runtime reads.
enum class SafeTensorsDType : uint8_t { F32, F16, BF16, I64, I32, BOOL, U8 };

/// "F32", "BF16", ... as written in the header.
const char *safeTensorsDTypeName(SafeTensorsDType t);
size_t safeTensorsDTypeSize(SafeTensorsDType t);
/// The runtime DType whose bytes `t` holds as they are (every type but U8).
std::optional<DType> toDType(SafeTensorsDType t);
/// The safetensors type of a runtime DType (each has one).
SafeTensorsDType fromDType(DType t);
/// True when a tensor of `from` can be read as `to`: F32/F16/BF16 as any
/// float dtype, I32/I64 as either integer dtype (narrowing checks every
/// value), BOOL/U8 as bool.
bool safeTensorsConvertible(SafeTensorsDType from, DType to);

/// One tensor of an open file: a view into the mapped bytes. The bytes may
/// be unaligned; read them with memcpy or the converters below.
struct SafeTensorsEntry {
  std::string name;
  SafeTensorsDType dtype;
  Shape shape;
  const uint8_t *data = nullptr;
  size_t bytes = 0;

  int64_t numel() const { return numElements(shape); }
};

/// A validated, memory-mapped safetensors file.
///
/// Opening checks the whole header: sizes, dtypes, that every tensor's byte
/// range lies in the file, matches shape x dtype and overlaps no other.
/// Ownership: move-only; entries point into the mapping and die with it.
/// Thread safety: const methods may be called concurrently.
class SafeTensorsFile {
public:
  /// Throws hybrid::Error, one line naming the file (and tensor), on any
  /// problem.
  static SafeTensorsFile open(const std::string &path);
  SafeTensorsFile(SafeTensorsFile &&) noexcept;
  SafeTensorsFile &operator=(SafeTensorsFile &&) noexcept;
  ~SafeTensorsFile();

  const std::string &path() const;
  /// Tensors in the order of their data in the file.
  const std::vector<SafeTensorsEntry> &entries() const;
  /// nullptr when absent.
  const SafeTensorsEntry *find(const std::string &name) const;
  /// Throws hybrid::Error "FILE: no tensor 'name'" when absent.
  const SafeTensorsEntry &get(const std::string &name) const;
  /// The `__metadata__` string map (empty when absent).
  const std::map<std::string, std::string> &metadata() const;

  /// The tensor as float32 (from F32, F16 or BF16; else hybrid::Error).
  std::vector<float> toF32(const SafeTensorsEntry &e) const;
  /// A host tensor with the tensor's elements converted to `dtype` by the
  /// rules of safeTensorsConvertible (floats round to nearest even, bool is
  /// "nonzero"). Any other pairing, or an I64 value that does not fit an
  /// I32 tensor, is a hybrid::Error naming the tensor and both dtypes.
  HostTensor toHost(const SafeTensorsEntry &e, DType dtype) const;
  /// Converts into `dst` (numel elements of `dtype`), same rules as toHost;
  /// writes nothing when it throws.
  void convertInto(const SafeTensorsEntry &e, DType dtype, void *dst) const;

private:
  struct Impl;
  explicit SafeTensorsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A tensor to write: `data` holds numel * size(dtype) bytes.
struct SafeTensorsWriteEntry {
  std::string name;
  SafeTensorsDType dtype = SafeTensorsDType::F32;
  Shape shape;
  const void *data = nullptr;
};

/// Writes a safetensors file atomically (temp file + rename). The header is
/// padded with spaces to a multiple of 8 bytes so data starts aligned.
/// Throws hybrid::Error on duplicate or reserved names or I/O failure.
void writeSafeTensors(const std::string &path,
                      const std::vector<SafeTensorsWriteEntry> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

/// Writes host tensors by name, each in its own dtype.
void writeSafeTensors(const std::string &path, const NamedTensors &tensors,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace hybrid
