// The vector-Jacobian rule of an hg op: reverse-mode autodiff (hg-autodiff)
// asks each op on the path from the loss back to the parameters for the
// gradients of its operands given those of its results. Rules are external
// models attached by registerVjpRules (VjpRules.cpp), so the ops' own
// definitions stay free of training code.
#ifndef HG_VJP_INTERFACE_TD
#define HG_VJP_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Hg_VjpOpInterface : OpInterface<"VjpOpInterface"> {
  let cppNamespace = "::hybridc::hg";
  let description = [{
    An op that knows its vector-Jacobian product: given the gradient of
    each result (null where no gradient reaches it), it builds, with the
    context's builder at the end of the function, the gradient of each
    operand (null where the operand has none: integer and boolean operands,
    a select's condition). Gradients have their operand's type.
  }];
  let methods = [
    InterfaceMethod<"Builds the operands' gradients.", "::mlir::LogicalResult",
      "buildVjp", (ins "::hybridc::hg::VjpContext &":$context,
                       "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
                       "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // HG_VJP_INTERFACE_TD
