#include "lib/runtime/kernels/gemm.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

#include "lib/runtime/kernels/sgemm.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime::kernels {
namespace {

CBLAS_TRANSPOSE Trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

// The thread pool pins BLAS to one thread when it starts. A GEMM run before anything had touched
// the pool (a small model whose convs all run inline) used OpenBLAS's own threads instead, which
// round differently: `split --verify` then found a model and its segments 1 ulp apart.
void EnsureBlasPinned() {
  static const bool pinned = (NumThreads(), true);
  (void)pinned;
}

// PORTTOOL_GEMM=openblas sends float GEMMs to OpenBLAS instead of porttool's own (to compare
// them; results then depend on the thread count, see sgemm.cc).
bool UseOpenBlas() {
  static const bool openblas = [] {
    const char* v = std::getenv("PORTTOOL_GEMM");
    return v != nullptr && std::strcmp(v, "openblas") == 0;
  }();
  return openblas;
}

}  // namespace

bool GemmUsesOpenBlas() { return UseOpenBlas(); }

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!UseOpenBlas()) {
    Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  EnsureBlasPinned();
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // BLAS may leave C untouched; the math says C = beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  EnsureBlasPinned();
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0 : beta * c[i * ldc + j];
    return;
  }
  cblas_dgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace porttool::runtime::kernels
