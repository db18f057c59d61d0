// Detection kernels: NonMaxSuppression (greedy per batch and class, ONNX Runtime's tie order) and
// MaxUnpool (scatter of pooled values back to the positions MaxPool's indices name).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

struct Box {
  float y1, x1, y2, x2;
};

Box ReadBox(const float* p, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    return {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
  }
  // Corners may come in either order.
  return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}

float Iou(const Box& a, const Box& b) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float w = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float inter = h * w;
  return inter / (area_a + area_b - inter);
}

float OptionalFloat(const KernelContext& ctx, int i, float def) {
  return ctx.has_input(i) && ctx.input(i).size() > 0
             ? static_cast<float>(ReadScalar(ctx, ctx.input(i)))
             : def;
}

void NonMaxSuppressionKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"center_point_box"});
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.dtype() != TP::FLOAT || scores.dtype() != TP::FLOAT || boxes.rank() != 3 ||
      scores.rank() != 3 || boxes.dim(2) != 4 || boxes.dim(0) != scores.dim(0) ||
      boxes.dim(1) != scores.dim(2)) {
    ctx.Fail(fmt::format("boxes {} and scores {} must be float [B, N, 4] and [B, C, N]",
                         boxes.DebugString(), scores.DebugString()));
  }
  const int64_t max_boxes = ctx.has_input(2) && ctx.input(2).size() > 0
                                ? ReadIntScalar(ctx, ctx.input(2), "max_output_boxes_per_class")
                                : 0;
  const float iou_threshold = OptionalFloat(ctx, 3, 0.f);
  const bool has_score_threshold = ctx.has_input(4) && ctx.input(4).size() > 0;
  const float score_threshold = OptionalFloat(ctx, 4, 0.f);
  const bool center = ctx.GetInt("center_point_box", 0) != 0;
  const int64_t batches = scores.dim(0), classes = scores.dim(1), n = scores.dim(2);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<Box> bx(n);
    for (int64_t i = 0; i < n; ++i) bx[i] = ReadBox(boxes.data<float>() + (b * n + i) * 4, center);
    for (int64_t c = 0; c < classes && max_boxes > 0; ++c) {
      const float* s = scores.data<float>() + (b * classes + c) * n;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i) {
        if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t z) { return s[a] > s[z]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_boxes) break;
        bool suppressed = std::any_of(kept.begin(), kept.end(),
                                      [&](int64_t k) { return Iou(bx[k], bx[i]) > iou_threshold; });
        if (!suppressed) kept.push_back(i);
      }
      for (int64_t k : kept) selected.insert(selected.end(), {b, c, k});
    }
  }
  Tensor out(TP::INT64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.mutable_data<int64_t>());
  ctx.output(0) = std::move(out);
}

void MaxUnpoolKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"kernel_shape", "pads", "strides"});
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int spatial = x.rank() - 2;
  const auto kernel = ctx.GetInts("kernel_shape");
  if (spatial < 1 || static_cast<int>(kernel.size()) != spatial) {
    ctx.Fail(fmt::format("kernel_shape needs {} values for input {}", spatial, x.DebugString()));
  }
  if (indices.shape() != x.shape()) ctx.Fail("indices must have the shape of X");
  const auto strides = ctx.GetInts("strides", std::vector<int64_t>(spatial, 1));
  const auto pads = ctx.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if (static_cast<int>(strides.size()) != spatial || static_cast<int>(pads.size()) != 2 * spatial) {
    ctx.Fail("strides and pads must match the spatial rank");
  }
  std::vector<int64_t> shape = x.shape();
  for (int d = 0; d < spatial; ++d) {
    shape[2 + d] = (x.dim(2 + d) - 1) * strides[d] + kernel[d] - pads[d] - pads[spatial + d];
  }
  // Indices address the default-shaped output (as MaxPool produced them); a larger output_shape
  // keeps each value at the same coordinates.
  const std::vector<int64_t> default_shape = shape;
  if (ctx.has_input(2)) {
    shape = ReadInts(ctx, ctx.input(2));
    if (static_cast<int>(shape.size()) != x.rank()) ctx.Fail("output_shape must have X's rank");
    for (int d = 0; d < x.rank(); ++d) {
      if (shape[d] < default_shape[d]) ctx.Fail("output_shape is smaller than the default");
    }
  }
  Tensor out(x.dtype(), shape);
  const auto idx = ReadInts(ctx, indices);
  const auto from = RowMajorStrides(default_shape), to = RowMajorStrides(shape);
  int64_t default_size = 1;
  for (int64_t d : default_shape) default_size *= d;
  DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < x.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= default_size)
        ctx.Fail(fmt::format("index {} is out of range", idx[i]));
      int64_t at = 0;
      for (int d = 0; d < x.rank(); ++d) at += idx[i] / from[d] % default_shape[d] * to[d];
      out.mutable_data<T>()[at] = x.data<T>()[i];
    }
  });
  ctx.output(0) = std::move(out);
}

}  // namespace

void RegisterDetectionKernels(KernelRegistry& r) {
  r.Register("", "NonMaxSuppression", 10, kLatest, NonMaxSuppressionKernel);
  r.Register("", "MaxUnpool", 9, kLatest, MaxUnpoolKernel);
}

}  // namespace porttool::runtime
