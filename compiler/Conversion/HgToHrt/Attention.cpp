// hg -> hrt: attention and its gradient, and the position inputs it is
// given (rotary embedding, positions from a padding mask).
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {
namespace {

/// positions(mask) = select(mask == 0, 1, cumsum(mask) - 1), as commands.
LogicalResult lowerPositions(hg::PositionsOp op, ExecutableLowering &lowering) {
  OpBuilder &b = lowering.builder();
  Location loc = op.getLoc();
  Value mask = lowering.buffer(op.getMask());
  auto maskType = cast<hrt::BufferType>(mask.getType());
  auto i64 = b.getI64Type();
  auto like = [&](Type elementType) {
    return hrt::BufferType::get(b.getContext(), elementType,
                                maskType.getShape());
  };
  auto scalar = [&](int64_t v) -> Value {
    auto type = RankedTensorType::get({1}, i64);
    return b.create<hrt::ConstantOp>(
        loc, hrt::getBufferType(b.getContext(), i64, {1}, {}),
        DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>{v}));
  };
  Value ones = mask;
  if (!maskType.getElementType().isSignlessInteger(64)) {
    ones = b.create<hrt::AllocOp>(loc, like(i64), nullptr);
    b.create<hrt::CastOp>(loc, ones, mask);
  }
  Value sums = b.create<hrt::AllocOp>(loc, like(i64), nullptr);
  b.create<hrt::CumSumOp>(loc, sums, ones, int64_t(1), false, false);
  Value one = scalar(1), zero = scalar(0);
  Value positions = b.create<hrt::AllocOp>(loc, like(i64), nullptr);
  b.create<hrt::BinaryOp>(loc, positions, sums, one, hrt::BinaryKind::Sub);
  Value pad = b.create<hrt::AllocOp>(loc, like(b.getI1Type()), nullptr);
  b.create<hrt::BinaryOp>(loc, pad, ones, zero, hrt::BinaryKind::Equal);
  b.create<hrt::SelectOp>(loc, lowering.resultBuffer(op.getResult()), pad, one,
                          positions);
  return success();
}

} // namespace

void populateAttentionPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::AttentionOp>([](hg::AttentionOp op,
                                   ExecutableLowering &lowering) {
    Value q = lowering.buffer(op.getQuery()), k = lowering.buffer(op.getKey()),
          v = lowering.buffer(op.getValue()),
          mask = lowering.buffer(op.getMask()),
          slopes = lowering.buffer(op.getAlibiSlopes()),
          length = lowering.buffer(op.getKeyLength()),
          keyMask = lowering.buffer(op.getKeyMask());
    return lowering.command<hrt::AttentionOp>(
        op, q, k, v, mask, slopes, length, keyMask,
        /*append_key=*/Value(), /*append_value=*/Value(),
        /*append_at=*/Value(), op.getScale(), op.getCausal(),
        static_cast<int64_t>(op.getSlidingWindow()));
  });
  patterns.add<hg::AttentionGradOp>([](hg::AttentionGradOp grad,
                                       ExecutableLowering &lowering) {
    lowering.builder().create<hrt::AttentionGradOp>(
        grad.getLoc(), lowering.resultBuffer(grad.getGradQuery()),
        lowering.resultBuffer(grad.getGradKey()),
        lowering.resultBuffer(grad.getGradValue()),
        lowering.buffer(grad.getQuery()), lowering.buffer(grad.getKey()),
        lowering.buffer(grad.getValue()), lowering.buffer(grad.getGradOut()),
        lowering.buffer(grad.getMask()), lowering.buffer(grad.getAlibiSlopes()),
        lowering.buffer(grad.getKeyMask()), grad.getScale(), grad.getCausal(),
        static_cast<int64_t>(grad.getSlidingWindow()));
    return success();
  });
  patterns.add<hg::RotaryOp>([](hg::RotaryOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput()), c = lowering.buffer(op.getCos()),
          s = lowering.buffer(op.getSin());
    return lowering.command<hrt::RotaryOp>(op, x, c, s, op.getInterleaved());
  });
  patterns.add<hg::PositionsOp>(lowerPositions);
}

} // namespace hybridc
