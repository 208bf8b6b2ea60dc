// Operations of the hrt dialect: the executable, where its buffers come
// from, and the commands that run on them (one per hybrid/Ops.h family).
#ifndef HRT_OPS_TD
#define HRT_OPS_TD

include "HrtBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Hrt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hrt_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Executables
//===----------------------------------------------------------------------===//

def Hrt_ExecutableOp : Hrt_Op<"executable", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator, NoRegionArguments]> {
  let summary = "a command list that the runtime runs as one call";
  let description = [{
    `symbols` name the dynamic dimensions that a call binds from its inputs'
    shapes; `symbol_max` (when given, one entry per symbol, 0 = no limit)
    bounds them. `params` says whether the executable may write parameters
    (only an optimizer step does). After memory planning, `workspace` holds
    the workspace size in bytes (an integer or a polynomial string).
    Buffer sources and commands follow in program order; inputs and outputs
    are ports in the order of their ops. `alignment` is the byte alignment
    the plan was made for: the runtime rounds every offset up to it.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$symbols,
                       OptionalAttr<DenseI64ArrayAttr>:$symbol_max,
                       Hrt_Access:$param_access,
                       OptionalAttr<AnyAttr>:$workspace,
                       OptionalAttr<I64Attr>:$alignment);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `symbols` $symbols `params` $param_access attr-dict-with-keyword
    $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::llvm::ArrayRef<::llvm::StringRef>":$symbols,
                                 "Access":$paramAccess)>];
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    /// The executable's symbol names, in order.
    std::vector<std::string> getSymbolNames();
  }];
}

//===----------------------------------------------------------------------===//
// Buffer sources
//===----------------------------------------------------------------------===//

