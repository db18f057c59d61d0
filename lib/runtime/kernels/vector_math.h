// exp and erf over 8 floats at a time, written with GCC vector extensions (glibc's expf/erff are
// scalar calls of 4-16 ns per element: a transformer block's Softmax and GELU Erf took 36% of its
// run through them, and the compiler will not vectorise a loop around them). In a
// PORTTOOL_SIMD_CLONES function the vectors become AVX2/AVX-512 registers; in the baseline clone,
// pairs of SSE registers. Private to lib/runtime/kernels.
//
// Accuracy, measured against double-precision exp/erf: Exp8 within 1 ulp over [-87.3, 88.7]
// (Cephes' range reduction and polynomial); below that it returns 0, above +inf, NaN stays NaN.
// Erf8 within 4.5e-7 absolute and relative over the whole float line (the rational approximation
// XLA and Eigen use; exact to float precision past |x| = 4 where erf is +-1).
#pragma once

#include <cstdint>
#include <cstring>

#include "lib/runtime/kernels/simd.h"

// GCC warns that passing 32-byte vectors by value changes the ABI without AVX. Every function
// here and every lambda given to Map8 is always_inline, so no such value crosses a call; the
// warning has nothing to point at (the pragma stays in effect in the files including this one).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace porttool::runtime::kernels {

using V8f = float __attribute__((vector_size(32)));
using V8i = int32_t __attribute__((vector_size(32)));

PORTTOOL_ALWAYS_INLINE V8f Splat(float v) { return V8f{} + v; }

// Clamps to [lo, hi]; NaN becomes lo (so a following float-to-int conversion is defined).
PORTTOOL_ALWAYS_INLINE V8f ClampNanLow(V8f x, float lo, float hi) {
  x = !(x >= Splat(lo)) ? Splat(lo) : x;
  return x > Splat(hi) ? Splat(hi) : x;
}

PORTTOOL_ALWAYS_INLINE V8f Exp8(V8f x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMax = 88.7228317f, kMin = -87.3365479f;
  const V8f c = ClampNanLow(x, kMin, kMax);
  // x = n ln2 + r with |r| <= ln2 / 2; the split constant keeps n ln2 exact. n = floor(...)
  // from a truncating conversion, one less where that rounded up (negative values).
  const V8f t = c * kLog2e + 0.5f;
  V8f n = __builtin_convertvector(__builtin_convertvector(t, V8i), V8f);
  n = n > t ? n - 1.0f : n;
  const V8f r = c - n * kLn2Hi - n * kLn2Lo;
  V8f p = Splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  V8f er = p * r * r + r + 1.0f;
  // 2^n from its exponent bits. n is in [-126, 128]; 2^128 is not a float, so that end takes
  // 2^127 times 2.
  const V8f top = n > 127.0f ? Splat(2.0f) : Splat(1.0f);
  const V8i biased = __builtin_convertvector(n - (top - 1.0f), V8i) + 127;
  V8f pow2;
  const V8i bits = biased << 23;
  std::memcpy(&pow2, &bits, sizeof pow2);
  er = er * top * pow2;
  er = x < Splat(kMin) ? Splat(0.0f) : er;
  er = x > Splat(kMax) ? Splat(__builtin_inff()) : er;
  return x != x ? x : er;
}

PORTTOOL_ALWAYS_INLINE V8f Erf8(V8f x) {
  V8f c = x < Splat(-4.0f) ? Splat(-4.0f) : x;
  c = c > Splat(4.0f) ? Splat(4.0f) : c;  // NaN passes through both and stays NaN
  const V8f c2 = c * c;
  V8f p = Splat(-2.72614225801306e-10f);
  p = p * c2 + 2.77068142495902e-08f;
  p = p * c2 + -2.10102402082508e-06f;
  p = p * c2 + -5.69250639462346e-05f;
  p = p * c2 + -7.34990630326855e-04f;
  p = p * c2 + -2.95459980854025e-03f;
  p = p * c2 + -1.60960333262415e-02f;
  V8f q = Splat(-1.45660718464996e-05f);
  q = q * c2 + -2.13374055278905e-04f;
  q = q * c2 + -1.68282697438203e-03f;
  q = q * c2 + -7.37332916720468e-03f;
  q = q * c2 + -1.42647390514189e-02f;
  return c * p / q;
}

PORTTOOL_ALWAYS_INLINE V8f Sigmoid8(V8f x) { return 1.0f / (1.0f + Exp8(-x)); }

// The first `count` (< 8) floats of x, the other lanes `pad`.
PORTTOOL_ALWAYS_INLINE V8f LoadPartial(const float* x, int64_t count, float pad) {
  float block[8] = {pad, pad, pad, pad, pad, pad, pad, pad};
  std::memcpy(block, x, count * sizeof(float));
  V8f v;
  std::memcpy(&v, block, sizeof v);
  return v;
}

PORTTOOL_ALWAYS_INLINE void StorePartial(float* y, int64_t count, V8f v) {
  float block[8];
  std::memcpy(block, &v, sizeof v);
  std::memcpy(y, block, count * sizeof(float));
}

// y[i] = f(x[i]) for n floats, 8 at a time. x and y may be the same array.
template <typename F>
PORTTOOL_ALWAYS_INLINE void Map8(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V8f v;
    std::memcpy(&v, x + i, sizeof v);
    v = f(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < n) StorePartial(y + i, n - i, f(LoadPartial(x + i, n - i, 0.0f)));
}

PORTTOOL_ALWAYS_INLINE float SumLanes(V8f v) {
  float sum = 0;
  for (int j = 0; j < 8; ++j) sum += v[j];
  return sum;
}

}  // namespace porttool::runtime::kernels
