// embedding_grad: the table gradient of embedding, grad_out's rows summed
// per id. A counting sort (stable, so each id's positions stay in order)
// lists the positions of every id; then ids in parallel each sum their rows
// in position order in f32 and round once, the sum the CUDA kernel forms
// too, so both give the same bits on every run. Ids outside [0, rows) add
// nothing; an id never seen gets a zero row.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/EmbeddingGrad.h"

#include <algorithm>

namespace hybrid::cpu::kernels {
namespace {

/// Shared: each id's end in the sorted order [rows + 1], the positions
/// sorted by id [positions]; per thread: one row's f32 sums [features].
ScratchLayout embeddingGradScratch(const KernelCall &call) {
  using In = ops::EmbeddingGrad::In;
  const EmbeddingGradProblem s = embeddingGradShape(
      call.operands.at(In::ids).shape, call.operands.at(In::gradOut).shape,
      call.results.at(ops::EmbeddingGrad::Out::out).shape);
  Carve carve;
  carve.take<int64_t>(s.rows + 1);
  carve.take<int64_t>(s.positions);
  return {carve.used(), alignScratch(sizeof(float) * s.features)};
}

} // namespace

void embeddingGrad(const KernelCall &call) {
  constexpr const char *kKernel = "embedding_grad";
  const auto a = EmbeddingGradArgs::bind(call, kKernel);
  const EmbeddingGradProblem s = describeEmbeddingGrad(a);
  visitFloat(s.dtype, kKernel, "grad_out", [&](auto zero) {
    using S = decltype(zero);
    const ScratchLayout layout = embeddingGradScratch(call);
    const int threads = scratchThreads(call, layout, kKernel);
    Carve carve(sharedScratch(call));
    int64_t *ends = carve.take<int64_t>(s.rows + 1);
    int64_t *order = carve.take<int64_t>(s.positions);
    // ends[id + 1] counts id; its prefix sum is where each id starts.
    std::fill(ends, ends + s.rows + 1, 0);
    auto idAt = [&](int64_t i) {
      return tableRowOf(indexAt(a.ids, i), s.rows);
    };
    for (int64_t i = 0; i < s.positions; ++i)
      if (const int64_t id = idAt(i); id >= 0)
        ++ends[id + 1];
    for (int64_t r = 0; r < s.rows; ++r)
      ends[r + 1] += ends[r];
    // Placing each position at its id's cursor moves the cursor to the
    // id's end: ends[id] is then the end of id, ends[id - 1] its start.
    for (int64_t i = 0; i < s.positions; ++i)
      if (const int64_t id = idAt(i); id >= 0)
        order[ends[id]++] = i;
    const S *g = a.gradOut.as<S>();
    S *out = a.out.as<S>();
    const int64_t d = s.features;
    parallelFor(
        s.rows, d,
        [&](int64_t r) {
          S *row = out + r * d;
          const int64_t begin = r == 0 ? 0 : ends[r - 1], end = ends[r];
          if (begin == end) {
            std::fill(row, row + d, fromFloat<S>(0.0f));
            return;
          }
          float *sum =
              static_cast<float *>(threadScratch(call, layout, workerSlot()));
          std::fill(sum, sum + d, 0.0f);
          for (int64_t k = begin; k < end; ++k) {
            const S *src = g + order[k] * d;
            for (int64_t j = 0; j < d; ++j)
              sum[j] += toFloat(src[j]);
          }
          for (int64_t j = 0; j < d; ++j)
            row[j] = fromFloat<S>(sum[j]);
        },
        threads);
  });
}

size_t embeddingGradScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<embeddingGradScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
