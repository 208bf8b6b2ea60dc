// The typed operations of a command list: one struct per kernel family, with
// its attributes resolved (defaults applied by the compiler). The compiler
// builds them from hrt ops, the bundle stores them as a FlatBuffers union,
// and a backend turns each into a kernel call once, at load time. Kernels
// read their attributes from these structs, never by name.
//
// The enums, structs and the Op variant are generated (OpDefs.h) from
// runtime/base/ops/ops.py, the one definition of every op, which also
// gives the hrt dialect's commands, the bundle's tables and their codec;
// README.md, "Adding an op", lists the rest.
#pragma once

#include "hybrid/OpDefs.h"

#include <cstddef>
#include <string>
#include <variant>

namespace hybrid {

/// The op's name for messages and listings: the hg mnemonic where there is
/// one ("add", "gelu", "reduce_sum", "log_softmax", "layer_norm"), else the
/// hrt one ("fill", "all_gather", "record_event").
std::string opName(const Op &op);

/// How many operands the op takes, counting absent optional ones, or -1
/// when variadic (concat). Used to validate commands.
int opArity(const Op &op);

/// How many results the op writes: its outs (0 for events, a linear
/// group's member count, 3 or 4 for an AdamWUpdate with its working
/// parameter), then the inputs it also writes (an attention that appends
/// writes its key and value cache).
int opResultCount(const Op &op);

/// Whether operand `position` of the op may be absent (-1 in a command):
/// its optional operands (attention's appended keys, values and offset only
/// when it does not append; a linear group's biases).
bool operandOptional(const Op &op, size_t position);

/// The value of the first kind attribute of the op that names no value of
/// its enum, or -1 (a bundle may hold any byte there).
int invalidKindValue(const Op &op);

/// Whether the op is an event (RecordEvent, WaitEvent): an executable's own
/// ordering object, no kernel.
inline bool isEvent(const Op &op) {
  return std::holds_alternative<ops::RecordEvent>(op) ||
         std::holds_alternative<ops::WaitEvent>(op);
}

} // namespace hybrid
