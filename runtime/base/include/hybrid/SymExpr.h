// Symbolic sizes: integer polynomials over the dynamic dimensions of an
// executable (batch, seq, ...). The compiler builds them, the bundle stores
// them, and the runtime evaluates them when a call binds the symbols.
#pragma once

#include "hybrid/Types.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hybrid {

/// A polynomial with integer coefficients in symbols numbered 0..N-1. Every
/// symbol stands for a dimension, so is >= 1; `knownGE` relies on that.
/// Value type, immutable in use; cheap for the handful of terms shapes need.
class SymExpr {
public:
  /// A monomial: the sorted list of symbol indices, with repeats for powers
  /// (`{0,1}` is s0*s1, `{1,1}` is s1^2, `{}` is the constant term).
  using Monomial = std::vector<uint8_t>;

  SymExpr() = default;
  SymExpr(int64_t c) { // NOLINT: implicit from a constant is intended.
    if (c)
      terms_[{}] = c;
  }
  static SymExpr symbol(unsigned index) {
    SymExpr e;
    e.terms_[{static_cast<uint8_t>(index)}] = 1;
    return e;
  }
  static SymExpr term(int64_t coeff, Monomial m) {
    SymExpr e;
    std::sort(m.begin(), m.end());
    if (coeff)
      e.terms_[m] = coeff;
    return e;
  }

  const std::map<Monomial, int64_t> &terms() const { return terms_; }
  bool isConstant() const {
    return terms_.empty() ||
           (terms_.size() == 1 && terms_.begin()->first.empty());
  }
  std::optional<int64_t> constant() const {
    if (!isConstant())
      return std::nullopt;
    return terms_.empty() ? 0 : terms_.begin()->second;
  }
  /// The symbol index if this is exactly one symbol with coefficient 1.
  std::optional<unsigned> asSymbol() const {
    if (terms_.size() != 1 || terms_.begin()->second != 1 ||
        terms_.begin()->first.size() != 1)
      return std::nullopt;
    return terms_.begin()->first[0];
  }

  friend SymExpr operator+(const SymExpr &a, const SymExpr &b) {
    SymExpr r = a;
    for (auto &[m, c] : b.terms_)
      r.addTerm(m, c);
    return r;
  }
  friend SymExpr operator-(const SymExpr &a, const SymExpr &b) {
    return a + b * SymExpr(-1);
  }
  friend SymExpr operator*(const SymExpr &a, const SymExpr &b) {
    SymExpr r;
    for (auto &[ma, ca] : a.terms_)
      for (auto &[mb, cb] : b.terms_) {
        Monomial m = ma;
        m.insert(m.end(), mb.begin(), mb.end());
        std::sort(m.begin(), m.end());
        r.addTerm(m, ca * cb);
      }
    return r;
  }
  friend bool operator==(const SymExpr &a, const SymExpr &b) {
    return a.terms_ == b.terms_;
  }
  friend bool operator!=(const SymExpr &a, const SymExpr &b) {
    return !(a == b);
  }
  friend bool operator<(const SymExpr &a, const SymExpr &b) {
    return a.terms_ < b.terms_;
  }

  /// Exact division by a single-term divisor (a constant times a monomial);
  /// nullopt when the quotient is not a polynomial with integer coefficients.
  std::optional<SymExpr> divExact(const SymExpr &divisor) const {
    if (divisor.terms_.size() != 1)
      return *this == divisor ? std::optional<SymExpr>(SymExpr(1))
                              : std::nullopt;
    const auto &[dm, dc] = *divisor.terms_.begin();
    SymExpr r;
    for (auto &[m, c] : terms_) {
      if (c % dc)
        return std::nullopt;
      Monomial rest = m;
      for (uint8_t s : dm) {
        auto it = std::find(rest.begin(), rest.end(), s);
        if (it == rest.end())
          return std::nullopt;
        rest.erase(it);
      }
      r.addTerm(rest, c / dc);
    }
    return r;
  }

  /// True when a >= b for every assignment of symbols >= 1.
  static bool knownGE(const SymExpr &a, const SymExpr &b) {
    SymExpr d = a - b;
    // Symbols are >= 1, so a monomial is >= each of its divisors (and the
    // constant term's monomial {} divides all): pay every negative term from
    // positive terms that it divides.
    std::map<Monomial, int64_t> pos;
    for (auto &[m, c] : d.terms_)
      if (c > 0)
        pos[m] = c;
    for (auto &[m, c] : d.terms_) {
      if (c >= 0)
        continue;
      int64_t owed = -c;
      for (auto &[pm, pc] : pos) {
        if (owed == 0)
          break;
        if (pc == 0 || !std::includes(pm.begin(), pm.end(), m.begin(), m.end()))
          continue;
        int64_t take = std::min(owed, pc);
        pc -= take;
        owed -= take;
      }
      if (owed)
        return false;
    }
    return true;
  }

