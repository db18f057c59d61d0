// Resize (opsets 10, 11, 13), Upsample (7, 9), DepthToSpace and SpaceToDepth.
//
// Resize is computed as a weighted gather: for every resized axis and output index, a few taps
// (input index, weight) are precomputed from the coordinate transformation, the mode and the
// nearest-rounding rule; an output element is the sum over the product of its axes' taps. That
// single formulation covers nearest (1 tap), linear (2) and cubic (4, with exclude_outside
// renormalisation), and tf_crop_and_resize extrapolation, on any number of resized axes. Leading
// axes that map one to one (batch, channels) become an outer loop over planes, and the common
// case of two resized axes (H, W) gets a dedicated loop. Under ExecutionEnv::ort_compatible_resize
// nearest takes ONNX Runtime's float coordinates and rounding into the same taps, and linear and
// cubic are computed by resize_ort.cc with ONNX Runtime's arithmetic (resize_ort.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <type_traits>
#include <vector>

#include "lib/ir/dtype.h"
#include "lib/runtime/execution.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/resize_ort.h"
#include "lib/runtime/kernels/resize_spec.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/parallel.h"
#include "lib/util/checked_math.h"

namespace porttool::runtime {
namespace {

using kernels::TP;

using resize::Coord;
using resize::Mode;
using resize::ResizeSpec;
using resize::Rounding;

// The taps of one axis: for output index i, taps [i*count, (i+1)*count).
struct AxisTaps {
  int count = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<double> weight64;  // the same weights for double and int64 data
  std::vector<uint8_t> outside;  // tf_crop_and_resize: the output takes extrapolation_value
  bool identity = false;
  bool any_outside = false;
  int64_t replication = 0;  // f > 0: output i reads input i / f (ReplicationFactor)
  // Linear taps split by tap, for the vector loop over output columns (its gathers take 32-bit
  // indices): left[i], right[i] and their float weights. Empty unless count is 2.
  std::vector<int32_t> left, right;
  std::vector<float> left_weight, right_weight;
};

template <typename E>
E ParseEnum(const KernelContext& ctx, const char* attr, const std::string& def,
            std::initializer_list<std::pair<const char*, E>> table) {
  const std::string v = ctx.GetString(attr, def);
  std::string names;
  for (const auto& [name, value] : table) {
    if (v == name) return value;
    names += names.empty() ? name : std::string(", ") + name;
  }
  ctx.Fail(fmt::format("{} '{}' is not supported (expected one of: {})", attr, v, names));
}

Mode ParseMode(const KernelContext& ctx, bool allow_cubic) {
  Mode m = ParseEnum<Mode>(ctx, "mode", "nearest",
                           {{"nearest", Mode::kNearest},
                            {"linear", Mode::kLinear},
                            {"bilinear", Mode::kLinear},
                            {"cubic", Mode::kCubic}});
  if (m == Mode::kCubic && !allow_cubic) ctx.Fail("mode 'cubic' needs Resize opset 11 or later");
  return m;
}

double OriginalCoord(const ResizeSpec& s, int axis, double x, int64_t in) {
  const double scale = s.scales[axis];
  const double out = s.resized_len[axis];
  switch (s.coord) {
    case Coord::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case Coord::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
    case Coord::kAsymmetric:
      return x / scale;
    case Coord::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case Coord::kTfCropAndResize: {
      const size_t rank = s.roi.size() / 2;
      const double start = s.roi[axis], end = s.roi[rank + axis];
      if (out == 1) return 0.5 * (start + end) * static_cast<double>(in - 1);
      return start * static_cast<double>(in - 1) +
             x * (end - start) * static_cast<double>(in - 1) / (out - 1);
    }
  }
  return x;
}

int64_t NearestIndex(Rounding r, double x, bool downsampling) {
  // Coordinates far outside the input only select an edge (taps are clamped later), so clamping
  // here keeps every cast to int64 defined even for extreme scales.
  x = std::isnan(x) ? 0.0 : std::clamp(x, -0x1p62, 0x1p62);
  switch (r) {
    case Rounding::kRoundPreferFloor:
      return static_cast<int64_t>(x == std::floor(x) + 0.5 ? std::floor(x) : std::round(x));
    case Rounding::kRoundPreferCeil:
      return static_cast<int64_t>(x == std::floor(x) + 0.5 ? std::ceil(x) : std::round(x));
    case Rounding::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case Rounding::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case Rounding::kSimple:
      return static_cast<int64_t>(downsampling ? std::ceil(x) : static_cast<double>(int64_t(x)));
  }
  return 0;
}

void CubicWeights(double t, double a, double w[4]) {
  const double d[4] = {t + 1, t, 1 - t, 2 - t};  // distance of each tap from x
  for (int i = 0; i < 4; ++i) {
    const double v = d[i];
    w[i] = v <= 1 ? ((a + 2) * v - (a + 3)) * v * v + 1 : ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
  }
}

// Whether output column ox reads input column ox / factor for every ox (an integer upsampling,
// as FPN necks do with nearest/asymmetric/floor): else 0.
int64_t ReplicationFactor(const AxisTaps& t, int64_t in) {
  const int64_t out = static_cast<int64_t>(t.index.size());
  if (t.count != 1 || in <= 0 || out % in != 0) return 0;
  const int64_t f = out / in;
  for (int64_t o = 0; o < out; ++o) {
    if (t.outside[o] || t.index[o] != o / f) return 0;
  }
  return f;
}

AxisTaps ComputeTaps(const ResizeSpec& s, int axis, int64_t in) {
  const int64_t out = s.out[axis];
  AxisTaps t;
  t.count = s.mode == Mode::kNearest ? 1 : s.mode == Mode::kLinear ? 2 : 4;
  t.index.resize(out * t.count);
  t.weight.resize(out * t.count);
  t.weight64.resize(out * t.count);
  t.outside.assign(out, 0);
  t.identity = out == in;
  for (int64_t i = 0; i < out; ++i) {
    const double raw_x = OriginalCoord(s, axis, static_cast<double>(i), in);
    const double x = std::isnan(raw_x) ? 0.0 : std::clamp(raw_x, -0x1p62, 0x1p62);
    if (s.coord == Coord::kTfCropAndResize && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside[i] = 1;
    }
    int64_t idx[4];
    double w[4];
    if (s.mode == Mode::kNearest && s.ort_formula) {
      const float xf = resize::OrtOriginalCoordinate(s, axis, i, in);
      t.outside[i] =
          s.coord == Coord::kTfCropAndResize && (xf < 0 || xf > static_cast<float>(in - 1));
      idx[0] = resize::OrtNearestIndex(s.rounding, xf, s.ort_scales[axis] < 1);
      w[0] = 1;
    } else if (s.mode == Mode::kNearest) {
      idx[0] = NearestIndex(s.rounding, x, s.scales[axis] < 1);
      w[0] = 1;
    } else {
      const double x0 = std::floor(x), frac = x - x0;
      if (s.mode == Mode::kLinear) {
        idx[0] = static_cast<int64_t>(x0), idx[1] = idx[0] + 1;
        w[0] = 1 - frac, w[1] = frac;
      } else {
        for (int k = 0; k < 4; ++k) idx[k] = static_cast<int64_t>(x0) - 1 + k;
        CubicWeights(frac, s.cubic_a, w);
      }
    }
    double total = 0;
    for (int k = 0; k < t.count; ++k) {
      if (s.exclude_outside && (idx[k] < 0 || idx[k] >= in)) w[k] = 0;
      total += w[k];
    }
    for (int k = 0; k < t.count; ++k) {
      if (s.exclude_outside && total != 0) w[k] /= total;
      // Taps beyond the edge read the edge value (the spec pads with edge values).
      const int64_t clamped = std::clamp<int64_t>(idx[k], 0, in - 1);
      t.index[i * t.count + k] = clamped;
      t.weight[i * t.count + k] = static_cast<float>(w[k]);
      t.weight64[i * t.count + k] = w[k];
      if (w[k] != 0 && (clamped != i || w[k] != 1)) t.identity = false;
    }
    if (t.outside[i]) t.identity = false;
  }
  t.replication = ReplicationFactor(t, in);
  t.any_outside = std::find(t.outside.begin(), t.outside.end(), 1) != t.outside.end();
  if (t.count == 2 && in <= std::numeric_limits<int32_t>::max()) {
    for (int64_t i = 0; i < out; ++i) {
      t.left.push_back(static_cast<int32_t>(t.index[2 * i]));
      t.right.push_back(static_cast<int32_t>(t.index[2 * i + 1]));
      t.left_weight.push_back(t.weight[2 * i]);
      t.right_weight.push_back(t.weight[2 * i + 1]);
    }
  }
  return t;
}

// float data accumulates in float (the speed path, as ONNX Runtime does); double and int64 data
// in double, whose precision they need (float has 24 bits of mantissa, int64 values 63).
template <typename T>
using Accumulator =
    std::conditional_t<std::is_same_v<T, double> || std::is_same_v<T, int64_t>, double, float>;

template <typename Acc>
const std::vector<Acc>& Weights(const AxisTaps& t) {
  if constexpr (std::is_same_v<Acc, double>) {
    return t.weight64;
  } else {
    return t.weight;
  }
}

// Where a resize that changes at most two adjacent axes finds them: `outer` planes of
// [in_h, in_w, inner] before and after, `inner` the identity axes after the resized ones (1 for
// NCHW; the channels of an NHWC tensor, as tf2onnx exports leave it).
struct Layout2D {
  int axis_h = 0, axis_w = 0;
  int64_t outer = 1, inner = 1;
};

// The 2-D layout of the resize, or nullopt when it changes more than two axes or two that are
// not adjacent (the odometer walk handles those).
std::optional<Layout2D> FindLayout2D(const Tensor& x, const std::vector<AxisTaps>& taps) {
  const int rank = x.rank();
  if (rank < 2) return std::nullopt;
  int last = rank - 1;
  while (last > 0 && taps[last].identity) --last;
  Layout2D l;
  l.axis_w = std::max(last, 1);
  l.axis_h = l.axis_w - 1;
  for (int a = 0; a < l.axis_h; ++a) {
    if (!taps[a].identity) return std::nullopt;
    l.outer *= x.dim(a);
  }
  for (int a = l.axis_w + 1; a < rank; ++a) l.inner *= x.dim(a);
  return l;
}

// The resize as [outer, in_h, in_w, inner] -> [outer, out_h, out_w, inner].
template <typename T>
struct Resize2D {
  const T* x = nullptr;
  T* y = nullptr;
  Layout2D l;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  const AxisTaps* th = nullptr;
  const AxisTaps* tw = nullptr;
  T extrapolation{};
  int64_t in_row() const { return in_w * l.inner; }
  int64_t out_row() const { return out_w * l.inner; }
  const T* InRow(int64_t plane, int64_t iy) const { return x + (plane * in_h + iy) * in_row(); }
  T* OutRow(int64_t plane, int64_t oy) const { return y + (plane * out_h + oy) * out_row(); }
};

// Calls fn(plane, oy) for the output rows a thread takes, in order. Rows are the unit of work so
// that a single large plane (M-LSD's 64 x 160 x 160 upsampling, NHWC images) still splits.
template <typename T, typename Fn>
void ForEachOutputRow(const Resize2D<T>& r, Fn&& fn) {
  const int64_t rows = r.l.outer * r.out_h;
  kernels::ParallelRows(rows, r.out_row() * 4, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) fn(item / r.out_h, item % r.out_h, begin);
  });
}

