// hybrid-run: runs bundles on a device through the runtime's library.
//
// Forward passes, generation, training steps and runs, the PPO-shaped step
// (runtime/api) on cpu or cuda; compares tensors; describes bundles. Each
// subcommand is a thin CLI11 front end (Inference.cpp, Training.cpp,
// Inspection.cpp). Errors are one line on stderr: exit 1, or 2 for usage
// errors.
#include "CommandLine.h"

using namespace hybrid::run;

namespace {

const char *kDescription =
    "hybrid-run: runs bundles compiled by hybridc on a device (cpu, cuda) "
    "and\ncompares their outputs. 'hybrid-run SUBCOMMAND --help' shows a "
    "subcommand's\nflags. Errors: one line on stderr; exit 1, or 2 for usage "
    "errors.";

} // namespace

int main(int argc, char **argv) {
  return runTool(argc, argv, "hybrid-run", kDescription,
                 {addForward, addGenerate, addTrainStep, addBackward, addTrain,
                  addPpoStep, addCompare, addInfo});
}
