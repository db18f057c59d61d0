// Float GEMMs go to porttool's own SGEMM (sgemm.h); double ones to the plain loop below. No BLAS
// library: Debian's pthread OpenBLAS rounded differently on pool threads (sgemm.cc), ran the
// transformer block's MatMuls at 11.1 ms against 6.4 ms for sgemm.cc on an AVX-512 core, and its
// worker thread, started when the library loads, spun for about 0.1 s on the second core of
// every short run (the LeakyRelu conv net took 1.3-2.5 ms at 2 threads instead of 1.3).
#include "lib/runtime/kernels/gemm.h"

#include <vector>

#include "lib/runtime/kernels/sgemm.h"

namespace porttool::runtime::kernels {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Double data is for accuracy, not speed (double models, reference checks): each row of C sums
// its products in a row of accumulators, k in order, then takes alpha and beta once.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  std::vector<double> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) acc[j] += av * b[j * ldb + p];
      } else {
        const double* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
      }
    }
    double* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      crow[j] = beta == 0.0 ? alpha * acc[j] : alpha * acc[j] + beta * crow[j];
    }
  }
}

}  // namespace porttool::runtime::kernels
