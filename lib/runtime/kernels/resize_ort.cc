// Resize with ONNX Runtime's CPU arithmetic: see resize_ort.h for the formula of each mode.
// Every expression below keeps ORT's operand order and float precision on purpose: reordering a
// product or a sum, or widening it to double, is exactly the one-ulp difference this file exists
// to remove. Built with -ffp-contract=off (CMakeLists.txt): ORT's kernels do not fuse a * b + c.
#include "lib/runtime/kernels/resize_ort.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime::resize {
namespace {

template <typename T>
constexpr bool kIs8Bit = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;

// static_cast<T>(v) as ORT writes its results (truncation for integers), clamped so that a float
// rounded past the type's range stays defined; in-range values are unchanged.
template <typename T>
T TruncateTo(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    if (std::isnan(v)) return T{0};
    const float lo = static_cast<float>(std::numeric_limits<T>::lowest());
    const float hi = static_cast<float>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// A float coordinate as an int64 index: ORT casts directly; clamping first keeps the cast
// defined for extreme scales, where the index only selects an edge after clamping anyway.
int64_t ToIndex(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<int64_t>(std::clamp(v, -0x1p62f, 0x1p62f));
}

// Whether ONNX Runtime takes x as a halfway case of its round_prefer_* rules: within 1e-6 of
// k + 0.5, not only exactly on it. Its source (upsamplebase.h) reads `x == trunc(x) + 0.5f` and
// std::round, but ONNX Runtime 1.31 rounds 2.5 - 4 float ulps (2.4999990) up under
// round_prefer_ceil and 2.5 + 4 ulps down under round_prefer_floor, 5 ulps (1.2e-6) away not
// (measured; resize_ort_test.cc keeps cases on both sides). x - floor(x) - 0.5f is exact.
bool NearHalf(float x) { return std::abs(x - std::floor(x) - 0.5f) < 1e-6f; }

bool Extrapolates(const ResizeSpec& s) { return s.coord == Coord::kTfCropAndResize; }

// tf_crop_and_resize: whether a source coordinate lies outside the input (extrapolation value).
bool OutsideInput(float original, int64_t in_len) {
  return original < 0 || original > static_cast<float>(in_len - 1);
}

// One linear axis as SetupUpsampleBilinear prepares it: the clamped coordinate's two neighbours
// and its distances to them (float), and the same distances in 10-bit fixed point for the
// integer NHWC kernel.
struct LinearAxis {
  std::vector<float> original;  // unclamped (the extrapolation test)
  std::vector<int64_t> lo, hi;
  std::vector<float> d_lo, d_hi;        // |x - lo| weighs hi, |x - hi| weighs lo
  std::vector<int32_t> d_lo10, d_hi10;  // the same, times 1024
};

LinearAxis MakeLinearAxis(const ResizeSpec& s, int axis, int64_t in_len) {
  const int64_t out = s.out[axis];
  LinearAxis t;
  t.original.resize(out);
  t.lo.resize(out), t.hi.resize(out);
  t.d_lo.resize(out), t.d_hi.resize(out);
  t.d_lo10.resize(out), t.d_hi10.resize(out);
  for (int64_t i = 0; i < out; ++i) {
    const float raw = OrtOriginalCoordinate(s, axis, i, in_len);
    t.original[i] = raw;
    const float x = std::max(0.0f, std::min(raw, static_cast<float>(in_len - 1)));
    const int64_t lo = std::min(ToIndex(x), in_len - 1);
    const int64_t hi = std::min(lo + 1, in_len - 1);
    t.lo[i] = lo, t.hi[i] = hi;
    // At the last index both neighbours are the edge: ORT weighs each by one half.
    t.d_lo[i] = lo == hi ? 0.5f : std::fabs(x - static_cast<float>(lo));
    t.d_hi[i] = lo == hi ? 0.5f : std::fabs(x - static_cast<float>(hi));
    const int32_t x10 = static_cast<int32_t>(x * (1 << 10));
    t.d_lo10[i] = lo == hi ? 512 : std::abs(x10 - static_cast<int32_t>(lo) * (1 << 10));
    t.d_hi10[i] = lo == hi ? 512 : std::abs(x10 - static_cast<int32_t>(hi) * (1 << 10));
  }
  return t;
}

// The resized axes of a bilinear resize as [outer, H, W, inner].
struct Planes {
  int axis_h = 0, axis_w = 1;
  int64_t outer = 1, inner = 1;
  bool nhwc = false;
};

// ORT's bilinear kernel takes 2-D inputs and 4-D ones with unit scales on N and C (NCHW) or on
// N and the last axis (NHWC, as tf2onnx exports leave images).
std::optional<Planes> BilinearLayout(const Tensor& x, const ResizeSpec& s) {
  const auto& sc = s.ort_scales;
  if (x.rank() == 2) return Planes{};
  if (x.rank() != 4 || sc[0] != 1.0f) return std::nullopt;
  if (sc[1] == 1.0f) return Planes{2, 3, x.dim(0) * x.dim(1), 1, false};
  if (sc[3] == 1.0f) return Planes{1, 2, x.dim(0), x.dim(3), true};
  return std::nullopt;
}

// One output pixel (inner values) from its four neighbours: ORT's float formula, the products
// of the distances first, then the four terms summed left to right.
template <typename T>
void BilinearPixel(const LinearAxis& tx, const LinearAxis& ty, int64_t ox, int64_t oy,
                   const T* const (&x)[4], int64_t inner, T* out) {
  const float c11 = tx.d_hi[ox] * ty.d_hi[oy];
  const float c21 = tx.d_lo[ox] * ty.d_hi[oy];
  const float c12 = tx.d_hi[ox] * ty.d_lo[oy];
  const float c22 = tx.d_lo[ox] * ty.d_lo[oy];
  for (int64_t c = 0; c < inner; ++c) {
    out[c] = TruncateTo<T>(c11 * static_cast<float>(x[0][c]) + c21 * static_cast<float>(x[1][c]) +
                           c12 * static_cast<float>(x[2][c]) + c22 * static_cast<float>(x[3][c]));
  }
}

// The same pixel in ORT's integer NHWC kernel for int8/uint8: 20-bit weights, an int32 sum,
// truncating division.
template <typename T>
void BilinearPixelFixedPoint(const LinearAxis& tx, const LinearAxis& ty, int64_t ox, int64_t oy,
                             const T* const (&x)[4], int64_t inner, T* out) {
  const int32_t w11 = tx.d_hi10[ox] * ty.d_hi10[oy];
  const int32_t w21 = tx.d_lo10[ox] * ty.d_hi10[oy];
  const int32_t w12 = tx.d_hi10[ox] * ty.d_lo10[oy];
  const int32_t w22 = tx.d_lo10[ox] * ty.d_lo10[oy];
  for (int64_t c = 0; c < inner; ++c) {
    const int32_t sum = w11 * static_cast<int32_t>(x[0][c]) + w21 * static_cast<int32_t>(x[1][c]) +
                        w12 * static_cast<int32_t>(x[2][c]) + w22 * static_cast<int32_t>(x[3][c]);
    out[c] = static_cast<T>(sum / (1 << 20));
  }
}

// An input row's two neighbours for every output column (lo[ox] and hi[ox] of the W axis),
// gathered once per input row and thread: an upsampling reads each input row for several output
// rows, and the arithmetic then runs over contiguous arrays.
struct GatheredRow {
  int64_t key = -1;  // plane * in_h + input row
  std::vector<float> lo, hi;
};

// Two slots: the rows an output row reads (top and bottom) are both kept; `keep` is the slot the
// caller still needs.
GatheredRow& Gather(GatheredRow (&slots)[2], int keep, int64_t key, const float* row,
                    const LinearAxis& tx) {
  for (GatheredRow& g : slots) {
    if (g.key == key) return g;
  }
  GatheredRow& g = slots[keep == 0 ? 1 : 0];
  const int64_t n = static_cast<int64_t>(tx.lo.size());
  g.key = key;
  g.lo.resize(n), g.hi.resize(n);
  for (int64_t ox = 0; ox < n; ++ox) g.lo[ox] = row[tx.lo[ox]], g.hi[ox] = row[tx.hi[ox]];
  return g;
}

// A float NCHW output row from its gathered input rows: BilinearPixel's products and sums for one
// channel, the same expression (so the same bits; contraction is off for this file) in a loop
// the AVX2/AVX-512 clones vectorise (one call per pixel took 25x the default formula's time on
// M-LSD's 80 -> 160 upsampling).
PORTTOOL_SIMD_CLONES void BilinearRowF(const float* __restrict top_lo,
                                       const float* __restrict top_hi,
                                       const float* __restrict bottom_lo,
                                       const float* __restrict bottom_hi,
                                       const float* __restrict dx_lo, const float* __restrict dx_hi,
                                       float dy_lo, float dy_hi, int64_t n, float* __restrict out) {
  for (int64_t ox = 0; ox < n; ++ox) {
    const float c11 = dx_hi[ox] * dy_hi, c21 = dx_lo[ox] * dy_hi;
    const float c12 = dx_hi[ox] * dy_lo, c22 = dx_lo[ox] * dy_lo;
    out[ox] = c11 * top_lo[ox] + c21 * top_hi[ox] + c12 * bottom_lo[ox] + c22 * bottom_hi[ox];
  }
}

// Output rows [begin, end) of a float NCHW bilinear resize without extrapolation.
void BilinearRowsF(const float* px, const LinearAxis& tx, const LinearAxis& ty, int64_t in_h,
                   int64_t in_w, int64_t begin, int64_t end, float* py) {
  const int64_t out_h = static_cast<int64_t>(ty.lo.size());
  const int64_t out_w = static_cast<int64_t>(tx.lo.size());
  GatheredRow slots[2];
  for (int64_t row = begin; row < end; ++row) {
    const int64_t plane = row / out_h, oy = row % out_h;
    const float* in = px + plane * in_h * in_w;
    const int64_t top_key = plane * in_h + ty.lo[oy], bottom_key = plane * in_h + ty.hi[oy];
    const GatheredRow& top = Gather(slots, -1, top_key, in + ty.lo[oy] * in_w, tx);
    const int keep = &top == &slots[0] ? 0 : 1;
    const GatheredRow& bottom = Gather(slots, keep, bottom_key, in + ty.hi[oy] * in_w, tx);
    BilinearRowF(top.lo.data(), top.hi.data(), bottom.lo.data(), bottom.hi.data(), tx.d_lo.data(),
                 tx.d_hi.data(), ty.d_lo[oy], ty.d_hi[oy], out_w, py + row * out_w);
  }
}

template <typename T>
void BilinearAsOrt(const Tensor& x, const ResizeSpec& s, const Planes& p, Tensor& y) {
  const int64_t in_h = x.dim(p.axis_h), in_w = x.dim(p.axis_w);
  const int64_t out_h = s.out[p.axis_h], out_w = s.out[p.axis_w], inner = p.inner;
  const LinearAxis ty = MakeLinearAxis(s, p.axis_h, in_h);
  const LinearAxis tx = MakeLinearAxis(s, p.axis_w, in_w);
  const bool fixed_point = kIs8Bit<T> && p.nhwc;
  const T extrapolation = TruncateTo<T>(s.extrapolation);
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  ParallelFor(p.outer * out_h, 1, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      if (inner == 1 && !Extrapolates(s))
        return BilinearRowsF(px, tx, ty, in_h, in_w, begin, end, py);
    }
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / out_h, oy = row % out_h;
      const T* in = px + plane * in_h * in_w * inner;
      const T* top = in + ty.lo[oy] * in_w * inner;
      const T* bottom = in + ty.hi[oy] * in_w * inner;
      T* out = py + row * out_w * inner;
      const bool row_outside = Extrapolates(s) && OutsideInput(ty.original[oy], in_h);
      for (int64_t ox = 0; ox < out_w; ++ox, out += inner) {
        if (row_outside || (Extrapolates(s) && OutsideInput(tx.original[ox], in_w))) {
          std::fill(out, out + inner, extrapolation);
          continue;
        }
        const T* const taps[4] = {top + tx.lo[ox] * inner, top + tx.hi[ox] * inner,
                                  bottom + tx.lo[ox] * inner, bottom + tx.hi[ox] * inner};
        if (fixed_point) {
          BilinearPixelFixedPoint(tx, ty, ox, oy, taps, inner, out);
        } else {
          BilinearPixel(tx, ty, ox, oy, taps, inner, out);
        }
      }
    }
  });
}

