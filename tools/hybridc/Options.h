// The option machinery hybridc's command line shares between its files:
// `hybridc compile`'s subcommand and category, count options ("5e7"),
// enum options with hybridc's error wording, and the first parse error.
#ifndef HYBRIDC_TOOLS_HYBRIDC_OPTIONS_H
#define HYBRIDC_TOOLS_HYBRIDC_OPTIONS_H

#include "compiler/Pipeline/Compile.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hybridc::tool {

namespace cl = llvm::cl;

/// `hybridc compile`; a function so that options in any file may name it
/// while static objects are still being constructed.
cl::SubCommand &compileCommand();
cl::OptionCategory &compileCategory();

/// The first error a parser found, in hybridc's words; llvm::cl's own
/// errors read "for the --name option: ...".
std::string &parseError();
/// Records `message` unless an earlier error was; true (llvm::cl's "failed").
bool reject(const llvm::Twine &message);

/// `text` as a whole number in [min, max] (digits only, or an exponent
/// form like 5e7 with an integral value).
std::optional<int64_t> parseCount(const std::string &text, int64_t min,
                                  int64_t max);

/// A count option's value: a whole number, as digits or in an exponent
/// form like 5e7.
struct Count {
  int64_t value = 0;
};

/// A count option's modifier: the numbers it takes, and how its error
/// says so.
struct Range {
  int64_t min = 0, max = 0;
  const char *expected = "";
  template <typename Opt> void apply(Opt &option) const {
    option.getParser().range = *this;
  }
};

/// A modifier: the option is one of `hybridc compile`'s, in its --help.
struct CompileOption {
  template <typename Opt> void apply(Opt &option) const {
    cl::sub(compileCommand()).apply(option);
    cl::cat(compileCategory()).apply(option);
  }
};
inline constexpr CompileOption inCompile;

/// The RLHF losses' options (--ppo, --grpo and their hyper-parameters,
/// --reward; RlhfOptions.cpp): the first misuse as a usage error, and the
/// options they set.
std::optional<std::string> rlhfOptionsError(bool train);
void applyRlhfOptions(CompileOptions &options);

/// The LoRA options (--lora-dim and the options it enables,
/// LoraOptions.cpp): the first misuse as a usage error, and the options
/// they set.
std::optional<std::string> loraOptionsError(bool train);
void applyLoraOptions(CompileOptions &options);

} // namespace hybridc::tool

template <>
class llvm::cl::parser<hybridc::tool::Count>
    : public basic_parser<hybridc::tool::Count> {
public:
  explicit parser(Option &option) : basic_parser(option) {}
  bool parse(Option &option, StringRef, StringRef arg,
             hybridc::tool::Count &count) {
    std::optional<int64_t> n =
        hybridc::tool::parseCount(arg.str(), range.min, range.max);
    if (!n)
      return hybridc::tool::reject("--" + option.ArgStr + " must be " +
                                   range.expected + ", got '" + arg + "'");
    count.value = *n;
    return false;
  }
  StringRef getValueName() const override { return "N"; }
  void printOptionDiff(const Option &option, const hybridc::tool::Count &,
                       const OptionValue<hybridc::tool::Count> &,
                       size_t width) const {
    printOptionNoValue(option, width);
  }
  hybridc::tool::Range range;
};

namespace hybridc::tool {

/// cl::values' parser with hybridc's error: "unknown --name 'x' (expected
/// a, b or c)".
template <typename Enum> class NamedValueParser : public cl::parser<Enum> {
public:
  using cl::parser<Enum>::parser;
  bool parse(cl::Option &option, llvm::StringRef, llvm::StringRef arg,
             Enum &value) {
    std::string expected;
    for (unsigned i = 0, n = this->getNumOptions(); i < n; ++i) {
      if (this->getOption(i) == arg) {
        value = this->Values[i].V.getValue();
        return false;
      }
      expected += (i == 0 ? "" : i + 1 == n ? " or " : ", ");
      expected += this->getOption(i);
    }
    return reject("unknown --" + option.ArgStr + " '" + arg + "' (expected " +
                  expected + ")");
  }
};

} // namespace hybridc::tool

#endif // HYBRIDC_TOOLS_HYBRIDC_OPTIONS_H
