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

#include "common/Linear.h"

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
  const ConstTensor &input = call.operands.at(ops::Linear::In::input);
  return (static_cast<size_t>(input.numel()) * dtypeSize(input.dtype) + 255) /
         256 * 256;
}

/// Runs the prologue as the layer_norm / rms_norm kernel from the input
/// into `rows` (the input's shape and dtype).
void normaliseInto(const CudaCall &call, const LinearArgs &a,
                   const LinearProblem &s, void *rows) {
  const ConstTensor absent = ConstTensor::absent();
  const bool layer = s.norm == NormKind::LayerNorm;
  const Op op = layer ? Op(ops::LayerNorm{s.normEpsilon, -1})
                      : Op(ops::RmsNorm{s.normEpsilon, -1});
  CudaCall norm;
  norm.op = &op;
  norm.operands = {a.input, a.normWeight ? *a.normWeight : absent};
  if (layer)
    norm.operands.push_back(a.normBias ? *a.normBias : absent);
  norm.results = {Tensor{rows, a.input.dtype, a.input.shape}};
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

/// The product of a linear: the input's M rows of K times N output features
/// of a weight (`weight` points at the first feature's row of a [N, K]
/// weight with transW, else at its column of a [K, N] one; `ldw` is its
/// leading dimension), plus `bias` (N values or null) and the activation,
/// into `out`.
GemmProblem productOf(DType dtype, int64_t M, int64_t N, int64_t K,
                      const void *input, const void *weight, int64_t ldw,
                      bool transW, const void *bias, Activation activation,
                      void *out) {
  GemmProblem p;
  p.dtype = dtype;
  p.M = M;
  p.N = N;
  p.K = K;
  p.transB = transW;
  p.lda = K;
  p.ldb = ldw;
  p.ldc = N;
  p.A = input;
  p.B = weight;
  p.bias = bias;
  p.C = out;
  p.activation = activation;
  return p;
}

} // namespace

void linear(const CudaCall &call) {
  const auto a = LinearArgs::bind(call, "linear");
  const LinearProblem s = describeLinear(a);
  GemmProblem p = productOf(s.dtype, s.M, s.N, s.K, a.input.data, a.weight.data,
                            s.ldw(), s.transW, a.bias ? a.bias->data : nullptr,
                            s.activation, a.out.data);
  p.residual = a.residual ? a.residual->data : nullptr;
  p.ldr = s.N;
  p.settledB = call.settled(ops::Linear::In::weight);
  if (s.norm == NormKind::None)
    return gemm(call, p, "linear");
  p.norm = s.norm;
  p.normWeight = a.normWeight ? a.normWeight->data : nullptr;
  p.normBias = a.normBias ? a.normBias->data : nullptr;
  p.normEpsilon = s.normEpsilon;
  if (gemmTakesPrologue(call, p))
    return gemm(call, p, "linear");
  const size_t rowsBytes = normalisedRowsBytes(call);
  if (!call.scratch || call.scratchBytes < kGemmWorkspaceBytes + rowsBytes)
    fail("linear", "needs " + std::to_string(kGemmWorkspaceBytes + rowsBytes) +
                       " bytes of scratch for its norm prologue, got " +
                       std::to_string(call.scratchBytes));
  void *rows = static_cast<char *>(call.scratch) + kGemmWorkspaceBytes;
  normaliseInto(call, a, s, rows);
  p.norm = NormKind::None;
  p.normWeight = p.normBias = nullptr;
  p.A = rows;
  p.lda = s.K;
  CudaCall product = call;
  product.scratchBytes = kGemmWorkspaceBytes;
  gemm(product, p, "linear");
}

void linearGroup(const CudaCall &call) {
  const auto a = LinearGroupArgs::bind(call, "linear_group");
  const LinearGroupProblem g = describeLinearGroup(a);
  const size_t bytes = dtypeSize(g.dtype);
  std::vector<GemmProblem> problems(g.members.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    const LinearGroupMember &m = g.members[i];
    const ConstTensor *bias = a.bias(i);
    // The member's rows of a [N, K] weight, or its columns of a [K, N]
    // one (the weight's leading dimension), and its part of the bias.
    problems[i] = productOf(
        g.dtype, g.M, m.features(), g.K, a.input().data,
        static_cast<const char *>(a.weight(i).data) + g.weightOffset(m) * bytes,
        g.ldw(m), g.transW,
        bias ? static_cast<const char *>(bias->data) + m.begin * bytes
             : nullptr,
        g.activation, a.out(i).data);
    problems[i].settledB = call.settled(LinearGroupArgs::weightPosition(i));
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