// ORT's trilinear kernel: 3-D inputs, or 5-D ones with unit scales on N and C. The first of the
// three resized axes, or nullopt.
std::optional<int> TrilinearFirstAxis(const Tensor& x, const ResizeSpec& s) {
  if (x.rank() == 3) return 0;
  if (x.rank() == 5 && s.ort_scales[0] == 1.0f && s.ort_scales[1] == 1.0f) return 2;
  return std::nullopt;
}

template <typename T>
void TrilinearAsOrt(const Tensor& x, const ResizeSpec& s, int first, Tensor& y) {
  const int64_t in_d = x.dim(first), in_h = x.dim(first + 1), in_w = x.dim(first + 2);
  const int64_t out_d = s.out[first], out_h = s.out[first + 1], out_w = s.out[first + 2];
  int64_t outer = 1;
  for (int a = 0; a < first; ++a) outer *= x.dim(a);
  const LinearAxis tz = MakeLinearAxis(s, first, in_d);
  const LinearAxis ty = MakeLinearAxis(s, first + 1, in_h);
  const LinearAxis tx = MakeLinearAxis(s, first + 2, in_w);
  const T extrapolation = TruncateTo<T>(s.extrapolation);
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  ParallelFor(outer * out_d * out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / (out_d * out_h), oz = row / out_h % out_d, oy = row % out_h;
      const T* in = px + plane * in_d * in_h * in_w;
      T* out = py + row * out_w;
      const int64_t z[2] = {tz.lo[oz] * in_h * in_w, tz.hi[oz] * in_h * in_w};
      const int64_t yy[2] = {ty.lo[oy] * in_w, ty.hi[oy] * in_w};
      const bool row_outside = Extrapolates(s) && (OutsideInput(tz.original[oz], in_d) ||
                                                   OutsideInput(ty.original[oy], in_h));
      for (int64_t ox = 0; ox < out_w; ++ox) {
        if (row_outside || (Extrapolates(s) && OutsideInput(tx.original[ox], in_w))) {
          out[ox] = extrapolation;
          continue;
        }
        const int64_t xx[2] = {tx.lo[ox], tx.hi[ox]};
        // Term k reads x neighbour k & 1, y neighbour (k >> 1) & 1, z neighbour k >> 2, weighted
        // by the distances to the other neighbours, multiplied x * y * z as ORT writes them.
        float sum = 0;
        for (int k = 0; k < 8; ++k) {
          const int ix = k & 1, iy = (k >> 1) & 1, iz = k >> 2;
          const float w = (ix ? tx.d_lo[ox] : tx.d_hi[ox]) * (iy ? ty.d_lo[oy] : ty.d_hi[oy]) *
                          (iz ? tz.d_lo[oz] : tz.d_hi[oz]);
          const float term = w * static_cast<float>(in[z[iz] + yy[iy] + xx[ix]]);
          sum = k == 0 ? term : sum + term;
        }
        out[ox] = TruncateTo<T>(sum);
      }
    }
  });
}

