// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], then the activation, then an optional residual,
// as one cuBLASLt GEMM over all leading dimensions with what it can fuse as
// its epilogue (Gemm.h); f32 (exact f32 compute), bf16 and f16 (f32
// accumulation). A norm prologue runs inside the skinny GEMM where it
// takes the product (a decode step's few rows: one launch); otherwise the
// layer_norm / rms_norm kernel normalises the rows into scratch first.
// linear_group runs its members' products together (Gemm.h: gemmGroup),
// each over its range of the weight's output features.
#include "Check.h"
#include "Gemm.h"
#include "Kernels.h"

#include "common/LinearChecks.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hybrid::cuda::kernels {

namespace {

/// The normalised rows' offset in scratch (after the GEMM workspace) and
/// size, when the prologue runs as its own kernel.
size_t normalisedRowsBytes(const CudaCall &call) {
  const ops::Linear &attrs = call.attrs<ops::Linear>();
  if (attrs.norm == NormKind::None)
    return 0;
  const ConstTensor &input = call.operands.at(0);
  return (static_cast<size_t>(input.numel()) * dtypeSize(input.dtype) + 255) /
         256 * 256;
}

/// Checks the prologue's operands and attributes against K.
void checkPrologue(const CudaCall &call, const ops::Linear &attrs, int64_t K) {
  checks::checkNormPrologue(call, attrs, K, [](const std::string &message) {
    fail("linear", message);
  });
}

/// Runs the prologue as the layer_norm / rms_norm kernel from the input
/// into `rows` (the input's shape and dtype).
void normaliseInto(const CudaCall &call, const ops::Linear &attrs, void *rows) {
  const ConstTensor &input = call.operands[0];
  const ConstTensor absent = ConstTensor::absent();
  const ConstTensor *weight = optionalOperand(call, 4);
  const ConstTensor *bias = optionalOperand(call, 5);
  const bool layer = attrs.norm == NormKind::LayerNorm;
  const Op op = layer ? Op(ops::LayerNorm{attrs.normEpsilon, -1})
                      : Op(ops::RmsNorm{attrs.normEpsilon, -1});
  CudaCall norm;
  norm.op = &op;
  norm.operands = {input, weight ? *weight : absent};
  if (layer)
    norm.operands.push_back(bias ? *bias : absent);
  norm.results = {Tensor{rows, input.dtype, input.shape}};
  norm.stream = call.stream;
  norm.context = call.context;
  // A [K] weight is read in place: the norm kernels need no scratch.
  if ((layer ? layerNormScratchBytes(norm) : rmsNormScratchBytes(norm)) != 0)
    fail("linear", "the norm prologue's kernel asks for scratch");
  if (layer)
    layerNorm(norm);
  else
    rmsNorm(norm);
}

/// The product of a linear: the input's rows [M, K] times N output
/// features of a weight (`weight` points at the first feature's row of a
/// [N, K] weight with transW, else at its column of a [K, N] one whose
/// leading dimension is `ldw`), plus `bias` (N values or null) and the
/// activation, into `result`.
GemmProblem linearProblem(const ConstTensor &input, const void *weight,
                          int64_t ldw, const void *bias, const Tensor &result,
                          int64_t N, int64_t K, bool transW,
                          Activation activation) {
  GemmProblem p;
  p.dtype = input.dtype;
  p.M = numElements(result.shape) / std::max<int64_t>(N, 1);
  p.N = N;
  p.K = K;
  p.transB = transW;
  p.lda = K;
  p.ldb = transW ? K : ldw;
  p.ldc = N;
  p.A = input.data;
  p.B = weight;
  p.bias = bias;
  p.C = result.data;
  p.activation = activation;
  return p;
}

} // namespace

