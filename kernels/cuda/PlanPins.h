// HYBRID_CUDA_PLANS: which kind of kernel GEMM tuning (Gemm.cu) may choose
// for given product shapes, so that one measuring run can try a
// combination of plans the product-by-product timing would not pick (the
// tuner times each product alone; a decode step runs them back to back,
// and bench/RESULTS.md's thirteenth session found choices that rank
// differently there). Tuning still times the candidates of the pinned
// kind (cuBLASLt's algorithms, the skinny split counts, the stash counts)
// unless the pin names one.
//
//   HYBRID_CUDA_PLANS="1x2048x50272=cublaslt,1x8192x2048=stream:1"
//
// An entry is MxKxN=KIND; N is a product's width, or a linear group's
// member widths joined by '+' (1x2048x2048+512+512). KIND is cublaslt,
// skinny[:SPLITS], stream[:STASHED] for a product; apart (each member by
// its own plan), one[:SPLITS] (one skinny launch) or stream[:STASHED] for
// a group. Shapes without an entry are tuned as before. A shape pinned to
// cuBLASLt takes no norm prologue (its rows are normalised into scratch
// first); a linear group with a pinned member and no pin of its own runs
// its members apart, each by its plan. Pins apply where tuning runs: not
// to products cuBLASLt declines (our fallback kernel), nor to groups the
// skinny kernel cannot take as one (they run apart).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace hybrid::cuda {

/// The most steps the streaming GEMV stashes (StreamGemv.h's
/// kStreamGemvMaxStash, which is checked equal where both are seen).
constexpr int kMaxStashedSteps = 2;

struct PlanPin {
  enum class Kind { CublasLt, Skinny, Stream, Apart, OneLaunch };
  int64_t M = 0, K = 0;
  std::vector<int64_t> N; ///< one width, or a group's in member order
  Kind kind = Kind::CublasLt;
  int value = -1; ///< the split count or stashed steps; -1: tuned
};

/// Parses HYBRID_CUDA_PLANS' syntax (above) into `pins`; false with a
/// one-line `error` naming the entry at fault (and no pins). An empty text
/// is no pin.
inline bool parsePlanPins(const std::string &text, std::vector<PlanPin> &pins,
                          std::string &error) {
  pins.clear();
  // A decimal whole number of `s` from `at`, advancing it; false if none.
  auto number = [](const std::string &s, size_t &at, int64_t &out) {
    const size_t first = at;
    out = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9' && at - first < 12)
      out = out * 10 + (s[at++] - '0');
    return at > first && (at == s.size() || s[at] < '0' || s[at] > '9');
  };
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    // (Blanks around an entry are not part of it.)
    std::string entry = text.substr(start, end - start);
    const size_t first = entry.find_first_not_of(" \t\r\n");
    entry = first == std::string::npos
                ? ""
                : entry.substr(first,
                               entry.find_last_not_of(" \t\r\n") - first + 1);
    start = end + 1;
    if (entry.empty()) {
      if (end == text.size())
        break;
      continue;
    }
    auto bad = [&](const std::string &why) {
      std::string shown = entry; // (one line whatever the entry holds)
      for (char &c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          c = '?';
      error = "HYBRID_CUDA_PLANS entry '" + shown + "': " + why;
      pins.clear();
      return false;
    };
    PlanPin pin;
    size_t at = 0;
    int64_t n = 0;
    if (!number(entry, at, pin.M) || at >= entry.size() || entry[at++] != 'x' ||
        !number(entry, at, pin.K) || at >= entry.size() || entry[at++] != 'x')
      return bad("expected MxKxN=KIND");
    while (true) {
      if (!number(entry, at, n) || n <= 0)
        return bad("expected a positive width N (or N+N+... for a group)");
      pin.N.push_back(n);
      if (at >= entry.size() || entry[at] != '+')
        break;
      ++at;
    }
    if (pin.M <= 0 || pin.K <= 0)
      return bad("M and K must be positive");
    if (at >= entry.size() || entry[at++] != '=')
      return bad("expected '=' and a kernel kind after the shape");
    const size_t colon = entry.find(':', at);
    const std::string kind = entry.substr(at, colon - at);
    if (colon != std::string::npos) {
      size_t v = colon + 1;
      int64_t value = 0;
      if (!number(entry, v, value) || v != entry.size() || value > 64)
        return bad("expected a count from 0 to 64 after ':'");
      pin.value = static_cast<int>(value);
    }
    const bool group = pin.N.size() > 1;
    const bool counted = pin.value >= 0;
    if (kind == "cublaslt" && !group && !counted)
      pin.kind = PlanPin::Kind::CublasLt;
    else if (kind == "skinny" && !group)
      pin.kind = PlanPin::Kind::Skinny;
    else if (kind == "stream")
      pin.kind = PlanPin::Kind::Stream;
    else if (kind == "apart" && group && !counted)
      pin.kind = PlanPin::Kind::Apart;
    else if (kind == "one" && group)
      pin.kind = PlanPin::Kind::OneLaunch;
    else
      return bad(std::string("expected ") +
                 (group ? "apart, one[:SPLITS] or stream[:STASHED] for a group"
                        : "cublaslt, skinny[:SPLITS] or stream[:STASHED]"));
    if ((pin.kind == PlanPin::Kind::Skinny ||
         pin.kind == PlanPin::Kind::OneLaunch) &&
        pin.value == 0)
      return bad("a skinny launch has at least 1 split");
    if (pin.kind == PlanPin::Kind::Stream && pin.value > kMaxStashedSteps)
      return bad("the streaming GEMV stashes 0 to " +
                 std::to_string(kMaxStashedSteps) + " steps");
    if (pin.kind == PlanPin::Kind::Stream && pin.value > 0 && pin.M != 1)
      return bad("the streaming GEMV stashes steps only with one row (M = 1)");
    for (const PlanPin &other : pins)
      if (other.M == pin.M && other.K == pin.K && other.N == pin.N)
        return bad("this shape is pinned twice");
    pins.push_back(pin);
  }
  return true;
}

/// The pin for a product (one width) or group of M x K with these widths,
/// or null.
inline const PlanPin *findPlanPin(const std::vector<PlanPin> &pins, int64_t M,
                                  int64_t K, const std::vector<int64_t> &N) {
  for (const PlanPin &pin : pins)
    if (pin.M == M && pin.K == K && pin.N == N)
      return &pin;
  return nullptr;
}

} // namespace hybrid::cuda
