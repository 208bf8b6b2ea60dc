// Operations of the hg dialect. Semantics follow ONNX / NumPy where they
// overlap (broadcasting, negative axes); each op documents its own.
#ifndef HG_OPS_TD
#define HG_OPS_TD

include "HgDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Hg_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hg_Dialect, mnemonic, traits>;

// Element types: f32, bf16, f16 (floats), i64, i32 (integers), i1 (bool).
def Hg_Tensor : RankedTensorOf<[F32, BF16, F16, I64, I32, I1]>;
def Hg_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Hg_IntTensor : RankedTensorOf<[I64, I32]>;
def Hg_BoolTensor : RankedTensorOf<[I1]>;

// A shape that may hold symbolic sizes: each element is an I64Attr (static)
// or a StrAttr polynomial over the function's dims ("batch*seq", "seq+1").
def Hg_ShapeAttr : TypedArrayAttrBase<AnyAttr, "static or symbolic shape">;

// A declared result type may be more or less static than the inferred one
// (tensor<4xf32> vs tensor<?xf32>); element types and ranks must agree.
// (InferTypeOpInterface's default demands equal types.)
def Hg_CompatibleReturnTypes : NativeOpTrait<"CompatibleReturnTypes", [], [{
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange declared);
  }], [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                            ::mlir::TypeRange declared) {
      return ::hybridc::hg::areCompatibleTensorTypes(inferred, declared);
    }
  }]> {
  let cppNamespace = "::hybridc::hg::OpTrait";
}

