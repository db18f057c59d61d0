// Resize / Upsample on hand-checked cases (the ONNX backend node tests cover the mode x
// coordinate-transformation matrix against the reference implementation), DepthToSpace in both
// modes round-tripping through SpaceToDepth, and the opset-18 rejections.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::NodeBuilder;
using testing_util::RunOp;

TEST(ResizeKernel, NearestUpsampleByScales) {
  Tensor x = FloatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = FloatTensor({4}, {1, 1, 2, 2});
  auto out = RunOp(NodeBuilder("Resize", 3)
                       .Str("coordinate_transformation_mode", "asymmetric")
                       .Str("nearest_mode", "floor")
                       .node(),
                   13, {&x, nullptr, &scales});
  testing_util::ExpectClose(out[0], {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4},
                            "nearest x2");
}

// The nearest fast paths (a row repeating the previous one is copied, an integer width factor
// replicates) against the index formula, for integer and fractional factors, both nearest
// rounding rules and 1 and 2 threads (a copied row must never be another thread's).
TEST(ResizeKernel, NearestUpsamplingMatchesTheIndexFormula) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t c = 5, h = 7, w = 9;
  std::vector<float> values(c * h * w);
  for (float& v : values) v = dist(rng);
  Tensor x = FloatTensor({1, c, h, w}, values);
  for (const float scale : {2.f, 3.f, 1.5f, 0.5f}) {
    for (const char* rounding : {"floor", "round_prefer_ceil"}) {
      const int64_t oh = static_cast<int64_t>(h * scale), ow = static_cast<int64_t>(w * scale);
      std::vector<float> expected;
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t xo = 0; xo < ow; ++xo) {
            auto src = [&](int64_t o, int64_t in) {
              const double v = o / static_cast<double>(scale);  // asymmetric
              const double r =
                  std::string(rounding) == "floor" ? std::floor(v) : std::floor(v + 0.5);
              return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
            };
            expected.push_back(values[(ch * h + src(y, h)) * w + src(xo, w)]);
          }
        }
      }
      Tensor scales = FloatTensor({4}, {1, 1, scale, scale});
      for (int threads : {1, 2}) {
        SetNumThreads(threads);
        auto out = RunOp(NodeBuilder("Resize", 3)
                             .Str("coordinate_transformation_mode", "asymmetric")
                             .Str("nearest_mode", rounding)
                             .node(),
                         13, {&x, nullptr, &scales});
        testing_util::ExpectClose(out[0], {1, c, oh, ow}, expected,
                                  fmt::format("x{} {} at {} threads", scale, rounding, threads));
      }
      SetNumThreads(0);
    }
  }
}

// [N, C, H, W] <-> [N, H, W, C].
Tensor ToNhwc(const Tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y(onnx::TensorProto::FLOAT, {n, h, w, c});
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t b = i / (c * h * w), ch = i / (h * w) % c, yy = i / w % h, xx = i % w;
    y.mutable_data<float>()[((b * h + yy) * w + xx) * c + ch] = x.data<float>()[i];
  }
  return y;
}

void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, a.data<float>() + i, 4);
    std::memcpy(&y, b.data<float>() + i, 4);
    ASSERT_EQ(x, y) << what << " element " << i << ": " << a.data<float>()[i] << " vs "
                    << b.data<float>()[i];
  }
}

