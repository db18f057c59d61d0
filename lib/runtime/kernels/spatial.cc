#include "lib/runtime/kernels/spatial.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace porttool::runtime::kernels {
namespace {

std::vector<int64_t> IntsOfRank(const KernelContext& ctx, const char* name, int rank, int64_t def,
                                int64_t min_value) {
  std::vector<int64_t> v = ctx.GetInts(name, std::vector<int64_t>(rank, def));
  if (v.empty()) v.assign(rank, def);
  if (static_cast<int>(v.size()) != rank) {
    ctx.Fail(fmt::format("attribute '{}' has {} values but the input has {} spatial dims", name,
                         v.size(), rank));
  }
  for (int64_t x : v) {
    if (x < min_value) ctx.Fail(fmt::format("attribute '{}' has invalid value {}", name, x));
  }
  return v;
}

// Reads strides, dilations, explicit pads and kernel_shape (which must match `kernel`).
Window ReadWindow(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                  const std::vector<int64_t>& kernel) {
  Window w;
  w.rank = static_cast<int>(in_spatial.size());
  w.in = in_spatial;
  w.kernel = kernel;
  if (kernel.size() != in_spatial.size()) {
    ctx.Fail(fmt::format("the kernel has {} dims but the input has {} spatial dims", kernel.size(),
                         in_spatial.size()));
  }
  if (ctx.HasAttribute("kernel_shape") && ctx.GetInts("kernel_shape") != kernel) {
    ctx.Fail(fmt::format("kernel_shape [{}] does not match the weights' spatial dims [{}]",
                         fmt::join(ctx.GetInts("kernel_shape"), ","), fmt::join(kernel, ",")));
  }
  for (int64_t k : kernel) {
    if (k <= 0) ctx.Fail(fmt::format("kernel size {} is not positive", k));
  }
  w.strides = IntsOfRank(ctx, "strides", w.rank, 1, 1);
  w.dilations = IntsOfRank(ctx, "dilations", w.rank, 1, 1);
  std::vector<int64_t> pads = IntsOfRank(ctx, "pads", 2 * w.rank, 0, 0);
  w.pad_begin.assign(pads.begin(), pads.begin() + w.rank);
  w.pad_end.assign(pads.begin() + w.rank, pads.end());
  return w;
}

int64_t Extent(const Window& w, int i) { return (w.kernel[i] - 1) * w.dilations[i] + 1; }

std::string AutoPad(const KernelContext& ctx) {
  std::string mode = ctx.GetString("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
    ctx.Fail(
        fmt::format("auto_pad '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", mode));
  }
  if (mode != "NOTSET" && ctx.HasAttribute("pads")) {
    ctx.Fail("auto_pad and pads cannot both be given");
  }
  return mode;
}

// Splits a total padding between begin and end: SAME_UPPER puts the extra cell at the end.
void SplitPad(int64_t total, bool extra_at_end, int64_t& begin, int64_t& end) {
  begin = extra_at_end ? total / 2 : total - total / 2;
  end = total - begin;
}

void CheckOutput(const KernelContext& ctx, const Window& w) {
  for (int i = 0; i < w.rank; ++i) {
    if (w.out[i] < 0) {
      ctx.Fail(fmt::format(
          "spatial dim {} of size {} (pads {}+{}) is too small for a window of extent {} with "
          "stride {}: the output would be empty",
          i, w.in[i], w.pad_begin[i], w.pad_end[i], Extent(w, i), w.strides[i]));
    }
  }
}

}  // namespace

