// reduce calls as plain data, and the folds every backend reduces with.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__CUDACC__)
#define HYBRID_FOLD __device__
#else
#define HYBRID_FOLD
#endif

namespace hybrid::kernels {

/// One call: the input's dimensions that fold into each output.
struct ReduceProblem {
  DType dtype = DType::F32;
  std::vector<bool> reduced; ///< per input dimension
  Shape out;                 ///< the result's shape
  int64_t reduceCount = 1;   ///< input elements per output
};

/// The reduction of an input of shape `input` by `attrs` (every dimension
/// when its axes are empty); throws naming `kernel` for an axis out of
/// range. From shapes alone (scratch sizing).
ReduceProblem reduceShape(const Shape &input, const ops::Reduce &attrs,
                          const char *kernel);

/// Checks the call (a result of the input's dtype and the reduced shape)
/// and describes it; the input's dtype is the fold's business.
ReduceProblem describeReduce(const ReduceArgs &a, const char *kernel);

// The folds, one definition for the CPU loops and the CUDA kernels. Floats
// (f32, bf16, f16) sum, average and multiply in double and compare in f32
// propagating NaN, each output rounded once; integers wrap (a mean
// truncates); bool max and min are any and all. S is the stored element type:
// float, the backend's bf16 / f16 type, int32_t, int64_t or uint8_t (bool); E
// reads and writes the float ones (E::toFloat(S), E::template
// fromFloat<S>(float)). A fold starts at init(), takes elements with step(),
// merges partial folds with combine() and gives the output with finish(acc,
// elements folded); identity() is the output of an empty fold.

template <typename S> constexpr bool kFoldsFloat = !std::is_integral_v<S>;

/// The integer type of the integer folds (int for floats, where it is
/// unused, and for bool).
template <typename S>
using FoldInteger =
    std::conditional_t<kFoldsFloat<S> || std::is_same_v<S, uint8_t>, int, S>;

template <typename S, typename E> struct SumFold {
  using Acc = std::conditional_t<kFoldsFloat<S>, double,
                                 std::make_unsigned_t<FoldInteger<S>>>;
  static constexpr bool kTakesBool = false;
  HYBRID_FOLD static Acc init() { return 0; }
  HYBRID_FOLD static Acc step(Acc a, S x) {
    if constexpr (kFoldsFloat<S>)
      return a + E::toFloat(x);
    else
      return a + static_cast<Acc>(x);
  }
  HYBRID_FOLD static Acc combine(Acc a, Acc b) { return a + b; }
  HYBRID_FOLD static S finish(Acc a, int64_t) {
    if constexpr (kFoldsFloat<S>)
      return E::template fromFloat<S>(static_cast<float>(a));
    else
      return static_cast<S>(a);
  }
  HYBRID_FOLD static S identity() { return finish(init(), 1); }
};

template <typename S, typename E> struct MeanFold : SumFold<S, E> {
  using Acc = typename SumFold<S, E>::Acc;
  HYBRID_FOLD static S finish(Acc a, int64_t count) {
    if constexpr (kFoldsFloat<S>)
      return E::template fromFloat<S>(
          static_cast<float>(a / static_cast<double>(count)));
    else
      return static_cast<S>(static_cast<S>(a) / count); // count > 0, checked
  }
  /// 0 / 0 for floats; an integer mean of nothing is the caller's error.
  HYBRID_FOLD static S identity() {
    if constexpr (kFoldsFloat<S>)
      return E::template fromFloat<S>(std::numeric_limits<float>::quiet_NaN());
    else
      return finish(0, 1);
  }
};

template <typename S, typename E> struct ProdFold {
  using Acc = typename SumFold<S, E>::Acc;
  static constexpr bool kTakesBool = false;
  HYBRID_FOLD static Acc init() { return 1; }
  HYBRID_FOLD static Acc step(Acc a, S x) {
    if constexpr (kFoldsFloat<S>)
      return a * E::toFloat(x);
    else
      return a * static_cast<Acc>(x);
  }
  HYBRID_FOLD static Acc combine(Acc a, Acc b) { return a * b; }
  HYBRID_FOLD static S finish(Acc a, int64_t) {
    return SumFold<S, E>::finish(a, 1);
  }
  HYBRID_FOLD static S identity() { return finish(init(), 1); }
};

/// max and min keep f32 for floats (exact for bf16 and f16), the type
/// itself for integers and int for bool (whole words for warp shuffles).
template <typename S>
using ExtremumAcc =
    std::conditional_t<kFoldsFloat<S>, float,
                       std::conditional_t<std::is_same_v<S, uint8_t>, int, S>>;

/// Element s as max's and min's accumulator.
template <typename E, typename S> HYBRID_FOLD ExtremumAcc<S> extremumOf(S s) {
  if constexpr (kFoldsFloat<S>)
    return E::toFloat(s);
  else
    return static_cast<ExtremumAcc<S>>(s);
}

template <typename S, typename E> struct MaxFold {
  using Acc = ExtremumAcc<S>;
  static constexpr bool kTakesBool = true; // any
  HYBRID_FOLD static Acc init() {
    if constexpr (kFoldsFloat<S>)
      return -std::numeric_limits<float>::infinity();
    else if constexpr (std::is_same_v<S, uint8_t>)
      return 0; // "any" of nothing
    else
      return std::numeric_limits<S>::min();
  }
  /// NaN wins.
  HYBRID_FOLD static Acc combine(Acc a, Acc x) {
    return (x > a || x != x) && a == a ? x : a;
  }
  HYBRID_FOLD static Acc step(Acc a, S s) {
    return combine(a, extremumOf<E>(s));
  }
  HYBRID_FOLD static S finish(Acc a, int64_t) {
    if constexpr (kFoldsFloat<S>)
      return E::template fromFloat<S>(a);
    else
      return static_cast<S>(a);
  }
  HYBRID_FOLD static S identity() { return finish(init(), 1); }
};

template <typename S, typename E> struct MinFold {
  using Acc = ExtremumAcc<S>;
  static constexpr bool kTakesBool = true; // all
  HYBRID_FOLD static Acc init() {
    if constexpr (kFoldsFloat<S>)
      return std::numeric_limits<float>::infinity();
    else if constexpr (std::is_same_v<S, uint8_t>)
      return 1; // "all" of nothing
    else
      return std::numeric_limits<S>::max();
  }
  /// NaN wins.
  HYBRID_FOLD static Acc combine(Acc a, Acc x) {
    return (x < a || x != x) && a == a ? x : a;
  }
  HYBRID_FOLD static Acc step(Acc a, S s) {
    return combine(a, extremumOf<E>(s));
  }
  HYBRID_FOLD static S finish(Acc a, int64_t) {
    return MaxFold<S, E>::finish(a, 1);
  }
  HYBRID_FOLD static S identity() { return finish(init(), 1); }
};

/// The folds of every kind with the backend's float conversions E.
template <typename E> struct ReduceFolds {
  template <typename S> using Sum = SumFold<S, E>;
  template <typename S> using Mean = MeanFold<S, E>;
  template <typename S> using Prod = ProdFold<S, E>;
  template <typename S> using Max = MaxFold<S, E>;
  template <typename S> using Min = MinFold<S, E>;
};

} // namespace hybrid::kernels

#undef HYBRID_FOLD