// Keys' cubic coefficients of the four taps around a coordinate with fractional part s, in
// float, as ORT's GetCubicCoeffs writes them.
std::array<float, 4> CubicCoeffs(float s, float a) {
  const float t = std::abs(s);
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
          ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
}

// One cubic axis: for each output index, the first tap (floor - 1), the four coefficients and
// their sum (1, or under exclude_outside the float sum of the taps inside the input).
struct CubicAxis {
  std::vector<float> original;
  std::vector<int64_t> first;
  std::vector<std::array<float, 4>> coeff;
  std::vector<float> sum;
};

CubicAxis MakeCubicAxis(const ResizeSpec& s, int axis, int64_t in_len) {
  const int64_t out = s.out[axis];
  CubicAxis t;
  for (int64_t i = 0; i < out; ++i) {
    const float raw = OrtOriginalCoordinate(s, axis, i, in_len);
    const int64_t base = ToIndex(std::floor(raw));
    std::array<float, 4> c =
        CubicCoeffs(raw - static_cast<float>(base), static_cast<float>(s.cubic_a));
    float sum = 1;
    if (s.exclude_outside) {
      sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t v = base - 1 + k;
        if (v < 0 || v >= in_len) c[k] = 0;
        sum += c[k];
      }
    }
    t.original.push_back(raw);
    t.first.push_back(base - 1);
    t.coeff.push_back(c);
    t.sum.push_back(sum);
  }
  return t;
}