// ---- nearest: copies ----

// out[2 i] = out[2 i + 1] = in[i] for i < n, for 4-byte elements: eight at a time through a
// register shuffle (element by element, det's and M-LSD's 2x upsamplings spent 3x ONNX Runtime's
// time here).
PORTTOOL_SIMD_CLONES void DoubleEach32(const uint32_t* in, int64_t n, uint32_t* out) {
  using V8u = uint32_t __attribute__((vector_size(32)));
  using V16u = uint32_t __attribute__((vector_size(64)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V8u v;
    std::memcpy(&v, in + i, sizeof v);
    const V16u twice =
        __builtin_shufflevector(v, v, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    std::memcpy(out + 2 * i, &twice, sizeof twice);
  }
  for (; i < n; ++i) out[2 * i] = out[2 * i + 1] = in[i];
}

// out[f i + k] = in[i] for k < f and i < n.
template <typename T>
void Replicate(const T* in, int64_t n, int64_t f, T* out) {
  if (f == 2 && sizeof(T) == sizeof(uint32_t)) {
    return DoubleEach32(reinterpret_cast<const uint32_t*>(in), n, reinterpret_cast<uint32_t*>(out));
  }
  for (int64_t i = 0; i < n; ++i, out += f) std::fill(out, out + f, in[i]);
}

// Output row oy of a nearest resize: a pure copy, exact for every element type. A row whose
// source row is the previous one's (`prev_written`: that row is this thread's) is a memcpy of
// it, and an integer width factor writes each input element (or NHWC pixel) f times without the
// index table (det's six FPN Resizes took 2x ONNX Runtime's time as one gather per element).
template <typename T>
void NearestRow(const Resize2D<T>& r, int64_t plane, int64_t oy, bool prev_written) {
  const AxisTaps& th = *r.th;
  const AxisTaps& tw = *r.tw;
  const int64_t inner = r.l.inner, out_n = r.out_row();
  T* out = r.OutRow(plane, oy);
  if (prev_written && oy > 0 && th.index[oy] == th.index[oy - 1] &&
      th.outside[oy] == th.outside[oy - 1]) {
    std::memcpy(out, out - out_n, out_n * sizeof(T));
    return;
  }
  if (th.outside[oy]) {
    std::fill(out, out + out_n, r.extrapolation);
    return;
  }
  const T* row = r.InRow(plane, th.index[oy]);
  if (const int64_t f = tw.replication; f > 0 && inner == 1) return Replicate(row, r.in_w, f, out);
  for (int64_t ox = 0; ox < r.out_w; ++ox, out += inner) {
    if (tw.outside[ox]) {
      std::fill(out, out + inner, r.extrapolation);
    } else if (inner == 1) {
      *out = row[tw.index[ox]];
    } else {
      std::memcpy(out, row + tw.index[ox] * inner, inner * sizeof(T));
    }
  }
}

// ---- linear and cubic: separable ----

// The horizontally interpolated input rows a thread has computed, by (plane, input row): an
// upsampling by f reads each input row for f output rows, so each is interpolated once. Least
// recently used rows are replaced; with twice as many slots as taps, none of the rows the
// current output row reads is replaced while it is in use.
template <typename Acc>
class RowCache {
 public:
  RowCache(int slots, int64_t width)
      : key_(slots, -1),
        used_(slots, 0),
        rows_(static_cast<size_t>(slots * width)),
        width_(width) {}
  // The row for `key`; `fresh` says whether the caller must compute it.
  Acc* Get(int64_t key, bool& fresh) {
    int victim = 0;
    for (int i = 0; i < static_cast<int>(key_.size()); ++i) {
      if (key_[i] == key) {
        used_[i] = ++clock_;
        fresh = false;
        return rows_.data() + i * width_;
      }
      if (used_[i] < used_[victim]) victim = i;
    }
    key_[victim] = key;
    used_[victim] = ++clock_;
    fresh = true;
    return rows_.data() + victim * width_;
  }

 private:
  std::vector<int64_t> key_;
  std::vector<uint64_t> used_;
  std::vector<Acc> rows_;
  int64_t width_;
  uint64_t clock_ = 0;
};

// h[i] = (0 + wl[i] * row[left[i]]) + wr[i] * row[right[i]]: the linear taps along a row,
// vectorised as gathers (restrict: without it the compiler reloads every pointer per element).
PORTTOOL_SIMD_CLONES void LerpColumns(const float* __restrict row, const int32_t* __restrict left,
                                      const int32_t* __restrict right, const float* __restrict wl,
                                      const float* __restrict wr, int64_t n, float* __restrict h) {
  for (int64_t i = 0; i < n; ++i) h[i] = (0.f + wl[i] * row[left[i]]) + wr[i] * row[right[i]];
}

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
// LerpColumns over a row of `len` inputs, 16 outputs at a time, with each block's taps read by
// two-source permutes of the 32 inputs from its first left tap (masked loads: nothing past the
// row is read) instead of gathers, which GCC emulates element by element on this AMD CPU (40% of
// M-LSD's 80->160 upsampling). The same multiplies and adds in the same order, so the same
// bits; a block whose taps span 32 inputs or more (a downscale) takes the scalar formula.
PORTTOOL_AVX512 void LerpColumnsAvx512(const float* row, int64_t len, const int32_t* left,
                                       const int32_t* right, const float* wl, const float* wr,
                                       int64_t n, float* h) {
  auto mask = [](int64_t count) {
    return static_cast<__mmask16>(count >= 16 ? 0xFFFF : count <= 0 ? 0 : (1u << count) - 1);
  };
  const __m512i span = _mm512_set1_epi32(32);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const int32_t base = left[i];
    const __m512i vbase = _mm512_set1_epi32(base);
    const __m512i dl = _mm512_sub_epi32(_mm512_loadu_si512(left + i), vbase);
    const __m512i dr = _mm512_sub_epi32(_mm512_loadu_si512(right + i), vbase);
    if ((_mm512_cmpge_epu32_mask(dl, span) | _mm512_cmpge_epu32_mask(dr, span)) != 0) {
      for (int64_t j = i; j < i + 16; ++j) {
        h[j] = (0.f + wl[j] * row[left[j]]) + wr[j] * row[right[j]];
      }
      continue;
    }
    const __m512 lo = _mm512_maskz_loadu_ps(mask(len - base), row + base);
    const __m512 hi = _mm512_maskz_loadu_ps(mask(len - base - 16), row + base + 16);
    const __m512 a = _mm512_permutex2var_ps(lo, dl, hi);
    const __m512 b = _mm512_permutex2var_ps(lo, dr, hi);
    const __m512 ta = _mm512_add_ps(_mm512_setzero_ps(), _mm512_mul_ps(_mm512_loadu_ps(wl + i), a));
    _mm512_storeu_ps(h + i, _mm512_add_ps(ta, _mm512_mul_ps(_mm512_loadu_ps(wr + i), b)));
  }
  for (; i < n; ++i) h[i] = (0.f + wl[i] * row[left[i]]) + wr[i] * row[right[i]];
}
#endif

// h[ox] = sum over the taps of weight * row[index] (inner values per column), each sum started
// from 0 and taken in tap order: the rounding the two-pass formula has always had.
template <typename T, typename Acc>
PORTTOOL_ALWAYS_INLINE void InterpolateColumns(const T* row, const AxisTaps& tw, const Acc* weights,
                                               int64_t out_w, int64_t inner, Acc* h) {
  const int count = tw.count;
  const int64_t* index = tw.index.data();
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1 && !tw.left.empty()) {
      return LerpColumns(row, tw.left.data(), tw.right.data(), tw.left_weight.data(),
                         tw.right_weight.data(), out_w, h);
    }
  }
  for (int64_t ox = 0; ox < out_w; ++ox) {
    Acc* dst = h + ox * inner;
    if (count == 2) {  // NHWC linear: one pass over the pixel's channels
      Acc* __restrict d = dst;
      const T* __restrict a = row + index[2 * ox] * inner;
      const T* __restrict b = row + index[2 * ox + 1] * inner;
      const Acc wa = weights[2 * ox], wb = weights[2 * ox + 1];
      for (int64_t c = 0; c < inner; ++c) {
        d[c] = (Acc(0) + wa * static_cast<Acc>(a[c])) + wb * static_cast<Acc>(b[c]);
      }
      continue;
    }
    for (int64_t c = 0; c < inner; ++c) dst[c] = 0;
    for (int k = 0; k < count; ++k) {
      const Acc w = weights[ox * count + k];
      const T* src = row + index[ox * count + k] * inner;
      for (int64_t c = 0; c < inner; ++c) dst[c] += w * static_cast<Acc>(src[c]);
    }
  }
}