def Hrt_ParamOp : Hrt_Op<"param", [Pure, HasParent<"ExecutableOp">]> {
  let summary = "a parameter of the weight store, by checkpoint name";
  let description = [{
    With `shard`, the weight store holds only this rank's piece of the
    parameter (ZeRO stage 3) and the buffer is that piece.
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<Hrt_ShardAttr>:$shard);
  let results = (outs Hrt_Buffer:$result);
  let builders = [OpBuilder<(ins "::mlir::Type":$type,
                                 "::mlir::StringAttr":$name), [{
    build($_builder, $_state, type, name, /*shard=*/nullptr);
  }]>];
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hrt_StateOp : Hrt_Op<"state", [Pure, HasParent<"ExecutableOp">]> {
  let summary = "a state buffer the engine owns across calls, with access";
  let description = [{
    With `shard`, the state is split over a data-parallel group (an
    optimizer moment or a gradient accumulator under ZeRO) and the buffer
    is this rank's piece.
  }];
  let arguments = (ins StrAttr:$name, Hrt_Access:$access,
                       OptionalAttr<Hrt_ShardAttr>:$shard);
  let results = (outs Hrt_Buffer:$result);
  let builders = [OpBuilder<(ins "::mlir::Type":$type,
                                 "::mlir::StringAttr":$name,
                                 "Access":$access), [{
    build($_builder, $_state, type, name, access, /*shard=*/nullptr);
  }]>];
  let assemblyFormat = "$name $access attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hrt_ConstantOp : Hrt_Op<"constant", [Pure, HasParent<"ExecutableOp">]> {
  let summary = "a constant stored in the bundle";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Hrt_Buffer:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Hrt_PortOp<string mnemonic, string what>
    : Hrt_Op<mnemonic, [HasParent<"ExecutableOp">,
                        MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "the call's " # what # " port `name`, in a workspace slot";
  let arguments = (ins StrAttr:$name, OptionalAttr<AnyAttr>:$offset);
  let results = (outs Hrt_Buffer:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hrt_InputOp : Hrt_PortOp<"input", "input"> {
  let description = [{
    With `default_value`, a caller may omit the input; it is then filled
    with that value (an attention mask of ones when nothing is padded).
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<AnyAttr>:$offset,
                       OptionalAttr<F64Attr>:$default_value);
}
def Hrt_OutputOp : Hrt_PortOp<"output", "output">;

def Hrt_AllocOp : Hrt_Op<"alloc", [HasParent<"ExecutableOp">,
                                   MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "a slot of the workspace (offset set by memory planning)";
  let arguments = (ins OptionalAttr<AnyAttr>:$offset);
  let results = (outs Hrt_Buffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hrt_ViewOp : Hrt_Op<"view", [Pure, HasParent<"ExecutableOp">]> {
  let summary = "the source's bytes seen with another shape (a reshape)";
  let arguments = (ins Hrt_Buffer:$source);
  let results = (outs Hrt_Buffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Hrt_CommunicatorOp : Hrt_Op<"communicator", [Pure,
                                                 HasParent<"ExecutableOp">]> {
  let summary = "a communicator by name (\"world\", \"data_parallel\", ...)";
  let arguments = (ins StrAttr:$name);
  let results = (outs Hrt_CommunicatorType:$result);
  let assemblyFormat = "$name attr-dict";
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

def Hrt_CommandOpInterface : OpInterface<"CommandOp"> {
  let cppNamespace = "::hybridc::hrt";
  let description = [{
    A command of an executable: reads its input buffers, writes its result
    buffer (and, for a few commands, buffers it also reads: an attention
    that appends to its KV cache), on stream `stream`.
  }];
  let methods = [
    InterfaceMethod<[{
        The input buffers in hybrid/Ops.h order; a null Value stands for an
        absent optional operand.
      }], "::llvm::SmallVector<::mlir::Value>", "getCommandInputs">,
    InterfaceMethod<"The buffer the command writes (null for events; the "
                    "first of them for a command that writes several).",
                    "::mlir::Value", "getCommandResult">,
    InterfaceMethod<[{
        Every buffer the command writes, in hybrid/Ops.h order: its `outs`,
        then inputs it also writes (an attention appending to its KV cache);
        what the bundle lists as the command's results.
      }], "::llvm::SmallVector<::mlir::Value>", "getCommandResults">,
    InterfaceMethod<[{
        How many leading operands are its `outs`: buffers it writes and
        does not read (getCommandResults adds the inputs it also writes).
      }], "unsigned", "getNumCommandOuts">,
    InterfaceMethod<"Which of the executable's streams runs it.",
                    "int32_t", "getStreamIndex">,
  ];
}

defvar Hrt_StreamArg = (ins DefaultValuedAttr<I32Attr, "0">:$stream);

// `groups` counts the ODS operand groups; the first `outs` (one by
// default, none for events) are the buffers it writes and the inputs follow.
// An empty input group is an absent optional one. `sideWrites` is C++
// appending to `results` the inputs a command also writes
// (getCommandResults), empty for most.
class Hrt_CommandOp<string mnemonic, int groups, int outs = 1,
                    list<Trait> traits = []>
    : Hrt_Op<mnemonic, !listconcat(traits, [HasParent<"ExecutableOp">,
                                            Hrt_CommandOpInterface])> {
  code sideWrites = "";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::SmallVector<::mlir::Value> getCommandInputs();
    ::mlir::Value getCommandResult();
    ::llvm::SmallVector<::mlir::Value> getCommandResults();
    unsigned getNumCommandOuts() { return }] # outs # [{; }
    int32_t getStreamIndex() { return getStream(); }
  }];
  let extraClassDefinition = [{
    ::llvm::SmallVector<::mlir::Value> $cppClass::getCommandInputs() {
      ::llvm::SmallVector<::mlir::Value> inputs;
      for (unsigned g = }] # outs # [{; g < }] # groups # [{; ++g) {
        auto range = getODSOperands(g);
        if (range.empty())
          inputs.push_back(nullptr);
        else
          inputs.append(range.begin(), range.end());
      }
      return inputs;
    }
    ::mlir::Value $cppClass::getCommandResult() {
      return }] # !if(!gt(outs, 0), "getODSOperands(0).front()", "nullptr") # [{;
    }
    ::llvm::SmallVector<::mlir::Value> $cppClass::getCommandResults() {
      ::llvm::SmallVector<::mlir::Value> results;
      for (unsigned g = 0; g < }] # outs # [{; ++g)
        results.push_back(getODSOperands(g).front());
      }] # sideWrites # [{
      return results;
    }
  }];
}

def Hrt_BinaryOp : Hrt_CommandOp<"binary", 3> {
  let summary = "lhs (kind) rhs with NumPy broadcasting";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$lhs,
                            Hrt_Buffer:$rhs, Hrt_BinaryKind:$kind),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $kind $lhs `:` type($lhs) `,` $rhs `:` type($rhs) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_UnaryOp : Hrt_CommandOp<"unary", 2> {
  let summary = "elementwise (kind) input";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Hrt_UnaryKind:$kind), Hrt_StreamArg);
  let assemblyFormat = [{
    $kind $input `:` type($input) `into` $out `:` type($out) attr-dict
  }];
}

