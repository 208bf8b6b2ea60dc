// Escaping of untrusted text (file, node and tensor names) in messages that
// must stay one line (header-only; no dependency beyond the C++ library).
#pragma once

#include <string>
#include <string_view>

namespace hybrid {

/// `text` with its control characters made visible: newline, carriage
/// return and tab as \n, \r, \t; other bytes below 0x20 and 0x7f as \xNN.
/// Everything else (printable ASCII, UTF-8 sequences, backslashes) is kept,
/// so ordinary names read as they are written.
inline std::string escapeControlCharacters(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  return out;
}

} // namespace hybrid
