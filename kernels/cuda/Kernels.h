// Every CUDA kernel entry point, one per op family or per kind of a family
// with kinds, and the scratch functions of the kernels that need scratch
// (`<kernel>ScratchBytes`); KernelTable.cpp maps the typed ops to these.
// Names that are C++ keywords get a `logical` prefix.
#pragma once

#include "cuda/CudaKernels.h"

namespace hybrid::cuda::kernels {

// Binary.cu: arithmetic, comparisons and logic.
void add(const CudaCall &call);
void sub(const CudaCall &call);
void mul(const CudaCall &call);
void div(const CudaCall &call);
void pow(const CudaCall &call);
void max(const CudaCall &call);
void min(const CudaCall &call);
void mod(const CudaCall &call);
void fmod(const CudaCall &call);
void equal(const CudaCall &call);
void less(const CudaCall &call);
void lessEqual(const CudaCall &call);
void greater(const CudaCall &call);
void greaterEqual(const CudaCall &call);
void logicalAnd(const CudaCall &call);
void logicalOr(const CudaCall &call);
void logicalXor(const CudaCall &call);

// Unary.cu
void neg(const CudaCall &call);
void abs(const CudaCall &call);
void sign(const CudaCall &call);
void exp(const CudaCall &call);
void log(const CudaCall &call);
void sqrt(const CudaCall &call);
void rsqrt(const CudaCall &call);
void reciprocal(const CudaCall &call);
void tanh(const CudaCall &call);
void sigmoid(const CudaCall &call);
void relu(const CudaCall &call);
void silu(const CudaCall &call);
void geluErf(const CudaCall &call);
void geluTanh(const CudaCall &call);
void sin(const CudaCall &call);
void cos(const CudaCall &call);
void erf(const CudaCall &call);
void floor(const CudaCall &call);
void ceil(const CudaCall &call);
void logicalNot(const CudaCall &call);
void isNan(const CudaCall &call);
void isInf(const CudaCall &call);

void clip(const CudaCall &call);        // Clip.cu
void select(const CudaCall &call);      // Select.cu
void cast(const CudaCall &call);        // Cast.cu
void copy(const CudaCall &call);        // Copy.cu
void fill(const CudaCall &call);        // Fill.cu
void transpose(const CudaCall &call);   // Transpose.cu
void broadcastTo(const CudaCall &call); // BroadcastTo.cu
void slice(const CudaCall &call);       // Slice.cu
void concat(const CudaCall &call);      // Concat.cu
void gather(const CudaCall &call);      // Gather.cu
void gatherNd(const CudaCall &call);    // GatherNd.cu
void iota(const CudaCall &call);        // Iota.cu
void cumsum(const CudaCall &call);      // CumSum.cu
void trilu(const CudaCall &call);       // Trilu.cu
void cacheWrite(const CudaCall &call);  // CacheWrite.cu
/// cache_write on tensors, enqueued on `stream`, for kernels that write a
/// cache as part of their work (an attention appending outside the grouped
/// decode kernel).
void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis, Stream stream);

// Reduce.cu
void reduceSum(const CudaCall &call);
void reduceMean(const CudaCall &call);
void reduceMax(const CudaCall &call);
void reduceMin(const CudaCall &call);
void reduceProd(const CudaCall &call);
size_t reduceScratchBytes(const CudaCall &call); // any reduce_*

void softmax(const CudaCall &call); // Softmax.cu (softmax and log_softmax)

// LayerNorm.cu
void layerNorm(const CudaCall &call);
size_t layerNormScratchBytes(const CudaCall &call);
// LayerNormGrad.cu
void layerNormGrad(const CudaCall &call);
size_t layerNormGradScratchBytes(const CudaCall &call);

// ActivationGrad.cu
void activationGrad(const CudaCall &call);

// LabelLogProbs.cu
void labelLogProbs(const CudaCall &call);
void labelLogProbsGrad(const CudaCall &call);

// EmbeddingGrad.cu
void embeddingGrad(const CudaCall &call);
size_t embeddingGradScratchBytes(const CudaCall &call);

// RmsNorm.cu
void rmsNorm(const CudaCall &call);
size_t rmsNormScratchBytes(const CudaCall &call);

// MatMul.cpp
void matmul(const CudaCall &call);
size_t matmulScratchBytes(const CudaCall &call);

// Linear.cpp
void linear(const CudaCall &call);
size_t linearScratchBytes(const CudaCall &call);
void linearGroup(const CudaCall &call);
size_t linearGroupScratchBytes(const CudaCall &call);

void embedding(const CudaCall &call); // Embedding.cu
void rotary(const CudaCall &call);    // Rotary.cu

// Attention.cu
void attention(const CudaCall &call);
size_t attentionScratchBytes(const CudaCall &call);
// AttentionGrad.cu
void attentionGrad(const CudaCall &call);
size_t attentionGradScratchBytes(const CudaCall &call);

// Sample.cu
void sample(const CudaCall &call);
size_t sampleScratchBytes(const CudaCall &call);
void sampleStep(const CudaCall &call);
size_t sampleStepScratchBytes(const CudaCall &call);

void adamwUpdate(const CudaCall &call); // AdamW.cu

} // namespace hybrid::cuda::kernels