// ORT's bicubic kernel: 2-D inputs, or 4-D ones with unit scales on N and C; float only.
std::optional<Planes> BicubicLayout(const Tensor& x, const ResizeSpec& s) {
  if (x.dtype() != onnx::TensorProto::FLOAT) return std::nullopt;
  if (x.rank() == 2) return Planes{};
  const auto& sc = s.ort_scales;
  if (x.rank() == 4 && sc[0] == 1.0f && sc[1] == 1.0f) {
    return Planes{2, 3, x.dim(0) * x.dim(1), 1, false};
  }
  return std::nullopt;
}

// Output (oy, ox) of a bicubic resize: each of the four rows interpolated along W with
// coefficient / sum, then combined as (row * coefficient) / sum, from 0 in tap order.
float BicubicPixel(const float* in, int64_t in_h, int64_t in_w, const CubicAxis& ty,
                   const CubicAxis& tx, int64_t oy, int64_t ox) {
  float result = 0;
  for (int i = 0; i < 4; ++i) {
    const int64_t iy = std::clamp<int64_t>(ty.first[oy] + i, 0, in_h - 1);
    float row = 0;
    for (int j = 0; j < 4; ++j) {
      const int64_t ix = std::clamp<int64_t>(tx.first[ox] + j, 0, in_w - 1);
      row += tx.coeff[ox][j] / tx.sum[ox] * in[iy * in_w + ix];
    }
    result += row * ty.coeff[oy][i] / ty.sum[oy];
  }
  return result;
}