void linear(const CudaCall &call) {
  // (input, weight, bias?, residual?[, norm_weight?, norm_bias?]): a
  // linear without a prologue may leave its two operands off.
  expectOperands(call, "linear", 2, call.operands.size() <= 4 ? 2 : 4);
  const ConstTensor &input = call.operands[0], &weight = call.operands[1];
  const ConstTensor *bias = optionalOperand(call, 2);
  const ConstTensor *residual = optionalOperand(call, 3);
  const Tensor &result = call.results[0];
  expectFloat(input.dtype, "linear", "input");
  expectSameDType(weight, input, "linear", "weight", "input");
  expectDType(result, input.dtype, "linear", "result");
  expectRank(weight, 2, "linear", "weight");
  if (input.rank() == 0)
    fail("linear", "input must have rank >= 1");
  const ops::Linear &attrs = call.attrs<ops::Linear>();
  const bool transW = attrs.transposeWeight;
  if (static_cast<int>(attrs.activation) >= kActivations)
    fail("linear", "invalid activation " +
                       std::to_string(static_cast<int>(attrs.activation)));
  const int64_t K = input.shape.back();
  const int64_t N = transW ? weight.shape[0] : weight.shape[1];
  const int64_t wK = transW ? weight.shape[1] : weight.shape[0];
  if (wK != K)
    fail("linear", "input " + shapeToString(input.shape) + " has " +
                       std::to_string(K) + " features but weight " +
                       shapeToString(weight.shape) +
                       (transW ? " ([N, K])" : " ([K, N])") + " expects " +
                       std::to_string(wK));
  Shape out = input.shape;
  out.back() = N;
  expectShape(result, out, "linear", "result");
  if (bias) {
    expectSameDType(*bias, input, "linear", "bias", "input");
    if (bias->numel() != N || (bias->rank() > 0 && bias->shape.back() != N))
      fail("linear", "bias " + shapeToString(bias->shape) + " must have " +
                         std::to_string(N) + " elements");
  }
  if (residual) {
    expectSameDType(*residual, input, "linear", "residual", "input");
    expectShape(*residual, out, "linear", "residual");
  }
  GemmProblem p =
      linearProblem(input, weight.data, N, bias ? bias->data : nullptr, result,
                    N, K, transW, attrs.activation);
  p.residual = residual ? residual->data : nullptr;
  p.ldr = N;
  p.settledB = call.settled(1);
  if (attrs.norm == NormKind::None)
    return gemm(call, p, "linear");
  checkPrologue(call, attrs, K);
  p.norm = attrs.norm;
  const ConstTensor *normWeight = optionalOperand(call, 4);
  const ConstTensor *normBias = optionalOperand(call, 5);
  p.normWeight = normWeight ? normWeight->data : nullptr;
  p.normBias = normBias ? normBias->data : nullptr;
  p.normEpsilon = attrs.normEpsilon;
  if (gemmTakesPrologue(call, p))
    return gemm(call, p, "linear");
  const size_t rowsBytes = normalisedRowsBytes(call);
  if (!call.scratch || call.scratchBytes < kGemmWorkspaceBytes + rowsBytes)
    fail("linear", "needs " + std::to_string(kGemmWorkspaceBytes + rowsBytes) +
                       " bytes of scratch for its norm prologue, got " +
                       std::to_string(call.scratchBytes));
  void *rows = static_cast<char *>(call.scratch) + kGemmWorkspaceBytes;
  normaliseInto(call, attrs, rows);
  p.norm = NormKind::None;
  p.normWeight = p.normBias = nullptr;
  p.A = rows;
  p.lda = K;
  CudaCall product = call;
  product.scratchBytes = kGemmWorkspaceBytes;
  gemm(product, p, "linear");
}

void linearGroup(const CudaCall &call) {
  const auto &attrs = call.attrs<ops::LinearGroup>();
  auto failure = [](const std::string &message) {
    fail("linear_group", message);
  };
  checks::checkLinearGroup(call, attrs, failure);
  const ConstTensor &input = call.operands[0];
  expectFloat(input.dtype, "linear_group", "input");
  const bool transW = attrs.transposeWeight;
  const int64_t K = input.shape.back();
  const size_t bytes = dtypeSize(input.dtype);
  std::vector<GemmProblem> problems(attrs.featureBegins.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    const int64_t fullN =
        checks::checkLinearGroupMember(call, attrs, i, K, failure);
    const ConstTensor &weight = call.operands[1 + 2 * i];
    const ConstTensor *bias = optionalOperand(call, 2 + 2 * i);
    const int64_t begin = attrs.featureBegins[i], end = attrs.featureEnds[i];
    // The member's rows of a [N, K] weight, or its columns of a [K, N]
    // one (the weight's leading dimension), and its part of the bias.
    problems[i] = linearProblem(
        input,
        static_cast<const char *>(weight.data) +
            (transW ? begin * K : begin) * bytes,
        fullN,
        bias ? static_cast<const char *>(bias->data) + begin * bytes : nullptr,
        call.results[i], end - begin, K, transW, attrs.activation);
    problems[i].settledB = call.settled(1 + 2 * i);
  }
  gemmGroup(call, problems.data(), problems.size(), "linear_group");
}

size_t linearGroupScratchBytes(const CudaCall &) { return kGemmWorkspaceBytes; }

size_t linearScratchBytes(const CudaCall &call) {
  try {
    return kGemmWorkspaceBytes + normalisedRowsBytes(call);
  } catch (...) {
    return kGemmWorkspaceBytes; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