class Hrt_OneInputCommand<string mnemonic, dag attrs>
    : Hrt_CommandOp<mnemonic, 2> {
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input), attrs,
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_ClipOp : Hrt_OneInputCommand<"clip",
    (ins OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max)> {
  let summary = "clamp to the bounds that are present";
}
def Hrt_CastOp : Hrt_OneInputCommand<"cast", (ins)> {
  let summary = "convert elements to the result's element type";
}
def Hrt_CopyOp : Hrt_OneInputCommand<"copy", (ins)> {
  let summary = "copy the bytes (same element type and count)";
}
def Hrt_TransposeOp : Hrt_OneInputCommand<"transpose",
    (ins DenseI64ArrayAttr:$perm)> {
  let summary = "result dim i = input dim perm[i]";
}
def Hrt_BroadcastToOp : Hrt_OneInputCommand<"broadcast_to", (ins)> {
  let summary = "NumPy broadcast to the result's shape";
}
def Hrt_SliceOp : Hrt_OneInputCommand<"slice",
    (ins DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$starts,
         DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps)> {
  let summary = "strided slice (ONNX Slice semantics)";
}
def Hrt_CumSumOp : Hrt_OneInputCommand<"cumsum",
    (ins I64Attr:$axis, BoolAttr:$exclusive, BoolAttr:$reverse)> {
  let summary = "running sum along axis";
}
def Hrt_TriluOp : Hrt_OneInputCommand<"trilu",
    (ins BoolAttr:$upper, I64Attr:$k)> {
  let summary = "keep a triangle of the last two dims";
}
def Hrt_SoftmaxOp : Hrt_OneInputCommand<"softmax",
    (ins I64Attr:$axis, BoolAttr:$log)> {
  let summary = "softmax (or log-softmax) along axis";
}