PORTTOOL_SIMD_CLONES void InterpolateColumnsF(const float* row, const AxisTaps& tw,
                                              const float* weights, int64_t out_w, int64_t inner,
                                              float* h) {
  InterpolateColumns(row, tw, weights, out_w, inner, h);
}

// acc[j] = sum over the rows' nonzero weights of weight * rows[k][j], started from 0 in tap
// order (a zero weight is skipped, so an edge tap's infinity does not turn into NaN).
template <typename Acc>
PORTTOOL_ALWAYS_INLINE void InterpolateRows(Acc* const* rows, const Acc* weights, int count,
                                            int64_t n, Acc* acc) {
  int taps = 0;
  Acc w[4];
  const Acc* h[4];
  for (int k = 0; k < count; ++k) {
    if (weights[k] == 0) continue;
    w[taps] = weights[k];
    h[taps++] = rows[k];
  }
  if (taps == 2) {
    const Acc* __restrict h0 = h[0];
    const Acc* __restrict h1 = h[1];
    Acc* __restrict out = acc;
    for (int64_t j = 0; j < n; ++j) out[j] = (Acc(0) + w[0] * h0[j]) + w[1] * h1[j];
    return;
  }
  for (int64_t j = 0; j < n; ++j) acc[j] = 0;
  for (int k = 0; k < taps; ++k) {
    for (int64_t j = 0; j < n; ++j) acc[j] += w[k] * h[k][j];
  }
}

