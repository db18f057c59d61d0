// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool over 1-D, 2-D and 3-D inputs. The
// window geometry (auto_pad, ceil_mode, dilations) comes from spatial.h, shared with Conv, so the
// output sizes agree with what shape inference and ONNX Runtime compute.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/spatial.h"
#include "lib/runtime/kernels/vector_math.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using kernels::TP;
using kernels::Window3;

struct PoolSetup {
  kernels::Window window;
  Window3 w;
  int64_t planes = 0;  // N * C
  std::vector<int64_t> out_shape;
};

PoolSetup SetUpPool(const KernelContext& ctx, const Tensor& x, bool ceil_mode) {
  PoolSetup s;
  const std::vector<int64_t> spatial = kernels::SpatialDims(ctx, x.shape());
  if (!ctx.HasAttribute("kernel_shape")) ctx.Fail("attribute 'kernel_shape' is required");
  s.window = kernels::ForwardWindow(ctx, spatial, ctx.GetInts("kernel_shape"), ceil_mode);
  s.w = kernels::To3D(s.window);
  s.planes = x.dim(0) * x.dim(1);
  s.out_shape = {x.dim(0), x.dim(1)};
  s.out_shape.insert(s.out_shape.end(), s.window.out.begin(), s.window.out.end());
  return s;
}

bool ReadCeilMode(const KernelContext& ctx) {
  const int64_t v = ctx.GetInt("ceil_mode", 0);
  if (v != 0 && v != 1) ctx.Fail(fmt::format("ceil_mode must be 0 or 1, got {}", v));
  return v == 1;
}

// Calls fn(out_index, d0, h0, w0) for every output position of a plane, with the window's start
// coordinate (possibly negative: inside the begin padding).
template <typename Fn>
void ForEachWindow(const Window3& w, Fn&& fn) {
  int64_t o = 0;
  for (int64_t od = 0; od < w.out[0]; ++od)
    for (int64_t oh = 0; oh < w.out[1]; ++oh)
      for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
        fn(o, od * w.strides[0] - w.pad_begin[0], oh * w.strides[1] - w.pad_begin[1],
           ow * w.strides[2] - w.pad_begin[2]);
      }
}

// The work of one plane, to decide whether splitting planes over threads pays.
int64_t PlaneWork(const Window3& w) { return w.out_size() * w.kernel_size(); }

// The value a max starts from: below every input, so padding never wins and NaN inputs (which
// compare false) are skipped rather than propagated.
template <typename T>
constexpr T MaxIdentity() {
  if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::lowest();
}

// One plane of a 2-D max pool without dilation or indices: the window is clipped to the input
// once per output row and column, so the inner loops have no bounds checks (the generic walk below
// checks every tap: 30x slower than ONNX Runtime on PP-OCR cls's pool).
template <typename T>
void MaxPoolPlane2D(const T* in, const Window3& w, T* out) {
  for (int64_t oh = 0; oh < w.out[1]; ++oh) {
    const int64_t h0 = oh * w.strides[1] - w.pad_begin[1];
    const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + w.kernel[1], w.in[1]);
    for (int64_t ow = 0; ow < w.out[2]; ++ow) {
      const int64_t w0 = ow * w.strides[2] - w.pad_begin[2];
      const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + w.kernel[2], w.in[2]);
      T best = MaxIdentity<T>();
      for (int64_t h = h_lo; h < h_hi; ++h) {
        const T* row = in + h * w.in[2];
        for (int64_t c = w_lo; c < w_hi; ++c) best = row[c] > best ? row[c] : best;
      }
      out[oh * w.out[2] + ow] = best;
    }
  }
}