// The two-axis paths (rows interpolated along W once and cached, then combined along H; NHWC
// pixels with their channels as the inner run, as tf2onnx leaves its Resizes) give the same
// bits whatever the layout and the thread count: an NHWC resize is the NCHW one transposed, for
// nearest, linear, cubic and tf_crop_and_resize with extrapolation, up, down and along one axis.
TEST(ResizeKernel, TwoAxisPathsAgreeAcrossLayoutsAndThreads) {
  std::mt19937 rng(49);
  Tensor x = testing_util::RandomFloats({2, 5, 7, 9}, rng);
  const Tensor x_nhwc = ToNhwc(x);
  Tensor roi = FloatTensor({8}, {0, 0, -0.2f, 0.1f, 1, 1, 1.1f, 0.8f});
  Tensor roi_nhwc = FloatTensor({8}, {0, -0.2f, 0.1f, 0, 1, 1.1f, 0.8f, 1});
  struct Case {
    const char* mode;
    const char* coord;
    int64_t oh, ow;
  };
  for (const Case& k :
       {Case{"linear", "half_pixel", 14, 18}, Case{"linear", "align_corners", 5, 20},
        Case{"linear", "half_pixel", 7, 13}, Case{"linear", "half_pixel", 12, 9},
        Case{"cubic", "align_corners", 12, 9}, Case{"linear", "asymmetric", 11, 9},
        Case{"cubic", "half_pixel", 12, 5}, Case{"nearest", "half_pixel", 14, 18},
        Case{"nearest", "asymmetric", 21, 9}, Case{"nearest", "half_pixel", 4, 4},
        Case{"linear", "tf_crop_and_resize", 10, 12},
        Case{"nearest", "tf_crop_and_resize", 10, 12}}) {
    const std::string what = fmt::format("{} {} to {}x{}", k.mode, k.coord, k.oh, k.ow);
    const bool crop = std::string(k.coord) == "tf_crop_and_resize";
    NodeBuilder node("Resize", 4);
    node.Str("mode", k.mode).Str("coordinate_transformation_mode", k.coord);
    node.Float("extrapolation_value", -7);
    Tensor sizes = testing_util::Int64Tensor({4}, {2, 5, k.oh, k.ow});
    Tensor sizes_nhwc = testing_util::Int64Tensor({4}, {2, k.oh, k.ow, 5});
    std::vector<Tensor> by_threads;
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      auto nchw = RunOp(node.node(), 13, {&x, crop ? &roi : nullptr, nullptr, &sizes});
      auto nhwc =
          RunOp(node.node(), 13, {&x_nhwc, crop ? &roi_nhwc : nullptr, nullptr, &sizes_nhwc});
      ExpectSameBits(nhwc[0], ToNhwc(nchw[0]), what + " NHWC vs NCHW");
      by_threads.push_back(std::move(nchw[0]));
    }
    SetNumThreads(0);
    ExpectSameBits(by_threads[0], by_threads[1], what + " 1 vs 2 threads");
    if (HasFatalFailure()) return;
  }
  // M-LSD's last upsampling, large enough for the rows to split over two threads.
  Tensor big = testing_util::RandomFloats({1, 64, 40, 40}, rng);
  const Tensor big_nhwc = ToNhwc(big);
  Tensor sizes = testing_util::Int64Tensor({4}, {1, 64, 80, 80});
  Tensor sizes_nhwc = testing_util::Int64Tensor({4}, {1, 80, 80, 64});
  for (const char* mode : {"linear", "nearest"}) {
    std::vector<Tensor> by_threads;
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      auto nchw = RunOp(NodeBuilder("Resize", 4).Str("mode", mode).node(), 13,
                        {&big, nullptr, nullptr, &sizes});
      auto nhwc = RunOp(NodeBuilder("Resize", 4).Str("mode", mode).node(), 13,
                        {&big_nhwc, nullptr, nullptr, &sizes_nhwc});
      ExpectSameBits(nhwc[0], ToNhwc(nchw[0]), std::string(mode) + " 40->80 NHWC vs NCHW");
      by_threads.push_back(std::move(nchw[0]));
    }
    SetNumThreads(0);
    ExpectSameBits(by_threads[0], by_threads[1], std::string(mode) + " 40->80 1 vs 2 threads");
  }
}

