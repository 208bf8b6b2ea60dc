// hg -> hrt: the generation ops (KV-cache writes, sampling, the decode
// step's sample-and-bookkeeping).
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {
namespace {

LogicalResult lowerCacheWrite(hg::CacheWriteOp op,
                              ExecutableLowering &lowering) {
  OpBuilder &b = lowering.builder();
  Value out = lowering.resultBuffer(op.getResult()),
        cache = lowering.buffer(op.getCache());
  // Out of place, the result starts as a copy of the cache.
  if (out != cache)
    b.create<hrt::CopyOp>(op.getLoc(), out, cache);
  b.create<hrt::CacheWriteOp>(op.getLoc(), out, lowering.buffer(op.getUpdate()),
                              lowering.buffer(op.getOffset()),
                              static_cast<int64_t>(op.getAxis()));
  return success();
}

/// A cache write may write into the cache it updates: only the written
/// rows change, and they are read from the other operands.
bool cacheWriteWritesOver(hg::CacheWriteOp op, Value input, Value) {
  return op.getCache() == input && op.getUpdate() != input &&
         op.getOffset() != input;
}

/// One command; its state results are usually the state buffers
/// themselves (written in place).
LogicalResult lowerSampleStep(hg::SampleStepOp op,
                              ExecutableLowering &lowering) {
  OpBuilder &b = lowering.builder();
  Location loc = op.getLoc();
  auto in = [&](Value v) { return lowering.buffer(v); };
  Value token = lowering.resultBuffer(op.getToken());
  // The command writes one column: out of place, tokens and logprobs
  // start as copies of the old ones.
  auto column = [&](Value next, Value old) {
    Value out = lowering.resultBuffer(next);
    if (out != in(old))
      b.create<hrt::CopyOp>(loc, out, in(old));
    return out;
  };
  Value tokens = column(op.getNextTokens(), op.getTokens());
  Value logprobs = column(op.getNextLogprobs(), op.getLogprobs());
  b.create<hrt::SampleStepOp>(
      loc, token, tokens, logprobs, lowering.resultBuffer(op.getNextLengths()),
      lowering.resultBuffer(op.getNextFinished()),
      lowering.resultBuffer(op.getNextCount()),
      lowering.resultBuffer(op.getNextRng()), in(op.getLogits()),
      in(op.getConfig()), in(op.getSampling()), in(op.getRng()),
      in(op.getCount()), in(op.getFinished()), in(op.getLengths()));
  return success();
}

/// The kernel reads each row's (and the scalars') old value before it
/// writes the new: a state result may take the buffer of the operand
/// holding its old value, when that value is no other operand. The
/// emitted tokens have no old value.
bool sampleStepWritesOver(hg::SampleStepOp op, Value input, Value result) {
  std::pair<Value, OpOperand *> olds[] = {
      {op.getNextTokens(), &op.getTokensMutable()},
      {op.getNextLogprobs(), &op.getLogprobsMutable()},
      {op.getNextLengths(), &op.getLengthsMutable()},
      {op.getNextFinished(), &op.getFinishedMutable()},
      {op.getNextCount(), &op.getCountMutable()},
      {op.getNextRng(), &op.getRngMutable()}};
  return writesOverOldValue(op, input, result, olds);
}

} // namespace

void populateGenerationPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::CacheWriteOp>(lowerCacheWrite, cacheWriteWritesOver);
  patterns.add<hg::SampleOp>([](hg::SampleOp op, ExecutableLowering &lowering) {
    Value logits = lowering.buffer(op.getLogits()),
          sampling = lowering.buffer(op.getSampling()),
          rng = lowering.buffer(op.getRng());
    return lowering.command<hrt::SampleOp>(op, logits, sampling, rng);
  });
  patterns.add<hg::SampleStepOp>(lowerSampleStep, sampleStepWritesOver);
}

} // namespace hybridc
