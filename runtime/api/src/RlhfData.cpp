// RLHF JSONL records and padded batches.
#include "hybrid/RlhfData.h"

#include "hybrid/Types.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace hybrid {

namespace {

std::vector<int64_t> tokenArray(const nlohmann::json &line, const char *field,
                                const std::string &where) {
  auto it = line.find(field);
  if (it == line.end() || it->is_null())
    return {};
  if (!it->is_array())
    throw Error(where + ": \"" + field + "\" must be an array of token ids");
  std::vector<int64_t> ids;
  ids.reserve(it->size());
  for (const nlohmann::json &v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      throw Error(where + ": \"" + field + "\" holds " + v.dump() +
                  ", not a token id (an integer >= 0)");
    ids.push_back(v.get<int64_t>());
  }
  return ids;
}

} // namespace

std::vector<RlhfRecord> readRlhfJsonl(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": cannot read");
  std::vector<RlhfRecord> records;
  std::string text;
  for (int64_t lineNo = 1; std::getline(in, text); ++lineNo) {
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const std::string where = path + ":" + std::to_string(lineNo);
    nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object())
      throw Error(where + ": not a JSON object");
    RlhfRecord r;
    r.prompt = tokenArray(line, "prompt", where);
    r.chosen = tokenArray(line, "chosen", where);
    r.rejected = tokenArray(line, "rejected", where);
    records.push_back(std::move(r));
  }
  if (records.empty())
    throw Error(path + ": no records (one JSON object a line)");
  return records;
}

PaddedBatch padSequences(const std::vector<std::vector<int64_t>> &rows,
                         int64_t length, int64_t padId, bool leftPad) {
  const int64_t n = static_cast<int64_t>(rows.size());
  PaddedBatch b{HostTensor::allocate(DType::I64, {n, length}),
                HostTensor::allocate(DType::I64, {n, length})};
  int64_t *ids = b.ids.as<int64_t>();
  int64_t *mask = b.mask.as<int64_t>();
  std::fill(ids, ids + n * length, padId);
  std::fill(mask, mask + n * length, int64_t{0});
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<int64_t> &row = rows[r];
    const int64_t used = std::min<int64_t>(length, row.size());
    const int64_t from = leftPad ? static_cast<int64_t>(row.size()) - used : 0;
    const int64_t at = leftPad ? length - used : 0;
    for (int64_t i = 0; i < used; ++i) {
      ids[r * length + at + i] = row[from + i];
      mask[r * length + at + i] = 1;
    }
  }
  return b;
}

std::vector<int64_t> concatTokens(const std::vector<int64_t> &a,
                                  const std::vector<int64_t> &b) {
  std::vector<int64_t> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

} // namespace hybrid
