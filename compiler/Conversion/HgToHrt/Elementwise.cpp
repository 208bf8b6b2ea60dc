// hg -> hrt: the elementwise ops (hrt.binary and hrt.unary by kind, clip,
// select, cast).
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;
using hybridc::hrt::BinaryKind;
using hybridc::hrt::UnaryKind;

namespace hybridc {
namespace {

/// hrt.binary of `kind` for every op it is registered for.
auto binary(BinaryKind kind) {
  return [kind](Operation *op, ExecutableLowering &lowering) {
    Value lhs = lowering.buffer(op->getOperand(0)),
          rhs = lowering.buffer(op->getOperand(1));
    return lowering.command<hrt::BinaryOp>(op, lhs, rhs, kind);
  };
}

LogicalResult lowerUnary(Operation *op, UnaryKind kind,
                         ExecutableLowering &lowering) {
  Value x = lowering.buffer(op->getOperand(0));
  return lowering.command<hrt::UnaryOp>(op, x, kind);
}

auto unary(UnaryKind kind) {
  return [kind](Operation *op, ExecutableLowering &lowering) {
    return lowerUnary(op, kind, lowering);
  };
}

/// The in-place rule of the elementwise kernels: element i is read before it
/// is written, and by no other element, so the result may take the buffer of
/// an operand of the result's own type (not one broadcast to it).
bool overwritesOperandOfItsType(Operation *op, Value input, Value) {
  return llvm::all_of(op->getOperands(), [&](Value v) {
    return v != input || v.getType() == op->getResult(0).getType();
  });
}

} // namespace

void populateElementwisePatterns(HgToHrtPatterns &patterns) {
  // The ops an optimizer's update is written with may update in place.
  auto inPlace = overwritesOperandOfItsType;
  patterns.add<hg::AddOp>(binary(BinaryKind::Add), inPlace);
  patterns.add<hg::SubOp>(binary(BinaryKind::Sub), inPlace);
  patterns.add<hg::MulOp>(binary(BinaryKind::Mul), inPlace);
  patterns.add<hg::DivOp>(binary(BinaryKind::Div), inPlace);
  patterns.add<hg::PowOp>(binary(BinaryKind::Pow));
  patterns.add<hg::MaxOp>(binary(BinaryKind::Max), inPlace);
  patterns.add<hg::MinOp>(binary(BinaryKind::Min), inPlace);
  patterns.add<hg::ModOp>([](hg::ModOp op, ExecutableLowering &lowering) {
    return binary(op.getFmod() ? BinaryKind::FMod : BinaryKind::Mod)(op,
                                                                     lowering);
  });
  patterns.add<hg::EqualOp>(binary(BinaryKind::Equal));
  patterns.add<hg::LessOp>(binary(BinaryKind::Less));
  patterns.add<hg::LessEqualOp>(binary(BinaryKind::LessEqual));
  patterns.add<hg::GreaterOp>(binary(BinaryKind::Greater));
  patterns.add<hg::GreaterEqualOp>(binary(BinaryKind::GreaterEqual));
  patterns.add<hg::AndOp>(binary(BinaryKind::And), inPlace);
  patterns.add<hg::OrOp>(binary(BinaryKind::Or), inPlace);
  patterns.add<hg::XorOp>(binary(BinaryKind::Xor));

  patterns.add<hg::NegOp>(unary(UnaryKind::Neg), inPlace);
  patterns.add<hg::AbsOp>(unary(UnaryKind::Abs));
  patterns.add<hg::SignOp>(unary(UnaryKind::Sign));
  patterns.add<hg::ExpOp>(unary(UnaryKind::Exp));
  patterns.add<hg::LogOp>(unary(UnaryKind::Log));
  patterns.add<hg::SqrtOp>(unary(UnaryKind::Sqrt));
  patterns.add<hg::RsqrtOp>(unary(UnaryKind::Rsqrt));
  patterns.add<hg::ReciprocalOp>(unary(UnaryKind::Reciprocal));
  patterns.add<hg::TanhOp>(unary(UnaryKind::Tanh));
  patterns.add<hg::SigmoidOp>(unary(UnaryKind::Sigmoid));
  patterns.add<hg::ReluOp>(unary(UnaryKind::Relu));
  patterns.add<hg::SiluOp>(unary(UnaryKind::Silu));
  patterns.add<hg::GeluOp>([](hg::GeluOp op, ExecutableLowering &lowering) {
    return lowerUnary(op,
                      op.getApproximate() == "tanh" ? UnaryKind::GeluTanh
                                                    : UnaryKind::GeluErf,
                      lowering);
  });
  patterns.add<hg::SinOp>(unary(UnaryKind::Sin));
  patterns.add<hg::CosOp>(unary(UnaryKind::Cos));
  patterns.add<hg::ErfOp>(unary(UnaryKind::Erf));
  patterns.add<hg::FloorOp>(unary(UnaryKind::Floor));
  patterns.add<hg::CeilOp>(unary(UnaryKind::Ceil));
  patterns.add<hg::NotOp>(unary(UnaryKind::Not), inPlace);
  patterns.add<hg::IsNanOp>(unary(UnaryKind::IsNan));
  patterns.add<hg::IsInfOp>(unary(UnaryKind::IsInf));

  patterns.add<hg::ClipOp>([](hg::ClipOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput());
    return lowering.command<hrt::ClipOp>(
        op, x, op.getMinAttr(), op.getMaxAttr(),
        lowering.builder().getI32IntegerAttr(0));
  });
  patterns.add<hg::SelectOp>(
      [](hg::SelectOp op, ExecutableLowering &lowering) {
        Value c = lowering.buffer(op.getCond()),
              l = lowering.buffer(op.getLhs()),
              r = lowering.buffer(op.getRhs());
        return lowering.command<hrt::SelectOp>(op, c, l, r);
      },
      inPlace);
  patterns.add<hg::CastOp>(
      [](hg::CastOp op, ExecutableLowering &lowering) {
        Value x = lowering.buffer(op.getInput());
        return lowering.command<hrt::CastOp>(op, x);
      },
      inPlace);
}

} // namespace hybridc
