// Operations of the hrt dialect: the executable, where its buffers come
// from, and the commands that run on them (one per hybrid/Ops.h family,
// generated from runtime/base/ops/ops.py).
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
// (getCommandResults), empty for most. Without `ownVerifier` the command
// gets the checks every command needs (verifyCommand) instead of a
// verify() of its own in HrtOps.cpp.
class Hrt_CommandOp<string mnemonic, int groups, int outs = 1,
                    list<Trait> traits = [], bit ownVerifier = 1>
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
  }] # !if(ownVerifier, "", [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyCommand(getOperation(), getStream());
    }
  }]);
}

// The commands themselves, one per hybrid/Ops.h op, are generated from
// runtime/base/ops/ops.py; their verifiers are in HrtOps.cpp.
include "dialects/hrt/IR/HrtCommands.td"

#endif // HRT_OPS_TD
