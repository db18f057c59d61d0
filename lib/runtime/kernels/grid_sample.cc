// GridSample (opset 16): 4-D X [N, C, H, W] sampled at the normalised (x, y) positions of grid
// [N, H_out, W_out, 2]; modes bilinear, nearest and bicubic; padding zeros, border and reflection;
// align_corners 0 and 1. Opset 20 renamed the modes and went N-D, so the kernel stops at 19.
//
// Padding applies to the taps of the interpolation kernel, not to the sample position: a tap
// outside the image reads 0 (zeros), the nearest edge pixel (border) or its mirror image
// (reflection). For bilinear and nearest sampling that equals PyTorch's clamping or reflecting of
// the position first; for bicubic it is what PyTorch and ONNX Runtime compute, while the ONNX
// reference implementation (written for opset 20) also moves the position, which changes bicubic
// samples outside the image with border or reflection padding.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

enum class Mode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridSampleConfig {
  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

GridSampleConfig ParseGridSampleConfig(const KernelContext& ctx) {
  ctx.AllowAttributes({"align_corners", "mode", "padding_mode"});
  GridSampleConfig c;
  const int64_t align = ctx.GetInt("align_corners", 0);
  if (align != 0 && align != 1) {
    ctx.Fail(fmt::format("attribute 'align_corners' value {} is not 0 or 1", align));
  }
  c.align_corners = align == 1;
  const std::string mode = ctx.GetString("mode", "bilinear");
  if (mode == "bilinear") {
    c.mode = Mode::kBilinear;
  } else if (mode == "nearest") {
    c.mode = Mode::kNearest;
  } else if (mode == "bicubic") {
    c.mode = Mode::kBicubic;
  } else {
    ctx.Fail(fmt::format(
        "attribute 'mode' value '{}' is not one of bilinear, nearest, bicubic (opset 16)", mode));
  }
  const std::string padding = ctx.GetString("padding_mode", "zeros");
  if (padding == "zeros") {
    c.padding = Padding::kZeros;
  } else if (padding == "border") {
    c.padding = Padding::kBorder;
  } else if (padding == "reflection") {
    c.padding = Padding::kReflection;
  } else {
    ctx.Fail(fmt::format(
        "attribute 'padding_mode' value '{}' is not one of zeros, border, reflection", padding));
  }
  return c;
}

// Folds x back into [lo, hi] by mirroring at the ends as many times as it takes.
template <typename G>
G Reflect(G x, G lo, G hi) {
  const G range = hi - lo;
  if (!(range > 0)) return lo;  // a 1-pixel axis with align_corners: every position is pixel 0
  if (x >= lo && x <= hi) return x;
  const G dx = x < lo ? lo - x : x - hi;
  const G n = std::floor(dx / range);
  const G r = dx - n * range;
  const bool even = std::fmod(n, G(2)) == 0;
  return (x < lo) == even ? lo + r : hi - r;
}

// Keys' cubic convolution weights (a = -0.75, as PyTorch and ONNX Runtime) for fraction t.
template <typename G>
std::array<G, 4> CubicWeights(G t) {
  constexpr G a = G(-0.75);
  auto near = [&](G x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [&](G x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// Sampling geometry along one axis of size `size`.
template <typename G>
struct Axis {
  int64_t size;
  G lo, hi;  // the valid range of source coordinates
  bool align_corners;
  Padding padding;

  Axis(int64_t n, bool align, Padding pad) : size(n), align_corners(align), padding(pad) {
    lo = align ? G(0) : G(-0.5);
    hi = align ? G(n - 1) : G(n) - G(0.5);
  }

  G Source(G normalized) const {
    return align_corners ? (normalized + 1) / 2 * G(size - 1)
                         : ((normalized + 1) * G(size) - 1) / 2;
  }

  // The pixel index a tap reads, or -1 for a zero (outside, zeros padding).
  int64_t Tap(int64_t i) const {
    if (i >= 0 && i < size) return i;
    if (padding == Padding::kZeros) return -1;
    if (padding == Padding::kReflection) {
      i = static_cast<int64_t>(Reflect(static_cast<G>(i), lo, hi));
    }
    return std::clamp<int64_t>(i, 0, size - 1);
  }
};

template <typename G>
int64_t FloorIndex(G x) {
  // Coordinates come from model data; a NaN or huge value must not overflow the conversion.
  const G f = std::floor(x);
  if (!(f > G(-(int64_t{1} << 40)))) return -(int64_t{1} << 40);
  if (!(f < G(int64_t{1} << 40))) return int64_t{1} << 40;
  return static_cast<int64_t>(f);
}

template <typename T, typename G>
void Sample(const GridSampleConfig& c, const Tensor& x, const Tensor& grid, Tensor& y) {
  const int64_t batches = x.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t ho = grid.dim(1), wo = grid.dim(2), plane = h * w, pixels = ho * wo;
  const Axis<G> ax(w, c.align_corners, c.padding), ay(h, c.align_corners, c.padding);
  const T* px = x.data<T>();
  const G* pg = grid.data<G>();
  T* py = y.mutable_data<T>();
  ParallelElements(batches * pixels, [&](int64_t begin, int64_t end) {
    // Taps (flat index within a plane, or -1 for zero) and weights of one output pixel, shared
    // by every channel.
    std::array<int64_t, 16> taps{};
    std::array<double, 16> weights{};
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / pixels, pixel = item % pixels;
      const G* g = pg + item * 2;
      const G sx = ax.Source(g[0]), sy = ay.Source(g[1]);
      int count = 0;
      auto add = [&](int64_t iy, int64_t ix, double weight) {
        const int64_t ty = ay.Tap(iy), tx = ax.Tap(ix);
        taps[count] = ty < 0 || tx < 0 ? -1 : ty * w + tx;
        weights[count++] = weight;
      };
      if (c.mode == Mode::kNearest) {
        // std::nearbyint: halves to even, as PyTorch's 2-D kernel.
        add(FloorIndex(std::nearbyint(sy)), FloorIndex(std::nearbyint(sx)), 1.0);
      } else if (c.mode == Mode::kBilinear) {
        const int64_t x0 = FloorIndex(sx), y0 = FloorIndex(sy);
        const double fx = static_cast<double>(sx) - static_cast<double>(x0);
        const double fy = static_cast<double>(sy) - static_cast<double>(y0);
        add(y0, x0, (1 - fy) * (1 - fx));
        add(y0, x0 + 1, (1 - fy) * fx);
        add(y0 + 1, x0, fy * (1 - fx));
        add(y0 + 1, x0 + 1, fy * fx);
      } else {
        const int64_t x0 = FloorIndex(sx), y0 = FloorIndex(sy);
        const auto wx = CubicWeights<G>(sx - static_cast<G>(x0));
        const auto wy = CubicWeights<G>(sy - static_cast<G>(y0));
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) add(y0 - 1 + i, x0 - 1 + j, double(wy[i]) * double(wx[j]));
        }
      }
      for (int64_t ch = 0; ch < channels; ++ch) {
        const T* src = px + (b * channels + ch) * plane;
        double v = 0;
        for (int t = 0; t < count; ++t) {
          if (taps[t] >= 0) v += weights[t] * static_cast<double>(src[taps[t]]);
        }
        py[(b * channels + ch) * pixels + pixel] = static_cast<T>(v);
      }
    }
  });
}

std::shared_ptr<const void> GridSamplePrepare(const KernelContext& ctx) {
  return std::make_shared<const GridSampleConfig>(ParseGridSampleConfig(ctx));
}

void GridSampleKernel(KernelContext& ctx) {
  const GridSampleConfig* prepared = ctx.prepared<GridSampleConfig>();
  const GridSampleConfig c = prepared ? *prepared : ParseGridSampleConfig(ctx);
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  if (x.rank() != 4) {
    ctx.Fail(fmt::format("X {} must be 4-D [N, C, H, W] (opset 16 samples 2-D images only)",
                         x.DebugString()));
  }
  if (grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2) {
    ctx.Fail(fmt::format("grid {} must be [N, H_out, W_out, 2] with X {}'s N", grid.DebugString(),
                         x.DebugString()));
  }
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), {x.dim(0), x.dim(1), grid.dim(1), grid.dim(2)});
  if (y.size() == 0) return;
  if (x.dim(2) == 0 || x.dim(3) == 0) {
    ctx.Fail(fmt::format("X {} has an empty spatial dim to sample from", x.DebugString()));
  }
  DispatchFloat(ctx, x.dtype(), [&](auto xt) {
    DispatchFloat(ctx, grid.dtype(),
                  [&](auto gt) { Sample<decltype(xt), decltype(gt)>(c, x, grid, y); });
  });
}

}  // namespace

void RegisterGridSampleKernels(KernelRegistry& r) {
  r.Register("", "GridSample", 16, 19, GridSampleKernel, GridSamplePrepare);
}

}  // namespace porttool::runtime
