// The attention mask's rule (AttentionMask.h).
#include "hybrid/AttentionMask.h"

namespace hybrid {

void checkAttentionMask(const HostTensor &mask, const Shape &idsShape,
                        const std::string &who) {
  if (mask.dtype() != DType::I64 || mask.shape() != idsShape)
    throw Error(who + ": attention_mask must be i64 " +
                shapeToString(idsShape) + " like input_ids, got " +
                dtypeName(mask.dtype()) + " " + shapeToString(mask.shape()));
  if (idsShape.size() != 2)
    return;
  const int64_t rows = idsShape[0], cols = idsShape[1];
  const int64_t *m = mask.as<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t tokens = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t v = m[r * cols + c];
      if (v != 0 && v != 1)
        throw Error(who + ": attention_mask holds " + std::to_string(v) +
                    " at [" + std::to_string(r) + ", " + std::to_string(c) +
                    "]; it must be 0 or 1");
      tokens += v;
    }
    if (tokens == 0 && cols > 0)
      throw Error(who + ": attention_mask row " + std::to_string(r) +
                  " is all padding");
  }
}

} // namespace hybrid
