// Reading and writing .hyb bundles: framing, FlatBuffers encoding
// (runtime/bundle/schema/bundle.fbs) and validation of what a bundle may
// contain.
//
// File layout (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "HYBRIDC\0"
//        8     4  format version (kBundleFormatVersion)
//       12     4  reserved, 0
//       16     8  payload size in bytes
//       24     8  FNV-1a-64 checksum of the payload
//       32     -  payload: a FlatBuffer with root hybrid.fb.Bundle ("HYB1")
//
// Bundles are untrusted: every load validates what the schema cannot say
// (see validateBundle), so that a damaged or hostile bundle is one error
// line, never a crash, a hang or an absurd allocation.
#pragma once

#include "hybrid/BundleDesc.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

constexpr char kBundleMagic[8] = {'H', 'Y', 'B', 'R', 'I', 'D', 'C', '\0'};
constexpr size_t kBundleHeaderSize = 32;

/// Limits validation puts on an executable's streams and events (each one a
/// device object created at load time).
constexpr int32_t kMaxStreams = 64;
constexpr int32_t kMaxEvents = 1024;
/// The largest data-parallel group a bundle may be compiled for.
constexpr int32_t kMaxWorldSize = 1 << 20;

/// The bytes of a .hyb file for `bundle` (header + FlatBuffer). Validates
/// first: throws hybrid::Error rather than produce a bundle the runtime would
/// reject.
std::vector<uint8_t> serializeBundle(const BundleDesc &bundle);

/// Decodes and validates the bytes of a .hyb file. `what` names the source
/// (a path) in error messages. Throws hybrid::Error, one line, on anything
/// malformed: wrong magic, other format version, truncation, checksum
/// mismatch, FlatBuffers verification failure, or a semantic error.
BundleDesc parseBundle(const uint8_t *data, size_t size,
                       const std::string &what);

/// Writes `bundle` to `path` atomically (temp file + rename).
void writeBundle(const BundleDesc &bundle, const std::string &path);

/// Reads and validates the bundle at `path`.
BundleDesc readBundle(const std::string &path);

/// The semantic checks parseBundle (and serializeBundle, and every engine)
/// applies. Throws hybrid::Error whose message starts with `what`:
///  * dtype, kind, access and op-kind values in range; names present and
///    unique; shapes of params and constants sane, constant sizes right;
///  * every command has its op's operand and result count, -1 only where
///    the op's operand is optional, indices in range, its stream, events
///    and communicator in range, axes and permutations in range;
///  * alias chains end in a buffer with memory and fit in it for every
///    symbol value; Param / Constant / State buffers have their table
///    entry's dtype (and shape); port i's buffer is Input / Output i;
///  * symbolMax has one entry per symbol; every State buffer's state is
///    declared by the executable;
///  * world size and ZeRO stage in range; a sharded param or state is
///    split over the bundle's world size (> 1), and its buffers are the
///    1-D piece;
///  * access: no command writes (through aliases) an Input, a Constant, a
///    Param unless the executable's paramAccess is ReadWrite, or a State it
///    declares Read.
void validateBundle(const BundleDesc &bundle, const std::string &what);

/// FNV-1a, 64 bit: the bundle payload checksum.
uint64_t fnv1a64(const uint8_t *data, size_t size);

} // namespace hybrid
