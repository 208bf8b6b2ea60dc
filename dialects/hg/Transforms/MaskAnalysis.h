// Proves what an additive attention mask computes when it is built from
// shapes only (iota, comparisons, reshapes): exported decoder graphs build
// the causal mask that way, and hg.attention can then drop it for
// `causal = true`; and that exported ALiBi positions are the key index.
#pragma once

#include "dialects/hg/Transforms/ValueShapes.h"

#include "hybrid/SymExpr.h"

#include "mlir/IR/Value.h"

namespace hybridc::hg {

enum class MaskMeaning {
  Unknown, ///< not proven; keep the mask
  None,    ///< every score visible: the mask adds nothing
  Causal,  ///< key j visible from query i exactly when j <= i + S - T
           ///< (and, with a sliding window w, j > i + S - T - w)
};

struct MaskProof {
  MaskMeaning meaning = MaskMeaning::Unknown;
  int64_t slidingWindow = 0; ///< 0: none
};

/// What `mask` (additive, broadcast against scores of symbolic shape
/// `scores` = [B, H, T, S]) means, in hg.attention's terms. Sound: anything
/// not proven for every value of the symbolic sizes is Unknown. Masked
/// entries are those set to a value <= -1e30 (finfo.min or -inf), which
/// softmax turns into exact zeros as long as a row keeps one visible score
/// (true for causal rows: the diagonal is always visible).
MaskProof analyzeAttentionMask(mlir::Value mask, const hybrid::SymShape &scores,
                               ValueShapes &shapes);

/// Whether `positions` (integer-valued, of any number type), broadcast into
/// `shape`, is the index along the last dim plus terms of the other dims'
/// indices: key j's position up to a constant per row, as an exported
/// ALiBi computes it ((cumsum(mask) - 1) * mask over an all-ones mask).
/// Sound as analyzeAttentionMask is.
bool isKeyIndexPerRow(mlir::Value positions, const hybrid::SymShape &shape,
                      ValueShapes &shapes);

} // namespace hybridc::hg