PORTTOOL_SIMD_CLONES void InterpolateRowsF(float* const* rows, const float* weights, int count,
                                           int64_t n, float* acc) {
  InterpolateRows(rows, weights, count, n, acc);
}

// Output row oy of a linear or cubic resize: the taps' input rows interpolated along W (cached),
// then combined along H. The same sums as one 2-D weighted gather per element, in the same order.
template <typename T, typename Acc>
void SeparableRow(const Resize2D<T>& r, RowCache<Acc>& cache, std::vector<Acc>& acc, int64_t plane,
                  int64_t oy) {
  const AxisTaps& th = *r.th;
  const AxisTaps& tw = *r.tw;
  T* out = r.OutRow(plane, oy);
  const int64_t n = r.out_row();
  if (th.outside[oy]) {
    std::fill(out, out + n, r.extrapolation);
    return;
  }
  const Acc* ww = Weights<Acc>(tw).data();
  Acc* rows[4];
  for (int k = 0; k < th.count; ++k) {
    const int64_t iy = th.index[oy * th.count + k];
    bool fresh = false;
    rows[k] = cache.Get(plane * r.in_h + iy, fresh);
    if (!fresh) continue;
    if constexpr (std::is_same_v<T, float>) {
#ifdef PORTTOOL_HAVE_AVX512_KERNELS
      if (r.l.inner == 1 && !tw.left.empty() && kernels::HasAvx512()) {
        LerpColumnsAvx512(r.InRow(plane, iy), r.in_w, tw.left.data(), tw.right.data(),
                          tw.left_weight.data(), tw.right_weight.data(), r.out_w, rows[k]);
        continue;
      }
#endif
      InterpolateColumnsF(r.InRow(plane, iy), tw, ww, r.out_w, r.l.inner, rows[k]);
    } else {
      InterpolateColumns(r.InRow(plane, iy), tw, ww, r.out_w, r.l.inner, rows[k]);
    }
  }
  const Acc* wh = Weights<Acc>(th).data() + oy * th.count;
  if constexpr (std::is_same_v<T, float>) {
    InterpolateRowsF(rows, wh, th.count, n, out);
  } else {
    InterpolateRows(rows, wh, th.count, n, acc.data());
    for (int64_t j = 0; j < n; ++j) out[j] = kernels::SaturateCast<T>(acc[j]);
  }
  for (int64_t ox = 0; tw.any_outside && ox < r.out_w; ++ox) {
    if (tw.outside[ox])
      std::fill(out + ox * r.l.inner, out + (ox + 1) * r.l.inner, r.extrapolation);
  }
}

