// Int16Gemm: see int16_gemm.h. The AVX-512 kernel keeps a 4 x 32 tile of sums in eight zmm
// registers; two rows of B (32 columns each) are loaded and interleaved once per tile and
// multiplied by four broadcast pairs of A, a vpmaddwd summing two products per lane. The integer
// convolutions ran their int16 products as vpmulld and a separate add per product (7 GMAC/s on a
// 128-channel 3x3 conv, ONNX Runtime 36).
#include "lib/runtime/kernels/int16_gemm.h"

#include <algorithm>
#include <cstring>

#include "lib/runtime/kernels/simd.h"
#include "lib/util/error.h"

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
#include <immintrin.h>
#endif

namespace porttool::runtime::kernels {
namespace {

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
// The lanes of the first `count` of 16 (or 32) elements, count clipped to [0, 16] ([0, 32]).
__mmask16 First16(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? 0 : __mmask16((1u << count) - 1);
}
__mmask32 First32(int64_t count) {
  return count >= 32 ? __mmask32(0xFFFFFFFFu) : count <= 0 ? 0 : __mmask32((1u << count) - 1);
}

// Two rows of B, 32 columns each, interleaved within each 128-bit lane (vpunpck*wd): `lo` holds
// the pairs of columns 0-3, 8-11, 16-19, 24-27 and `hi` those of 4-7, 12-15, 20-23, 28-31. The
// sums stay in that order until they are stored (ToColumns).
struct PairedRows {
  __m512i lo, hi;
};
PORTTOOL_AVX512 PORTTOOL_ALWAYS_INLINE PairedRows Pair(__m512i r0, __m512i r1) {
  return {_mm512_unpacklo_epi16(r0, r1), _mm512_unpackhi_epi16(r0, r1)};
}

// Columns 0-15 (first) and 16-31 (second) from sums in the order of PairedRows.
PORTTOOL_AVX512 PORTTOOL_ALWAYS_INLINE void ToColumns(__m512i lo, __m512i hi, __m512i& first,
                                                      __m512i& second) {
  const __m512i first_idx =
      _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second_idx =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  first = _mm512_permutex2var_epi32(lo, first_idx, hi);
  second = _mm512_permutex2var_epi32(lo, second_idx, hi);
}

// Rows [0, MR) of a, columns [j, j + width) of c, width <= 32: the tile's sums stay in
// registers over all kp pairs of B's rows (the last row of an odd k pairs with zeros), and the
// partial columns of the last tile are masked.
template <int MR>
PORTTOOL_AVX512 PORTTOOL_ALWAYS_INLINE void PairTile(int64_t k, const int16_t* a, int64_t lda,
                                                     const int16_t* b, int64_t n, int64_t j,
                                                     int64_t width, uint32_t* c) {
  const __mmask32 load = First32(width);
  __m512i sum[MR][2];
  for (int i = 0; i < MR; ++i) sum[i][0] = sum[i][1] = _mm512_setzero_si512();
  for (int64_t q = 0; 2 * q < k; ++q) {
    const int16_t* b0 = b + 2 * q * n + j;
    const __m512i r0 = _mm512_maskz_loadu_epi16(load, b0);
    const __m512i r1 =
        2 * q + 1 < k ? _mm512_maskz_loadu_epi16(load, b0 + n) : _mm512_setzero_si512();
    const PairedRows rows = Pair(r0, r1);
    for (int i = 0; i < MR; ++i) {
      int32_t pair;
      std::memcpy(&pair, a + i * lda + 2 * q, sizeof pair);
      const __m512i ai = _mm512_set1_epi32(pair);
      sum[i][0] = _mm512_add_epi32(sum[i][0], _mm512_madd_epi16(ai, rows.lo));
      sum[i][1] = _mm512_add_epi32(sum[i][1], _mm512_madd_epi16(ai, rows.hi));
    }
  }
  const __mmask16 store0 = First16(width), store1 = First16(width - 16);
  for (int i = 0; i < MR; ++i) {
    __m512i first, second;
    ToColumns(sum[i][0], sum[i][1], first, second);
    _mm512_mask_storeu_epi32(c + i * n + j, store0, first);
    _mm512_mask_storeu_epi32(c + i * n + j + 16, store1, second);
  }
}

// Column panels outside, row blocks inside: a panel of B (k x 32) stays in L1 while every row
// block of A passes over it.
PORTTOOL_AVX512 void Int16GemmAvx512(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda,
                                     const int16_t* b, uint32_t* c) {
  for (int64_t j = 0; j < n; j += 32) {
    const int64_t width = std::min<int64_t>(32, n - j);
    for (int64_t i = 0; i < m; i += 4) {
      const int16_t* ai = a + i * lda;
      uint32_t* ci = c + i * n;
      switch (std::min<int64_t>(4, m - i)) {
        case 4:
          PairTile<4>(k, ai, lda, b, n, j, width, ci);
          break;
        case 3:
          PairTile<3>(k, ai, lda, b, n, j, width, ci);
          break;
        case 2:
          PairTile<2>(k, ai, lda, b, n, j, width, ci);
          break;
        default:
          PairTile<1>(k, ai, lda, b, n, j, width, ci);
      }
    }
  }
}
#endif

}  // namespace

bool HasInt16GemmKernel() {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  return HasAvx512();
#else
  return false;
#endif
}

void Int16Gemm(int64_t m, int64_t n, int64_t k, [[maybe_unused]] const int16_t* a,
               [[maybe_unused]] int64_t lda, [[maybe_unused]] const int16_t* b,
               [[maybe_unused]] uint32_t* c) {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
  if (HasAvx512()) return Int16GemmAvx512(m, n, k, a, lda, b, c);
#endif
  ThrowInternal("Int16Gemm called without its AVX-512 kernel ({}x{}x{})", m, n, k);
}

}  // namespace porttool::runtime::kernels
