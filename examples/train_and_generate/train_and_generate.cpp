// A C++ trainer embedding hybridc: trains a few steps, then generates.
//
// The Trainer's steps and the generation run on one engine: they share one
// weight store, and nothing is copied between them.
//
//   train_and_generate BUNDLE WEIGHTS DATA [STEPS]
//
// BUNDLE: compiled with `hybridc compile MODEL --train`; WEIGHTS: its
// safetensors checkpoint (file or folder); DATA: a safetensors file whose
// input_ids [sequences, seq] are the training data. Prints each step's loss,
// then, after the first 8 tokens of each sequence, the data's next 8 tokens
// and the 8 the trained model generates.
#include <hybrid/Bundle.h>
#include <hybrid/Devices.h>
#include <hybrid/Engine.h>
#include <hybrid/RuntimeVersion.h>
#include <hybrid/TokenDataset.h>
#include <hybrid/Trainer.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

// DeepSpeed's configuration keys; batches of 2 sequences, one per
// micro-batch, and a constant learning rate high enough to memorise them.
const char *kConfig = R"({
  "train_batch_size": 2,
  "train_micro_batch_size_per_gpu": 1,
  "gradient_clipping": 1.0,
  "optimizer": {"type": "AdamW",
                "params": {"lr": 0.003, "betas": [0.9, 0.95],
                           "weight_decay": 0.01}}
})";

void printTokens(const char *label, const int64_t *tokens, int64_t n) {
  std::printf("  %-10s", label);
  for (int64_t i = 0; i < n; ++i)
    std::printf(" %lld", static_cast<long long>(tokens[i]));
  std::printf("\n");
}

int run(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr,
                 "usage: train_and_generate BUNDLE WEIGHTS DATA [STEPS]\n");
    return 2;
  }
  const int steps = argc == 5 ? std::atoi(argv[4]) : 12;

  auto bundle =
      std::make_shared<const hybrid::BundleDesc>(hybrid::readBundle(argv[1]));
  hybrid::Engine engine =
      hybrid::Engine::create(bundle, hybrid::openDevice("cpu"));
  // HF checkpoints of tied models also hold the LM head the bundle ties.
  engine.loadWeights(argv[2], {"lm_head.weight"});
  std::printf("hybridc %s: %s, %zu parameters\n", hybrid::runtimeVersion(),
              bundle->model.c_str(), engine.weights().size());

  hybrid::TokenDataset data = hybrid::TokenDataset::open(argv[3]);
  const hybrid::TokenBatch sequences = data.tokens();
  hybrid::Trainer trainer(engine, hybrid::parseTrainConfig(kConfig),
                          std::move(data));
  trainer.start();
  engine.train();
  for (int i = 0; i < steps; ++i) {
    const hybrid::TrainStepReport r = trainer.step();
    std::printf("step %d: loss %.4f, grad norm %.3f, %.1f ms\n", i + 1, r.loss,
                static_cast<double>(r.result.gradNorm), r.ms);
  }

  // The same engine generates from the weights the steps just wrote.
  engine.eval();
  const int64_t prompt = 8;
  const hybrid::TokenBatch prompts = sequences.firstTokens(prompt);
  hybrid::GenerateConfig greedy;
  greedy.maxNewTokens = 8;
  const hybrid::GenerateResult out =
      engine.generate(prompts.inputIds, prompts.mask(), greedy);
  for (int64_t r = 0; r < prompts.rows(); ++r) {
    std::printf("sequence %lld:\n", static_cast<long long>(r));
    printTokens("data:",
                sequences.inputIds.as<int64_t>() + r * sequences.seq() + prompt,
                out.steps);
    printTokens("generated:", out.tokens.as<int64_t>() + r * out.steps,
                out.steps);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "train_and_generate: error: %s\n", e.what());
    return 1;
  }
}
