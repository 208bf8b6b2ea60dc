// A bound on the bracket nesting of text formats (JSON, MLIR) checked before
// their recursive-descent parsers run: tens of thousands of levels overflow
// the stack in those parsers (header-only).
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>

namespace hybridc {

/// Enough for any real model file; deep enough inputs are crafted ones.
constexpr size_t kMaxNestingDepth = 512;

/// What counts as nesting besides ( [ { and what is skipped besides
/// double-quoted strings with backslash escapes.
struct NestingSyntax {
  bool lineComments = false;  ///< `//` to the end of the line (MLIR)
  bool angleBrackets = false; ///< < > (MLIR types and attributes; `->` and
                              ///< `>=` are not brackets)
};

/// Where (1-based line and column) `text` first nests deeper than `limit`,
/// as "line L, column C", or std::nullopt when it does not. The scan is
/// linear and needs no valid input: unbalanced closing brackets only lower
/// the count, which stays >= 0.
inline std::optional<std::string>
findExcessiveNesting(llvm::StringRef text, NestingSyntax syntax,
                     size_t limit = kMaxNestingDepth) {
  size_t depth = 0, line = 1, lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') // an unterminated string ends the line
          break;
      if (i < text.size() && text[i] == '\n')
        --i;
    } else if (syntax.lineComments && c == '/' && text.substr(i, 2) == "//") {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{' ||
               (syntax.angleBrackets && c == '<')) {
      if (++depth > limit)
        return "line " + std::to_string(line) + ", column " +
               std::to_string(i - lineStart + 1);
    } else if (c == ')' || c == ']' || c == '}' ||
               (syntax.angleBrackets && c == '>' &&
                (i == 0 || text[i - 1] != '-') &&
                text.substr(i + 1, 1) != "=")) {
      depth -= depth > 0;
    }
  }
  return std::nullopt;
}

} // namespace hybridc
