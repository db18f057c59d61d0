// GridSample on hand-computed cases the backend node tests leave out (they cover each mode and
// padding once with align_corners=0): reflection with align_corners=1, including a coordinate
// reflected twice, bicubic landing on pixel centres, and the plan-time rejections of attribute
// values opset 16 does not define.
#include <gtest/gtest.h>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::NodeBuilder;
using testing_util::RunOp;

TEST(GridSampleKernel, ReflectionWithAlignCorners) {
  // X is 2x3: [[1, 2, 3], [4, 5, 6]]. align_corners=1 maps x in [-1, 1] to [0, 2] and y to [0, 1];
  // reflection folds coordinates back at 0 and at 2 (x) or 1 (y).
  Tensor x = FloatTensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor grid = FloatTensor({1, 1, 4, 2}, {
                                              1.5f, -1.f,  // x 2.5 -> 1.5, y 0: (2 + 3) / 2
                                              -1.5f, 1.f,  // x -0.5 -> 0.5, y 1: (4 + 5) / 2
                                              0.f, 2.f,    // x 1, y 1.5 -> 0.5: (2 + 5) / 2
                                              3.5f, 0.f,   // x 4.5 -> 0.5 (reflected twice), y 0.5
                                          });
  auto out = RunOp(
      NodeBuilder("GridSample", 2).Int("align_corners", 1).Str("padding_mode", "reflection").node(),
      16, {&x, &grid});
  testing_util::ExpectClose(out[0], {1, 1, 1, 4}, {2.5f, 4.5f, 3.5f, 3.f}, "reflection");
}

TEST(GridSampleKernel, BorderNearestAndBicubicOnPixelCentres) {
  Tensor x = FloatTensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // align_corners=1: (1, 1) is pixel (row 1, col 2); (-3, 0) is x = -2 clamped to column 0.
  Tensor grid = FloatTensor({1, 1, 2, 2}, {1.f, 1.f, -3.f, -1.f});
  auto border = RunOp(NodeBuilder("GridSample", 2)
                          .Int("align_corners", 1)
                          .Str("padding_mode", "border")
                          .Str("mode", "nearest")
                          .node(),
                      16, {&x, &grid});
  testing_util::ExpectClose(border[0], {1, 1, 1, 2}, {6, 1}, "border nearest");
  // Keys' cubic weights are (0, 1, 0, 0) at a pixel centre: the pixel itself.
  Tensor centre = FloatTensor({1, 1, 2, 2}, {1.f, 1.f, 0.f, -1.f});
  auto cubic =
      RunOp(NodeBuilder("GridSample", 2).Int("align_corners", 1).Str("mode", "bicubic").node(), 16,
            {&x, &centre});
  testing_util::ExpectClose(cubic[0], {1, 1, 1, 2}, {6, 2}, "bicubic");
}

TEST(GridSampleKernel, ZerosPaddingOutsideIsZero) {
  Tensor x = FloatTensor({1, 2, 1, 2}, {1, 2, 10, 20});
  // align_corners=0: x = ((g + 1) * 2 - 1) / 2; g = 3 -> 3.5, two pixels outside.
  Tensor grid = FloatTensor({1, 1, 2, 2}, {3.f, 0.f, -0.5f, 0.f});
  auto out = RunOp(NodeBuilder("GridSample", 2).node(), 16, {&x, &grid});
  // g = -0.5 -> x = 0: pixel 0 of each channel.
  testing_util::ExpectClose(out[0], {1, 2, 1, 2}, {0, 1, 0, 10}, "zeros");
}

TEST(GridSampleKernel, RejectsUndefinedAttributeValuesAtPlanTime) {
  const PrepareFn* prepare = KernelRegistry::Default().FindPrepare("", "GridSample", 16);
  ASSERT_NE(prepare, nullptr);
  auto message = [&](const onnx::NodeProto& node) -> std::string {
    KernelContext ctx(node, 16, {nullptr, nullptr});
    try {
      (*prepare)(ctx);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string linear = message(NodeBuilder("GridSample", 2).Str("mode", "linear").node());
  EXPECT_NE(linear.find("attribute 'mode' value 'linear'"), std::string::npos) << linear;
  EXPECT_NE(linear.find("GridSample_under_test"), std::string::npos) << linear;
  const std::string pad = message(NodeBuilder("GridSample", 2).Str("padding_mode", "wrap").node());
  EXPECT_NE(pad.find("attribute 'padding_mode' value 'wrap'"), std::string::npos) << pad;
  const std::string align = message(NodeBuilder("GridSample", 2).Int("align_corners", 2).node());
  EXPECT_NE(align.find("attribute 'align_corners' value 2"), std::string::npos) << align;
  EXPECT_EQ(message(NodeBuilder("GridSample", 2).Str("mode", "bicubic").node()), "");
  // 5-D (volumetric) input is opset 20.
  Tensor x = FloatTensor({1, 1, 1, 1, 1}, {1});
  Tensor grid = FloatTensor({1, 1, 1, 1, 3}, {0, 0, 0});
  EXPECT_THROW(RunOp(NodeBuilder("GridSample", 2).node(), 16, {&x, &grid}), Error);
}

}  // namespace
}  // namespace porttool::runtime