TEST(ResizeKernel, LinearHalfPixelBySizes) {
  // in [0, 1] -> 4 outputs, half_pixel: x = (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25,
  // clamped at the edges: 0, 0.25, 0.75, 1.
  Tensor x = FloatTensor({1, 2}, {0, 1});
  Tensor sizes = testing_util::Int64Tensor({2}, {1, 4});
  auto out = RunOp(NodeBuilder("Resize", 4).Str("mode", "linear").node(), 13,
                   {&x, nullptr, nullptr, &sizes});
  testing_util::ExpectClose(out[0], {1, 4}, {0, 0.25f, 0.75f, 1}, "linear");
}

TEST(ResizeKernel, TfCropAndResizeExtrapolates) {
  Tensor x = FloatTensor({1, 3}, {10, 20, 30});
  Tensor roi = FloatTensor({4}, {0, 0, 1, 1.5f});  // W crop [0, 1.5] of the input extent
  Tensor sizes = testing_util::Int64Tensor({2}, {1, 4});
  auto out = RunOp(NodeBuilder("Resize", 4)
                       .Str("mode", "linear")
                       .Str("coordinate_transformation_mode", "tf_crop_and_resize")
                       .Float("extrapolation_value", -1)
                       .node(),
                   13, {&x, &roi, nullptr, &sizes});
  // x = i * 1.5 * 2 / 3 = 0, 1, 2, 3 -> 10, 20, 30, outside
  testing_util::ExpectClose(out[0], {1, 4}, {10, 20, 30, -1}, "crop");
}

TEST(ResizeKernel, UpsampleAndRejections) {
  Tensor x = FloatTensor({1, 1, 1, 2}, {1, 2});
  auto up = RunOp(NodeBuilder("Upsample", 1).Floats("scales", {1, 1, 2, 2}).node(), 7, {&x});
  testing_util::ExpectClose(up[0], {1, 1, 2, 4}, {1, 1, 2, 2, 1, 1, 2, 2}, "upsample-7");
  Tensor scales = FloatTensor({4}, {1, 1, 2, 2});
  EXPECT_THROW(
      RunOp(NodeBuilder("Resize", 3).Int("antialias", 1).node(), 13, {&x, nullptr, &scales}),
      Error);
  EXPECT_THROW(
      RunOp(NodeBuilder("Resize", 3).Str("mode", "area").node(), 13, {&x, nullptr, &scales}),
      Error);
  Tensor sizes = testing_util::Int64Tensor({4}, {1, 1, 2, 4});
  EXPECT_THROW(RunOp(NodeBuilder("Resize", 4).node(), 13, {&x, nullptr, &scales, &sizes}), Error);
}

TEST(DepthToSpaceKernel, BothModesInvertedBySpaceToDepth) {
  std::mt19937 rng(51);
  Tensor x = testing_util::RandomFloats({2, 8, 3, 5}, rng);
  auto space = RunOp(NodeBuilder("DepthToSpace", 1).Int("blocksize", 2).node(), 13, {&x});
  ASSERT_EQ(space[0].shape(), (std::vector<int64_t>{2, 2, 6, 10}));
  auto back = RunOp(NodeBuilder("SpaceToDepth", 1).Int("blocksize", 2).node(), 13, {&space[0]});
  testing_util::ExpectClose(back[0], x.shape(),
                            std::vector<float>(x.data<float>(), x.data<float>() + x.size()),
                            "DCR round trip", 0);
  // CRD on a known case: channel c*4 + i*2 + j goes to (2h+i, 2w+j) of channel c.
  Tensor y = FloatTensor({1, 4, 1, 1}, {1, 2, 3, 4});
  auto crd =
      RunOp(NodeBuilder("DepthToSpace", 1).Int("blocksize", 2).Str("mode", "CRD").node(), 13, {&y});
  testing_util::ExpectClose(crd[0], {1, 1, 2, 2}, {1, 2, 3, 4}, "CRD");
  EXPECT_THROW(RunOp(NodeBuilder("DepthToSpace", 1).Int("blocksize", 3).node(), 13, {&x}), Error);
}

}  // namespace
}  // namespace porttool::runtime