def Hrt_ReduceOp : Hrt_CommandOp<"reduce", 2> {
  let summary = "reduce over axes (all when empty)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Hrt_ReduceKind:$kind, DenseI64ArrayAttr:$axes,
                            BoolAttr:$keepdims), Hrt_StreamArg);
  let assemblyFormat = [{
    $kind $input `:` type($input) `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_FillOp : Hrt_CommandOp<"fill", 1> {
  let summary = "set every element to value";
  let arguments = !con((ins Hrt_Buffer:$out, F64Attr:$value), Hrt_StreamArg);
  let assemblyFormat = "$value `into` $out `:` type($out) attr-dict";
}

def Hrt_IotaOp : Hrt_CommandOp<"iota", 1> {
  let summary = "start, start + step, ...";
  let arguments = !con((ins Hrt_Buffer:$out, F64Attr:$start, F64Attr:$step),
                       Hrt_StreamArg);
  let assemblyFormat = "`into` $out `:` type($out) attr-dict";
}

def Hrt_SelectOp : Hrt_CommandOp<"select", 4> {
  let summary = "cond ? lhs : rhs with broadcasting";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$cond,
                            Hrt_Buffer:$lhs, Hrt_Buffer:$rhs), Hrt_StreamArg);
  let assemblyFormat = [{
    $cond `:` type($cond) `,` $lhs `:` type($lhs) `,` $rhs `:` type($rhs)
    `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_ConcatOp : Hrt_CommandOp<"concat", 2> {
  let summary = "join along axis";
  let arguments = !con((ins Hrt_Buffer:$out, Variadic<Hrt_Buffer>:$inputs,
                            I64Attr:$axis), Hrt_StreamArg);
  let assemblyFormat = [{
    $inputs `:` type($inputs) `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_GatherOp : Hrt_CommandOp<"gather", 3> {
  let summary = "ONNX Gather";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$data,
                            Hrt_Buffer:$indices, I64Attr:$axis),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $data `:` type($data) `,` $indices `:` type($indices) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_GatherNdOp : Hrt_CommandOp<"gather_nd", 3> {
  let summary = "ONNX GatherND";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$data,
                            Hrt_Buffer:$indices, I64Attr:$batch_dims),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $data `:` type($data) `,` $indices `:` type($indices) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_MatMulOp : Hrt_CommandOp<"matmul", 3> {
  let summary = "NumPy matmul";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$lhs,
                            Hrt_Buffer:$rhs), Hrt_StreamArg);
  let assemblyFormat = [{
    $lhs `:` type($lhs) `,` $rhs `:` type($rhs) `into` $out `:` type($out)
    attr-dict
  }];
}

def Hrt_EmbeddingOp : Hrt_CommandOp<"embedding", 3> {
  let summary = "rows of table at ids";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$table,
                            Hrt_Buffer:$ids), Hrt_StreamArg);
  let assemblyFormat = [{
    $table `:` type($table) `,` $ids `:` type($ids) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_EmbeddingGradOp : Hrt_CommandOp<"embedding_grad", 3> {
  let summary = "embedding's table gradient (hybrid::ops::EmbeddingGrad)";
  let description = [{
    hg.embedding_grad over buffers: out [rows, D] gets grad_out's rows summed
    per id in position order. Its kernels take scratch of their own (the
    positions sorted by id), declared by the kernel for the call's shapes.
  }];
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$ids,
                            Hrt_Buffer:$grad_out), Hrt_StreamArg);
  let assemblyFormat = [{
    $ids `:` type($ids) `,` $grad_out `:` type($grad_out) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_LabelLogProbsOp : Hrt_CommandOp<"label_log_probs", 3> {
  let summary = "log_softmax(logits)[label] (hybrid::ops::LabelLogProbs)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$logits,
                            Hrt_Buffer:$labels), Hrt_StreamArg);
  let assemblyFormat = [{
    $logits `:` type($logits) `,` $labels `:` type($labels) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_LabelLogProbsGradOp : Hrt_CommandOp<"label_log_probs_grad", 4> {
  let summary = "label_log_probs' backward (hybrid::ops::LabelLogProbsGrad)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$logits,
                            Hrt_Buffer:$labels, Hrt_Buffer:$grad),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $logits `:` type($logits) `,` $labels `:` type($labels) `,` $grad `:`
    type($grad) `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_LayerNormOp : Hrt_CommandOp<"layer_norm", 4, 1,
                                    [AttrSizedOperandSegments]> {
  let summary = "layer normalisation over dims [axis, rank)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Optional<Hrt_Buffer>:$weight,
                            Optional<Hrt_Buffer>:$bias, F64Attr:$epsilon,
                            I64Attr:$axis), Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) (`weight` $weight^ `:` type($weight))?
    (`bias` $bias^ `:` type($bias))? `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_LayerNormGradOp : Hrt_CommandOp<"layer_norm_grad", 6, 3> {
  let summary = "layer norm's backward (hybrid::ops::LayerNormGrad)";
  let description = [{
    hg.layer_norm_grad over buffers: writes the gradients of input, weight
    and bias. Its kernels take scratch of their own (the CUDA one sums the
    weight and bias gradients of blocks of rows there), declared by the
    kernel for the call's shapes as every kernel's scratch is.
  }];
  let arguments = !con((ins Hrt_Buffer:$grad_input, Hrt_Buffer:$grad_weight,
                            Hrt_Buffer:$grad_bias, Hrt_Buffer:$input,
                            Optional<Hrt_Buffer>:$weight,
                            Hrt_Buffer:$grad_out, F64Attr:$epsilon,
                            I64Attr:$axis), Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) (`weight` $weight^ `:` type($weight))? `grad`
    $grad_out `:` type($grad_out) `into` $grad_input `:` type($grad_input)
    `,` $grad_weight `:` type($grad_weight) `,` $grad_bias `:`
    type($grad_bias) attr-dict
  }];
}

def Hrt_ActivationGradOp : Hrt_CommandOp<"activation_grad", 3> {
  let summary = "an activation's backward (hybrid::ops::ActivationGrad)";
  let description = [{
    hg.activation_grad over buffers: grad_in = grad_out act'(input) per
    element, in f32 and rounded once; input, grad_out and grad_in have one
    shape and float element type.
  }];
  let arguments = !con((ins Hrt_Buffer:$grad_in, Hrt_Buffer:$input,
                            Hrt_Buffer:$grad_out, Hrt_Activation:$activation),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $activation $input `:` type($input) `grad` $grad_out `:` type($grad_out)
    `into` $grad_in `:` type($grad_in) attr-dict
  }];
}

def Hrt_RmsNormOp : Hrt_CommandOp<"rms_norm", 3> {
  let summary = "RMS normalisation over dims [axis, rank)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Optional<Hrt_Buffer>:$weight, F64Attr:$epsilon,
                            I64Attr:$axis), Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) (`weight` $weight^ `:` type($weight))? `into`
    $out `:` type($out) attr-dict
  }];
}

def Hrt_LinearOp : Hrt_CommandOp<"linear", 7, 1, [AttrSizedOperandSegments]> {
  let summary = "activation(norm(x) . weight (+ bias)) (+ residual)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Hrt_Buffer:$weight, Optional<Hrt_Buffer>:$bias,
                            Optional<Hrt_Buffer>:$residual,
                            Optional<Hrt_Buffer>:$norm_weight,
                            Optional<Hrt_Buffer>:$norm_bias,
                            BoolAttr:$transpose_weight,
                            DefaultValuedAttr<Hrt_Activation,
                                "::hybridc::hrt::Activation::None">:$activation,
                            DefaultValuedAttr<Hrt_NormKind,
                                "::hybridc::hrt::NormKind::None">:$norm,
                            DefaultValuedAttr<F64Attr, "1e-5">:$norm_epsilon),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) `,` $weight `:` type($weight)
    (`bias` $bias^ `:` type($bias))? (`activation` $activation^)?
    (`residual` $residual^ `:` type($residual))?
    (`norm` $norm^)? (`norm_weight` $norm_weight^ `:` type($norm_weight))?
    (`norm_bias` $norm_bias^ `:` type($norm_bias))? `into` $out `:` type($out)
    attr-dict
  }];
}

def Hrt_LinearGroupOp : Hrt_Op<"linear_group", [HasParent<"ExecutableOp">,
    Hrt_CommandOpInterface, AttrSizedOperandSegments]> {
  let summary = "linears that share their input, as one command";
  let description = [{
    Member i is `hrt.linear` of `input` with `weights[i]` (and `biases[i]`
    when the group has biases) restricted to the weight's output features
    [feature_begins[i], feature_ends[i]): rows of a [N, K] weight with
    `transpose_weight`, columns of a [K, N] one otherwise, and the same
    range of the bias. Its result `outs[i]` is the input's shape with
    feature_ends[i] - feature_begins[i] last. The activation is every
    member's; the group has no residual and no norm prologue. Members may
    read one weight (GPT-2's fused c_attn, cut into q, k and v): a backend
    can then run them as one product, or as one launch over all the
    members' features (hrt-group-linears makes these).
  }];
  let arguments = !con((ins Variadic<Hrt_Buffer>:$outs, Hrt_Buffer:$input,
                            Variadic<Hrt_Buffer>:$weights,
                            Variadic<Hrt_Buffer>:$biases,
                            DenseI64ArrayAttr:$feature_begins,
                            DenseI64ArrayAttr:$feature_ends,
                            BoolAttr:$transpose_weight,
                            DefaultValuedAttr<Hrt_Activation,
                                "::hybridc::hrt::Activation::None">:$activation),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) `weights` `(` $weights `:` type($weights) `)`
    (`biases` `(` $biases^ `:` type($biases) `)`)?
    `features` $feature_begins `to` $feature_ends
    (`activation` $activation^)? `into` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// (input, then per member: weight, bias or null), hybrid/Ops.h's order.
    ::llvm::SmallVector<::mlir::Value> getCommandInputs();
    ::mlir::Value getCommandResult() { return getOuts().front(); }
    ::llvm::SmallVector<::mlir::Value> getCommandResults() {
      return ::llvm::SmallVector<::mlir::Value>(getOuts());
    }
    unsigned getNumCommandOuts() { return getOuts().size(); }
    int32_t getStreamIndex() { return getStream(); }
    size_t getNumMembers() { return getWeights().size(); }
  }];
}

def Hrt_RotaryOp : Hrt_CommandOp<"rotary", 4> {
  let summary = "rotary position embedding";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Hrt_Buffer:$cos, Hrt_Buffer:$sin,
                            BoolAttr:$interleaved), Hrt_StreamArg);
  let assemblyFormat = [{
    $input `:` type($input) `,` $cos `:` type($cos) `,` $sin `:` type($sin)
    `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_AttentionOp : Hrt_CommandOp<"attention", 11, 1,
                                    [AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention with grouped KV heads";
  let description = [{
    With `append_key` / `append_value` [B, Hkv, T', Dh] and `append_at`
    (i64 [1]), the command first writes them into `key` / `value` (the KV
    cache) at [append_at, append_at + T') along axis 2, as two
    `hrt.cache_write`s would, then attends over the cache (hrt-fold-kv-
    appends makes it from those writes): it writes `key` and `value` too.
  }];
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$query,
                            Hrt_Buffer:$key, Hrt_Buffer:$value,
                            Optional<Hrt_Buffer>:$mask,
                            Optional<Hrt_Buffer>:$alibi_slopes,
                            Optional<Hrt_Buffer>:$key_length,
                            Optional<Hrt_Buffer>:$key_mask,
                            Optional<Hrt_Buffer>:$append_key,
                            Optional<Hrt_Buffer>:$append_value,
                            Optional<Hrt_Buffer>:$append_at,
                            F64Attr:$scale, BoolAttr:$causal,
                            I64Attr:$sliding_window), Hrt_StreamArg);
  let sideWrites = [{
    if (getAppendKey()) {
      results.push_back(getKey());
      results.push_back(getValue());
    }
  }];
  let assemblyFormat = [{
    $query `:` type($query) `,` $key `:` type($key) `,` $value `:`
    type($value) (`mask` $mask^ `:` type($mask))?
    (`alibi` $alibi_slopes^ `:` type($alibi_slopes))?
    (`key_length` $key_length^ `:` type($key_length))?
    (`key_mask` $key_mask^ `:` type($key_mask))?
    (`append_key` $append_key^ `:` type($append_key))?
    (`append_value` $append_value^ `:` type($append_value))?
    (`append_at` $append_at^ `:` type($append_at))? `into` $out `:` type($out)
    attr-dict
  }];
}

def Hrt_AttentionGradOp : Hrt_CommandOp<"attention_grad", 9, 3,
                                        [AttrSizedOperandSegments]> {
  let summary = "attention's backward (hybrid::ops::AttentionGrad)";
  let description = [{
    hg.attention_grad over buffers: writes the gradients of query, key and
    value. Its kernels take scratch of their own (the CUDA one materialises
    the probabilities of a chunk of heads there), declared by the kernel
    for the call's shapes as every kernel's scratch is.
  }];
  let arguments = !con((ins Hrt_Buffer:$grad_query, Hrt_Buffer:$grad_key,
                            Hrt_Buffer:$grad_value, Hrt_Buffer:$query,
                            Hrt_Buffer:$key, Hrt_Buffer:$value,
                            Hrt_Buffer:$grad_out,
                            Optional<Hrt_Buffer>:$mask,
                            Optional<Hrt_Buffer>:$key_mask,
                            F64Attr:$scale, BoolAttr:$causal,
                            I64Attr:$sliding_window), Hrt_StreamArg);
  let assemblyFormat = [{
    $query `:` type($query) `,` $key `:` type($key) `,` $value `:`
    type($value) `,` $grad_out `:` type($grad_out)
    (`mask` $mask^ `:` type($mask))?
    (`key_mask` $key_mask^ `:` type($key_mask))? `into` $grad_query `:`
    type($grad_query) `,` $grad_key `:` type($grad_key) `,` $grad_value `:`
    type($grad_value) attr-dict
  }];
}

def Hrt_CacheWriteOp : Hrt_CommandOp<"cache_write", 3> {
  let summary = "write update into out at a device offset along axis";
  let description = [{
    Only the slice [offset, offset + n) of `out` is written; the rest keeps
    its bytes (`out` is the cache itself).
  }];
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$update,
                            Hrt_Buffer:$offset, I64Attr:$axis),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $update `:` type($update) `at` $offset `:` type($offset) `into` $out `:`
    type($out) attr-dict
  }];
}

def Hrt_SampleOp : Hrt_CommandOp<"sample", 4> {
  let summary = "a token per row of logits (hybrid::ops::Sample)";
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$logits,
                            Hrt_Buffer:$sampling, Hrt_Buffer:$rng),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $logits `:` type($logits) `,` $sampling `:` type($sampling) `,` $rng `:`
    type($rng) `into` $out `:` type($out) attr-dict
  }];
}

