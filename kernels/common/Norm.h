// layer_norm, rms_norm and layer_norm_grad calls as plain data, checked once.
#pragma once

#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

/// One call: `rows` rows of n elements, the normalised block `norm` (dims
/// [axis, rank) of the input).
struct NormProblem {
  DType dtype = DType::F32;
  Shape norm;
  int64_t rows = 0, n = 0;
  double epsilon = 0;
  /// The weight and bias are present but not of n elements: they broadcast
  /// to the row (a [1, D] or [D] weight has the row's own layout).
  bool weightBroadcasts = false, biasBroadcasts = false;
};

/// The rows of `input` normalised over dims [axis, rank) (`axis` in
/// [-rank, rank)); throws naming `kernel` for rank 0 or an axis out of
/// range. From shapes alone (scratch sizing).
NormProblem normShape(const Shape &input, int64_t axis, const char *kernel);

/// `shape` without leading size-1 dimensions beyond `rank`: a weight [1, D]
/// of a norm over [D] is read as [D].
Shape trimmedShape(const Shape &shape, size_t rank);

/// Checks that the weight and bias (each may be null) broadcast to the
/// problem's normalised block and notes which of them do not have its
/// layout. From shapes alone (scratch sizing).
void addNormWeights(NormProblem &p, const ConstTensor *weight,
                    const ConstTensor *bias, const char *kernel);

/// Checks the call (result of the input's shape and dtype, a valid axis,
/// weight and bias of the input's dtype broadcasting to the normalised
/// block, a float input) and describes it.
NormProblem describeLayerNorm(const LayerNormArgs &a);
NormProblem describeRmsNorm(const RmsNormArgs &a);

/// layer_norm_grad's operands and results, as LayerNormGradArgs::bind
/// binds them, naming grad_out when it is absent (it is required after an
/// optional operand, where a position alone says little).
LayerNormGradArgs bindLayerNormGrad(const Call &call);

/// Checks the call (a valid axis; grad_out of the input's dtype and shape, a
/// weight of its dtype and the normalised shape; grad_input of the input's
/// shape, grad_weight and grad_bias of the normalised one, all of its dtype;
/// a float input) and describes it.
NormProblem describeLayerNormGrad(const LayerNormGradArgs &a);

} // namespace hybrid::kernels
