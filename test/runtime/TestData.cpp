// Writes the files hybrid_run_cli.sh drives hybrid-run with: the tiny LM
// bundle, its weights (safetensors and ONNX), inputs, the expected logits
// (computed here in double precision), and broken variants of each.
#include "ProtoWriter.h"
#include "TestBundles.h"

#include "bundle_generated.h"
#include "hybrid/Bundle.h"
#include "hybrid/CpuDevice.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/WeightStore.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

using namespace hybrid;
using namespace hybrid::test;

namespace {

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string floatBytes(const float *p, size_t n) {
  return std::string(reinterpret_cast<const char *>(p), n * 4);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hybrid_runtime_testdata OUTDIR\n");
    return 2;
  }
  std::string dir = argv[1];
  auto at = [&](const std::string &name) { return dir + "/" + name; };
  try {
    BundleDesc bundle = tinyLmBundle();
    writeBundle(bundle, at("tiny.hyb"));
    writeBundle(stateBundle(), at("state.hyb"));

    WeightStore weights(bundle.params, std::make_shared<CpuDevice>());
    weights.initRandom(7);
    weights.saveSafeTensors(at("model.safetensors"));
    const float *wte = static_cast<const float *>(weights.data(0));
    const float *g = static_cast<const float *>(weights.data(1));
    const float *beta = static_cast<const float *>(weights.data(2));

    // The same weights as ONNX initializers, plus one the bundle ignores.
    std::vector<Proto> inits;
    for (size_t i = 0; i < weights.size(); ++i) {
      Proto t;
      std::vector<int64_t> dims(weights.shape(i).begin(),
                                weights.shape(i).end());
      t.packedVarints(1, dims).varint(2, 1).bytes(8, weights.name(i));
      t.bytes(9,
              floatBytes(static_cast<const float *>(weights.data(i)),
                         static_cast<size_t>(numElements(weights.shape(i)))));
      inits.push_back(t);
    }
    inits.push_back(Proto()
                        .varint(1, 1)
                        .varint(2, 7)
                        .bytes(8, "folded")
                        .packedVarints(7, {3}));
    std::string onnx = onnxModel(inits).str();
    writeFile(at("tiny.onnx"), std::vector<uint8_t>(onnx.begin(), onnx.end()));

    const int64_t B = 2, T = 3, V = 16, D = 8;
    std::vector<int64_t> ids = {1, 4, 9, 15, 0, 4};
    std::vector<float> idsF(ids.begin(), ids.end());
    std::vector<uint16_t> idsHalf(6, 0x3c00);
    std::vector<float> other = {1, 2};
    writeSafeTensors(at("inputs.safetensors"),
                     {{"input_ids", SafeTensorsDType::I64, {B, T}, ids.data()},
                      {"unrelated", SafeTensorsDType::F32, {2}, other.data()}});
    writeSafeTensors(
        at("inputs_f32.safetensors"),
        {{"input_ids", SafeTensorsDType::F32, {B, T}, idsF.data()}});
    writeSafeTensors(
        at("inputs_f16.safetensors"),
        {{"input_ids", SafeTensorsDType::F16, {B, T}, idsHalf.data()}});
    writeSafeTensors(
        at("inputs_rank1.safetensors"),
        {{"input_ids", SafeTensorsDType::I64, {B * T}, ids.data()}});
    std::vector<uint8_t> idsU8(ids.begin(), ids.end());
    writeSafeTensors(
        at("inputs_u8.safetensors"),
        {{"input_ids", SafeTensorsDType::U8, {B, T}, idsU8.data()}});
    std::vector<int64_t> longIds(33, 1);
    writeSafeTensors(
        at("inputs_long.safetensors"),
        {{"input_ids", SafeTensorsDType::I64, {1, 33}, longIds.data()}});
    writeSafeTensors(at("inputs_missing.safetensors"),
                     {{"unrelated", SafeTensorsDType::F32, {2}, other.data()}});

    // Expected logits in double precision.
    std::vector<double> exact = test::tinyLmReference(wte, g, beta, ids);
    std::vector<float> logits(exact.begin(), exact.end());
    writeSafeTensors(
        at("expected.safetensors"),
        {{"logits", SafeTensorsDType::F32, {B, T, V}, logits.data()}});
    std::vector<float> shifted = logits;
    shifted[5] += 0.5f;
    writeSafeTensors(
        at("shifted.safetensors"),
        {{"logits", SafeTensorsDType::F32, {B, T, V}, shifted.data()}});

    // Broken weights.
    std::vector<SafeTensorsWriteEntry> all;
    for (size_t i = 0; i < weights.size(); ++i)
      all.push_back({weights.name(i), SafeTensorsDType::F32, weights.shape(i),
                     weights.data(i)});
    std::vector<SafeTensorsWriteEntry> missing(all.begin(), all.end() - 1);
    writeSafeTensors(at("weights_missing.safetensors"), missing);
    std::vector<SafeTensorsWriteEntry> extra = all;
    extra.push_back({"lm_head.weight", SafeTensorsDType::F32, {V, D}, wte});
    writeSafeTensors(at("weights_extra.safetensors"), extra);
    std::vector<SafeTensorsWriteEntry> misshaped = all;
    misshaped[0].shape = {D, V};
    writeSafeTensors(at("weights_misshaped.safetensors"), misshaped);

    // Broken bundles.
    std::vector<uint8_t> good = serializeBundle(bundle);
    writeFile(
        at("truncated.hyb"),
        std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
    std::vector<uint8_t> corrupt = good;
    corrupt[corrupt.size() - 9] ^= 0x40;
    writeFile(at("corrupt.hyb"), corrupt);
    std::vector<uint8_t> version = good;
    version[8] = 99;
    writeFile(at("version.hyb"), version);
    std::vector<uint8_t> v1 = good;
    v1[8] = 1;
    writeFile(at("v1.hyb"), v1);
    std::vector<uint8_t> garbage(777);
    std::mt19937 rng(1);
    for (uint8_t &c : garbage)
      c = static_cast<uint8_t>(rng());
    writeFile(at("garbage.hyb"), garbage);
    {
      // A command whose op a newer hybridc might write: union type 99.
      flatbuffers::FlatBufferBuilder fbb;
      std::vector<int32_t> operands = {0}, results = {0};
      std::vector<flatbuffers::Offset<fb::Command>> commands = {
          fb::CreateCommandDirect(fbb, static_cast<fb::Op>(99),
                                  fb::CreateCopy(fbb).Union(), &operands,
                                  &results, 0, "tiny.mlir:2")};
      std::vector<flatbuffers::Offset<fb::Executable>> exes = {
          fb::CreateExecutableDirect(fbb, "forward", nullptr, nullptr, nullptr,
                                     &commands)};
      fb::FinishBundleBuffer(fbb,
                             fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr,
                                                    nullptr, nullptr, &exes));
      writeFile(at("unknown_op.hyb"),
                framePayload(fbb.GetBufferPointer(), fbb.GetSize()));
    }
    BundleDesc noForward = bundle;
    noForward.executables[0].name = "decode";
    writeBundle(noForward, at("no_forward.hyb"));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hybrid_runtime_testdata: %s\n", e.what());
    return 1;
  }
  return 0;
}
