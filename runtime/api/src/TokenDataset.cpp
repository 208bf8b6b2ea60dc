// Token batches from safetensors files and at random; the cycling dataset.
#include "hybrid/TokenDataset.h"

#include "hybrid/AttentionMask.h"

#include <algorithm>
#include <cstring>

namespace hybrid {

namespace {

bool isInteger(SafeTensorsDType t) {
  return t == SafeTensorsDType::I64 || t == SafeTensorsDType::I32;
}

/// Rows [first, first + n) of a [rows, ...] tensor, wrapping around.
HostTensor rowsOf(const HostTensor &t, int64_t first, int64_t n) {
  Shape shape = t.shape();
  const int64_t rows = shape[0];
  shape[0] = n;
  HostTensor out = HostTensor::allocate(t.dtype(), shape);
  const size_t rowBytes = t.bytes() / static_cast<size_t>(rows);
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(static_cast<uint8_t *>(out.data()) + r * rowBytes,
                static_cast<const uint8_t *>(t.data()) +
                    ((first + r) % rows) * rowBytes,
                rowBytes);
  return out;
}

/// Columns [0, n) of a [rows, columns] tensor.
HostTensor leftColumns(const HostTensor &t, int64_t n) {
  const int64_t rows = t.shape()[0], columns = t.shape()[1];
  HostTensor out = HostTensor::allocate(t.dtype(), {rows, n});
  const size_t size = dtypeSize(t.dtype());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<uint8_t *>(out.data()) + r * n * size,
                static_cast<const uint8_t *>(t.data()) + r * columns * size,
                n * size);
  return out;
}

} // namespace

NamedTensors TokenBatch::inputs() const {
  NamedTensors named{{"input_ids", inputIds}};
  if (attentionMask)
    named.emplace("attention_mask", *attentionMask);
  return named;
}

NamedTensors TokenBatch::lossInputs() const {
  NamedTensors named = inputs();
  if (labels)
    named.emplace("labels", *labels);
  return named;
}

TokenBatch TokenBatch::rowsFrom(int64_t first, int64_t n) const {
  TokenBatch out;
  out.inputIds = rowsOf(inputIds, first, n);
  if (attentionMask)
    out.attentionMask = rowsOf(*attentionMask, first, n);
  if (labels)
    out.labels = rowsOf(*labels, first, n);
  return out;
}

TokenBatch TokenBatch::firstTokens(int64_t n) const {
  if (n < 0 || n > seq())
    throw Error("cannot take the first " + std::to_string(n) +
                " tokens of rows of " + std::to_string(seq()));
  TokenBatch out;
  out.inputIds = leftColumns(inputIds, n);
  if (attentionMask)
    out.attentionMask = leftColumns(*attentionMask, n);
  if (labels)
    out.labels = leftColumns(*labels, n);
  return out;
}

TokenBatch readTokenBatch(const SafeTensorsFile &file,
                          const std::string &idsName, const std::string &what) {
  const std::string &path = file.path();
  const SafeTensorsEntry *ids = file.find(idsName);
  if (!ids)
    throw Error(path + ": no tensor '" + idsName + "' (" + what + ")");
  if (!isInteger(ids->dtype))
    throw Error(path + ": tensor '" + idsName + "' is " +
                safeTensorsDTypeName(ids->dtype) + "; expected " + what);
  if (ids->shape.size() != 2)
    throw Error(path + ": tensor '" + idsName + "' has shape " +
                shapeToString(ids->shape) + "; expected " + what);
  // Integers of the ids' shape, as int64, when the file holds them.
  auto alongside = [&](const char *name) -> std::optional<HostTensor> {
    const SafeTensorsEntry *e = file.find(name);
    if (!e)
      return std::nullopt;
    if (!isInteger(e->dtype) || e->shape != ids->shape)
      throw Error(path + ": " + name + " is " + safeTensorsDTypeName(e->dtype) +
                  " " + shapeToString(e->shape) + "; expected int64 " +
                  shapeToString(ids->shape) + ", the shape of " + idsName);
    return file.toHost(*e, DType::I64);
  };
  TokenBatch batch;
  batch.inputIds = file.toHost(*ids, DType::I64);
  batch.attentionMask = alongside("attention_mask");
  if (batch.attentionMask)
    checkAttentionMask(*batch.attentionMask, batch.inputIds.shape(), path);
  batch.labels = alongside("labels");
  return batch;
}

TokenBatch randomTokenBatch(const BundleDesc &bundle, int64_t batch,
                            int64_t seq) {
  const ExecutableDesc *fwd = nullptr;
  for (const ExecutableDesc &e : bundle.executables)
    if (e.name == "forward")
      fwd = &e;
  const bool onlyIds =
      fwd && !fwd->inputs.empty() && fwd->inputs[0].name == "input_ids" &&
      std::all_of(fwd->inputs.begin() + 1, fwd->inputs.end(),
                  [](const PortDesc &p) { return p.defaultValue.has_value(); });
  if (!onlyIds)
    throw Error("random tokens need a forward that takes input_ids and "
                "otherwise only inputs with defaults (bundle '" +
                bundle.model + "')");
  int64_t vocab = 2;
  for (const PortDesc &p : fwd->outputs)
    if (p.name == "logits")
      if (auto v = fwd->buffers[p.buffer].shape.back().constant())
        vocab = *v;
  TokenBatch out;
  out.inputIds = HostTensor::allocate(DType::I64, {batch, seq});
  // A fixed LCG: the same bundle and shape give the same tokens in every
  // run, so timings and losses compare across runs.
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < batch * seq; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    out.inputIds.as<int64_t>()[i] = static_cast<int64_t>((state >> 33) % vocab);
  }
  return out;
}

TokenDataset TokenDataset::open(const std::string &path) {
  SafeTensorsFile file = SafeTensorsFile::open(path);
  return TokenDataset(
      readTokenBatch(file, "input_ids", "int64 [sequences, seq]"), path);
}

TokenDataset::TokenDataset(TokenBatch sequences, std::string source)
    : data_(std::move(sequences)), source_(std::move(source)) {}

void TokenDataset::seek(int64_t index) { position_ = index % sequences(); }

TokenBatch TokenDataset::next(int64_t n) {
  TokenBatch batch = data_.rowsFrom(position_, n);
  position_ = (position_ + n) % sequences();
  return batch;
}

} // namespace hybrid