Window ForwardWindow(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                     const std::vector<int64_t>& kernel, bool ceil_mode) {
  Window w = ReadWindow(ctx, in_spatial, kernel);
  const std::string mode = AutoPad(ctx);
  w.out.resize(w.rank);
  for (int i = 0; i < w.rank; ++i) {
    const int64_t s = w.strides[i], ext = Extent(w, i), in = w.in[i];
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      w.out[i] = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * s + ext - in);
      SplitPad(total, mode == "SAME_UPPER", w.pad_begin[i], w.pad_end[i]);
      continue;
    }
    if (mode == "VALID") w.pad_begin[i] = w.pad_end[i] = 0;
    const int64_t span = in + w.pad_begin[i] + w.pad_end[i] - ext;
    if (span < 0) {
      // ONNX's floor(span / s) + 1 is 0 while the window overhangs by at most a stride: an empty
      // output for an empty input (a 0-high map padded 1+1 under a 3-tap kernel). A non-empty
      // input too small for the window stays refused: a model fed the wrong size, not a batch.
      w.out[i] = in == 0 && span >= -s ? 0 : -1;
      continue;
    }
    w.out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // A last window that would start inside the end padding covers no input: drop it.
    if (ceil_mode && (w.out[i] - 1) * s >= in + w.pad_begin[i]) --w.out[i];
  }
  CheckOutput(ctx, w);
  return w;
}

Window TransposedWindow(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                        const std::vector<int64_t>& kernel) {
  Window w = ReadWindow(ctx, in_spatial, kernel);
  const std::string mode = AutoPad(ctx);
  std::vector<int64_t> out_pad = IntsOfRank(ctx, "output_padding", w.rank, 0, 0);
  std::vector<int64_t> out_shape = ctx.GetInts("output_shape");
  // output_shape may list only the spatial dims or the whole [N, C, spatial...] shape.
  if (out_shape.size() == static_cast<size_t>(w.rank) + 2) {
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  }
  if (!out_shape.empty() && out_shape.size() != static_cast<size_t>(w.rank)) {
    ctx.Fail(fmt::format("output_shape has {} values but the input has {} spatial dims",
                         out_shape.size(), w.rank));
  }
  w.out.resize(w.rank);
  for (int i = 0; i < w.rank; ++i) {
    const int64_t s = w.strides[i];
    if (out_pad[i] >= std::max(s, w.dilations[i])) {
      ctx.Fail(
          fmt::format("output_padding {} must be smaller than the stride or dilation", out_pad[i]));
    }
    const int64_t full = s * (w.in[i] - 1) + out_pad[i] + Extent(w, i);
    if (!out_shape.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      w.out[i] = out_shape.empty() ? w.in[i] * s : out_shape[i];
      const int64_t total = full - w.out[i];
      if (total >= 0) {
        SplitPad(total, mode == "SAME_UPPER", w.pad_begin[i], w.pad_end[i]);
      } else {
        // A larger output_shape than the input produces: the extra cells at the end receive no
        // input (only the bias), as the reference implementation's negative end pad yields.
        w.pad_begin[i] = 0;
        w.pad_end[i] = total;
      }
      continue;
    }
    if (mode == "VALID") w.pad_begin[i] = w.pad_end[i] = 0;
    w.out[i] = full - w.pad_begin[i] - w.pad_end[i];
  }
  CheckOutput(ctx, w);
  return w;
}

Window3 To3D(const Window& w) {
  Window3 r;
  const int shift = kMaxSpatialRank - w.rank;
  for (int i = 0; i < kMaxSpatialRank; ++i) {
    const bool real = i >= shift;
    const int j = i - shift;
    r.in[i] = real ? w.in[j] : 1;
    r.out[i] = real ? w.out[j] : 1;
    r.kernel[i] = real ? w.kernel[j] : 1;
    r.strides[i] = real ? w.strides[j] : 1;
    r.dilations[i] = real ? w.dilations[j] : 1;
    r.pad_begin[i] = real ? w.pad_begin[j] : 0;
    r.pad_end[i] = real ? w.pad_end[j] : 0;
  }
  return r;
}

std::vector<int64_t> SpatialDims(const KernelContext& ctx, const std::vector<int64_t>& shape) {
  const int spatial = static_cast<int>(shape.size()) - 2;
  if (spatial < 1 || spatial > kMaxSpatialRank) {
    ctx.Fail(
        fmt::format("input has shape [{}]: only 1-D, 2-D and 3-D spatial inputs "
                    "([N, C, D1..D3]) are supported",
                    fmt::join(shape, "x")));
  }
  return {shape.begin() + 2, shape.end()};
}

}  // namespace porttool::runtime::kernels