// Output (oh, ow) of MaxPoolPlane2D alone, by the same walk: the first maximum in row-major
// order over the window.
template <typename T>
T MaxPoolWindow2D(const T* in, const Window3& w, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * w.strides[1] - w.pad_begin[1];
  const int64_t w0 = ow * w.strides[2] - w.pad_begin[2];
  const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + w.kernel[1], w.in[1]);
  const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + w.kernel[2], w.in[2]);
  T best = MaxIdentity<T>();
  for (int64_t h = h_lo; h < h_hi; ++h) {
    const T* row = in + h * w.in[2];
    for (int64_t c = w_lo; c < w_hi; ++c) best = row[c] > best ? row[c] : best;
  }
  return best;
}

// out[at[j] + i] = max of in[at[j] + i + t step] over t < k, for i < 16 and j < C: C running
// maxima of 16 floats, a count the compiler knows, so they stay in registers.
template <int C>
PORTTOOL_ALWAYS_INLINE void MaxVectors(const float* in, const int64_t* at, int64_t k, int64_t step,
                                       float* out) {
  using kernels::V16f;
  V16f m[C];
  for (auto& v : m) v = V16f{} + MaxIdentity<float>();
  for (int64_t t = 0; t < k; ++t) {
    for (int j = 0; j < C; ++j) {
      V16f v;
      std::memcpy(&v, in + at[j] + t * step, sizeof v);
      m[j] = v > m[j] ? v : m[j];
    }
  }
  for (int j = 0; j < C; ++j) std::memcpy(out + at[j], &m[j], sizeof m[j]);
}

// MaxVectors over `rows` rows, row r from in + r in_stride to out + r out_stride.
template <int C>
PORTTOOL_ALWAYS_INLINE void MaxVectorRows(const float* in, int64_t in_stride, float* out,
                                          int64_t out_stride, int64_t rows, const int64_t* at,
                                          int64_t k, int64_t step) {
  for (int64_t r = 0; r < rows; ++r)
    MaxVectors<C>(in + r * in_stride, at, k, step, out + r * out_stride);
}

// MaxVectorRows for the columns [from, n), 16 <= n and n - from <= 64: up to four vectors, the
// last ending at n (it overlaps the one before; max is idempotent, so the overlap writes the
// same values again).
PORTTOOL_ALWAYS_INLINE void MaxVectorsFrom(const float* in, int64_t in_stride, float* out,
                                           int64_t out_stride, int64_t rows, int64_t from,
                                           int64_t n, int64_t k, int64_t step) {
  int64_t at[4];
  int count = 0;
  for (int64_t j = from; j < n; j += 16) at[count++] = std::min(j, n - 16);
  switch (count) {
    case 1:
      return MaxVectorRows<1>(in, in_stride, out, out_stride, rows, at, k, step);
    case 2:
      return MaxVectorRows<2>(in, in_stride, out, out_stride, rows, at, k, step);
    case 3:
      return MaxVectorRows<3>(in, in_stride, out, out_stride, rows, at, k, step);
    default:
      return MaxVectorRows<4>(in, in_stride, out, out_stride, rows, at, k, step);
  }
}

// out[i] = max of in[i + t step] over t < k, for i < n, the running maximum kept in registers
// (accumulated in memory, k passes over 20-float rows stalled on store forwarding). The tail
// past the last 64 runs as vectors that end at n (a scalar tail of 4 per 20-float row cost as
// much as the row's vectors).
template <typename T>
PORTTOOL_ALWAYS_INLINE void SlidingMax(const T* in, int64_t n, int64_t k, int64_t step, T* out) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    // Four running maxima at once: one alone waits on each max's latency.
    for (; i + 64 <= n; i += 64) {
      const int64_t at[4] = {i, i + 16, i + 32, i + 48};
      MaxVectors<4>(in, at, k, step, out);
    }
    if (i < n && n >= 16) return MaxVectorsFrom(in, 0, out, 0, 1, i, n, k, step);
  }
  for (; i < n; ++i) {
    T m = MaxIdentity<T>();
    for (int64_t t = 0; t < k; ++t) m = in[i + t * step] > m ? in[i + t * step] : m;
    out[i] = m;
  }
}

