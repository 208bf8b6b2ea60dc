// The worker-thread count shared by the OpenMP loops and OpenBLAS.
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
  openblas_set_num_threads(n);
#endif
}

int numThreads() { return omp_get_max_threads(); }

} // namespace hybrid::cpu
