// The hrt (hybrid runtime) dialect: executables as the runtime runs them —
// explicit buffers with symbolic sizes, typed kernel launches, copies,
// fills, collectives and events. Its commands and their kinds are
// generated from runtime/base/ops/ops.py, as hybrid/Ops.h's are.
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
// Enums. The kinds of the commands (values are the bundle's) are generated
// with the commands from runtime/base/ops/ops.py (HrtCommands.td).
//===----------------------------------------------------------------------===//

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
