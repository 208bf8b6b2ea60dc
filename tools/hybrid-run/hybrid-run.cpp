// hybrid-run: runs bundles on a device through the runtime's library.
//
// Forward passes, generation, training steps and runs, the PPO-shaped step
// (runtime/api) on cpu or cuda; compares tensors; describes bundles. Each
// subcommand is a thin CLI11 front end (Inference.cpp, Training.cpp,
// Inspection.cpp). Errors are one line on stderr: exit 1, or 2 for usage
// errors.
#include "CommandLine.h"

#include "hybrid/Escape.h"
#include "hybrid/RuntimeVersion.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>

using namespace hybrid;
using namespace hybrid::run;

namespace {

const char *kDescription =
    "hybrid-run: runs bundles compiled by hybridc on a device (cpu, cuda) "
    "and\ncompares their outputs. 'hybrid-run SUBCOMMAND --help' shows a "
    "subcommand's\nflags. Errors: one line on stderr; exit 1, or 2 for usage "
    "errors.";

int fail(int code, const std::string &message) {
  std::fprintf(stderr, "hybrid-run: error: %s\n",
               escapeControlCharacters(message).c_str());
  return code;
}

/// Parses argv and runs the subcommand it names.
int parseAndRun(int argc, char **argv) {
  CLI::App app(kDescription, "hybrid-run");
  app.set_version_flag("--version",
                       std::string("hybrid-run ") + runtimeVersion());
  // One subcommand per call, and after it, names of other subcommands are
  // values (--executable forward), not subcommands.
  app.require_subcommand(0, 1);
  // A flag that takes one value takes it once: a repeated --weights is a
  // mistake, not an override.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::vector<Subcommand> commands;
  for (auto add : {addForward, addGenerate, addTrainStep, addBackward, addTrain,
                   addPpoStep, addCompare, addInfo})
    commands.push_back(add(app));

  // `hybrid-run help [SUBCOMMAND]`, as --help.
  if (argc >= 2 && std::strcmp(argv[1], "help") == 0) {
    const CLI::App *shown = &app;
    for (const Subcommand &c : commands)
      if (argc >= 3 && c.app->get_name() == argv[2])
        shown = c.app;
    std::cout << (shown == &app ? app.help() : shown->help(app.get_name()));
    return 0;
  }
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
  std::string names;
  for (const Subcommand &c : commands)
    names += (names.empty() ? "" : ", ") + c.app->get_name();
  return fail(2, "no subcommand (" + names + "; see 'hybrid-run --help')");
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
