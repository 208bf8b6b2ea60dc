// Whether two paths name one file, for tools that must not write over their
// own inputs (header-only; POSIX).
#pragma once

#include <string>
#include <sys/stat.h>

namespace hybrid {

/// True when `a` and `b` both exist and are the same file: same device and
/// inode after following symlinks, so "x", "./x", "d/../x", a symlink to x
/// and a hard link of x all match, whatever their spelling.
inline bool isSameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace hybrid
