// exp and erf over 8 floats at a time, written with GCC vector extensions (glibc's expf/erff are
// scalar calls of 4-16 ns per element: a transformer block's Softmax and GELU Erf took 36% of its
// run through them, and the compiler will not vectorise a loop around them). In a
// PORTTOOL_SIMD_CLONES function the vectors become AVX2/AVX-512 registers; in the baseline clone,
// pairs of SSE registers. Private to lib/runtime/kernels.
//
// Accuracy, measured against double-precision exp/erf: Exp8 within 1 ulp over [-87.3, 88.7]
// (Cephes' range reduction and polynomial, in Horner form); below that it returns 0, above +inf,
// NaN stays NaN.
// Erf8 within 4.5e-7 absolute and relative over the whole float line (the rational approximation
// XLA and Eigen use; exact to float precision past |x| = 4 where erf is +-1).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

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
// 16 lanes: one zmm register in an AVX-512 clone, two ymm or four xmm ones elsewhere. The
// transcendental ops (exp, sigmoid, tanh, erf) are written once for either width (ExpV etc.):
// per lane the same operations, so both give the same bits; 16 lanes doubled their throughput
// on a core with 512-bit pipes.
using V16f = float __attribute__((vector_size(64)));
using V16i = int32_t __attribute__((vector_size(64)));
template <typename V>
using IntLanes = std::conditional_t<sizeof(V) == sizeof(V8f), V8i, V16i>;

PORTTOOL_ALWAYS_INLINE V8f Splat(float v) { return V8f{} + v; }

// Clamps to [lo, hi]; NaN becomes lo (so a following float-to-int conversion is defined).
PORTTOOL_ALWAYS_INLINE V8f ClampNanLow(V8f x, float lo, float hi) {
  x = !(x >= Splat(lo)) ? Splat(lo) : x;
  return x > Splat(hi) ? Splat(hi) : x;
}

// e^c for c in [-104, 88.8] as e^r * 2^n, returning e^r and (in t) n: c = n ln2 + r with
// n = round(c log2e) and |r| <= ln2 / 2 (the split constant keeps n ln2 exact), e^r by Cephes'
// polynomial in Horner form. n comes as t = n + 1.5 * 2^23, whose low mantissa bits hold n.
constexpr float kExpRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
template <typename V>
PORTTOOL_ALWAYS_INLINE V ExpOfReduced(V c, V& t) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  t = c * kLog2e + kExpRound;
  const V n = t - kExpRound;
  const V r = c - n * kLn2Hi - n * kLn2Lo;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r + 1.0f;
  return p * r + 1.0f;  // in [0.70, 1.42]
}

template <typename V>
PORTTOOL_ALWAYS_INLINE V ExpV(V x) {
  using VI = IntLanes<V>;
  constexpr float kMax = 88.7228317f, kMin = -87.3365479f;
  const V lo = V{} + kMin, hi = V{} + kMax;
  V c = lo > x ? lo : x;  // maxps/minps forms: NaN passes through
  c = hi < c ? hi : c;
  V t;
  V er = ExpOfReduced(c, t);
  // e^r 2^n by adding n to e^r's exponent field: shifting t's low bits there drops the rounding
  // constant's own bits. n in [-126, 128] keeps the field in range except for x in
  // [kMin, -126 ln2), 3e-6 wide, where the true result is below FLT_MIN and this one is off by
  // less than 1.2e-38.
  VI bits, tbits;
  std::memcpy(&bits, &er, sizeof bits);
  std::memcpy(&tbits, &t, sizeof tbits);
  bits += tbits << 23;
  std::memcpy(&er, &bits, sizeof er);
  er = x < lo ? V{} : er;
  er = x > hi ? V{} + __builtin_inff() : er;
  return x != x ? x : er;
}
PORTTOOL_ALWAYS_INLINE V8f Exp8(V8f x) { return ExpV(x); }

