// Helpers shared by the runtime unit tests: temp dirs, file bytes, an
// expectation that a call throws hybrid::Error with a given message part,
// and the causal-LM loss's gradient w.r.t. the logits (for backward).
#pragma once

#include "hybrid/Types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

/// The gradient of HF's causal-LM loss (labels = `ids` [batch, seq]
/// shifted left, mean over the batch x (seq - 1) labels) w.r.t. `logits`
/// [batch, seq, vocab]: (softmax - onehot(next token)) / labels at
/// positions before the last, zero at the last. In double, rounded once.
inline std::vector<float> causalLmGradLogits(const std::vector<float> &logits,
                                             const std::vector<int64_t> &ids,
                                             int64_t batch, int64_t seq) {
  const int64_t vocab = static_cast<int64_t>(logits.size()) / (batch * seq);
  const double labels = static_cast<double>(batch * (seq - 1));
  std::vector<float> g(logits.size(), 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t + 1 < seq; ++t) {
      const float *row = &logits[static_cast<size_t>((b * seq + t) * vocab)];
      const double top = *std::max_element(row, row + vocab);
      double total = 0;
      for (int64_t v = 0; v < vocab; ++v)
        total += std::exp(double(row[v]) - top);
      const int64_t label = ids[static_cast<size_t>(b * seq + t + 1)];
      float *out = &g[static_cast<size_t>((b * seq + t) * vocab)];
      for (int64_t v = 0; v < vocab; ++v)
        out[v] = static_cast<float>(
            (std::exp(double(row[v]) - top) / total - (v == label ? 1 : 0)) /
            labels);
    }
  return g;
}

} // namespace hybrid::test