template <typename T>
void Resize2DPlanes(const Resize2D<T>& r, Mode mode) {
  if (mode == Mode::kNearest) {
    ForEachOutputRow(r, [&](int64_t plane, int64_t oy, int64_t begin) {
      NearestRow(r, plane, oy, plane * r.out_h + oy > begin);
    });
    return;
  }
  using Acc = Accumulator<T>;
  const int slots = 2 * r.th->count;
  // One cache per thread: ParallelRows calls the body once per thread's range.
  kernels::ParallelRows(r.l.outer * r.out_h, r.out_row() * 4 * r.th->count,
                        [&](int64_t begin, int64_t end) {
                          RowCache<Acc> cache(slots, r.out_row());
                          std::vector<Acc> acc(std::is_same_v<T, float> ? 0 : r.out_row());
                          for (int64_t item = begin; item < end; ++item) {
                            SeparableRow(r, cache, acc, item / r.out_h, item % r.out_h);
                          }
                        });
}

// A rank-1 resize, or one of three or more axes (or two that are not adjacent): `outer` planes
// of the trailing axes from `first`, each output element one weighted gather over every axis's
// taps.
template <typename T>
void InterpolateAnyAxes(const Tensor& x, const ResizeSpec& s, const std::vector<AxisTaps>& taps,
                        int first, Tensor& y) {
  const int rank = x.rank();
  const T extrapolation = kernels::SaturateCast<T>(s.extrapolation);
  int64_t outer = 1, in_plane = 1, out_plane = 1;
  for (int a = 0; a < first; ++a) outer *= x.dim(a);
  for (int a = first; a < rank; ++a) in_plane *= x.dim(a), out_plane *= s.out[a];
  using Acc = Accumulator<T>;
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  // Element strides of the input along each trailing axis.
  std::vector<int64_t> stride(rank, 1);
  for (int a = rank - 2; a >= 0; --a) stride[a] = stride[a + 1] * x.dim(a + 1);
  ParallelFor(outer, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> pos(rank, 0);
    for (int64_t item = begin; item < end; ++item) {
      if (rank - first == 1) {
        const AxisTaps& tw = taps[rank - 1];
        const T* in = px + item * in_plane;
        T* out = py + item * out_plane;
        for (int64_t ox = 0; ox < s.out[rank - 1]; ++ox) {
          if (s.mode == Mode::kNearest) {
            out[ox] = tw.outside[ox] ? extrapolation : in[tw.index[ox]];
            continue;
          }
          const auto& ww = Weights<Acc>(tw);
          Acc acc = 0;
          for (int k = 0; k < tw.count; ++k)
            acc += ww[ox * tw.count + k] * static_cast<Acc>(in[tw.index[ox * tw.count + k]]);
          out[ox] = tw.outside[ox] ? extrapolation : kernels::SaturateCast<T>(acc);
        }
        continue;
      }
      // Three or more resized axes: walk the output plane with an odometer over its axes and
      // the taps of every axis.
      const int64_t plane = item;
      const T* in = px + plane * in_plane;
      T* out = py + plane * out_plane;
      std::fill(pos.begin(), pos.end(), 0);
      for (int64_t o = 0; o < out_plane; ++o) {
        bool outside = false;
        for (int a = first; a < rank; ++a) outside = outside || taps[a].outside[pos[a]];
        Acc acc = 0;
        if (!outside) {
          std::vector<int> k(rank, 0);
          while (true) {
            Acc w = 1;
            int64_t off = 0;
            for (int a = first; a < rank; ++a) {
              const AxisTaps& t = taps[a];
              w *= Weights<Acc>(t)[pos[a] * t.count + k[a]];
              off += t.index[pos[a] * t.count + k[a]] * stride[a];
            }
            acc += w * static_cast<Acc>(in[off]);
            int a = rank - 1;
            for (; a >= first; --a) {
              if (++k[a] < taps[a].count) break;
              k[a] = 0;
            }
            if (a < first) break;
          }
        }
        out[o] = outside ? extrapolation : kernels::SaturateCast<T>(acc);
        for (int a = rank - 1; a >= first; --a) {
          if (++pos[a] < s.out[a]) break;
          pos[a] = 0;
        }
      }
    }
  });
}

