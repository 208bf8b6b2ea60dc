// hybrid-rlhf's shared helpers (RlhfCommon.h).
#include "RlhfCommon.h"

#include <nlohmann/json.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

extern char **environ;

namespace hybrid::run {

namespace fs = std::filesystem;

std::string findHybridc() {
  if (const char *env = std::getenv("HYBRIDC"); env && *env)
    return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "hybridc";
    if (::access(beside.c_str(), X_OK) == 0)
      return beside.string();
  }
  return "hybridc";
}

void runHybridc(const std::vector<std::string> &args) {
  const std::string exe = findHybridc();
  std::vector<char *> argv;
  argv.push_back(const_cast<char *>(exe.c_str()));
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = posix_spawnp(&pid, exe.c_str(), nullptr, nullptr, argv.data(),
                            environ))
    throw Error("cannot run " + exe + ": " + std::strerror(rc) +
                " (set HYBRIDC to hybridc's path)");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(exe + " " + args.front() + " " + args[1] +
                " failed (its error is above)");
}

TempDir::TempDir() {
  std::string pattern =
      (fs::temp_directory_path() / "hybrid-rlhf.XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error("cannot make a temporary folder: " +
                std::string(std::strerror(errno)));
  path = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string hybridcDtype(const std::string &dtype) {
  return dtype == "fp32"   ? "float32"
         : dtype == "bf16" ? "bfloat16"
         : dtype == "fp16" ? "float16"
                           : "";
}

std::string bundleFor(const std::optional<std::string> &given,
                      const std::string &dir, std::vector<std::string> args,
                      const std::string &dtype, const std::string &out,
                      const std::string &what) {
  if (given)
    return *given;
  progress("compiling the " + what + " of " + dir);
  args.insert(args.begin(), {"compile", dir});
  if (!dtype.empty())
    args.insert(args.end(), {"--dtype", hybridcDtype(dtype)});
  args.insert(args.end(), {"-o", out, "-q"});
  runHybridc(args);
  return out;
}

void addCountFlag(CLI::App &cmd, const char *flag, int64_t &value,
                  const char *what) {
  cmd.add_option(flag, value, what)
      ->capture_default_str()
      ->transform(positiveCount());
}

void addNumberFlag(CLI::App &cmd, const char *flag, double &value,
                   const char *what) {
  cmd.add_option(flag, value, what)
      ->capture_default_str()
      ->transform(nonNegativeNumber());
}

void addDtypeFlag(CLI::App &cmd, std::string &dtype) {
  cmd.add_option("--dtype", dtype,
                 "fp32, bf16 or fp16 (default: each config's torch_dtype)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
}

void progress(const std::string &line) {
  std::fprintf(stderr, "hybrid-rlhf: %s\n", line.c_str());
}

namespace {

/// The JSON object in `path`, or null when there is no such file.
nlohmann::json readJson(const fs::path &path) {
  std::ifstream in(path);
  if (!in)
    return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(path.string() + ": not a JSON object");
  return j;
}

/// The first integer of `key` (an integer or a list of them), else -1.
int64_t tokenId(const nlohmann::json &j, const char *key) {
  if (j.is_null() || !j.contains(key))
    return -1;
  const nlohmann::json &v = j.at(key);
  if (v.is_number_integer())
    return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer())
    return v[0].get<int64_t>();
  return -1;
}

} // namespace

SpecialTokens specialTokensOf(const std::string &modelDir) {
  SpecialTokens t;
  for (const char *file : {"generation_config.json", "config.json"}) {
    nlohmann::json j = readJson(fs::path(modelDir) / file);
    if (t.eos < 0)
      t.eos = tokenId(j, "eos_token_id");
    if (t.pad < 0)
      t.pad = tokenId(j, "pad_token_id");
  }
  if (t.pad < 0)
    t.pad = t.eos;
  return t;
}

void copyModelConfig(const std::string &dir, const std::string &to) {
  fs::create_directories(to);
  for (const char *file : {"config.json", "generation_config.json"}) {
    const fs::path from = fs::path(dir) / file;
    if (!fs::exists(from))
      continue;
    std::error_code ec;
    fs::copy_file(from, fs::path(to) / file,
                  fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw Error("cannot copy " + from.string() + " to " + to + ": " +
                  ec.message());
  }
}

} // namespace hybrid::run