def Hrt_SampleStepOp : Hrt_CommandOp<"sample_step", 14, 7> {
  let summary = "the sampling epilogue of a generation step (hybrid::ops::SampleStep)";
  let description = [{
    hg.sample_step over buffers. `tokens` and `logprobs` are written at
    column `count` only, the rest keeps its bytes (they are the state
    itself, as hrt.cache_write's `out`); `lengths`, `finished`, `count`
    and `rng` may be the buffers of `in_lengths`, `in_finished`,
    `in_count` and `in_rng` (updated in place).
  }];
  let arguments = !con((ins Hrt_Buffer:$token, Hrt_Buffer:$tokens,
                            Hrt_Buffer:$logprobs, Hrt_Buffer:$lengths,
                            Hrt_Buffer:$finished, Hrt_Buffer:$count,
                            Hrt_Buffer:$rng, Hrt_Buffer:$logits,
                            Hrt_Buffer:$config, Hrt_Buffer:$sampling,
                            Hrt_Buffer:$in_rng, Hrt_Buffer:$in_count,
                            Hrt_Buffer:$in_finished, Hrt_Buffer:$in_lengths),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $logits `:` type($logits) `,` $config `:` type($config) `,` $sampling `:`
    type($sampling) `,` $in_rng `:` type($in_rng) `count` $in_count `:`
    type($in_count) `finished` $in_finished `:` type($in_finished) `lengths`
    $in_lengths `:` type($in_lengths) `into` $token `:` type($token) `,`
    $tokens `:` type($tokens) `,` $logprobs `:` type($logprobs) `,` $lengths
    `:` type($lengths) `,` $finished `:` type($finished) `,` $count `:`
    type($count) `,` $rng `:` type($rng) attr-dict
  }];
}