template <typename T>
void Interpolate(const Tensor& x, const ResizeSpec& s, const std::vector<AxisTaps>& taps, int first,
                 Tensor& y) {
  const auto layout = FindLayout2D(x, taps);
  if (!layout) return InterpolateAnyAxes<T>(x, s, taps, first, y);
  Resize2D<T> r;
  r.x = x.data<T>();
  r.y = y.mutable_data<T>();
  r.l = *layout;
  r.in_h = x.dim(layout->axis_h), r.in_w = x.dim(layout->axis_w);
  r.out_h = s.out[layout->axis_h], r.out_w = s.out[layout->axis_w];
  r.th = &taps[layout->axis_h], r.tw = &taps[layout->axis_w];
  r.extrapolation = kernels::SaturateCast<T>(s.extrapolation);
  Resize2DPlanes(r, s.mode);
}

void RunResize(KernelContext& ctx, const ResizeSpec& s) {
  const Tensor& x = ctx.input(0);
  const int rank = x.rank();
  // The output first: it applies the memory limits, and a non-empty output bounds every axis's
  // tap table by its own size.
  Tensor& y = ctx.output(0) = Tensor::Uninitialized(x.dtype(), s.out);  // every element written
  if (y.size() == 0) return;
  if (x.size() == 0) ctx.Fail("cannot resize an empty input to a non-empty output");
  // ONNX Runtime copies a resize to the input's own shape, whatever the mode or roi.
  if (s.ort_formula && y.shape() == x.shape()) {
    std::memcpy(y.mutable_raw(), x.raw(), x.bytes());
    return;
  }
  if (s.ort_formula && s.mode != Mode::kNearest && resize::InterpolateAsOrt(x, s, y)) return;
  std::vector<AxisTaps> taps;
  int first = rank;  // axes before `first` map one to one
  for (int a = 0; a < rank; ++a) {
    taps.push_back(ComputeTaps(s, a, x.dim(a)));
    if (!taps.back().identity && first == rank) first = a;
  }
  first = std::min(first, std::max(rank - 2, 0));  // at least the last two axes are walked
  auto run = [&](auto tag) { Interpolate<decltype(tag)>(x, s, taps, first, y); };
  kernels::Dispatch<float, double, int8_t, uint8_t, int32_t, int64_t>(ctx, x.dtype(), run);
}

std::vector<double> ReadFloats(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> v;
  kernels::DispatchFloat(ctx, t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    v.assign(t.data<T>(), t.data<T>() + t.size());
  });
  return v;
}

