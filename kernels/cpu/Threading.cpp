// The worker-thread count of the kernels. Every kernel, GEMMs included, runs
// on the OpenMP threads; OpenBLAS is kept to one thread per call (Gemm.cpp)
// so that two thread pools never spin against each other.
#include "cpu/CpuKernels.h"

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

} // namespace hybrid::cpu