// SlidingMax over `rows` rows: row r reads from in + r in_stride and writes to
// out + r out_stride. Rows of 16 to 64 floats (a pool's planes are small: 20x20 at YOLOX's SPP)
// run as one to four vectors each, the vectors' offsets worked out once rather than per row (a
// call per 20-float row cost more than its maxima).
template <typename T>
PORTTOOL_ALWAYS_INLINE void MaxRows(const T* in, int64_t in_stride, T* out, int64_t out_stride,
                                    int64_t rows, int64_t n, int64_t k, int64_t step) {
  if constexpr (std::is_same_v<T, float>) {
    if (n >= 16 && n <= 64) {
      return MaxVectorsFrom(in, in_stride, out, out_stride, rows, 0, n, k, step);
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    SlidingMax(in + r * in_stride, n, k, step, out + r * out_stride);
}

// Whether any of v[0, n) is +0 or -0, read on the bits: the smallest of the bits shifted past
// the sign is 0 only for a zero (an unsigned min vectorises over the whole plane; a float compare
// into a count per 20-float row cost as much as both passes).
template <typename T>
PORTTOOL_ALWAYS_INLINE bool HasZero(const T* v, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits lowest = ~Bits{0};
  for (int64_t i = 0; i < n; ++i) {
    Bits b;
    std::memcpy(&b, v + i, sizeof b);
    const Bits magnitude = static_cast<Bits>(b << 1);
    lowest = magnitude < lowest ? magnitude : lowest;
  }
  return lowest == 0;
}

// The maxima down the window's rows, one row per output row, with the columns of the padding on
// either side (and the windows' overhang past the end under ceil_mode) left at MaxIdentity.
struct DownRows {
  int64_t cols = 0;
  static DownRows For(const Window3& w) {
    const int64_t span_w = w.out[2] - 1 + w.kernel[2];
    return {std::max(span_w, w.pad_begin[2] + w.in[2])};
  }
  int64_t size(const Window3& w) const { return w.out[1] * cols; }
};

// One plane of a stride-1 2-D max pool as two 1-D passes: the maxima over each window's rows
// (only the rows inside the input, so the padding is never copied), then over the window's
// columns of those. A k x k window costs 2k comparisons per output instead of k²: YOLOX's SPP
// pools (k = 5, 9, 13) took 30x ONNX Runtime's time as one k² walk per output, and 2x at k = 5
// while the plane was first copied into a padded one. `down` keeps its padding columns between
// calls. Max is exact, so the bits match the one-pass walk, but for the sign of a zero maximum:
// the walk keeps the first of equal values in row-major order, the passes the first down a
// column, so a window holding +0 and -0 could give the other sign. A zero output is computed
// again by the walk (one compare per output; all zeros cost the walk's time, no more).
template <typename T>
PORTTOOL_ALWAYS_INLINE void SeparableMaxPlane(const T* in, const Window3& w, const DownRows& d,
                                              T* down, T* out) {
  // Down: the rows whose windows lie inside the input in one batch, the others clipped one by one.
  const int64_t k = w.kernel[1], top = w.pad_begin[1], width = w.in[2];
  const int64_t first = std::min(top, w.out[1]);
  const int64_t last = std::max(first, std::min(w.out[1], top + w.in[1] - k + 1));
  T* down_at = down + w.pad_begin[2];
  MaxRows(in + (first - top) * width, width, down_at + first * d.cols, d.cols, last - first, width,
          k, width);
  for (int64_t oh = 0; oh < w.out[1]; ++oh) {
    if (oh == first) oh = last;  // the batch's rows
    if (oh == w.out[1]) break;
    const int64_t h_lo = std::max<int64_t>(oh - top, 0), h_hi = std::min(oh - top + k, w.in[1]);
    SlidingMax(in + h_lo * width, width, std::max<int64_t>(h_hi - h_lo, 0), width,
               down_at + oh * d.cols);
  }
  // Across, every row alike.
  MaxRows(down, d.cols, out, w.out[2], w.out[1], w.out[2], w.kernel[2], int64_t{1});
  if constexpr (std::is_floating_point_v<T>) {
    if (!HasZero(out, w.out_size())) return;
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
      T* dst = out + oh * w.out[2];
      for (int64_t c = 0; c < w.out[2]; ++c) {
        if (dst[c] == T(0)) dst[c] = MaxPoolWindow2D(in, w, oh, c);
      }
    }
  }
}

PORTTOOL_SIMD_CLONES void SeparableMaxPlaneF(const float* in, const Window3& w, const DownRows& d,
                                             float* down, float* out) {
  SeparableMaxPlane(in, w, d, down, out);
}

// Stride-1 windows of 3 or more taps a side: a 2x2 stride-2 pool (BlazeFace's) reads each input
// once either way, and the one-pass loop has no plane to copy.
bool PaysToSeparate(const Window3& w) {
  return w.kernel[1] >= 3 && w.kernel[2] >= 3 && w.strides[1] == 1 && w.strides[2] == 1;
}

bool IsPlain2D(const Window3& w) {
  return w.in[0] == 1 && w.kernel[0] == 1 && w.dilations[1] == 1 && w.dilations[2] == 1;
}

// 2x2 windows at stride 2 that lie inside the input (BlazeFace's and most detectors' pools).
bool HalvesBothAxes(const Window3& w) {
  return IsPlain2D(w) && w.kernel[1] == 2 && w.kernel[2] == 2 && w.strides[1] == 2 &&
         w.strides[2] == 2 && w.pad_begin[1] == 0 && w.pad_begin[2] == 0 &&
         2 * w.out[1] <= w.in[1] && 2 * w.out[2] <= w.in[2];
}

// One plane of such a pool: the four taps in the walk's row-major order from the walk's start
// value, so the bits (NaN skipped, the first of +0/-0 kept) are MaxPoolPlane2D's, without its
// window clipping per output (3.8x ONNX Runtime's time on BlazeFace's pool).
template <typename T>
PORTTOOL_ALWAYS_INLINE void MaxPool2x2Plane(const T* in, const Window3& w, T* out) {
  const int64_t width = w.in[2];
  for (int64_t oh = 0; oh < w.out[1]; ++oh, out += w.out[2]) {
    const T* r0 = in + 2 * oh * width;
    const T* r1 = r0 + width;
    for (int64_t ow = 0; ow < w.out[2]; ++ow) {
      T best = MaxIdentity<T>();
      best = r0[2 * ow] > best ? r0[2 * ow] : best;
      best = r0[2 * ow + 1] > best ? r0[2 * ow + 1] : best;
      best = r1[2 * ow] > best ? r1[2 * ow] : best;
      best = r1[2 * ow + 1] > best ? r1[2 * ow + 1] : best;
      out[ow] = best;
    }
  }
}

PORTTOOL_SIMD_CLONES void MaxPool2x2PlaneF(const float* in, const Window3& w, float* out) {
  MaxPool2x2Plane(in, w, out);
}

// Windows along H alone that tile it exactly (W = 1, stride = kernel, no padding or dilation):
// then output i of the whole tensor is the max of inputs [i k, i k + k), whatever the plane.
// Sequence and audio nets written as 2-D ([k, 1] pools over [N, C, T, 1]) ran ~17 cycles of
// window arithmetic per output through MaxPoolPlane2D.
bool TilesHeightOnly(const Window3& w) {
  return w.in[0] == 1 && w.kernel[0] == 1 && w.in[2] == 1 && w.kernel[2] == 1 &&
         w.strides[1] == w.kernel[1] && w.dilations[1] == 1 && w.pad_begin[1] == 0 &&
         w.in[1] == w.out[1] * w.kernel[1];
}

template <typename T>
void MaxPoolPlanes(const Tensor& x, const PoolSetup& s, bool column_major, Tensor& y,
                   Tensor* indices) {
  const Window3& w = s.w;
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  int64_t* pi = indices ? indices->mutable_data<int64_t>() : nullptr;
  if (pi == nullptr && TilesHeightOnly(w)) {
    const int64_t k = w.kernel[1];
    kernels::ParallelRows(s.planes * w.out_size(), k, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T best = MaxIdentity<T>();
        for (int64_t j = 0; j < k; ++j) best = px[i * k + j] > best ? px[i * k + j] : best;
        py[i] = best;
      }
    });
    return;
  }
  if (pi == nullptr && IsPlain2D(w) && PaysToSeparate(w)) {
    const DownRows rows = DownRows::For(w);
    const int64_t work = w.out_size() * (w.kernel[1] + w.kernel[2]);
    kernels::ParallelRows(s.planes, work, [&](int64_t begin, int64_t end) {
      std::vector<T> down(rows.size(w), MaxIdentity<T>());
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* in = px + plane * w.in_size();
        T* out = py + plane * w.out_size();
        if constexpr (std::is_same_v<T, float>) {
          SeparableMaxPlaneF(in, w, rows, down.data(), out);
        } else {
          SeparableMaxPlane(in, w, rows, down.data(), out);
        }
      }
    });
    return;
  }
  if (pi == nullptr && HalvesBothAxes(w)) {
    kernels::ParallelRows(s.planes, PlaneWork(w), [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* in = px + plane * w.in_size();
        T* out = py + plane * w.out_size();
        if constexpr (std::is_same_v<T, float>) {
          MaxPool2x2PlaneF(in, w, out);
        } else {
          MaxPool2x2Plane(in, w, out);
        }
      }
    });
    return;
  }
  if (pi == nullptr && IsPlain2D(w)) {
    kernels::ParallelRows(s.planes, PlaneWork(w), [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        MaxPoolPlane2D(px + plane * w.in_size(), w, py + plane * w.out_size());
      }
    });
    return;
  }
  kernels::ParallelRows(s.planes, PlaneWork(w), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = px + plane * w.in_size();
      T* out = py + plane * w.out_size();
      ForEachWindow(w, [&](int64_t o, int64_t d0, int64_t h0, int64_t w0) {
        T best = MaxIdentity<T>();
        int64_t best_d = -1, best_h = 0, best_w = 0;
        for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
          const int64_t d = d0 + kd * w.dilations[0];
          if (d < 0 || d >= w.in[0]) continue;
          for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
            const int64_t h = h0 + kh * w.dilations[1];
            if (h < 0 || h >= w.in[1]) continue;
            const T* row = in + (d * w.in[1] + h) * w.in[2];
            for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
              const int64_t c = w0 + kw * w.dilations[2];
              if (c < 0 || c >= w.in[2]) continue;
              if (best_d < 0 || row[c] > best) {
                best = row[c];
                best_d = d, best_h = h, best_w = c;
              }
            }
          }
        }
        out[o] = best;
        if (pi) {
          const int64_t local = column_major ? best_d + (best_h + best_w * w.in[1]) * w.in[0]
                                             : (best_d * w.in[1] + best_h) * w.in[2] + best_w;
          pi[plane * w.out_size() + o] = plane * w.in_size() + local;
        }
      });
    }
  });
}

