// Every CPU kernel entry point, one per op family or per kind of a family
// with kinds, and the scratch functions of the kernels that need scratch
// (`<kernel>ScratchBytes`); KernelTable.cpp maps the typed ops to these.
// Names that are C++ keywords get a `logical` prefix.
#pragma once

#include "cpu/CpuKernels.h"

namespace hybrid::cpu::kernels {

// Elementwise.cpp: binary arithmetic, comparisons and logic.
void add(const KernelCall &call);
void sub(const KernelCall &call);
void mul(const KernelCall &call);
void div(const KernelCall &call);
void pow(const KernelCall &call);
void max(const KernelCall &call);
void min(const KernelCall &call);
void mod(const KernelCall &call);
void fmod(const KernelCall &call);
void equal(const KernelCall &call);
void less(const KernelCall &call);
void lessEqual(const KernelCall &call);
void greater(const KernelCall &call);
void greaterEqual(const KernelCall &call);
void logicalAnd(const KernelCall &call);
void logicalOr(const KernelCall &call);
void logicalXor(const KernelCall &call);

// Unary.cpp
void neg(const KernelCall &call);
void abs(const KernelCall &call);
void sign(const KernelCall &call);
void exp(const KernelCall &call);
void log(const KernelCall &call);
void sqrt(const KernelCall &call);
void rsqrt(const KernelCall &call);
void reciprocal(const KernelCall &call);
void tanh(const KernelCall &call);
void sigmoid(const KernelCall &call);
void relu(const KernelCall &call);
void silu(const KernelCall &call);
void geluErf(const KernelCall &call);
void geluTanh(const KernelCall &call);
void sin(const KernelCall &call);
void cos(const KernelCall &call);
void erf(const KernelCall &call);
void floor(const KernelCall &call);
void ceil(const KernelCall &call);
void logicalNot(const KernelCall &call);
void isNan(const KernelCall &call);
void isInf(const KernelCall &call);

void clip(const KernelCall &call);        // Clip.cpp
void select(const KernelCall &call);      // Select.cpp
void cast(const KernelCall &call);        // Cast.cpp
void copy(const KernelCall &call);        // Copy.cpp
void fill(const KernelCall &call);        // Fill.cpp
void transpose(const KernelCall &call);   // Transpose.cpp
void broadcastTo(const KernelCall &call); // BroadcastTo.cpp
void slice(const KernelCall &call);       // Slice.cpp
void concat(const KernelCall &call);      // Concat.cpp
void gather(const KernelCall &call);      // Gather.cpp
void gatherNd(const KernelCall &call);    // GatherNd.cpp
void iota(const KernelCall &call);        // Iota.cpp
void cumsum(const KernelCall &call);      // CumSum.cpp
void trilu(const KernelCall &call);       // Trilu.cpp

// CumSum.cpp
size_t cumsumScratchBytes(const KernelCall &call, int threads);

// Reduce.cpp
void reduceSum(const KernelCall &call);
void reduceMean(const KernelCall &call);
void reduceMax(const KernelCall &call);
void reduceMin(const KernelCall &call);
void reduceProd(const KernelCall &call);
size_t reduceScratchBytes(const KernelCall &call, int threads);

// Softmax.cpp (softmax and log_softmax)
void softmax(const KernelCall &call);
size_t softmaxScratchBytes(const KernelCall &call, int threads);

// LayerNorm.cpp
void layerNorm(const KernelCall &call);
size_t layerNormScratchBytes(const KernelCall &call, int threads);
// LayerNormGrad.cpp
void layerNormGrad(const KernelCall &call);
size_t layerNormGradScratchBytes(const KernelCall &call, int threads);

// ActivationGrad.cpp
void activationGrad(const KernelCall &call);

// LabelLogProbs.cpp
void labelLogProbs(const KernelCall &call);
void labelLogProbsGrad(const KernelCall &call);

// EmbeddingGrad.cpp
void embeddingGrad(const KernelCall &call);
size_t embeddingGradScratchBytes(const KernelCall &call, int threads);

// RmsNorm.cpp
void rmsNorm(const KernelCall &call);
size_t rmsNormScratchBytes(const KernelCall &call, int threads);

// MatMul.cpp
void matmul(const KernelCall &call);
size_t matmulScratchBytes(const KernelCall &call, int threads);

// Linear.cpp
void linear(const KernelCall &call);
size_t linearScratchBytes(const KernelCall &call, int threads);
void linearGroup(const KernelCall &call);
size_t linearGroupScratchBytes(const KernelCall &call, int threads);

void embedding(const KernelCall &call); // Embedding.cpp
void rotary(const KernelCall &call);    // Rotary.cpp
// Attention.cpp
void attention(const KernelCall &call);
size_t attentionScratchBytes(const KernelCall &call, int threads);
// AttentionGrad.cpp
void attentionGrad(const KernelCall &call);
size_t attentionGradScratchBytes(const KernelCall &call, int threads);

void cacheWrite(const KernelCall &call); // CacheWrite.cpp
/// cache_write on tensors, for kernels that write a cache as part of their
/// work (an attention appending its step's keys and values).
void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis);
// Sample.cpp
void sample(const KernelCall &call);
size_t sampleScratchBytes(const KernelCall &call, int threads);
// SampleStep.cpp
void sampleStep(const KernelCall &call);
size_t sampleStepScratchBytes(const KernelCall &call, int threads);

void adamwUpdate(const KernelCall &call); // AdamW.cpp

} // namespace hybrid::cpu::kernels
