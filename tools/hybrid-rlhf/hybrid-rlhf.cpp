// hybrid-rlhf: DeepSpeed-Chat's RLHF steps on the runtime's library
// (runtime/api/include/hybrid/Ppo.h), one thin CLI11 subcommand each
// (PpoStep.cpp). Errors are one line on stderr: exit 1, or 2 for usage
// errors.
#include "RlhfCommands.h"

#include "hybrid/Escape.h"
#include "hybrid/RuntimeVersion.h"

#include <cstdio>
#include <iostream>
#include <new>

using namespace hybrid;
using namespace hybrid::run;

namespace {

const char *kDescription =
    "hybrid-rlhf: DeepSpeed-Chat's RLHF steps on the hybrid engine: actor, "
    "reference,\ncritic and reward model on one device. 'hybrid-rlhf "
    "SUBCOMMAND --help' shows a\nsubcommand's flags. Errors: one line on "
    "stderr; exit 1, or 2 for usage errors.";

int fail(int code, const std::string &message) {
  std::fprintf(stderr, "hybrid-rlhf: error: %s\n",
               escapeControlCharacters(message).c_str());
  return code;
}

int parseAndRun(int argc, char **argv) {
  CLI::App app(kDescription, "hybrid-rlhf");
  app.set_version_flag("--version",
                       std::string("hybrid-rlhf ") + runtimeVersion());
  app.require_subcommand(0, 1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::vector<Subcommand> commands = {addPpoStepCheck(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) { // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return fail(2, usageMessage(e, app));
  }
  for (const Subcommand &c : commands)
    if (c.app->parsed())
      return c.run();
  return fail(2, "no subcommand (ppo-step; see 'hybrid-rlhf --help')");
}

} // namespace

int main(int argc, char **argv) {
  try {
    return parseAndRun(argc, argv);
  } catch (const UsageError &e) {
    return fail(2, e.message);
  } catch (const std::bad_alloc &) {
    return fail(1, "out of memory");
  } catch (const std::exception &e) {
    return fail(1, e.what());
  } catch (...) {
    return fail(1, "unexpected failure");
  }
}