template <typename V>
PORTTOOL_ALWAYS_INLINE V ErfV(V x) {
  V c = x < -4.0f ? V{} - 4.0f : x;
  c = c > 4.0f ? V{} + 4.0f : c;  // NaN passes through both and stays NaN
  const V c2 = c * c;
  V p = V{} + -2.72614225801306e-10f;
  p = p * c2 + 2.77068142495902e-08f;
  p = p * c2 + -2.10102402082508e-06f;
  p = p * c2 + -5.69250639462346e-05f;
  p = p * c2 + -7.34990630326855e-04f;
  p = p * c2 + -2.95459980854025e-03f;
  p = p * c2 + -1.60960333262415e-02f;
  V q = V{} + -1.45660718464996e-05f;
  q = q * c2 + -2.13374055278905e-04f;
  q = q * c2 + -1.68282697438203e-03f;
  q = q * c2 + -7.37332916720468e-03f;
  q = q * c2 + -1.42647390514189e-02f;
  return c * p / q;
}
PORTTOOL_ALWAYS_INLINE V8f Erf8(V8f x) { return ErfV(x); }

template <typename V>
PORTTOOL_ALWAYS_INLINE V SigmoidV(V x) {
  return 1.0f / (1.0f + ExpV(-x));
}
PORTTOOL_ALWAYS_INLINE V8f Sigmoid8(V8f x) { return SigmoidV(x); }

// Copies count (< 8) floats as fixed-size moves of 4, 2 and 1: a memcpy of a variable length
// is a library call, which dominated the epilogue of convs with rows of 2-8 positions.
PORTTOOL_ALWAYS_INLINE void CopyUnder8(float* dst, const float* src, int64_t count) {
  int64_t i = 0;
  if (count & 4) std::memcpy(dst, src, 4 * sizeof(float)), i = 4;
  if (count & 2) std::memcpy(dst + i, src + i, 2 * sizeof(float)), i += 2;
  if (count & 1) dst[i] = src[i];
}

// The first `count` (< 8) floats of x, the other lanes `pad`.
PORTTOOL_ALWAYS_INLINE V8f LoadPartial(const float* x, int64_t count, float pad) {
  float block[8] = {pad, pad, pad, pad, pad, pad, pad, pad};
  CopyUnder8(block, x, count);
  V8f v;
  std::memcpy(&v, block, sizeof v);
  return v;
}

PORTTOOL_ALWAYS_INLINE void StorePartial(float* y, int64_t count, V8f v) {
  float block[8];
  std::memcpy(block, &v, sizeof v);
  CopyUnder8(y, block, count);
}

// y[i] = f(x[i]) for n floats, a vector V (V8f or V16f) at a time; the tail goes through a
// zero-padded block. x and y may be the same array.
template <typename V, typename F>
PORTTOOL_ALWAYS_INLINE void MapLanes(const float* x, float* y, int64_t n, F f) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    v = f(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i == n) return;
  float block[kLanes] = {};
  const int64_t rest = n - i, eight = rest & 8;  // rest < 16
  if (eight) std::memcpy(block, x + i, 8 * sizeof(float));
  CopyUnder8(block + eight, x + i + eight, rest - eight);
  V v;
  std::memcpy(&v, block, sizeof v);
  v = f(v);
  std::memcpy(block, &v, sizeof v);
  if (eight) std::memcpy(y + i, block, 8 * sizeof(float));
  CopyUnder8(y + i + eight, block + eight, rest - eight);
}

// 8 lanes at a time (f takes a V8f), and 16 (a V16f: the transcendental ops' wide form).
template <typename F>
PORTTOOL_ALWAYS_INLINE void Map8(const float* x, float* y, int64_t n, F f) {
  MapLanes<V8f>(x, y, n, f);
}
template <typename F>
PORTTOOL_ALWAYS_INLINE void Map16(const float* x, float* y, int64_t n, F f) {
  MapLanes<V16f>(x, y, n, f);
}

// ---- more lanewise helpers (the elementwise kernels' float32 paths) ----

