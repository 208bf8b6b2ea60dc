// Whole-file access for the runtime's loaders: read-only memory maps and
// atomic writes (temp file + rename). Part of hybrid_bundle; the runtime and
// the tools use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace hybrid::detail {

/// A read-only view of a whole file, memory-mapped. Move-only; the bytes stay
/// valid until the object is destroyed. Opening throws hybrid::Error naming
/// the file (missing, a directory, unreadable).
class MappedFile {
public:
  MappedFile() = default;
  explicit MappedFile(const std::string &path);
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  void reset();
  std::string path_;
  void *mapping_ = nullptr; // what munmap takes; readers see data_
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

/// Streams bytes into a file that only appears at `path` once complete:
/// `produce` writes through `write`, then the temp file is flushed, synced
/// and renamed over `path`. On any failure the temp file is removed and a
/// hybrid::Error naming `path` is thrown. A symlink at `path` is followed
/// (its target is replaced, the link stays); an existing file that is not a
/// regular one (/dev/null, another device, a FIFO) is written in place.
using ByteSink = std::function<void(const void *data, size_t size)>;
void writeFileAtomically(const std::string &path,
                         const std::function<void(const ByteSink &)> &produce);

/// True when `path` names an existing directory.
bool isDirectory(const std::string &path);
/// True when `path` names an existing file or directory.
bool pathExists(const std::string &path);

/// The OS error text for errno `err`, e.g. "No such file or directory".
std::string systemError(int err);

} // namespace hybrid::detail