  int64_t evaluate(const std::vector<int64_t> &symbolValues) const {
    int64_t sum = 0;
    for (auto &[m, c] : terms_) {
      int64_t v = c;
      for (uint8_t s : m)
        v *= symbolValues.at(s);
      sum += v;
    }
    return sum;
  }

  /// Prints like `2*batch*seq + seq + 1`.
  std::string str(const std::vector<std::string> &names) const {
    if (terms_.empty())
      return "0";
    std::string out;
    // Highest degree first reads most naturally.
    std::vector<std::pair<Monomial, int64_t>> ts(terms_.begin(), terms_.end());
    std::stable_sort(ts.begin(), ts.end(), [](auto &x, auto &y) {
      return x.first.size() > y.first.size();
    });
    for (auto &[m, c] : ts) {
      int64_t ac = c < 0 ? -c : c;
      if (!out.empty())
        out += c < 0 ? " - " : " + ";
      else if (c < 0)
        out += "-";
      std::string mono;
      for (uint8_t s : m)
        mono += (mono.empty() ? "" : "*") +
                (s < names.size() ? names[s] : "s" + std::to_string(s));
      if (mono.empty())
        out += std::to_string(ac);
      else
        out += (ac == 1 ? "" : std::to_string(ac) + "*") + mono;
    }
    return out;
  }

  /// Parses `+`, `-`, `*`, integers and names from `names` (an unknown name
  /// is an error). Returns nullopt on malformed text (a bad token, an
  /// unknown name, an integer beyond 2^62) and, when `error` is given, sets
  /// it to "bad symbolic size '...': why". Never throws, so code built
  /// without exceptions can use it.
  static std::optional<SymExpr> parse(const std::string &text,
                                      const std::vector<std::string> &names,
                                      std::string *error = nullptr) {
    std::vector<std::string> copy = names;
    return parseImpl(text, copy, /*addUnknown=*/false, error);
  }

  /// Parses like parse(), appending names it does not know to `names`.
  static std::optional<SymExpr>
  parseAddingNames(const std::string &text, std::vector<std::string> &names,
                   std::string *error = nullptr) {
    return parseImpl(text, names, /*addUnknown=*/true, error);
  }

  /// Symbols are numbered in a byte (see Monomial).
  static constexpr size_t kMaxSymbols = 255;

private:
  /// The parser behind both: names are looked up, or appended when
  /// `addUnknown` (at most kMaxSymbols of them).
  static std::optional<SymExpr> parseImpl(const std::string &text,
                                          std::vector<std::string> &names,
                                          bool addUnknown, std::string *error) {
    size_t i = 0;
    bool ok = true;
    auto skip = [&] {
      while (i < text.size() &&
             std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    };
    auto fail = [&](const std::string &why) {
      if (ok && error)
        *error = "bad symbolic size '" + text + "': " + why;
      ok = false;
      return SymExpr();
    };
    auto factor = [&]() -> SymExpr {
      skip();
      if (i < text.size() &&
          std::isdigit(static_cast<unsigned char>(text[i]))) {
        int64_t v = 0;
        while (i < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i]))) {
          if (v > (int64_t(1) << 62) / 10)
            return fail("integer too large");
          v = v * 10 + (text[i++] - '0');
        }
        return SymExpr(v);
      }
      size_t b = i;
      while (
          i < text.size() &&
          (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
        ++i;
      if (b == i)
        return fail("expected a number or a name at offset " +
                    std::to_string(b));
      std::string name = text.substr(b, i - b);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        if (!addUnknown)
          return fail("unknown symbol '" + name + "'");
        if (names.size() >= kMaxSymbols)
          return fail("more than " + std::to_string(kMaxSymbols) + " symbols");
        names.push_back(name);
        it = names.end() - 1;
      }
      return symbol(static_cast<unsigned>(it - names.begin()));
    };
    auto product = [&]() {
      SymExpr r = factor();
      for (skip(); ok && i < text.size() && text[i] == '*'; skip()) {
        ++i;
        r = r * factor();
      }
      return r;
    };
    skip();
    bool neg = i < text.size() && text[i] == '-';
    if (neg)
      ++i;
    SymExpr r = product();
    if (neg)
      r = r * SymExpr(-1);
    for (skip(); ok && i < text.size(); skip()) {
      char op = text[i++];
      if (op != '+' && op != '-') {
        fail(std::string("unexpected '") + op + "'");
        break;
      }
      SymExpr t = product();
      r = op == '+' ? r + t : r - t;
    }
    if (!ok)
      return std::nullopt;
    return r;
  }

  void addTerm(const Monomial &m, int64_t c) {
    int64_t &slot = terms_[m];
    slot += c;
    if (!slot)
      terms_.erase(m);
  }
  std::map<Monomial, int64_t> terms_;
};

using SymShape = std::vector<SymExpr>;

} // namespace hybrid
