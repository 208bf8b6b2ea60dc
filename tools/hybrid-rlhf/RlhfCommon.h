// What hybrid-rlhf's subcommands share: running hybridc on the models
// they are given, a temporary folder for the bundles, the HF config's
// token ids, progress lines.
#pragma once

#include "CommandLine.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hybrid::run {

/// hybridc: $HYBRIDC, else beside this executable, else on PATH.
std::string findHybridc();

/// Runs hybridc with `args`; throws with its exit status when it fails
/// (its own error line is on stderr already).
void runHybridc(const std::vector<std::string> &args);

/// A folder that is removed with its contents when this goes.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/// `v` with 9 significant digits, as hybridc's options take it.
std::string number(double v);

/// --dtype (fp32, bf16 or fp16, DeepSpeed-Chat's names) as hybridc's
/// --dtype takes it; "" for "" (the config's torch_dtype).
std::string hybridcDtype(const std::string &dtype);

/// The bundle `given` (compiled already), else `dir` compiled by hybridc
/// with `args` (and --dtype when `dtype` is set) into `out`, saying so on
/// stderr as compiling the `what`.
std::string bundleFor(const std::optional<std::string> &given,
                      const std::string &dir, std::vector<std::string> args,
                      const std::string &dtype, const std::string &out,
                      const std::string &what);

/// Flags of the steps' kinds, their defaults shown in --help: a count
/// (>= 1), a number (>= 0), and --dtype.
void addCountFlag(CLI::App &cmd, const char *flag, int64_t &value,
                  const char *what);
void addNumberFlag(CLI::App &cmd, const char *flag, double &value,
                   const char *what);
void addDtypeFlag(CLI::App &cmd, std::string &dtype);

/// "hybrid-rlhf: <line>" on stderr.
void progress(const std::string &line);

/// The token ids an HF folder's generation_config.json (else its
/// config.json) names; -1 where neither does. pad falls back to eos.
struct SpecialTokens {
  int64_t eos = -1, pad = -1;
};
SpecialTokens specialTokensOf(const std::string &modelDir);

/// Copies `dir`'s config.json (and generation_config.json when present)
/// into `to`, so that transformers' from_pretrained(to) reads the
/// checkpoint saved there.
void copyModelConfig(const std::string &dir, const std::string &to);

} // namespace hybrid::run
