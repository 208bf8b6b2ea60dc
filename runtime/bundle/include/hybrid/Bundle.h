// Reading and writing .hyb bundles: framing, FlatBuffers encoding
// (runtime/schema/bundle.fbs) and validation of what a bundle may contain.
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
// Conventions beyond the schema that validation enforces:
//  * A command operand index of -1 is an absent optional operand (e.g.
//    layer_norm without weight). Backends leave it out of the kernel's
//    operand list; the kernels tell optional operands apart by attributes
//    (has_weight, has_bias). Results are never absent.
//  * Param and Constant buffers have the dtype and (constant) shape of the
//    parameter / constant they name.
//  * The buffer of input port i has kind Input and index i; likewise outputs.
//  * Commands never write Constant or Input buffers (or aliases of them).
#pragma once

#include "hybrid/BundleDesc.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

constexpr char kBundleMagic[8] = {'H', 'Y', 'B', 'R', 'I', 'D', 'C', '\0'};
constexpr size_t kBundleHeaderSize = 32;

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

/// The semantic checks parseBundle applies (indices in range, constant sizes,
/// alias targets, symbols, ports, kernels named). Throws hybrid::Error whose
/// message starts with `what`.
void validateBundle(const BundleDesc &bundle, const std::string &what);

/// FNV-1a, 64 bit: the bundle payload checksum.
uint64_t fnv1a64(const uint8_t *data, size_t size);

} // namespace hybrid
