// Memory-mapped reads and atomic writes (POSIX).
#include "hybrid/FileIO.h"

#include "hybrid/Types.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hybrid::detail {

std::string systemError(int err) { return std::strerror(err); }

MappedFile::MappedFile(const std::string &path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open: " + systemError(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + systemError(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": is a directory, expected a file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(path + ": cannot map: " + systemError(err));
    }
    mapping_ = p;
    data_ = static_cast<const uint8_t *>(p);
  }
  ::close(fd); // the mapping keeps the file alive
}

MappedFile::MappedFile(MappedFile &&other) noexcept {
  *this = std::move(other);
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    mapping_ = other.mapping_;
    data_ = other.data_;
    size_ = other.size_;
    other.mapping_ = nullptr;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (mapping_)
    ::munmap(mapping_, size_);
  mapping_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

namespace {

/// `path` with symlinks in its last component followed (also dangling ones,
/// whose target does not exist yet), so that writing the result keeps the
/// links. Gives up on loops and returns the last path reached.
std::string followSymlinks(std::string path) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return path;
    std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
    ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size())
      return path;
    target.resize(static_cast<size_t>(n));
    size_t slash = path.rfind('/');
    if (target[0] != '/' && slash != std::string::npos)
      target = path.substr(0, slash + 1) + target;
    path = target;
  }
  return path;
}

/// Streams into an existing file that is not a regular one (a device such
/// as /dev/null, a FIFO): renaming a temp file over it would replace the
/// device node with a regular file.
void writeInPlace(const std::string &path, const std::string &target,
                  const std::function<void(const ByteSink &)> &produce) {
  int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open for writing: " + systemError(errno));
  ByteSink sink = [&](const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      ssize_t n = ::write(fd, p, size);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        throw Error(path + ": cannot write: " + systemError(errno));
      p += n;
      size -= static_cast<size_t>(n);
    }
  };
  try {
    produce(sink);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0)
    throw Error(path + ": cannot close: " + systemError(errno));
}

} // namespace

void writeFileAtomically(const std::string &path,
                         const std::function<void(const ByteSink &)> &produce) {
  // Only a regular file (or a new one) is replaced by a rename; a symlink
  // is followed and its target replaced.
  // stat() follows the links itself: /dev/stdout into a pipe is
  // /proc/self/fd/1 -> "pipe:[N]", no path a temp file could sit beside.
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) &&
      !S_ISDIR(existing.st_mode))
    return writeInPlace(path, path, produce);
  std::string target = followSymlinks(path);
  static std::atomic<unsigned> counter{0};
  std::string tmp = target + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(path + ": cannot create: " + systemError(errno));
  auto fail = [&](const std::string &what, int err) {
    ::close(fd);
    fd = -1;
    ::unlink(tmp.c_str());
    throw Error(path + ": " + what + ": " + systemError(err));
  };
  ByteSink sink = [&](const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      ssize_t n = ::write(fd, p, size);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        fail("cannot write", errno);
      }
      p += n;
      size -= static_cast<size_t>(n);
    }
  };
  try {
    produce(sink);
  } catch (...) {
    // `fail` already cleaned up (fd = -1) when the sink threw.
    if (fd >= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
    }
    throw;
  }
  if (::fsync(fd) != 0)
    fail("cannot sync", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": cannot close: " + systemError(err));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(path +
                ": cannot rename temp file into place: " + systemError(err));
  }
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool pathExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

} // namespace hybrid::detail
