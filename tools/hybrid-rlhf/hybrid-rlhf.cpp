// hybrid-rlhf: DeepSpeed-Chat's RLHF steps on the runtime's library
// (runtime/api/include/hybrid/Ppo.h), one thin CLI11 subcommand each
// (PpoStep.cpp), over hybrid-run's command-line helpers. Errors are one
// line on stderr: exit 1, or 2 for usage errors.
#include "RlhfCommands.h"

using namespace hybrid::run;

namespace {

const char *kDescription =
    "hybrid-rlhf: DeepSpeed-Chat's RLHF steps on the hybrid engine: actor, "
    "reference,\ncritic and reward model on one device. 'hybrid-rlhf "
    "SUBCOMMAND --help' shows a\nsubcommand's flags. Errors: one line on "
    "stderr; exit 1, or 2 for usage errors.";

} // namespace

int main(int argc, char **argv) {
  return runTool(argc, argv, "hybrid-rlhf", kDescription,
                 {addStep1, addStep2, addStep3, addPpoStepCheck});
}
