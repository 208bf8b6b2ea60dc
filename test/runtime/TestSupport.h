// Helpers shared by the runtime unit tests: temp dirs, file bytes, and an
// expectation that a call throws hybrid::Error with a given message part.
#pragma once

#include "hybrid/Types.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace hybrid::test {

/// A fresh directory under the system temp dir, removed with its files.
class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/hybrid-runtime-test-XXXXXX";
    const char *p = mkdtemp(tmpl);
    if (!p)
      throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline void writeBytes(const std::string &path, const std::vector<uint8_t> &b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(b.data()),
            static_cast<std::streamsize>(b.size()));
}

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// Runs `fn`, expecting a hybrid::Error whose one-line message contains
/// every string of `parts`; returns the message.
template <typename Fn>
std::string expectError(Fn &&fn, std::vector<std::string> parts) {
  try {
    fn();
  } catch (const Error &e) {
    std::string msg = e.what();
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << p << "\"";
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line: " << msg;
    return msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected hybrid::Error, got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected hybrid::Error containing \""
                << (parts.empty() ? "" : parts[0]) << "\", nothing thrown";
  return "";
}

inline std::string fixturesDir() {
#ifdef HYBRIDC_FIXTURES_DIR
  return HYBRIDC_FIXTURES_DIR;
#else
  return "";
#endif
}

inline bool fileExists(const std::string &path) {
  return access(path.c_str(), R_OK) == 0;
}

} // namespace hybrid::test
