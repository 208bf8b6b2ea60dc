// Step FLOPs, medians and peak memory.
#include "hybrid/Metrics.h"

#include <algorithm>
#include <set>
#include <variant>

namespace hybrid {

StepFlops stepFlopsOf(const BundleDesc &bundle, const Executable &trainStep,
                      int64_t batch, int64_t seq) {
  StepFlops f;
  const std::vector<std::string> &outs = trainStep.outputNames();
  const std::set<std::string> grads(outs.begin(), outs.end());
  for (const ParamDesc &p : bundle.params)
    if (grads.count("grad." + p.name))
      f.trainable += numElements(p.shape);
  for (const ExecutableDesc &e : bundle.executables) {
    if (e.name != "forward")
      continue;
    for (const CommandDesc &c : e.commands) {
      if (!std::holds_alternative<ops::Attention>(c.op) || c.operands.empty())
        continue;
      // The query: [batch, heads, seq, head size].
      const SymShape &q = e.buffers.at(c.operands[0]).shape;
      if (q.size() != 4 || !q[1].constant() || !q[3].constant())
        continue;
      ++f.layers;
      f.width = std::max(f.width, *q[1].constant() * *q[3].constant());
    }
  }
  const double tokens = static_cast<double>(batch) * seq;
  f.dense = 6.0 * static_cast<double>(f.trainable) * tokens;
  f.attention = 12.0 * static_cast<double>(f.layers) * f.width * seq * tokens;
  return f;
}

double medianOf(std::vector<double> samples) {
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

double peakMemoryGiB(const Device &device) {
  return static_cast<double>(device.memoryStats().peakBytes) /
         (1024.0 * 1024.0 * 1024.0);
}

} // namespace hybrid
