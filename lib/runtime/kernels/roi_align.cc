// RoiAlign (opsets 10 and 16): each region of interest of X [N, C, H, W] pooled to
// [output_height, output_width] bins, every bin the avg or max of sampling_ratio^2 bilinear
// samples (an adaptive ceil(roi_size / bins) per axis when sampling_ratio is 0).
//
// Opset 10 had no coordinate_transformation_mode: it behaves as 16's "output_half_pixel" (no
// half-pixel shift of the box, boxes smaller than a pixel grown to one). Opset 16 defaults to
// "half_pixel".
//
// mode=max follows the ONNX reference implementation, which generated the node tests' expected
// outputs: per sample, the largest of the four weighted corner terms w_i * v_i (not the
// interpolated value, their sum), then the largest over the bin's samples. ONNX Runtime's CPU
// kernel has computed max mode differently across releases (microsoft/onnxruntime#6146).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

struct RoiAlignConfig {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
};

RoiAlignConfig ParseRoiAlignConfig(const KernelContext& ctx) {
  RoiAlignConfig c;
  if (ctx.opset() >= 16) {
    ctx.AllowAttributes({"coordinate_transformation_mode", "mode", "output_height", "output_width",
                         "sampling_ratio", "spatial_scale"});
    const std::string ctm = ctx.GetString("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel") {
      ctx.Fail(
          fmt::format("attribute 'coordinate_transformation_mode' value '{}' is not half_pixel or "
                      "output_half_pixel",
                      ctm));
    }
    c.half_pixel = ctm == "half_pixel";
  } else {
    ctx.AllowAttributes(
        {"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"});
    c.half_pixel = false;
  }
  const std::string mode = ctx.GetString("mode", "avg");
  if (mode != "avg" && mode != "max") {
    ctx.Fail(fmt::format("attribute 'mode' value '{}' is not avg or max", mode));
  }
  c.max_mode = mode == "max";
  c.out_h = ctx.GetInt("output_height", 1);
  c.out_w = ctx.GetInt("output_width", 1);
  for (const auto& [name, v] : {std::pair{"output_height", c.out_h}, {"output_width", c.out_w}}) {
    // The bound keeps bins x rois x channels far from overflow on hostile attributes.
    if (v < 1 || v > (int64_t{1} << 20)) {
      ctx.Fail(fmt::format("attribute '{}' value {} must be in [1, 2^20]", name, v));
    }
  }
  c.sampling_ratio = ctx.GetInt("sampling_ratio", 0);
  if (c.sampling_ratio < 0 || c.sampling_ratio > 1024) {
    ctx.Fail(fmt::format("attribute 'sampling_ratio' value {} must be in [0, 1024] (0 = adaptive)",
                         c.sampling_ratio));
  }
  c.spatial_scale = ctx.GetFloat("spatial_scale", 1.f);
  if (!std::isfinite(c.spatial_scale)) {
    ctx.Fail(fmt::format("attribute 'spatial_scale' value {} is not finite", c.spatial_scale));
  }
  return c;
}

// Where one sample coordinate falls along an axis of `size` pixels: the two pixels it blends and
// their weights. The bilinear weights of a 2-D sample are products of the two axes' weights, so
// the samples of a box are computed per axis (out_h * grid_h + out_w * grid_w of them) rather
// than per bin and sample.
struct AxisSample {
  int64_t lo = 0, hi = 0;
  double w_lo = 0, w_hi = 0;
  bool inside = false;  // samples more than a pixel outside the map contribute 0
};

AxisSample AxisAt(double v, int64_t size) {
  AxisSample s;
  if (!(v >= -1.0 && v <= static_cast<double>(size))) return s;  // NaN included
  s.inside = true;
  v = std::max(v, 0.0);
  s.lo = static_cast<int64_t>(v);
  if (s.lo >= size - 1) {
    s.lo = s.hi = size - 1;
    v = static_cast<double>(s.lo);
  } else {
    s.hi = s.lo + 1;
  }
  s.w_hi = v - static_cast<double>(s.lo);
  s.w_lo = 1 - s.w_hi;
  return s;
}

