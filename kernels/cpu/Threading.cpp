// The worker-thread count of the kernels. Every kernel, GEMMs included, runs
// on the OpenMP threads; OpenBLAS is kept to one thread per call (Gemm.cpp)
// so that two thread pools never spin against each other.
#include "Scratch.h"

#include "KernelCheck.h"

#include <omp.h>

#ifdef HYBRID_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace hybrid::cpu {

void setNumThreads(int n) {
  if (n <= 0)
    n = omp_get_num_procs();
  omp_set_num_threads(n);
#ifdef HYBRID_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
}

int numThreads() { return omp_get_max_threads(); }

int workerThreads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

int scratchThreads(const KernelCall &call, const ScratchLayout &layout,
                   const char *kernel) {
  const int wanted = workerThreads();
  const size_t have = call.scratch ? call.scratchBytes : 0;
  if (have >= layout.bytes(wanted))
    return wanted;
  const size_t base = alignScratch(layout.shared);
  const size_t each = alignScratch(layout.perThread);
  if (have < base + each)
    fail(kernel, "needs " + std::to_string(layout.bytes(wanted)) +
                     " bytes of scratch, got " + std::to_string(have));
  return static_cast<int>((have - base) / each);
}

} // namespace hybrid::cpu
