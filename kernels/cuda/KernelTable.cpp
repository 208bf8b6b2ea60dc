// The kernel table: each typed op (and each kind of a family with kinds) to
// its CUDA kernel and scratch function.
#include "Kernels.h"

#include <iterator>

namespace hybrid::cuda {
namespace {

using namespace kernels;

// Indexed by kind; the static_asserts keep them in step with Ops.h.
constexpr KernelEntry kBinary[] = {
    {add},       {sub},       {mul},     {div},          {pow},
    {max},       {min},       {mod},     {fmod},         {equal},
    {less},      {lessEqual}, {greater}, {greaterEqual}, {logicalAnd},
    {logicalOr}, {logicalXor}};
static_assert(std::size(kBinary) == kBinaryKinds);

constexpr KernelEntry kUnary[] = {
    {neg},     {abs},        {sign},  {exp},     {log},  {sqrt},
    {rsqrt},   {reciprocal}, {tanh},  {sigmoid}, {relu}, {silu},
    {geluErf}, {geluTanh},   {sin},   {cos},     {erf},  {floor},
    {ceil},    {logicalNot}, {isNan}, {isInf}};
static_assert(std::size(kUnary) == kUnaryKinds);

constexpr KernelEntry kReduce[] = {{reduceSum, reduceScratchBytes},
                                   {reduceMean, reduceScratchBytes},
                                   {reduceMax, reduceScratchBytes},
                                   {reduceMin, reduceScratchBytes},
                                   {reduceProd, reduceScratchBytes}};
static_assert(std::size(kReduce) == kReduceKinds);

/// A kind read from a bundle may be out of range: no kernel then.
template <size_t N, typename Kind>
KernelEntry byKind(const KernelEntry (&table)[N], Kind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < N ? table[i] : KernelEntry{};
}

struct EntryOf {
  KernelEntry operator()(const ops::Binary &o) const {
    return byKind(kBinary, o.kind);
  }
  KernelEntry operator()(const ops::Unary &o) const {
    return byKind(kUnary, o.kind);
  }
  KernelEntry operator()(const ops::Reduce &o) const {
    return byKind(kReduce, o.kind);
  }
  KernelEntry operator()(const ops::Clip &) const { return {clip}; }
  KernelEntry operator()(const ops::Select &) const { return {select}; }
  KernelEntry operator()(const ops::Cast &) const { return {cast}; }
  KernelEntry operator()(const ops::Copy &) const { return {copy}; }
  KernelEntry operator()(const ops::Fill &) const { return {fill}; }
  KernelEntry operator()(const ops::Transpose &) const { return {transpose}; }
  KernelEntry operator()(const ops::BroadcastTo &) const {
    return {broadcastTo};
  }
  KernelEntry operator()(const ops::Slice &) const { return {slice}; }
  KernelEntry operator()(const ops::Concat &) const { return {concat}; }
  KernelEntry operator()(const ops::Gather &) const { return {gather}; }
  KernelEntry operator()(const ops::GatherNd &) const { return {gatherNd}; }
  KernelEntry operator()(const ops::Iota &) const { return {iota}; }
  KernelEntry operator()(const ops::CumSum &) const { return {cumsum}; }
  KernelEntry operator()(const ops::Trilu &) const { return {trilu}; }
  KernelEntry operator()(const ops::Softmax &) const { return {softmax}; }
  KernelEntry operator()(const ops::LayerNorm &) const {
    return {layerNorm, layerNormScratchBytes};
  }
  KernelEntry operator()(const ops::LayerNormGrad &) const {
    return {layerNormGrad, layerNormGradScratchBytes};
  }
  KernelEntry operator()(const ops::ActivationGrad &) const {
    return {activationGrad};
  }
  KernelEntry operator()(const ops::LabelLogProbs &) const {
    return {labelLogProbs};
  }
  KernelEntry operator()(const ops::LabelLogProbsGrad &) const {
    return {labelLogProbsGrad};
  }
  KernelEntry operator()(const ops::EmbeddingGrad &) const {
    return {embeddingGrad, embeddingGradScratchBytes};
  }
  KernelEntry operator()(const ops::RmsNorm &) const {
    return {rmsNorm, rmsNormScratchBytes};
  }
  KernelEntry operator()(const ops::MatMul &) const {
    return {matmul, matmulScratchBytes};
  }
  KernelEntry operator()(const ops::Linear &) const {
    return {linear, linearScratchBytes};
  }
  KernelEntry operator()(const ops::LinearGroup &) const {
    return {linearGroup, linearGroupScratchBytes};
  }
  KernelEntry operator()(const ops::Embedding &) const { return {embedding}; }
  KernelEntry operator()(const ops::Rotary &) const { return {rotary}; }
  KernelEntry operator()(const ops::Attention &) const {
    return {attention, attentionScratchBytes};
  }
  KernelEntry operator()(const ops::AttentionGrad &) const {
    return {attentionGrad, attentionGradScratchBytes};
  }
  // Collectives go through NCCL and events through the stream API in the
  // backend.
  KernelEntry operator()(const ops::Collective &) const { return {}; }
  KernelEntry operator()(const ops::RecordEvent &) const { return {}; }
  KernelEntry operator()(const ops::WaitEvent &) const { return {}; }
  KernelEntry operator()(const ops::CacheWrite &) const { return {cacheWrite}; }
  KernelEntry operator()(const ops::Sample &) const {
    return {sample, sampleScratchBytes};
  }
  KernelEntry operator()(const ops::SampleStep &) const {
    return {sampleStep, sampleStepScratchBytes};
  }
  KernelEntry operator()(const ops::AdamWUpdate &) const {
    return {adamwUpdate};
  }
};

} // namespace

KernelEntry findKernel(const Op &op) { return std::visit(EntryOf{}, op); }

} // namespace hybrid::cuda
