// porttool's own single-precision GEMM (sgemm.cc): row-major C[m x n] = alpha op(A) op(B) +
// beta C, op(X) = X or X^T, leading dimensions as stored. Single-threaded; the result of every
// element is independent of m, n and of how a caller splits C (bitwise, at any thread count).
// Private to lib/runtime/kernels; the kernels reach it through gemm.h.
#pragma once

#include <cstdint>
#include <vector>

namespace porttool::runtime::kernels {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// op(A) packed once (a conv's constant weights): the panels Sgemm would pack on every call.
struct PackedA {
  int64_t m = 0, k = 0;
  std::vector<float> data;
};
PackedA PackMatrixA(bool trans, int64_t m, int64_t k, const float* a, int64_t lda);

// Rows a SgemmPacked call may start at: multiples of the micro-kernel's height.
inline constexpr int64_t kSgemmRowAlign = 6;

// Rows [row0, row0 + rows) of C = A op(B) + beta C for a packed A (row0 a multiple of
// kSgemmRowAlign; c points at row row0). The same bits as Sgemm on the unpacked A.
void SgemmPacked(const PackedA& a, int64_t row0, int64_t rows, bool trans_b, int64_t n,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// op(B) packed once (a MatMul's constant weights), and the columns a SgemmPackedB call may
// start at: multiples of the micro-kernel's width.
struct PackedB {
  int64_t k = 0, n = 0;
  std::vector<float> data;
};
PackedB PackMatrixB(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb);
inline constexpr int64_t kSgemmColAlign = 16;
// Columns of C one micro-kernel tile computes on this CPU (32 with AVX-512, else 16): a GEMM
// narrower than half of it leaves most vector lanes idle.
int64_t SgemmTileWidth();

// Columns [col0, col0 + cols) of C = op(A) B + beta C for a packed B (col0 a multiple of
// kSgemmColAlign; c points at column col0). The same bits as Sgemm on the unpacked B.
void SgemmPackedB(bool trans_a, int64_t m, int64_t col0, int64_t cols, const float* a, int64_t lda,
                  const PackedB& b, float beta, float* c, int64_t ldc);

// Both packed: rows [row0, row0 + rows) and columns [col0, col0 + cols) of C = A B + beta C (row0
// and col0 aligned as above; c points at element (row0, col0)). A caller cutting C into column
// pieces packs A once for all of them instead of once per piece. The same bits as Sgemm.
void SgemmPackedAB(const PackedA& a, int64_t row0, int64_t rows, const PackedB& b, int64_t col0,
                   int64_t cols, float beta, float* c, int64_t ldc);

}  // namespace porttool::runtime::kernels