void MaxPoolKernel(KernelContext& ctx) {
  ctx.AllowAttributes(
      {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  const Tensor& x = ctx.input(0);
  const PoolSetup s = SetUpPool(ctx, x, ReadCeilMode(ctx));
  const int64_t storage_order = ctx.GetInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) {
    ctx.Fail(fmt::format("storage_order must be 0 (row major) or 1 (column major), got {}",
                         storage_order));
  }
  Tensor& y = ctx.output(0) = Tensor::Uninitialized(x.dtype(), s.out_shape);  // all written
  Tensor* indices = nullptr;
  if (ctx.output_count() > 1 && ctx.wants_output(1)) {
    indices = &(ctx.output(1) = Tensor(TP::INT64, s.out_shape));
  }
  auto run = [&](auto tag) { MaxPoolPlanes<decltype(tag)>(x, s, storage_order == 1, y, indices); };
  kernels::Dispatch<float, double, int8_t, uint8_t>(ctx, x.dtype(), run);
}

template <typename T>
void AveragePoolPlanes(const Tensor& x, const PoolSetup& s, bool count_include_pad, Tensor& y) {
  const Window3& w = s.w;
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  kernels::ParallelRows(s.planes, PlaneWork(w), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = px + plane * w.in_size();
      T* out = py + plane * w.out_size();
      ForEachWindow(w, [&](int64_t o, int64_t d0, int64_t h0, int64_t w0) {
        const int64_t start[3] = {d0, h0, w0};
        int64_t lo[3], hi[3], padded = 1, valid = 1;
        for (int i = 0; i < 3; ++i) {
          // The window is clipped to the padded extent for the padded count (ceil_mode windows
          // can reach past it) and to the input for the sum.
          const int64_t stop = start[i] + w.kernel[i];
          padded *= std::min(stop, w.in[i] + w.pad_end[i]) - start[i];
          lo[i] = std::max<int64_t>(start[i], 0);
          hi[i] = std::min(stop, w.in[i]);
          valid *= std::max<int64_t>(hi[i] - lo[i], 0);
        }
        T sum = 0;
        for (int64_t d = lo[0]; d < hi[0]; ++d)
          for (int64_t h = lo[1]; h < hi[1]; ++h) {
            const T* row = in + (d * w.in[1] + h) * w.in[2];
            for (int64_t c = lo[2]; c < hi[2]; ++c) sum += row[c];
          }
        const int64_t count = count_include_pad ? padded : valid;
        out[o] = count > 0 ? sum / static_cast<T>(count) : T(0);
      });
    }
  });
}