void BicubicAsOrt(const Tensor& x, const ResizeSpec& s, const Planes& p, Tensor& y) {
  const int64_t in_h = x.dim(p.axis_h), in_w = x.dim(p.axis_w);
  const int64_t out_h = s.out[p.axis_h], out_w = s.out[p.axis_w];
  const CubicAxis ty = MakeCubicAxis(s, p.axis_h, in_h);
  const CubicAxis tx = MakeCubicAxis(s, p.axis_w, in_w);
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  ParallelFor(p.outer * out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / out_h, oy = row % out_h;
      const float* in = px + plane * in_h * in_w;
      float* out = py + row * out_w;
      const bool row_outside = Extrapolates(s) && OutsideInput(ty.original[oy], in_h);
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const bool outside =
            row_outside || (Extrapolates(s) && OutsideInput(tx.original[ox], in_w));
        out[ox] = outside ? s.extrapolation : BicubicPixel(in, in_h, in_w, ty, tx, oy, ox);
      }
    }
  });
}

template <typename T>
bool InterpolateTyped(const Tensor& x, const ResizeSpec& s, Tensor& y) {
  if (s.mode == Mode::kCubic) {
    const auto planes = BicubicLayout(x, s);
    if (planes) BicubicAsOrt(x, s, *planes, y);
    return planes.has_value();
  }
  if (const auto planes = BilinearLayout(x, s)) {
    BilinearAsOrt<T>(x, s, *planes, y);
    return true;
  }
  if (const auto first = TrilinearFirstAxis(x, s)) {
    TrilinearAsOrt<T>(x, s, *first, y);
    return true;
  }
  return false;
}

}  // namespace

float OrtOriginalCoordinate(const ResizeSpec& s, int axis, int64_t i, int64_t in_len) {
  const float x = static_cast<float>(i), scale = s.ort_scales[axis];
  // ORT maps an axis whose scale is 1 one to one, whatever the mode (even a crop's roi).
  if (scale == 1.0f) return x;
  const float out_len = static_cast<float>(s.out[axis]);
  const float in_f = static_cast<float>(in_len);
  switch (s.coord) {
    case Coord::kHalfPixel:
      return ((x + 0.5f) / scale) - 0.5f;
    case Coord::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case Coord::kAlignCorners:
      return out_len == 1 ? 0.0f : x * (in_f - 1) / (out_len - 1);
    case Coord::kAsymmetric:
      return x / scale;
    case Coord::kTfHalfPixelForNn:
      return (x + 0.5f) / scale;
    case Coord::kTfCropAndResize: {
      const size_t rank = s.roi.size() / 2;
      const float start = static_cast<float>(s.roi[axis]);
      const float end = static_cast<float>(s.roi[rank + axis]);
      if (out_len > 1) return start * (in_f - 1) + (x * (end - start) * (in_f - 1)) / (out_len - 1);
      return static_cast<float>(0.5 * (start + end) * (in_f - 1));  // ORT's double literal
    }
  }
  return x;
}

int64_t OrtNearestIndex(Rounding r, float x, bool downsampling) {
  switch (r) {
    case Rounding::kSimple:
      return downsampling ? ToIndex(std::ceil(x)) : ToIndex(x);
    case Rounding::kRoundPreferCeil:
      return ToIndex(NearHalf(x) ? std::ceil(x) : std::round(x));
    case Rounding::kFloor:
      return ToIndex(std::floor(x));
    case Rounding::kCeil:
      return ToIndex(std::ceil(x));
    case Rounding::kRoundPreferFloor:
      return ToIndex(NearHalf(x) ? std::floor(x) : std::round(x));
  }
  return 0;
}

bool InterpolateAsOrt(const Tensor& x, const ResizeSpec& s, Tensor& y) {
  switch (x.dtype()) {
    case onnx::TensorProto::FLOAT:
      return InterpolateTyped<float>(x, s, y);
    case onnx::TensorProto::INT32:
      return InterpolateTyped<int32_t>(x, s, y);
    case onnx::TensorProto::INT8:
      return InterpolateTyped<int8_t>(x, s, y);
    case onnx::TensorProto::UINT8:
      return InterpolateTyped<uint8_t>(x, s, y);
    default:
      return false;  // ORT's CPU Resize has no double or int64 kernel
  }
}

}  // namespace porttool::runtime::resize
