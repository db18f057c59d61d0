// Sliding-window geometry shared by Conv, ConvTranspose and the pooling kernels: reads
// kernel_shape / strides / dilations / pads / auto_pad, validates them against the input, and
// computes output sizes, so every windowed op resolves padding the same way. Kernels work on a
// canonical 3-D form (1-D and 2-D ops get leading size-1 dims) so one loop nest serves all ranks.
// Private to lib/runtime/kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "lib/runtime/kernel.h"

namespace porttool::runtime::kernels {

// Spatial ranks the windowed kernels support (ONNX allows any; real models use 1-3).
inline constexpr int kMaxSpatialRank = 3;

struct Window {
  int rank = 0;  // number of spatial dims
  std::vector<int64_t> in, out, kernel, strides, dilations, pad_begin, pad_end;
};

// Geometry of a forward window op (Conv, pools). `kernel` is the kernel size per spatial dim (from
// the weights, or the kernel_shape attribute for pools). `ceil_mode` rounds output sizes up
// (a window starting inside the end padding is dropped, as ONNX Runtime and PyTorch do).
Window ForwardWindow(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                     const std::vector<int64_t>& kernel, bool ceil_mode);

// Geometry of ConvTranspose: handles output_padding and output_shape as the ONNX spec defines.
// `in` is the input spatial size, `out` the computed output size.
Window TransposedWindow(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                        const std::vector<int64_t>& kernel);

// The window padded with leading unit dims to kMaxSpatialRank dims.
struct Window3 {
  std::array<int64_t, 3> in, out, kernel, strides, dilations, pad_begin, pad_end;
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};
Window3 To3D(const Window& w);

// The taps [lo, hi) of a run of `run` taps at columns iw0, iw0 + sw, ... that fall inside a row of
// `width`: the run's padding ends are [0, lo) and [hi, run).
struct TapRange {
  int64_t lo, hi;
};
inline TapRange TapsInside(int64_t iw0, int64_t sw, int64_t width, int64_t run) {
  const int64_t lo = std::clamp<int64_t>((-iw0 + sw - 1) / sw, 0, run);
  return {lo, std::clamp<int64_t>((width - iw0 + sw - 1) / sw, lo, run)};
}

// The im2col walk shared by the float and integer convolutions: for each input channel c and
// kernel tap, the output positions [p0, p1) go in runs that stay on one output row; each run calls
// fill(xc_row, iw_off, ow, run) with the input row the tap reads (nullptr when the tap's depth or
// height falls in the padding), the column offset of the tap, the first output column and the run
// length. fill writes `run` entries and advances its own column pointer.
template <typename X, typename Fill>
void Im2ColRuns(const X* x, int64_t channels, const Window3& w, int64_t p0, int64_t p1,
                Fill&& fill) {
  const auto& in = w.in;
  const auto& out = w.out;
  for (int64_t c = 0; c < channels; ++c) {
    const X* xc = x + c * w.in_size();
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
          int64_t ow = p0 % out[2], oh = (p0 / out[2]) % out[1], od = p0 / (out[2] * out[1]);
          const int64_t iw_off = kw * w.dilations[2] - w.pad_begin[2];
          for (int64_t p = p0; p < p1;) {
            const int64_t run = std::min(out[2] - ow, p1 - p);
            const int64_t id = od * w.strides[0] - w.pad_begin[0] + kd * w.dilations[0];
            const int64_t ih = oh * w.strides[1] - w.pad_begin[1] + kh * w.dilations[1];
            const bool inside = id >= 0 && id < in[0] && ih >= 0 && ih < in[1];
            fill(inside ? xc + (id * in[1] + ih) * in[2] : nullptr, iw_off, ow, run);
            p += run;
            ow = 0;
            if (++oh == out[1]) {
              oh = 0;
              ++od;
            }
          }
        }
  }
}

// The spatial dims of an [N, C, spatial...] shape; fails unless 1 <= spatial rank <= 3.
std::vector<int64_t> SpatialDims(const KernelContext& ctx, const std::vector<int64_t>& shape);

}  // namespace porttool::runtime::kernels
