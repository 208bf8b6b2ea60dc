// Data-movement helpers shared by the kernels that only move elements
// (transpose, slice, broadcast_to, concat, gather, embedding): each picks
// the widest word (up to 16 bytes) the sizes and addresses allow.
#pragma once

#include "Strided.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace hybrid::cuda {

/// dst (contiguous) = operand 0 of `plan`, whose elements are at src + its
/// offsets, moving elements of `elementSize` bytes.
void copyStrided(const StridedPlan<1> &plan, const void *src, void *dst,
                 size_t elementSize, cudaStream_t stream, const char *kernel);

/// `rows` rows of `rowBytes` bytes from src (a row every srcPitch bytes) to
/// dst (a row every dstPitch bytes).
void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rowBytes, int64_t rows, cudaStream_t stream,
              const char *kernel);

/// out[o, k, :] = data[o, index[k], :] for o < outer, k < count, with rows
/// of `rowBytes` bytes and `dim` rows per data block; indices are i32 or
/// i64 (`indexType`), negative ones count from the end when
/// `negativeFromEnd`, and an index out of range yields a zero row (the
/// device cannot raise the CPU kernel's error without a host sync).
void gatherRows(void *out, const void *data, const void *indices,
                DType indexType, int64_t outer, int64_t count, int64_t dim,
                int64_t rowBytes, bool negativeFromEnd, cudaStream_t stream,
                const char *kernel);

/// The widest word (16, 8, 4, 2 or 1 bytes) dividing every value and
/// address given.
size_t widestWord(std::initializer_list<uint64_t> sizesAndAddresses);

} // namespace hybrid::cuda