// v in every lane, -0 included (Splat adds v to +0, so Splat(-0.0f) is +0: fine for constants,
// not for a broadcast operand whose sign of zero must survive). Built from the bits: an
// 8-element brace initialiser is rebuilt lane by lane inside loops instead of broadcast.
PORTTOOL_ALWAYS_INLINE V8f Broadcast8(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const V8i lanes = V8i{} + bits;
  V8f r;
  std::memcpy(&r, &lanes, sizeof r);
  return r;
}

// |x| by clearing the sign bit (as fabs: -0 -> +0, NaN keeps its payload).
PORTTOOL_ALWAYS_INLINE V8f Abs8(V8f x) {
  V8i bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0x7fffffff;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Correctly rounded square root (sqrtps; negative -> NaN, -0 -> -0). Written with SSE intrinsics
// on the two halves: a plain sqrtf loop keeps a scalar errno branch and never vectorises.
PORTTOOL_ALWAYS_INLINE V8f Sqrt8(V8f x) {
#if defined(__SSE__)
  // The halves by shuffles, not through memory (two 16-byte stores read back as one 32-byte
  // load miss store forwarding: that doubled the loop's time).
  using V4f = float __attribute__((vector_size(16)));
  const V4f lo = _mm_sqrt_ps(__builtin_shufflevector(x, x, 0, 1, 2, 3));
  const V4f hi = _mm_sqrt_ps(__builtin_shufflevector(x, x, 4, 5, 6, 7));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
#else
  for (int j = 0; j < 8; ++j) x[j] = __builtin_sqrtf(x[j]);
  return x;
#endif
}

// Natural log (Cephes' logf: within 1 ulp over the normal and subnormal range); log(0) = -inf,
// log(negative) = NaN, log(+inf) = +inf, NaN stays NaN.
PORTTOOL_ALWAYS_INLINE V8f Log8(V8f x) {
  constexpr float kMinNormal = 1.17549435e-38f;
  const V8i subnormal = x < Splat(kMinNormal);
  V8f xs = subnormal ? x * 8388608.0f : x;  // 2^23: subnormals to normal range
  V8i bits;
  std::memcpy(&bits, &xs, sizeof bits);
  V8i e = ((bits >> 23) & 0xff) - 126;
  e = subnormal ? e - 23 : e;
  bits = (bits & 0x007fffff) | 0x3f000000;  // mantissa m in [0.5, 1)
  V8f m;
  std::memcpy(&m, &bits, sizeof m);
  V8f ef = __builtin_convertvector(e, V8f);
  const V8i below = m < Splat(0.707106781186547524f);
  ef = below ? ef - 1.0f : ef;
  m = below ? m + m - 1.0f : m - 1.0f;
  const V8f z = m * m;
  V8f y = Splat(7.0376836292e-2f);
  y = y * m + -1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m + -1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m + -1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m + -2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y = y + ef * -2.12194440e-4f;
  y = y - z * 0.5f;
  V8f r = m + y;
  r = r + ef * 0.693359375f;
  r = x == Splat(0.0f) ? Splat(-__builtin_inff()) : r;
  r = x < Splat(0.0f) ? Splat(__builtin_nanf("")) : r;
  r = x == Splat(__builtin_inff()) ? x : r;
  return x != x ? x : r;
}

// log(1 + t) for t >= 0 (or NaN), by Goldberg's identity log(u) * t / (u - 1) with u = 1 + t,
// which stays accurate where u - 1 loses digits (t itself where u rounds to 1).
PORTTOOL_ALWAYS_INLINE V8f Log1pNonNegative8(V8f t) {
  const V8f u = t + 1.0f;
  const V8f d = u - 1.0f;
  V8f r = Log8(u) * (t / d);
  r = d == Splat(0.0f) ? t : r;
  return t == Splat(__builtin_inff()) ? t : r;
}

// e^x - 1: a degree-8 Taylor polynomial where |x| < 0.5 (no cancellation near 0; -0 stays -0),
// Exp8(x) - 1 elsewhere (within ~3 ulp).
PORTTOOL_ALWAYS_INLINE V8f Expm1_8(V8f x) {
  V8f p = Splat(1.0f / 40320.0f);
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  V8f small = x + x * x * p;
  small = x == Splat(0.0f) ? x : small;
  const V8f large = Exp8(x) - 1.0f;
  return Abs8(x) < Splat(0.5f) ? small : large;
}

// tanh: the odd 13/6 rational approximation ONNX Runtime (MLAS) and Eigen use, on x clamped to
// [-9, 9]; x itself where |x| < 0.0004 (Eigen). NaN stays NaN.
template <typename V>
PORTTOOL_ALWAYS_INLINE V TanhV(V x) {
  V c = x < -9.0f ? V{} - 9.0f : x;
  c = c > 9.0f ? V{} + 9.0f : c;
  const V c2 = c * c;
  V p = V{} + -2.76076847742355e-16f;
  p = p * c2 + 2.00018790482477e-13f;
  p = p * c2 + -8.60467152213735e-11f;
  p = p * c2 + 5.12229709037114e-08f;
  p = p * c2 + 1.48572235717979e-05f;
  p = p * c2 + 6.37261928875436e-04f;
  p = p * c2 + 4.89352455891786e-03f;
  p = p * c;
  V q = V{} + 1.19825839466702e-06f;
  q = q * c2 + 1.18534705686654e-04f;
  q = q * c2 + 2.26843463243900e-03f;
  q = q * c2 + 4.89352518554385e-03f;
  const V r = p / q;
  const V ax = x < 0.0f ? -x : x;  // NaN fails the test below and takes r, which is NaN
  return ax < 0.0004f ? x : r;
}
PORTTOOL_ALWAYS_INLINE V8f Tanh8(V8f x) { return TanhV(x); }

// o[i] = f(a[i], b[i]) for n floats, 8 at a time; an operand whose `*_step` is 0 is the single
// value a[0] (or b[0]) for every i (a broadcast scalar run). o may alias a or b.
template <typename F>
PORTTOOL_ALWAYS_INLINE void Map8Binary(const float* a, int64_t a_step, const float* b,
                                       int64_t b_step, float* o, int64_t n, F f) {
  int64_t i = 0;
  if (a_step && b_step) {
    for (; i + 8 <= n; i += 8) {
      V8f x, y;
      std::memcpy(&x, a + i, sizeof x);
      std::memcpy(&y, b + i, sizeof y);
      x = f(x, y);
      std::memcpy(o + i, &x, sizeof x);
    }
    if (i < n) {
      StorePartial(o + i, n - i,
                   f(LoadPartial(a + i, n - i, 0.0f), LoadPartial(b + i, n - i, 0.0f)));
    }
  } else if (a_step) {
    const V8f y = Broadcast8(b[0]);
    for (; i + 8 <= n; i += 8) {
      V8f x;
      std::memcpy(&x, a + i, sizeof x);
      x = f(x, y);
      std::memcpy(o + i, &x, sizeof x);
    }
    if (i < n) StorePartial(o + i, n - i, f(LoadPartial(a + i, n - i, 0.0f), y));
  } else if (b_step) {
    const V8f x = Broadcast8(a[0]);
    for (; i + 8 <= n; i += 8) {
      V8f y;
      std::memcpy(&y, b + i, sizeof y);
      y = f(x, y);
      std::memcpy(o + i, &y, sizeof y);
    }
    if (i < n) StorePartial(o + i, n - i, f(x, LoadPartial(b + i, n - i, 0.0f)));
  } else {
    const V8f v = f(Broadcast8(a[0]), Broadcast8(b[0]));
    for (; i + 8 <= n; i += 8) std::memcpy(o + i, &v, sizeof v);
    if (i < n) StorePartial(o + i, n - i, v);
  }
}

PORTTOOL_ALWAYS_INLINE float SumLanes(V8f v) {
  float sum = 0;
  for (int j = 0; j < 8; ++j) sum += v[j];
  return sum;
}

}  // namespace porttool::runtime::kernels