def Hrt_AdamWUpdateOp : Hrt_Op<"adamw_update", [HasParent<"ExecutableOp">,
    Hrt_CommandOpInterface]> {
  let summary = "torch.optim.AdamW's update of one parameter (hybrid::ops::AdamWUpdate)";
  let description = [{
    hg.adamw_update over buffers: one pass over the parameter (or its f32
    master), its gradient and moments. `param`, `exp_avg` and `exp_avg_sq`
    may be the buffers of `in_param`, `in_exp_avg` and `in_exp_avg_sq`
    (updated in place); they are f32 of one shape, `grad` f32, bf16 or f16
    of that shape, every scalar f32 [1]. With `working_param` (bf16 or f16,
    the param's shape; a fourth out, after the moments) the command also
    writes the new param rounded to it: the working weight of a parameter
    kept through an f32 master.
  }];
  let arguments = !con((ins Hrt_Buffer:$param, Hrt_Buffer:$exp_avg,
                            Hrt_Buffer:$exp_avg_sq,
                            Optional<Hrt_Buffer>:$working_param,
                            Hrt_Buffer:$in_param, Hrt_Buffer:$grad,
                            Hrt_Buffer:$in_exp_avg,
                            Hrt_Buffer:$in_exp_avg_sq, Hrt_Buffer:$beta1,
                            Hrt_Buffer:$beta2, Hrt_Buffer:$eps,
                            Hrt_Buffer:$step_size,
                            Hrt_Buffer:$bias_correction2_sqrt,
                            Hrt_Buffer:$decay_factor),
                       Hrt_StreamArg);
  let assemblyFormat = [{
    $in_param `:` type($in_param) `,` $grad `:` type($grad) `moments`
    $in_exp_avg `:` type($in_exp_avg) `,` $in_exp_avg_sq `:`
    type($in_exp_avg_sq) `betas` $beta1 `:` type($beta1) `,` $beta2 `:`
    type($beta2) `eps` $eps `:` type($eps) `step_size` $step_size `:`
    type($step_size) `bias_correction2_sqrt` $bias_correction2_sqrt `:`
    type($bias_correction2_sqrt) `decay_factor` $decay_factor `:`
    type($decay_factor) `into` $param `:` type($param) `,` $exp_avg `:`
    type($exp_avg) `,` $exp_avg_sq `:` type($exp_avg_sq)
    (`working` $working_param^ `:` type($working_param))? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// (in_param, grad, in_exp_avg, in_exp_avg_sq, the six scalars),
    /// hybrid/Ops.h's order.
    ::llvm::SmallVector<::mlir::Value> getCommandInputs() {
      return ::llvm::SmallVector<::mlir::Value>(
          getOperands().drop_front(getNumCommandOuts()));
    }
    ::mlir::Value getCommandResult() { return getParam(); }
    /// param, exp_avg, exp_avg_sq and the working parameter when written.
    ::llvm::SmallVector<::mlir::Value> getCommandResults() {
      return ::llvm::SmallVector<::mlir::Value>(
          getOperands().take_front(getNumCommandOuts()));
    }
    unsigned getNumCommandOuts() { return getWorkingParam() ? 4 : 3; }
    int32_t getStreamIndex() { return getStream(); }
  }];
}

def Hrt_CollectiveOp : Hrt_CommandOp<"collective", 2> {
  let summary = "all_gather / reduce_scatter / all_reduce / shard over a communicator";
  let description = [{
    `shard` takes this rank's piece of a tensor that every rank holds whole
    (ZeRO's flat partition: piece r of the tensor flattened and padded with
    zeros to a multiple of the world size); it moves no data between ranks
    but needs the communicator's rank.
  }];
  let arguments = !con((ins Hrt_Buffer:$out, Hrt_Buffer:$input,
                            Hrt_CommunicatorType:$communicator,
                            Hrt_CollectiveKind:$kind), Hrt_StreamArg);
  let assemblyFormat = [{
    $kind $input `:` type($input) `into` $out `:` type($out) `over`
    $communicator attr-dict
  }];
}

def Hrt_RecordEventOp : Hrt_CommandOp<"record_event", 0, 0> {
  let summary = "mark `event` as reached on the command's stream";
  let arguments = !con((ins I32Attr:$event), Hrt_StreamArg);
  let assemblyFormat = "$event attr-dict";
}

def Hrt_WaitEventOp : Hrt_CommandOp<"wait_event", 0, 0> {
  let summary = "make the command's stream wait for `event`";
  let arguments = !con((ins I32Attr:$event), Hrt_StreamArg);
  let assemblyFormat = "$event attr-dict";
}

#endif // HRT_OPS_TD