// Output sizes from scales, or scales from output sizes.
void ResolveScales(const KernelContext& ctx, const Tensor& x, const std::vector<double>& scales,
                   const std::vector<int64_t>& sizes, ResizeSpec& s) {
  const int rank = x.rank();
  if (!scales.empty() && !sizes.empty()) ctx.Fail("only one of 'scales' and 'sizes' may be given");
  if (scales.empty() && sizes.empty()) ctx.Fail("one of 'scales' and 'sizes' must be given");
  const size_t n = scales.empty() ? sizes.size() : scales.size();
  if (n != static_cast<size_t>(rank)) {
    ctx.Fail(fmt::format("{} has {} values but the input {} has rank {}",
                         scales.empty() ? "sizes" : "scales", n, x.DebugString(), rank));
  }
  s.scales.resize(rank);
  s.out.resize(rank);
  s.resized_len.resize(rank);
  s.ort_scales.resize(rank);
  for (int a = 0; a < rank; ++a) {
    if (!scales.empty()) {
      if (!(scales[a] > 0))
        ctx.Fail(fmt::format("scale {} on axis {} is not positive", scales[a], a));
      s.scales[a] = scales[a];
      s.resized_len[a] = static_cast<double>(x.dim(a)) * scales[a];
      // Infinite or huge scales: refuse before the float->int cast, which would be undefined.
      if (!(s.resized_len[a] < 0x1p62)) {
        ctx.Fail(fmt::format("scale {} on axis {} of size {} gives an output dim of {}", scales[a],
                             a, x.dim(a), s.resized_len[a]));
      }
      s.out[a] = static_cast<int64_t>(std::floor(s.resized_len[a]));
      s.ort_scales[a] = static_cast<float>(scales[a]);
      // ONNX Runtime sizes the output as the float product, truncated.
      if (s.ort_formula) {
        s.out[a] = static_cast<int64_t>(s.ort_scales[a] * static_cast<float>(x.dim(a)));
      }
    } else {
      if (sizes[a] < 0) ctx.Fail(fmt::format("size {} on axis {} is negative", sizes[a], a));
      s.out[a] = sizes[a];
      s.resized_len[a] = static_cast<double>(sizes[a]);
      s.scales[a] = x.dim(a) ? static_cast<double>(sizes[a]) / static_cast<double>(x.dim(a)) : 1;
      s.ort_scales[a] =
          x.dim(a) ? static_cast<float>(sizes[a]) / static_cast<float>(x.dim(a)) : 1.0f;
    }
  }
}

void ResizeKernel(KernelContext& ctx) {
  for (const char* opset18 : {"antialias", "axes", "keep_aspect_ratio_policy"}) {
    if (ctx.HasAttribute(opset18)) {
      ctx.Fail(
          fmt::format("attribute '{}' belongs to Resize opset 18, which this executor does "
                      "not support; export the model at opset 17 or lower",
                      opset18));
    }
  }
  const Tensor& x = ctx.input(0);
  ResizeSpec s;
  s.ort_formula = CurrentExecution().ort_compatible_resize;
  if (ctx.opset() < 11) {
    ctx.AllowAttributes({"mode"});
    s.mode = ParseMode(ctx, false);
    ResolveScales(ctx, x, ReadFloats(ctx, ctx.input(1)), {}, s);
    return RunResize(ctx, s);
  }
  ctx.AllowAttributes({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                       "extrapolation_value", "mode", "nearest_mode"});
  s.mode = ParseMode(ctx, true);
  s.coord = ParseEnum<Coord>(ctx, "coordinate_transformation_mode", "half_pixel",
                             {{"half_pixel", Coord::kHalfPixel},
                              {"pytorch_half_pixel", Coord::kPytorchHalfPixel},
                              {"align_corners", Coord::kAlignCorners},
                              {"asymmetric", Coord::kAsymmetric},
                              {"tf_half_pixel_for_nn", Coord::kTfHalfPixelForNn},
                              {"tf_crop_and_resize", Coord::kTfCropAndResize}});
  s.rounding = ParseEnum<Rounding>(ctx, "nearest_mode", "round_prefer_floor",
                                   {{"round_prefer_floor", Rounding::kRoundPreferFloor},
                                    {"round_prefer_ceil", Rounding::kRoundPreferCeil},
                                    {"floor", Rounding::kFloor},
                                    {"ceil", Rounding::kCeil}});
  s.cubic_a = ctx.GetFloat("cubic_coeff_a", -0.75f);
  s.exclude_outside = ctx.GetInt("exclude_outside", 0) != 0;
  s.extrapolation = ctx.GetFloat("extrapolation_value", 0.f);
  const std::vector<double> scales =
      ctx.has_input(2) ? ReadFloats(ctx, ctx.input(2)) : std::vector<double>{};
  const std::vector<int64_t> sizes =
      ctx.has_input(3) ? kernels::ReadInts(ctx, ctx.input(3)) : std::vector<int64_t>{};
  ResolveScales(ctx, x, scales, sizes, s);
  if (s.coord == Coord::kTfCropAndResize) {
    if (!ctx.has_input(1)) ctx.Fail("coordinate_transformation_mode tf_crop_and_resize needs roi");
    s.roi = ReadFloats(ctx, ctx.input(1));
    if (s.roi.size() != 2 * static_cast<size_t>(x.rank())) {
      ctx.Fail(fmt::format("roi has {} values; tf_crop_and_resize needs 2 x rank = {}",
                           s.roi.size(), 2 * x.rank()));
    }
  }
  RunResize(ctx, s);
}

void UpsampleKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"mode", "scales"});
  const Tensor& x = ctx.input(0);
  ResizeSpec s;
  s.ort_formula = CurrentExecution().ort_compatible_resize;
  s.mode = ParseMode(ctx, false);
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float f : ctx.GetFloats("scales")) scales.push_back(f);
    if (scales.empty()) ctx.Fail("attribute 'scales' is required");
  } else {
    scales = ReadFloats(ctx, ctx.input(1));
  }
  ResolveScales(ctx, x, scales, {}, s);
  RunResize(ctx, s);
}

// ---- DepthToSpace / SpaceToDepth: pure data movement, done per element size ----

struct BlockMove {
  int64_t n, c, h, w, block;  // of the depth (channel-stacked) side
  bool crd;
};

// Copies between the depth side [N, C, H, W] and the space side [N, C/b², H*b, W*b].
template <typename U>
void MoveBlocks(const BlockMove& m, const U* src, U* dst, bool to_space) {
  const int64_t b = m.block, c_out = m.c / (b * b);
  ParallelFor(m.n * c_out, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / c_out, c = item % c_out;
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < b; ++j) {
          const int64_t depth_c = m.crd ? (c * b + i) * b + j : (i * b + j) * c_out + c;
          const int64_t depth_base = (n * m.c + depth_c) * m.h * m.w;
          const int64_t space_base = (n * c_out + c) * m.h * b * m.w * b;
          for (int64_t h = 0; h < m.h; ++h)
            for (int64_t w = 0; w < m.w; ++w) {
              const int64_t d = depth_base + h * m.w + w;
              const int64_t sp = space_base + (h * b + i) * m.w * b + w * b + j;
              if (to_space) {
                dst[sp] = src[d];
              } else {
                dst[d] = src[sp];
              }
            }
        }
    }
  });
}

void MoveBlocksAnySize(const KernelContext& ctx, const BlockMove& m, const Tensor& src, Tensor& dst,
                       bool to_space) {
  const bool moved = kernels::DispatchBySize(ir::DtypeSize(src.dtype()), [&](auto tag) {
    using U = decltype(tag);
    MoveBlocks(m, static_cast<const U*>(src.raw()), static_cast<U*>(dst.mutable_raw()), to_space);
  });
  if (!moved) kernels::FailDtype(ctx, src.dtype());
}

int64_t ReadBlockSize(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() != 4) ctx.Fail(fmt::format("input {} must be 4-D [N, C, H, W]", x.DebugString()));
  if (!ctx.HasAttribute("blocksize")) ctx.Fail("attribute 'blocksize' is required");
  const int64_t b = ctx.GetInt("blocksize", 0);
  if (b <= 0) ctx.Fail(fmt::format("blocksize {} must be positive", b));
  return b;
}

// blocksize is model data: its square and the scaled dims must not wrap (a wrap to 0 divided by
// zero before).
int64_t Scaled(const KernelContext& ctx, int64_t dim, int64_t factor) {
  auto r = util::CheckedMul(dim, factor);
  if (!r) ctx.Fail(fmt::format("dim {} times blocksize {} overflows", dim, factor));
  return *r;
}

int64_t BlockArea(const KernelContext& ctx, int64_t b) { return Scaled(ctx, b, b); }

void DepthToSpaceKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"blocksize", "mode"});
  const Tensor& x = ctx.input(0);
  const int64_t b = ReadBlockSize(ctx, x);
  const std::string mode = ctx.GetString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.Fail(fmt::format("mode '{}' is not DCR or CRD", mode));
  const int64_t b2 = BlockArea(ctx, b);
  if (x.dim(1) % b2 != 0) {
    ctx.Fail(fmt::format("channels {} are not divisible by blocksize² = {}", x.dim(1), b2));
  }
  Tensor& y = ctx.output(0) = Tensor(
      x.dtype(), {x.dim(0), x.dim(1) / b2, Scaled(ctx, x.dim(2), b), Scaled(ctx, x.dim(3), b)});
  MoveBlocksAnySize(ctx, {x.dim(0), x.dim(1), x.dim(2), x.dim(3), b, mode == "CRD"}, x, y, true);
}

void SpaceToDepthKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"blocksize"});
  const Tensor& x = ctx.input(0);
  const int64_t b = ReadBlockSize(ctx, x);
  if (x.dim(2) % b != 0 || x.dim(3) % b != 0) {
    ctx.Fail(
        fmt::format("spatial dims of {} are not divisible by blocksize {}", x.DebugString(), b));
  }
  const int64_t c = Scaled(ctx, x.dim(1), BlockArea(ctx, b));
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), {x.dim(0), c, x.dim(2) / b, x.dim(3) / b});
  MoveBlocksAnySize(ctx, {x.dim(0), c, x.dim(2) / b, x.dim(3) / b, b, false}, x, y, false);
}

}  // namespace

void RegisterResizeKernels(KernelRegistry& r) {
  r.Register("", "Resize", 10, 17, ResizeKernel);
  // ONNX deprecated Upsample at opset 10, but vendor converters still take it in opset 11+
  // models (porttool's resize-to-upsample writes those); running it lets them be verified.
  r.Register("", "Upsample", 7, 17, UpsampleKernel);
  r.Register("", "DepthToSpace", 1, 17, DepthToSpaceKernel);
  r.Register("", "SpaceToDepth", 1, 17, SpaceToDepthKernel);
}

}  // namespace porttool::runtime
