// The one rule for an attention mask a caller gives (training, log-probs,
// value models; generation adds that prompts are left-padded): i64 of the
// ids' shape, every value 0 (padding) or 1 (a token), and no row all
// padding.
#pragma once

#include "hybrid/HostTensor.h"

#include <string>

namespace hybrid {

/// Throws hybrid::Error, one line starting with `who`, when `mask` breaks
/// the rule for ids of `idsShape`: "<who>: attention_mask holds 7 at [0,
/// 3]; it must be 0 or 1", "<who>: attention_mask row 2 is all padding".
void checkAttentionMask(const HostTensor &mask, const Shape &idsShape,
                        const std::string &who);

} // namespace hybrid
