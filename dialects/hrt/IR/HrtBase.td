// The hrt (hybrid runtime) dialect: executables as the runtime runs them —
// explicit buffers with symbolic sizes, typed kernel launches, copies,
// fills, collectives and events. Its kinds mirror hybrid/Ops.h value for
// value (test/compiler/HrtKindsTest checks it).
#ifndef HRT_BASE_TD
#define HRT_BASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Hrt_Dialect : Dialect {
  let name = "hrt";
  let cppNamespace = "::hybridc::hrt";
  let summary = "Executables of the hybridc runtime";
  let description = [{
    An `hrt.executable` is a straight-line list of commands over buffers.
    Buffers come from the weight store (`hrt.param`), the engine's state
    (`hrt.state`), the bundle's constants (`hrt.constant`), the call's ports
    (`hrt.input`, `hrt.output`) or the workspace (`hrt.alloc`); `hrt.view`
    sees a buffer's bytes with another shape. Sizes are polynomials over the
    executable's symbols (`!hrt.buffer<f32, [batch, "2*seq", 64]>`).
    Memory planning assigns byte offsets in the workspace; serialisation
    writes the executable into a bundle.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Enums (values are the bundle's; see hybrid/Ops.h)
//===----------------------------------------------------------------------===//

def Hrt_BinaryKind : I32EnumAttr<"BinaryKind", "binary operation", [
    I32EnumAttrCase<"Add", 0, "add">, I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">, I32EnumAttrCase<"Div", 3, "div">,
    I32EnumAttrCase<"Pow", 4, "pow">, I32EnumAttrCase<"Max", 5, "max">,
    I32EnumAttrCase<"Min", 6, "min">, I32EnumAttrCase<"Mod", 7, "mod">,
    I32EnumAttrCase<"Fmod", 8, "fmod">, I32EnumAttrCase<"Equal", 9, "equal">,
    I32EnumAttrCase<"Less", 10, "less">, I32EnumAttrCase<"LessEqual", 11, "less_equal">,
    I32EnumAttrCase<"Greater", 12, "greater">, I32EnumAttrCase<"GreaterEqual", 13, "greater_equal">,
    I32EnumAttrCase<"And", 14, "and">, I32EnumAttrCase<"Or", 15, "or">,
    I32EnumAttrCase<"Xor", 16, "xor">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_UnaryKind : I32EnumAttr<"UnaryKind", "unary operation", [
    I32EnumAttrCase<"Neg", 0, "neg">, I32EnumAttrCase<"Abs", 1, "abs">,
    I32EnumAttrCase<"Sign", 2, "sign">, I32EnumAttrCase<"Exp", 3, "exp">,
    I32EnumAttrCase<"Log", 4, "log">, I32EnumAttrCase<"Sqrt", 5, "sqrt">,
    I32EnumAttrCase<"Rsqrt", 6, "rsqrt">, I32EnumAttrCase<"Reciprocal", 7, "reciprocal">,
    I32EnumAttrCase<"Tanh", 8, "tanh">, I32EnumAttrCase<"Sigmoid", 9, "sigmoid">,
    I32EnumAttrCase<"Relu", 10, "relu">, I32EnumAttrCase<"Silu", 11, "silu">,
    I32EnumAttrCase<"Gelu", 12, "gelu">, I32EnumAttrCase<"GeluTanh", 13, "gelu_tanh">,
    I32EnumAttrCase<"Sin", 14, "sin">, I32EnumAttrCase<"Cos", 15, "cos">,
    I32EnumAttrCase<"Erf", 16, "erf">, I32EnumAttrCase<"Floor", 17, "floor">,
    I32EnumAttrCase<"Ceil", 18, "ceil">, I32EnumAttrCase<"Not", 19, "not">,
    I32EnumAttrCase<"IsNan", 20, "is_nan">, I32EnumAttrCase<"IsInf", 21, "is_inf">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_Activation : I32EnumAttr<"Activation", "linear epilogue activation", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Relu", 1, "relu">,
    I32EnumAttrCase<"GeluErf", 2, "gelu">, I32EnumAttrCase<"GeluTanh", 3, "gelu_tanh">,
    I32EnumAttrCase<"Silu", 4, "silu">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_NormKind : I32EnumAttr<"NormKind", "linear prologue norm", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"LayerNorm", 1, "layer_norm">,
    I32EnumAttrCase<"RmsNorm", 2, "rms_norm">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"Prod", 4, "prod">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_CollectiveKind : I32EnumAttr<"CollectiveKind", "collective", [
    I32EnumAttrCase<"AllGather", 0, "all_gather">, I32EnumAttrCase<"ReduceScatter", 1, "reduce_scatter">,
    I32EnumAttrCase<"AllReduce", 2, "all_reduce">, I32EnumAttrCase<"Shard", 3, "shard">]> {
  let cppNamespace = "::hybridc::hrt";
}

def Hrt_Access : I32EnumAttr<"Access", "buffer access", [
    I32EnumAttrCase<"Read", 0, "read">, I32EnumAttrCase<"ReadWrite", 1, "read_write">]> {
  let cppNamespace = "::hybridc::hrt";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Hrt_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Hrt_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Hrt_BufferType : Hrt_Type<"Buffer", "buffer"> {
  let summary = "a dense row-major buffer with a symbolic shape";
  let description = [{
    `!hrt.buffer<f32, [batch, seq, 64]>`: element type, then one entry per
    dimension — an integer, a symbol name, or a quoted polynomial over the
    executable's symbols (`"2*seq + 1"`). Element types are f32, bf16, f16,
    i64, i32 and i1 (bool).
  }];
  let parameters = (ins "::mlir::Type":$elementType,
                        "::mlir::ArrayAttr":$shape);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
  }];
}

def Hrt_CommunicatorType : Hrt_Type<"Communicator", "communicator"> {
  let summary = "a group of ranks that collectives run over";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Hrt_ShardAttr : AttrDef<Hrt_Dialect, "Shard"> {
  let mnemonic = "shard";
  let summary = "one rank's piece of a tensor split over a data-parallel group";
  let description = [{
    `#hrt.shard<4 x [768, 768]>`: the tensor of shape [768, 768], flattened
    row-major and padded with zeros to a multiple of 4 elements, is split
    into 4 contiguous pieces of equal size; rank r holds piece r (ZeRO's
    flat partition). A buffer with this attribute is one piece: 1-D, of
    ceil(numel / world_size) elements.
  }];
  let parameters = (ins "int64_t":$worldSize,
                        ArrayRefParameter<"int64_t">:$shape);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Elements of the whole tensor.
    int64_t getNumElements() const;
    /// Elements of one rank's piece: ceil(numel / world_size).
    int64_t getShardElements() const;
  }];
}

def Hrt_Buffer : Type<CPred<"::llvm::isa<::hybridc::hrt::BufferType>($_self)">,
                      "hrt buffer", "::hybridc::hrt::BufferType">;

#endif // HRT_BASE_TD
