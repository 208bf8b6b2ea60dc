// hybridc's shared option machinery (Options.h).
#include "Options.h"

#include <cstdlib>

namespace hybridc::tool {

cl::SubCommand &compileCommand() {
  static cl::SubCommand command(
      "compile", "Compile MODEL into a bundle (-o OUT.hyb), or print it after "
                 "a phase (--compile-to=PHASE)");
  return command;
}

cl::OptionCategory &compileCategory() {
  static cl::OptionCategory category("hybridc compile options");
  return category;
}

std::string &parseError() {
  static std::string error;
  return error;
}

bool reject(const llvm::Twine &message) {
  if (parseError().empty())
    parseError() = message.str();
  return true;
}

std::optional<int64_t> parseCount(const std::string &text, int64_t min,
                                  int64_t max) {
  if (text.empty() || text.size() > 20)
    return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 18)
      return std::nullopt;
    int64_t v = std::stoll(text);
    return v >= min && v <= max ? std::optional<int64_t>(v) : std::nullopt;
  }
  if (text.find_first_not_of("0123456789.eE+") != std::string::npos)
    return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end || !(v >= static_cast<double>(min)) ||
      !(v <= static_cast<double>(max)) || v != static_cast<int64_t>(v))
    return std::nullopt;
  return static_cast<int64_t>(v);
}

} // namespace hybridc::tool
