// DeepSpeed-Chat's reward-model step: pairs stacked chosen-then-rejected
// into one batch for @reward_forward_backward or @reward_loss.
#include "hybrid/RewardModel.h"

#include <cstring>
#include <string>

namespace hybrid {

namespace {

constexpr const char *kCompile =
    "hybridc compile --head value --train --reward";

/// `t` must be i64 of `shape` (or, when `shape` is empty, i64 [B, T] with
/// B >= 1).
void expectTokens(const HostTensor &t, const char *name, const Shape &shape) {
  const bool ok = t.dtype() == DType::I64 &&
                  (shape.empty() ? t.shape().size() == 2 && t.shape()[0] >= 1
                                 : t.shape() == shape);
  if (!ok)
    throw Error(std::string("reward model: ") + name + " must be i64 " +
                (shape.empty() ? std::string("[pairs >= 1, seq]")
                               : shapeToString(shape)) +
                ", got " + dtypeName(t.dtype()) + " " +
                shapeToString(t.shape()));
}

/// `chosen` rows, then `rejected` rows: i64 [2B, T].
HostTensor stack(const HostTensor &chosen, const HostTensor &rejected) {
  const Shape &shape = chosen.shape();
  HostTensor out = HostTensor::allocate(DType::I64, {2 * shape[0], shape[1]});
  const size_t bytes = chosen.bytes();
  std::memcpy(out.as<int64_t>(), chosen.as<int64_t>(), bytes);
  std::memcpy(reinterpret_cast<char *>(out.as<int64_t>()) + bytes,
              rejected.as<int64_t>(), bytes);
  return out;
}

NamedTensors pairInputs(const HostTensor &chosenIds,
                        const HostTensor &chosenMask,
                        const HostTensor &rejectedIds,
                        const HostTensor &rejectedMask) {
  expectTokens(chosenIds, "chosen input_ids", {});
  const Shape &shape = chosenIds.shape();
  expectTokens(chosenMask, "chosen attention_mask", shape);
  expectTokens(rejectedIds, "rejected input_ids", shape);
  expectTokens(rejectedMask, "rejected attention_mask", shape);
  return {{"input_ids", stack(chosenIds, rejectedIds)},
          {"attention_mask", stack(chosenMask, rejectedMask)}};
}

/// The ranking from the executable's outputs: end_scores [2B] split into
/// the chosen and the rejected halves.
RewardRanking ranking(const NamedTensors &out) {
  RewardRanking r;
  r.loss = out.at("loss").as<float>()[0];
  r.accuracy = out.at("accuracy").as<float>()[0];
  const HostTensor &scores = out.at("end_scores");
  const int64_t pairs = scores.shape()[0] / 2;
  const float *s = scores.as<float>();
  r.chosenScores =
      HostTensor::fromVector<float>({pairs}, std::vector<float>(s, s + pairs));
  r.rejectedScores = HostTensor::fromVector<float>(
      {pairs}, std::vector<float>(s + pairs, s + 2 * pairs));
  return r;
}

void require(Engine &engine, const char *name) {
  if (!engine.hasExecutable(name))
    throw Error(std::string("reward model: bundle '") + engine.bundle().model +
                "' has no @" + name + " (compile it with " + kCompile + ")");
}

} // namespace

RewardRanking rewardBackward(Engine &engine, const HostTensor &chosenIds,
                             const HostTensor &chosenMask,
                             const HostTensor &rejectedIds,
                             const HostTensor &rejectedMask) {
  require(engine, "reward_forward_backward");
  NamedTensors out;
  engine.accumulate(
      "reward_forward_backward",
      pairInputs(chosenIds, chosenMask, rejectedIds, rejectedMask), &out);
  return ranking(out);
}

RewardRanking rewardEval(Engine &engine, const HostTensor &chosenIds,
                         const HostTensor &chosenMask,
                         const HostTensor &rejectedIds,
                         const HostTensor &rejectedMask) {
  require(engine, "reward_loss");
  Executable &e = engine.executable("reward_loss");
  return ranking(e.run(e.withDefaults(
      pairInputs(chosenIds, chosenMask, rejectedIds, rejectedMask))));
}

} // namespace hybrid
