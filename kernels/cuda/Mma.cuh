// Tensor-core building blocks the attention kernels share (AttentionMma.cu
// for prompts, AttentionDecodeMma.cu for decode steps): cp.async staging
// with zero fill, ldmatrix, the m16n8k16 bf16 / f16 product with f32
// accumulation, and packing two floats into one register of the storage
// type. Each is one PTX instruction or two; sm_80 and later.
#pragma once

#include "Device.cuh"

#include <type_traits>

namespace hybrid::cuda::kernels::tensorcore {

__device__ __forceinline__ unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes from global to shared memory in the background, or 16 zero
/// bytes when `!present` (nothing is read then).
__device__ __forceinline__ void copy16(void *shared, const void *global,
                                       bool present) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                   sharedAddress(shared)),
               "l"(global), "r"(present ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int N> __device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/// Four 8 x 8 matrices of 16-bit elements from shared memory; lane l gives
/// the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void loadMatrices(unsigned (&r)[4],
                                             const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(row)));
}

/// The same, each matrix transposed.
__device__ __forceinline__ void loadMatricesTransposed(unsigned (&r)[4],
                                                       const void *row) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(sharedAddress(row)));
}

/// c += a b for one m16n8k16 tile: a 16 x 16 (row-major fragments), b
/// 16 x 8 (column-major), c 16 x 8 in f32.
template <typename S>
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4],
                                    unsigned b0, unsigned b1) {
  if constexpr (std::is_same_v<S, Bf16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
}

/// Two floats as a pair of S in one register (x in the low half).
template <typename S>
__device__ __forceinline__ unsigned pack(float x, float y) {
  if constexpr (std::is_same_v<S, Bf16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const unsigned *>(&v);
  } else {
    const __half2 v = __floats2half2_rn(x, y);
    return *reinterpret_cast<const unsigned *>(&v);
  }
}

constexpr float kLog2e = 1.4426950408889634f;

} // namespace hybrid::cuda::kernels::tensorcore
