// The executor's one door to GEMM: row-major products for the Conv, ConvTranspose, MatMul and Gemm
// kernels (float through porttool's own SGEMM, double through a plain loop; gemm.cc says why no
// BLAS library). Keeping every call behind these two functions keeps the implementation
// swappable (an accelerator) without touching the kernels. Private to lib/runtime/kernels.
#pragma once

#include <cstdint>

namespace porttool::runtime::kernels {

// C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or X^T. The leading
// dimensions are the row strides of A, B and C as stored (before transposition).
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

}  // namespace porttool::runtime::kernels
