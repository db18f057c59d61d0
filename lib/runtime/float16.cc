#include "lib/runtime/float16.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace porttool::runtime {
namespace {

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;
constexpr uint32_t kHalfMaxBits = 0x477fe000u;    // 65504, the largest finite binary16
constexpr uint32_t kHalfMinNormal = 0x38800000u;  // 2^-14, the smallest normal binary16
constexpr float kSubnormalAnchor = 0.5f;          // its float32 ulp is 2^-24, binary16's step

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t ToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

float RoundToFloat16(float x) {
  const uint32_t bits = ToBits(x);
  const uint32_t sign = bits & ~kAbsMask, abs = bits & kAbsMask;
  if (abs >= kInfBits) return x;  // inf, NaN
  if (abs < kHalfMinNormal) {
    // Binary16 subnormals are the multiples of 2^-24: adding 0.5 (whose float32 ulp is 2^-24)
    // rounds to one with the float unit's own ties-to-even, and subtracting it is exact.
    volatile float shifted = std::fabs(x) + kSubnormalAnchor;
    const float r = shifted - kSubnormalAnchor;
    return sign ? -r : r;
  }
  // Normal: keep 10 of float32's 23 mantissa bits, ties to even; a carry may reach the exponent,
  // which is the correctly rounded result (and past 65504 it is an overflow to inf).
  const uint32_t lsb = (abs >> 13) & 1u;
  const uint32_t rounded = (abs + 0xfffu + lsb) & ~0x1fffu;
  if (rounded > kHalfMaxBits) return FromBits(sign | kInfBits);
  return FromBits(sign | rounded);
}

Tensor RoundedToFloat16(const Tensor& t, float* max_abs) {
  if (t.dtype() != onnx::TensorProto::FLOAT || t.empty()) return t;
  const float* p = t.data<float>();
  float biggest = 0;
  int64_t first_change = -1;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (std::isfinite(p[i])) biggest = std::max(biggest, std::fabs(p[i]));
    if (first_change < 0 && ToBits(RoundToFloat16(p[i])) != ToBits(p[i])) first_change = i;
  }
  if (max_abs) *max_abs = biggest;
  if (first_change < 0) return t;
  Tensor out = t.Clone();
  float* q = out.mutable_data<float>();
  for (int64_t i = first_change; i < out.size(); ++i) q[i] = RoundToFloat16(q[i]);
  return out;
}

}  // namespace porttool::runtime
