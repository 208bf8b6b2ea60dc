// Element-wise comparison of two safetensors files (the parity check).
//
// The largest |a - b| per tensor against an absolute bound, or against a
// fraction of the largest |b|. Plain functions of the open files; safe from
// any thread (SafeTensorsFile's const methods are).
#pragma once

#include "hybrid/SafeTensors.h"

#include <optional>
#include <string>
#include <vector>

namespace hybrid {

struct TensorTolerance {
  double atol = 1e-3; ///< the bound on |a - b|, unless rtolMax is given
  /// The bound as a fraction of max |b| (its finite elements).
  std::optional<double> rtolMax;
};

/// One tensor's comparison.
struct TensorDiff {
  std::string name; ///< as asked: NAME, or NAME_IN_A=NAME_IN_B
  Shape shapeA, shapeB;
  /// max |a - b|; NaN against NaN counts 0, NaN against a number, infinity,
  /// and equal infinities 0. 0 when the shapes differ.
  double maxDiff = 0;
  double maxRef = 0; ///< max |b| over its finite elements
  double bound = 0;  ///< what maxDiff had to stay within
  bool pass = false; ///< same shape, maxDiff <= bound
};

/// Compares the tensors `names` (NAME, or NAME_IN_A=NAME_IN_B for tensors
/// named differently), or, when `names` is empty, every name both files
/// hold, in sorted order. Integer and bool tensors compare as numbers.
/// Throws hybrid::Error naming the file for a name it lacks, and when the
/// files share no name.
std::vector<TensorDiff> compareTensors(const SafeTensorsFile &a,
                                       const SafeTensorsFile &b,
                                       std::vector<std::string> names,
                                       const TensorTolerance &tolerance);

} // namespace hybrid
