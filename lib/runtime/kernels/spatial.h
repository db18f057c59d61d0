// Sliding-window geometry shared by Conv, ConvTranspose and the pooling kernels: reads
// kernel_shape / strides / dilations / pads / auto_pad, validates them against the input, and
// computes output sizes, so every windowed op resolves padding the same way. Kernels work on a
// canonical 3-D form (1-D and 2-D ops get leading size-1 dims) so one loop nest serves all ranks.
// Private to lib/runtime/kernels.
#pragma once

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

// The spatial dims of an [N, C, spatial...] shape; fails unless 1 <= spatial rank <= 3.
std::vector<int64_t> SpatialDims(const KernelContext& ctx, const std::vector<int64_t>& shape);

}  // namespace porttool::runtime::kernels