// Ops whose result type follows from operands and attributes.
class Hg_InferredOp<string mnemonic, list<Trait> traits = []>
    : Hg_Op<mnemonic, !listconcat(traits,
          [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>,
           Hg_CompatibleReturnTypes])>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Hg_ConstantOp : Hg_Op<"constant", [ConstantLike, Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "A tensor literal";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise (NumPy broadcasting)
//===----------------------------------------------------------------------===//

class Hg_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Hg_InferredOp<mnemonic, traits> {
  let arguments = (ins Hg_Tensor:$lhs, Hg_Tensor:$rhs);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_AddOp : Hg_BinaryOp<"add", [Commutative]> { let summary = "lhs + rhs"; }
def Hg_SubOp : Hg_BinaryOp<"sub"> { let summary = "lhs - rhs"; }
def Hg_MulOp : Hg_BinaryOp<"mul", [Commutative]> { let summary = "lhs * rhs"; }
def Hg_DivOp : Hg_BinaryOp<"div"> {
  let summary = "lhs / rhs (integer division truncates)";
}
def Hg_PowOp : Hg_BinaryOp<"pow"> { let summary = "lhs ^ rhs"; }
def Hg_MaxOp : Hg_BinaryOp<"max", [Commutative]> { let summary = "max(lhs, rhs)"; }
def Hg_MinOp : Hg_BinaryOp<"min", [Commutative]> { let summary = "min(lhs, rhs)"; }
def Hg_ModOp : Hg_BinaryOp<"mod"> {
  let summary = "remainder; `fmod` = 1 takes the dividend's sign (C fmod), "
                "else the divisor's (Python %)";
  let arguments = (ins Hg_Tensor:$lhs, Hg_Tensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
}

// Comparisons produce i1.
def Hg_EqualOp : Hg_BinaryOp<"equal", [Commutative]> { let summary = "lhs == rhs"; }
def Hg_LessOp : Hg_BinaryOp<"less"> { let summary = "lhs < rhs"; }
def Hg_LessEqualOp : Hg_BinaryOp<"less_equal"> { let summary = "lhs <= rhs"; }
def Hg_GreaterOp : Hg_BinaryOp<"greater"> { let summary = "lhs > rhs"; }
def Hg_GreaterEqualOp : Hg_BinaryOp<"greater_equal"> { let summary = "lhs >= rhs"; }

// Logical ops take and produce i1.
def Hg_AndOp : Hg_BinaryOp<"and", [Commutative]> { let summary = "lhs && rhs"; }
def Hg_OrOp : Hg_BinaryOp<"or", [Commutative]> { let summary = "lhs || rhs"; }
def Hg_XorOp : Hg_BinaryOp<"xor", [Commutative]> { let summary = "lhs != rhs"; }

class Hg_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Hg_InferredOp<mnemonic, traits> {
  let arguments = (ins Hg_Tensor:$input);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_NegOp : Hg_UnaryOp<"neg"> { let summary = "-x"; }
def Hg_AbsOp : Hg_UnaryOp<"abs"> { let summary = "|x|"; }
def Hg_SignOp : Hg_UnaryOp<"sign"> { let summary = "sign(x)"; }
def Hg_ExpOp : Hg_UnaryOp<"exp"> { let summary = "e^x"; }
def Hg_LogOp : Hg_UnaryOp<"log"> { let summary = "ln x"; }
def Hg_SqrtOp : Hg_UnaryOp<"sqrt"> { let summary = "sqrt x"; }
def Hg_RsqrtOp : Hg_UnaryOp<"rsqrt"> { let summary = "1 / sqrt x"; }
def Hg_ReciprocalOp : Hg_UnaryOp<"reciprocal"> { let summary = "1 / x"; }
def Hg_TanhOp : Hg_UnaryOp<"tanh"> { let summary = "tanh x"; }
def Hg_SigmoidOp : Hg_UnaryOp<"sigmoid"> { let summary = "1 / (1 + e^-x)"; }
def Hg_ReluOp : Hg_UnaryOp<"relu"> { let summary = "max(x, 0)"; }
def Hg_SiluOp : Hg_UnaryOp<"silu"> { let summary = "x * sigmoid(x)"; }
def Hg_GeluOp : Hg_UnaryOp<"gelu"> {
  let summary = "GELU; approximate = \"none\" (erf) or \"tanh\"";
  let arguments = (ins Hg_Tensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
}
def Hg_SinOp : Hg_UnaryOp<"sin"> { let summary = "sin x"; }
def Hg_CosOp : Hg_UnaryOp<"cos"> { let summary = "cos x"; }
def Hg_ErfOp : Hg_UnaryOp<"erf"> { let summary = "erf x"; }
def Hg_FloorOp : Hg_UnaryOp<"floor"> { let summary = "floor x"; }
def Hg_CeilOp : Hg_UnaryOp<"ceil"> { let summary = "ceil x"; }
def Hg_NotOp : Hg_UnaryOp<"not"> { let summary = "logical not (i1)"; }
def Hg_IsNanOp : Hg_UnaryOp<"is_nan"> { let summary = "x != x, as i1"; }
def Hg_IsInfOp : Hg_UnaryOp<"is_inf"> { let summary = "|x| == inf, as i1"; }

def Hg_ActivationGradOp : Hg_InferredOp<"activation_grad"> {
  let summary = "an activation's backward: grad_out times act'(input)";
  let description = [{
    The vector-Jacobian product of an activation at grad_out, per element:
    grad_in = grad_out act'(input), computed in f32 and rounded once to the
    input's type. `activation` is hg.linear's spelling: "relu" (act' = 1
    where input > 0, else 0), "silu" (s (1 + x (1 - s)), s = sigmoid(x)),
    "gelu" (hg.gelu, erf: Phi(x) + x phi(x)) or "gelu_tanh" (its tanh
    approximation: (1 + tanh u) / 2 + x / 2 (1 - tanh^2 u) k (1 + 3 a x^2),
    u = k (x + a x^3), k = sqrt(2 / pi), a = 0.044715). input and grad_out
    have one shape and element type, the result's.
  }];
  let arguments = (ins Hg_FloatTensor:$input, Hg_FloatTensor:$grad_out,
                       StrAttr:$activation);
  let results = (outs Hg_FloatTensor:$grad_in);
  let assemblyFormat = "$input `,` $grad_out attr-dict `:` type($input) `,` "
                       "type($grad_out) `->` type($grad_in)";
  let hasVerifier = 1;
}

def Hg_ClipOp : Hg_InferredOp<"clip"> {
  let summary = "clamp to [min, max] (bounds optional)";
  let arguments = (ins Hg_Tensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_SelectOp : Hg_InferredOp<"select"> {
  let summary = "cond ? lhs : rhs, broadcasting all three";
  let arguments = (ins Hg_BoolTensor:$cond, Hg_Tensor:$lhs, Hg_Tensor:$rhs);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$cond `,` $lhs `,` $rhs attr-dict `:` "
                       "type($cond) `,` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_CastOp : Hg_Op<"cast", [Pure]> {
  let summary = "element type conversion (result type given)";
  let arguments = (ins Hg_Tensor:$input);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Hg_ReshapeOp : Hg_InferredOp<"reshape"> {
  let summary = "same elements, new shape";
  let description = [{
    `shape` entries are integers or symbolic polynomials; no -1 or 0
    placeholders (frontends resolve those). The element count must match.
  }];
  let arguments = (ins Hg_Tensor:$input, Hg_ShapeAttr:$shape);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input $shape attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Hg_BroadcastToOp : Hg_InferredOp<"broadcast_to"> {
  let summary = "NumPy broadcast of input to `shape` (ONNX Expand)";
  let arguments = (ins Hg_Tensor:$input, Hg_ShapeAttr:$shape);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input $shape attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Hg_TransposeOp : Hg_InferredOp<"transpose"> {
  let summary = "permute dimensions: result dim i = input dim perm[i]";
  let arguments = (ins Hg_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input $perm attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Hg_SliceOp : Hg_InferredOp<"slice"> {
  let summary = "strided slice along `axes` (ONNX Slice semantics)";
  let description = [{
    For each listed axis: negative starts/ends count from the end of the
    dimension, values are clamped to it, INT64_MAX / INT64_MIN mean "to the
    end" for positive / negative steps. Steps are non-zero.
  }];
  let arguments = (ins Hg_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Hg_ConcatOp : Hg_InferredOp<"concat"> {
  let summary = "join along `axis`";
  let arguments = (ins Variadic<Hg_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Hg_GatherOp : Hg_InferredOp<"gather"> {
  let summary = "ONNX Gather: take slices of data along `axis` at indices";
  let arguments = (ins Hg_Tensor:$data, Hg_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` "
                       "type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_GatherNdOp : Hg_InferredOp<"gather_nd"> {
  let summary = "ONNX GatherND";
  let arguments = (ins Hg_Tensor:$data, Hg_IntTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` "
                       "type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_IotaOp : Hg_Op<"iota", [Pure]> {
  let summary = "1-D sequence start, start+step, ... of `length` elements";
  let arguments = (ins Hg_ShapeAttr:$length, F64Attr:$start, F64Attr:$step);
  let results = (outs RankedTensorOf<[F32, BF16, F16, I64, I32]>:$result);
  let assemblyFormat = "$length attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hg_CumSumOp : Hg_InferredOp<"cumsum"> {
  let summary = "running sum along `axis`";
  let arguments = (ins Hg_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Hg_TriluOp : Hg_InferredOp<"trilu"> {
  let summary = "keep the upper (or lower) triangle of the last two dims, "
                "offset by diagonal k; zero the rest";
  let arguments = (ins Hg_Tensor:$input, BoolAttr:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Hg_ReduceOp<string mnemonic> : Hg_InferredOp<mnemonic> {
  let summary = "reduce over `axes` (all axes when empty)";
  let arguments = (ins Hg_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_ReduceSumOp : Hg_ReduceOp<"reduce_sum">;
def Hg_ReduceMeanOp : Hg_ReduceOp<"reduce_mean">;
def Hg_ReduceMaxOp : Hg_ReduceOp<"reduce_max">;
def Hg_ReduceMinOp : Hg_ReduceOp<"reduce_min">;
def Hg_ReduceProdOp : Hg_ReduceOp<"reduce_prod">;

def Hg_SoftmaxOp : Hg_InferredOp<"softmax"> {
  let summary = "softmax along `axis`";
  let arguments = (ins Hg_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_LogSoftmaxOp : Hg_InferredOp<"log_softmax"> {
  let summary = "log of softmax along `axis`";
  let arguments = (ins Hg_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_LayerNormOp : Hg_InferredOp<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "normalise over dims [axis, rank), then * weight + bias";
  let arguments = (ins Hg_FloatTensor:$input, Optional<Hg_FloatTensor>:$weight,
                       Optional<Hg_FloatTensor>:$bias, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input (`weight` $weight^)? (`bias` $bias^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_LayerNormGradOp : Hg_InferredOp<"layer_norm_grad"> {
  let summary = "layer norm's backward: the gradients of input, weight, bias";
  let description = [{
    The vector-Jacobian product of hg.layer_norm (input, weight, epsilon and
    axis as there) at grad_out g, input's shape. With x^ = (x - mean) rstd,
    rstd = rsqrt(var + epsilon) (population variance over dims [axis,
    rank)) and dx^ = g weight (g without weight): grad_input = rstd (dx^ -
    mean(dx^) - x^ mean(dx^ x^)), input's type; grad_weight = the sum of
    g x^ over the rows and grad_bias = the sum of g, both the normalised
    shape with input's element type. A layer norm's bias does not enter its
    gradients.
  }];
  let arguments = (ins Hg_FloatTensor:$input, Optional<Hg_FloatTensor>:$weight,
                       Hg_FloatTensor:$grad_out, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Hg_FloatTensor:$grad_input, Hg_FloatTensor:$grad_weight,
                      Hg_FloatTensor:$grad_bias);
  let assemblyFormat = "$input (`weight` $weight^)? `grad` $grad_out attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_RmsNormOp : Hg_InferredOp<"rms_norm"> {
  let summary = "x / sqrt(mean(x^2 over [axis, rank)) + eps) * weight";
  let arguments = (ins Hg_FloatTensor:$input, Optional<Hg_FloatTensor>:$weight,
                       F64Attr:$epsilon, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input (`weight` $weight^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and transformer blocks
//===----------------------------------------------------------------------===//

def Hg_MatMulOp : Hg_InferredOp<"matmul"> {
  let summary = "NumPy matmul (batch broadcasting, 1-D promotion)";
  let arguments = (ins Hg_FloatTensor:$lhs, Hg_FloatTensor:$rhs);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_LinearOp : Hg_InferredOp<"linear", [AttrSizedOperandSegments]> {
  let summary = "activation(norm(x)[..., K] times weight + bias[N]) + residual";
  let description = [{
    `weight` is [N, K] (PyTorch nn.Linear) when `transpose_weight` is true,
    [K, N] (GPT-2 Conv1D, ONNX Gemm without transB) when false. The bias,
    the `activation` ("none", "relu", "gelu", "gelu_tanh", "silu") and the
    `residual` (the result's type) are the GEMM's epilogue, applied in that
    order; hg-fuse-epilogues folds them in.
    `norm` ("none", "layer_norm", "rms_norm") is the GEMM's prologue: the
    input's rows (the last dim, K) normalised as hg.layer_norm /
    hg.rms_norm with `norm_epsilon`, times `norm_weight` [K] (+ `norm_bias`
    [K], layer_norm only) when given, rounded to the input's type, before
    the product; hg-fuse-norm-prologues folds it in.
  }];
  let arguments = (ins Hg_FloatTensor:$input, Hg_FloatTensor:$weight,
                       Optional<Hg_FloatTensor>:$bias,
                       Optional<Hg_FloatTensor>:$residual,
                       Optional<Hg_FloatTensor>:$norm_weight,
                       Optional<Hg_FloatTensor>:$norm_bias,
                       DefaultValuedAttr<BoolAttr, "true">:$transpose_weight,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation,
                       DefaultValuedStrAttr<StrAttr, "none">:$norm,
                       DefaultValuedAttr<F64Attr, "1e-5">:$norm_epsilon);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`bias` $bias^)? "
                       "(`residual` $residual^)? "
                       "(`norm_weight` $norm_weight^)? "
                       "(`norm_bias` $norm_bias^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$bias, "bool":$transpose_weight), [{
      build($_builder, $_state, input, weight, bias, ::mlir::Value(),
            transpose_weight, "none");
    }]>,
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$bias, "::mlir::BoolAttr":$transpose_weight), [{
      build($_builder, $_state, input, weight, bias, ::mlir::Value(),
            transpose_weight.getValue(), "none");
    }]>,
    // Without a norm prologue.
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$bias, "::mlir::Value":$residual,
                   "bool":$transpose_weight, "::llvm::StringRef":$activation), [{
      build($_builder, $_state, input, weight, bias, residual, ::mlir::Value(),
            ::mlir::Value(), transpose_weight, activation, "none", ::llvm::APFloat(1e-5));
    }]>,
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$input,
                   "::mlir::Value":$weight, "::mlir::Value":$bias,
                   "::mlir::Value":$residual, "bool":$transpose_weight,
                   "::llvm::StringRef":$activation), [{
      build($_builder, $_state, type, input, weight, bias, residual,
            ::mlir::Value(), ::mlir::Value(), transpose_weight, activation,
            "none", ::llvm::APFloat(1e-5));
    }]>
  ];
  let hasVerifier = 1;
}

def Hg_EmbeddingOp : Hg_InferredOp<"embedding"> {
  let summary = "rows of table[V, D] at ids -> [..., D]";
  let description = [{
    With `padding_idx` (torch's nn.Embedding(..., padding_idx), in
    [0, V)), positions whose id is padding_idx give the table no gradient;
    the rows read are the same.
  }];
  let arguments = (ins Hg_FloatTensor:$table, Hg_IntTensor:$ids,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` "
                       "type($ids) `->` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$table, "::mlir::Value":$ids), [{
      build($_builder, $_state, table, ids, ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Hg_RotaryOp : Hg_InferredOp<"rotary"> {
  let summary = "rotary position embedding of the first `rotary_dim` features";
  let description = [{
    input [B, H, T, D]; cos and sin [B or 1, T, rotary_dim] (HF convention:
    for the half-split form, both halves repeat the frequencies). With
    `interleaved` false (GPT-NeoX / Llama rotate_half) feature i pairs with
    i + rotary_dim/2; with true (GPT-J) 2i pairs with 2i+1. Features at and
    past rotary_dim pass through.
  }];
  let arguments = (ins Hg_FloatTensor:$input, Hg_FloatTensor:$cos,
                       Hg_FloatTensor:$sin,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_AttentionOp : Hg_InferredOp<"attention", [AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention with grouped KV heads";
  let description = [{
    query [B, Hq, T, Dh], key and value [B, Hkv, S, Dh] with Hq % Hkv == 0
    (query head h reads KV head h / (Hq / Hkv)); result [B, Hq, T, Dh].
    scores = query . key^T * scale (+ mask) (+ alibi_slopes[h] * (j - i)).
    `causal`: query i (of T, aligned to the end of S) sees keys j <= i + S - T.
    `sliding_window` > 0: also j > i + S - T - sliding_window.
    mask: additive float, broadcastable to [B, Hq, T, S].
    key_length (i64 [1], a KV cache's filled length): only keys [0, S')
    exist, S' <= S, and queries align to the end of those S' keys.
    key_mask (integer [B, S], 1 = token, 0 = padding): padded keys are never
    attended (left-padded prompts).
  }];
  let arguments = (ins Hg_FloatTensor:$query, Hg_FloatTensor:$key,
                       Hg_FloatTensor:$value, Optional<Hg_FloatTensor>:$mask,
                       Optional<Hg_FloatTensor>:$alibi_slopes,
                       Optional<Hg_IntTensor>:$key_length,
                       Optional<Hg_IntTensor>:$key_mask, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$sliding_window);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value (`mask` $mask^)? "
                       "(`alibi` $alibi_slopes^)? "
                       "(`key_length` $key_length^)? "
                       "(`key_mask` $key_mask^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_AttentionGradOp : Hg_InferredOp<"attention_grad",
                                       [AttrSizedOperandSegments]> {
  let summary = "attention's backward: the gradients of query, key and value";
  let description = [{
    The vector-Jacobian product of hg.attention (operands, scale, causal,
    sliding_window, mask, alibi_slopes and key_mask as there; no key_length)
    at grad_out [B, Hq, T, Dv]. With p the attention's probabilities (a query
    that sees no key has p = 0): dv = p^T grad_out, dp = grad_out v^T,
    ds = p (dp - rowsum(dp p)), dq = ds k scale, dk = ds^T q scale, the
    query heads of a KV head summed into it. Results: the gradients of
    query, key and value, of their types.
  }];
  let arguments = (ins Hg_FloatTensor:$query, Hg_FloatTensor:$key,
                       Hg_FloatTensor:$value, Hg_FloatTensor:$grad_out,
                       Optional<Hg_FloatTensor>:$mask,
                       Optional<Hg_FloatTensor>:$alibi_slopes,
                       Optional<Hg_IntTensor>:$key_mask, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$sliding_window);
  let results = (outs Hg_FloatTensor:$grad_query, Hg_FloatTensor:$grad_key,
                      Hg_FloatTensor:$grad_value);
  let assemblyFormat = "$query `,` $key `,` $value `,` $grad_out "
                       "(`mask` $mask^)? (`alibi` $alibi_slopes^)? "
                       "(`key_mask` $key_mask^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_LabelLogProbsOp : Hg_InferredOp<"label_log_probs"> {
  let summary = "log_softmax(logits)[label] in f32: a fused cross-entropy";
  let description = [{
    logits [..., V] (f32, bf16 or f16) and labels [...] -> f32 [...]: each
    row's log-softmax at its label, x[label] - max(x) - log(sum(exp(x -
    max(x)))), computed in f32 as torch computes the log-softmax of f32
    logits, without the [..., V] log-softmax. A label outside [0, V) gives
    0 and no gradient: HuggingFace's ignore index -100 among them, and no
    id beyond the vocabulary is read.
  }];
  let arguments = (ins Hg_FloatTensor:$logits, Hg_IntTensor:$labels);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` type($logits) `,` "
                       "type($labels) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_LabelLogProbsGradOp : Hg_InferredOp<"label_log_probs_grad"> {
  let summary = "hg.label_log_probs' backward: g (onehot(label) - softmax)";
  let description = [{
    The vector-Jacobian product of hg.label_log_probs at grad [...] (f32):
    grad_logits = grad (onehot(label) - softmax(logits)) per row, the
    softmax in f32, rounded once to the logits' type; a zero row where the
    label is outside [0, V). Result: the logits' type.
  }];
  let arguments = (ins Hg_FloatTensor:$logits, Hg_IntTensor:$labels,
                       RankedTensorOf<[F32]>:$grad);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels `,` $grad attr-dict `:` "
                       "type($logits) `,` type($labels) `,` type($grad) `->` "
                       "type($result)";
  let hasVerifier = 1;
}

def Hg_EmbeddingGradOp : Hg_InferredOp<"embedding_grad"> {
  let summary = "hg.embedding's table gradient: grad_out rows summed per id";
  let description = [{
    ids [...] and grad_out [..., D] -> [rows, D] of grad_out's type: row r
    is the sum of grad_out's rows at the positions whose id is r, added in
    position order in f32 and rounded once (the same bits on every run and
    backend), zero for an id never seen; ids outside [0, rows) add nothing.
    `rows` is the table's first dim.
  }];
  let arguments = (ins Hg_IntTensor:$ids, Hg_FloatTensor:$grad_out,
                       I64Attr:$rows);
  let results = (outs Hg_FloatTensor:$result);
  let assemblyFormat = "$ids `,` $grad_out attr-dict `:` type($ids) `,` "
                       "type($grad_out) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Generation: KV caches, positions of padded prompts, sampling
//===----------------------------------------------------------------------===//

def Hg_PositionsOp : Hg_InferredOp<"positions"> {
  let summary = "position ids of left-padded rows: cumsum(mask) - 1";
  let description = [{
    mask [B, S] (1 = token, 0 = padding) -> i64 [B, S]: each token's
    position among its row's tokens (cumsum(mask) - 1 along the row); pads
    get 1, as HuggingFace's generate does (their value is never attended).
  }];
  let arguments = (ins Hg_IntTensor:$mask);
  let results = (outs Hg_IntTensor:$result);
  let assemblyFormat = "$mask attr-dict `:` type($mask) `->` type($result)";
  let hasVerifier = 1;
}

def Hg_CacheWriteOp : Hg_InferredOp<"cache_write"> {
  let summary = "cache with [offset, offset + n) along axis replaced by update";
  let description = [{
    `update` has the cache's rank and dtype and every dim but `axis` equal;
    `offset` is an i64 [1] tensor (a position known only on the device). In
    an executable that writes the cache back to its state buffer this is an
    in-place write of the slice.
  }];
  let arguments = (ins Hg_Tensor:$cache, Hg_Tensor:$update,
                       Hg_IntTensor:$offset, I64Attr:$axis);
  let results = (outs Hg_Tensor:$result);
  let assemblyFormat = "$cache `,` $update `at` $offset attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_SampleOp : Hg_InferredOp<"sample"> {
  let summary = "a token per row: greedy, temperature, top-k, top-p";
  let description = [{
    logits [B, V], sampling f32 [3] = {temperature, top_p, top_k}, rng i64
    [2] = {seed, counter} -> i64 [B]. temperature <= 0 is greedy (argmax);
    otherwise the draw of hybrid::ops::Sample (counter-based Philox: the
    same seed and counter give the same tokens on every backend).
  }];
  let arguments = (ins Hg_FloatTensor:$logits, Hg_FloatTensor:$sampling,
                       Hg_IntTensor:$rng);
  let results = (outs Hg_IntTensor:$result);
  let assemblyFormat = "$logits `,` $sampling `,` $rng attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_SampleStepOp : Hg_InferredOp<"sample_step"> {
  let summary = "the sampling epilogue of a generation step in one op";
  let description = [{
    What @prefill and @decode end with (hg-split-generation): from the
    step's logits [B, V] and the generation state, the token of each row,
    its log-probability, and the state advanced.

    config i64 [4] = {eos or -1, pad, min_new, unused}, sampling f32 [3] =
    {temperature, top_p, top_k}, rng i64 [2] = {seed, counter}, count i64
    [1] (the step's index), finished i1 [B], lengths i64 [B], tokens i64
    [B, N], logprobs f32 [B, N]. Per row, in f32: while count < min_new the
    EOS logit is -inf; the token is hg.sample's of those logits; its
    log-probability is log_softmax(logits / T)[token] (T = temperature,
    1 when greedy); a finished row emits pad and 0.

    Results: the emitted tokens [B]; tokens and logprobs with column
    `count` replaced by them; lengths + !finished; finished | (token ==
    eos); count + 1; rng with its counter + 1. In an executable that
    writes them back to their state buffers, the state results are
    computed in place.
  }];
  let arguments = (ins Hg_FloatTensor:$logits, Hg_IntTensor:$config,
                       Hg_FloatTensor:$sampling, Hg_IntTensor:$rng,
                       Hg_IntTensor:$count, Hg_BoolTensor:$finished,
                       Hg_IntTensor:$lengths, Hg_IntTensor:$tokens,
                       Hg_FloatTensor:$logprobs);
  let results = (outs Hg_IntTensor:$token, Hg_IntTensor:$next_tokens,
                      Hg_FloatTensor:$next_logprobs,
                      Hg_IntTensor:$next_lengths,
                      Hg_BoolTensor:$next_finished, Hg_IntTensor:$next_count,
                      Hg_IntTensor:$next_rng);
  let assemblyFormat = "$logits `,` $config `,` $sampling `,` $rng `count` "
                       "$count `finished` $finished `lengths` $lengths "
                       "`tokens` $tokens `logprobs` $logprobs attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Hg_AdamWUpdateOp : Hg_InferredOp<"adamw_update"> {
  let summary = "torch.optim.AdamW's update of one parameter in one op";
  let description = [{
    What hg-adamw updates each parameter with: from the parameter (or its
    f32 master), its gradient and its moments, all of one shape, and f32
    [1] scalars shared by every parameter of a step (step_size = lr /
    (1 - beta1^t), bias_correction2_sqrt = sqrt(1 - beta2^t),
    decay_factor = 1 - lr weight_decay), per element, in f32 and in this
    order:
      m' = beta1 m + (1 - beta1) g
      v' = beta2 v + (1 - beta2) (g g)
      p' = p decay_factor
           - step_size (m' / (sqrt(v') / bias_correction2_sqrt + eps))
    Results: p', m', v'. In an executable that writes them back to their
    state buffers, they are computed in place. The parameter and moments
    are f32; the gradient is f32, bf16 or f16 (read as f32, exactly, as
    hg.cast to f32 would). Mixed precision: with `working_dtype` (bf16 or
    f16) a fourth result, next_working_param, is p' in that type, rounded
    to nearest even as hg.cast would: the working weight refreshed from
    the new master in the same pass, so no cast runs around the update.
  }];
  let arguments = (ins Hg_FloatTensor:$param, Hg_FloatTensor:$grad,
                       Hg_FloatTensor:$exp_avg, Hg_FloatTensor:$exp_avg_sq,
                       Hg_FloatTensor:$beta1, Hg_FloatTensor:$beta2,
                       Hg_FloatTensor:$eps, Hg_FloatTensor:$step_size,
                       Hg_FloatTensor:$bias_correction2_sqrt,
                       Hg_FloatTensor:$decay_factor,
                       OptionalAttr<TypeAttr>:$working_dtype);
  let results = (outs Hg_FloatTensor:$next_param,
                      Hg_FloatTensor:$next_exp_avg,
                      Hg_FloatTensor:$next_exp_avg_sq,
                      Optional<Hg_FloatTensor>:$next_working_param);
  let assemblyFormat = "$param `,` $grad `moments` $exp_avg `,` $exp_avg_sq "
                       "`betas` $beta1 `,` $beta2 `eps` $eps `step_size` "
                       "$step_size `bias_correction2_sqrt` "
                       "$bias_correction2_sqrt `decay_factor` $decay_factor "
                       "(`working` $working_dtype^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Commands' graph forms, generated from runtime/base/ops/ops.py
//===----------------------------------------------------------------------===//

include "dialects/hg/IR/HgCommands.td"

#endif // HG_OPS_TD