void AveragePoolKernel(KernelContext& ctx) {
  ctx.AllowAttributes(
      {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  const Tensor& x = ctx.input(0);
  const PoolSetup s = SetUpPool(ctx, x, ReadCeilMode(ctx));
  const bool include_pad = ctx.GetInt("count_include_pad", 0) != 0;
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), s.out_shape);
  kernels::DispatchFloat(ctx, x.dtype(),
                         [&](auto tag) { AveragePoolPlanes<decltype(tag)>(x, s, include_pad, y); });
}

// Sums for GlobalAveragePool: float in 32 lanes (a sequential float sum waits on each add's
// latency, 4x slower than ONNX Runtime on PP-OCRv4 det's ten pools), double sequentially.
PORTTOOL_SIMD_CLONES float Sum(const float* in, int64_t n) {
  kernels::V8f acc[4] = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 4; ++j) {
      kernels::V8f v;
      std::memcpy(&v, in + i + 8 * j, sizeof v);
      acc[j] += v;
    }
  }
  float sum = kernels::SumLanes((acc[0] + acc[1]) + (acc[2] + acc[3]));
  for (; i < n; ++i) sum += in[i];
  return sum;
}

double Sum(const double* in, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += in[i];
  return sum;
}

template <bool kMax>
void GlobalPoolKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.Fail(fmt::format("input {} must be [N, C, spatial...]", x.DebugString()));
  std::vector<int64_t> out_shape(x.rank(), 1);
  out_shape[0] = x.dim(0);
  out_shape[1] = x.dim(1);
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), out_shape);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.size() / planes;
  kernels::DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    kernels::ParallelRows(planes, size, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* in = px + p * size;
        if constexpr (kMax) {
          py[p] = size ? *std::max_element(in, in + size) : T(0);
        } else {
          py[p] = size ? Sum(in, size) / static_cast<T>(size) : T(0);
        }
      }
    });
  });
}

}  // namespace

void RegisterPoolKernels(KernelRegistry& r) {
  r.Register("", "MaxPool", 1, 17, MaxPoolKernel);
  r.Register("", "AveragePool", 1, 17, AveragePoolKernel);
  r.Register("", "GlobalAveragePool", 1, 17, GlobalPoolKernel<false>);
  r.Register("", "GlobalMaxPool", 1, 17, GlobalPoolKernel<true>);
}

}  // namespace porttool::runtime
