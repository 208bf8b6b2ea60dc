// hg -> hrt: ops that place, select or produce values without arithmetic on
// them (constants, views, broadcasts, transposes, slices, concatenation,
// gathers, iota, trilu) and the embedding lookup with its gradient.
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {

void populateDataMovementPatterns(HgToHrtPatterns &patterns) {
  // A constant and a view are buffers, not commands.
  patterns.add<hg::ConstantOp>(
      [](hg::ConstantOp op, ExecutableLowering &lowering) {
        Value result = op.getResult();
        if (!cast<ShapedType>(result.getType()).hasStaticShape())
          return LogicalResult(op->emitError("constant with a dynamic shape"));
        lowering.bind(result,
                      lowering.builder().create<hrt::ConstantOp>(
                          op.getLoc(), lowering.typeOf(result), op.getValue()));
        return success();
      });
  patterns.add<hg::ReshapeOp>(
      [](hg::ReshapeOp op, ExecutableLowering &lowering) {
        lowering.bind(op.getResult(),
                      lowering.builder().create<hrt::ViewOp>(
                          op.getLoc(), lowering.typeOf(op.getResult()),
                          lowering.buffer(op.getInput())));
        return success();
      });
  patterns.add<hg::BroadcastToOp>(
      [](hg::BroadcastToOp op, ExecutableLowering &lowering) {
        Value x = lowering.buffer(op.getInput());
        return lowering.command<hrt::BroadcastToOp>(op, x);
      });
  patterns.add<hg::TransposeOp>(
      [](hg::TransposeOp op, ExecutableLowering &lowering) {
        Value x = lowering.buffer(op.getInput());
        return lowering.command<hrt::TransposeOp>(op, x, op.getPerm());
      });
  patterns.add<hg::SliceOp>([](hg::SliceOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput());
    return lowering.command<hrt::SliceOp>(op, x, op.getAxes(), op.getStarts(),
                                          op.getEnds(), op.getSteps());
  });
  patterns.add<hg::ConcatOp>([](hg::ConcatOp op, ExecutableLowering &lowering) {
    SmallVector<Value> xs;
    for (Value v : op.getInputs())
      xs.push_back(lowering.buffer(v));
    return lowering.command<hrt::ConcatOp>(op, xs,
                                           static_cast<int64_t>(op.getAxis()));
  });
  patterns.add<hg::GatherOp>([](hg::GatherOp op, ExecutableLowering &lowering) {
    Value d = lowering.buffer(op.getData()),
          i = lowering.buffer(op.getIndices());
    return lowering.command<hrt::GatherOp>(op, d, i,
                                           static_cast<int64_t>(op.getAxis()));
  });
  patterns.add<hg::GatherNdOp>(
      [](hg::GatherNdOp op, ExecutableLowering &lowering) {
        Value d = lowering.buffer(op.getData()),
              i = lowering.buffer(op.getIndices());
        return lowering.command<hrt::GatherNdOp>(
            op, d, i, static_cast<int64_t>(op.getBatchDims()));
      });
  patterns.add<hg::IotaOp>([](hg::IotaOp op, ExecutableLowering &lowering) {
    return lowering.command<hrt::IotaOp>(op, op.getStart(), op.getStep());
  });
  patterns.add<hg::TriluOp>([](hg::TriluOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput());
    return lowering.command<hrt::TriluOp>(op, x, op.getUpper(),
                                          static_cast<int64_t>(op.getK()));
  });
  patterns.add<hg::EmbeddingOp>(
      [](hg::EmbeddingOp op, ExecutableLowering &lowering) {
        Value t = lowering.buffer(op.getTable()),
              ids = lowering.buffer(op.getIds());
        return lowering.command<hrt::EmbeddingOp>(op, t, ids);
      });
  patterns.add<hg::EmbeddingGradOp>(
      [](hg::EmbeddingGradOp op, ExecutableLowering &lowering) {
        Value ids = lowering.buffer(op.getIds()),
              g = lowering.buffer(op.getGradOut());
        return lowering.command<hrt::EmbeddingGradOp>(op, ids, g);
      });
}

} // namespace hybridc
