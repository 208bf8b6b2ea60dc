// The hg (hybrid graph) dialect: value-semantics tensor ops of decoder-only
// transformers, the common input of the training and inference pipelines.
#ifndef HG_DIALECT_TD
#define HG_DIALECT_TD

include "mlir/IR/OpBase.td"

def Hg_Dialect : Dialect {
  let name = "hg";
  let cppNamespace = "::hybridc::hg";
  let summary = "Tensor graph of transformer models";
  let description = [{
    Ops on ranked tensors with value semantics. Dynamic dimensions (`?`) are
    symbolic sizes named on the function arguments (`hg.dims`) and, where an
    op creates a shape, in its `shape` attribute as polynomial strings
    (`"batch*seq"`). Parameters are function arguments tagged `hg.param`.
  }];
  let hasConstantMaterializer = 1;
}

#endif // HG_DIALECT_TD