// Samples per bin along one axis; a NaN or absurd box must not ask for billions.
int64_t GridCount(const KernelContext& ctx, int64_t ratio, double roi_size, int64_t bins) {
  if (ratio > 0) return ratio;
  const double n = std::ceil(roi_size / static_cast<double>(bins));
  if (std::isnan(n)) return 0;
  if (n > 4096) {
    ctx.Fail(fmt::format(
        "a region of size {} over {} bins needs {} samples per bin and axis (at most 4096)",
        roi_size, bins, n));
  }
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

// The samples of every bin along one axis: bins x grid of them, bin-major.
std::vector<AxisSample> AxisSamples(double start, double bin_size, int64_t bins, int64_t grid,
                                    int64_t size) {
  std::vector<AxisSample> out;
  out.reserve(static_cast<size_t>(bins * grid));
  for (int64_t p = 0; p < bins; ++p) {
    for (int64_t i = 0; i < grid; ++i) {
      out.push_back(
          AxisAt(start + static_cast<double>(p) * bin_size +
                     (static_cast<double>(i) + 0.5) * bin_size / static_cast<double>(grid),
                 size));
    }
  }
  return out;
}

template <typename T>
void Pool(const KernelContext& ctx, const RoiAlignConfig& c, const Tensor& x, const Tensor& rois,
          const std::vector<int64_t>& batch_index, Tensor& y) {
  const int64_t channels = x.dim(1), h = x.dim(2), w = x.dim(3), bins = c.out_h * c.out_w;
  const T* px = x.data<T>();
  const T* pr = rois.data<T>();
  T* py = y.mutable_data<T>();
  const double offset = c.half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < rois.dim(0); ++r) {
    const T* box = pr + r * 4;
    const double x1 = static_cast<double>(box[0]) * c.spatial_scale - offset;
    const double y1 = static_cast<double>(box[1]) * c.spatial_scale - offset;
    const double x2 = static_cast<double>(box[2]) * c.spatial_scale - offset;
    const double y2 = static_cast<double>(box[3]) * c.spatial_scale - offset;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!c.half_pixel) {  // boxes under a pixel are grown to one
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(c.out_h);
    const double bin_w = roi_w / static_cast<double>(c.out_w);
    const int64_t grid_h = GridCount(ctx, c.sampling_ratio, roi_h, c.out_h);
    const int64_t grid_w = GridCount(ctx, c.sampling_ratio, roi_w, c.out_w);
    // Model data chooses these counts: refuse work no real detector asks for (7x7 bins of 2x2
    // samples is typical; an adaptive grid over a whole 1000-pixel map is ~1e6) instead of
    // running for hours.
    constexpr double kMaxSamples = double(int64_t{1} << 26);
    if (double(c.out_h) * double(grid_h) * double(c.out_w) * double(grid_w) > kMaxSamples) {
      ctx.Fail(fmt::format(
          "region {} needs {}x{} bins of {}x{} samples per channel (at most 2^26 samples)", r,
          c.out_h, c.out_w, grid_h, grid_w));
    }
    const auto ys = AxisSamples(y1, bin_h, c.out_h, grid_h, h);
    const auto xs = AxisSamples(x1, bin_w, c.out_w, grid_w, w);
    // An empty grid (a box of no size in half_pixel mode) averages over one sample of nothing.
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    ParallelElements(channels, [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        const T* plane = px + (batch_index[r] * channels + ch) * h * w;
        T* out = py + (r * channels + ch) * bins;
        for (int64_t ph = 0; ph < c.out_h; ++ph) {
          for (int64_t pw = 0; pw < c.out_w; ++pw) {
            double v = 0;
            bool first = true;
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const AxisSample& sy = ys[ph * grid_h + iy];
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const AxisSample& sx = xs[pw * grid_w + ix];
                double terms[4] = {0, 0, 0, 0};
                if (sy.inside && sx.inside) {
                  const T* row_lo = plane + sy.lo * w;
                  const T* row_hi = plane + sy.hi * w;
                  terms[0] = sy.w_lo * sx.w_lo * static_cast<double>(row_lo[sx.lo]);
                  terms[1] = sy.w_lo * sx.w_hi * static_cast<double>(row_lo[sx.hi]);
                  terms[2] = sy.w_hi * sx.w_lo * static_cast<double>(row_hi[sx.lo]);
                  terms[3] = sy.w_hi * sx.w_hi * static_cast<double>(row_hi[sx.hi]);
                }
                if (c.max_mode) {
                  const double m = std::max({terms[0], terms[1], terms[2], terms[3]});
                  v = first ? m : std::max(v, m);
                  first = false;
                } else {
                  v += terms[0] + terms[1] + terms[2] + terms[3];
                }
              }
            }
            out[ph * c.out_w + pw] = static_cast<T>(c.max_mode ? v : v / count);
          }
        }
      }
    });
  }
}

std::shared_ptr<const void> RoiAlignPrepare(const KernelContext& ctx) {
  return std::make_shared<const RoiAlignConfig>(ParseRoiAlignConfig(ctx));
}

void RoiAlignKernel(KernelContext& ctx) {
  const RoiAlignConfig* prepared = ctx.prepared<RoiAlignConfig>();
  const RoiAlignConfig c = prepared ? *prepared : ParseRoiAlignConfig(ctx);
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& indices = ctx.input(2);
  if (x.rank() != 4) ctx.Fail(fmt::format("X {} must be 4-D [N, C, H, W]", x.DebugString()));
  if (rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype()) {
    ctx.Fail(fmt::format("rois {} must be [num_rois, 4] of X {}'s element type", rois.DebugString(),
                         x.DebugString()));
  }
  if (indices.rank() != 1 || indices.dim(0) != rois.dim(0)) {
    ctx.Fail(fmt::format("batch_indices {} must be [num_rois] for rois {}", indices.DebugString(),
                         rois.DebugString()));
  }
  const std::vector<int64_t> batch_index = ReadInts(ctx, indices);
  for (int64_t b : batch_index) {
    if (b < 0 || b >= x.dim(0)) {
      ctx.Fail(fmt::format("batch index {} is out of range for X {}", b, x.DebugString()));
    }
  }
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), {rois.dim(0), x.dim(1), c.out_h, c.out_w});
  if (y.size() == 0) return;
  if (x.dim(2) == 0 || x.dim(3) == 0) {
    ctx.Fail(fmt::format("X {} has an empty spatial dim to pool from", x.DebugString()));
  }
  DispatchFloat(ctx, x.dtype(),
                [&](auto tag) { Pool<decltype(tag)>(ctx, c, x, rois, batch_index, y); });
}

}  // namespace

void RegisterRoiAlignKernels(KernelRegistry& r) {
  // Opset 10's kernel is 16's with output_half_pixel fixed; ParseRoiAlignConfig tells them apart.
  r.Register("", "RoiAlign", 10, kLatest, RoiAlignKernel, RoiAlignPrepare);
}

}  // namespace porttool::runtime
