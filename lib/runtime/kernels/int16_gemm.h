// The int16 x int16 -> int32 matrix product behind the integer convolutions (quant_integer.cc).
// Private to lib/runtime/kernels.
#pragma once

#include <cstdint>

namespace porttool::runtime::kernels {

// Whether Int16Gemm runs on this CPU (it has an AVX-512 kernel only, two products per
// instruction); elsewhere the integer convolutions keep their own loop over four output channels,
// and calling Int16Gemm is an internal error.
bool HasInt16GemmKernel();

// c[i * n + j] = sum over r < k of a[i * lda + r] * b[r * n + j], for i < m and j < n, summed in
// 32 bits with wrap-around (the integer ops' accumulation, whose bits do not depend on the
// order). a's rows must hold k rounded up to even values, the pad 0 (read two at a time).
void Int16Gemm(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int16_t* b,
               uint32_t* c);

}  // namespace porttool::runtime::kernels
