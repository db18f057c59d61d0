// RoiAlign on hand-computed cases the two backend node tests leave out: the adaptive sample count
// (sampling_ratio = 0), max mode as the ONNX reference computes it, opset 10's fixed
// output_half_pixel behaviour, and the plan-time rejection of undefined attribute values.
#include <gtest/gtest.h>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::Int64Tensor;
using testing_util::NodeBuilder;
using testing_util::RunOp;

TEST(RoiAlignKernel, AdaptiveSamplingRatio) {
  // Every row of X is x^2 for x = 0..7, so a sample at x blends the two neighbouring squares and
  // the bin average tells how many samples the bin took.
  std::vector<float> values;
  for (int row = 0; row < 2; ++row) {
    for (int x = 0; x < 8; ++x) values.push_back(static_cast<float>(x * x));
  }
  Tensor x = FloatTensor({1, 1, 2, 8}, values);
  // half_pixel: boxes shift by -0.5, so [0.5, 6.5] covers x in [0, 6] and [0.5, 2.5] x in [0, 2].
  Tensor rois = FloatTensor({2, 4}, {0.5f, 0.5f, 2.5f, 1.5f, 0.5f, 0.5f, 6.5f, 1.5f});
  Tensor batch = Int64Tensor({2}, {0, 0});
  auto out = RunOp(NodeBuilder("RoiAlign", 3)
                       .Int("output_height", 1)
                       .Int("output_width", 2)
                       .Int("sampling_ratio", 0)
                       .node(),
                   16, {&x, &rois, &batch});
  // Box 1: width 2 over 2 bins -> ceil(1) = 1 sample per bin, at x = 0.5 and 1.5.
  // Box 2: width 6 over 2 bins -> ceil(3) = 3 samples per bin: x = 0.5, 1.5, 2.5 blend to
  // 0.5, 2.5, 6.5 (mean 9.5 / 3) and x = 3.5, 4.5, 5.5 to 12.5, 20.5, 30.5 (mean 63.5 / 3).
  // Height 1 over 1 bin -> 1 sample, at y = 0.5 between two equal rows.
  testing_util::ExpectClose(out[0], {2, 1, 1, 2}, {0.5f, 2.5f, 9.5f / 3, 63.5f / 3}, "adaptive");
  // A fixed ratio of 1 takes the bin centres instead: x = 1.5 and 4.5 for box 2.
  auto fixed = RunOp(NodeBuilder("RoiAlign", 3)
                         .Int("output_height", 1)
                         .Int("output_width", 2)
                         .Int("sampling_ratio", 1)
                         .node(),
                     16, {&x, &rois, &batch});
  testing_util::ExpectClose(fixed[0], {2, 1, 1, 2}, {0.5f, 2.5f, 2.5f, 20.5f}, "ratio 1");
}

TEST(RoiAlignKernel, MaxModeAndOpset10) {
  Tensor x = FloatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor rois = FloatTensor({1, 4}, {0, 0, 1, 1});
  Tensor batch = Int64Tensor({1}, {0});
  // output_half_pixel, one sample at (0.5, 0.5): each corner weighs 0.25.
  auto avg = RunOp(NodeBuilder("RoiAlign", 3)
                       .Str("coordinate_transformation_mode", "output_half_pixel")
                       .Int("sampling_ratio", 1)
                       .node(),
                   16, {&x, &rois, &batch});
  testing_util::ExpectClose(avg[0], {1, 1, 1, 1}, {2.5f}, "avg");
  // Max mode, as the ONNX reference (and so the node tests) computes it: the largest weighted
  // corner term 0.25 * 4, not the interpolated value 2.5.
  auto max = RunOp(NodeBuilder("RoiAlign", 3)
                       .Str("coordinate_transformation_mode", "output_half_pixel")
                       .Str("mode", "max")
                       .Int("sampling_ratio", 1)
                       .node(),
                   16, {&x, &rois, &batch});
  testing_util::ExpectClose(max[0], {1, 1, 1, 1}, {1.f}, "max");
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  auto v10 =
      RunOp(NodeBuilder("RoiAlign", 3).Int("sampling_ratio", 1).node(), 10, {&x, &rois, &batch});
  testing_util::ExpectClose(v10[0], {1, 1, 1, 1}, {2.5f}, "opset 10");
  // Opset 16's default is half_pixel: the sample moves to (0, 0).
  auto v16 =
      RunOp(NodeBuilder("RoiAlign", 3).Int("sampling_ratio", 1).node(), 16, {&x, &rois, &batch});
  testing_util::ExpectClose(v16[0], {1, 1, 1, 1}, {1.f}, "opset 16 default");
  Tensor bad_batch = Int64Tensor({1}, {1});
  EXPECT_THROW(RunOp(NodeBuilder("RoiAlign", 3).node(), 16, {&x, &rois, &bad_batch}), Error);
}

TEST(RoiAlignKernel, RejectsUndefinedAttributeValuesAtPlanTime) {
  auto message = [](const onnx::NodeProto& node, int opset) -> std::string {
    const PrepareFn* prepare = KernelRegistry::Default().FindPrepare("", "RoiAlign", opset);
    if (prepare == nullptr) return "no prepare step";
    KernelContext ctx(node, opset, {nullptr, nullptr, nullptr});
    try {
      (*prepare)(ctx);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string mode = message(NodeBuilder("RoiAlign", 3).Str("mode", "sum").node(), 16);
  EXPECT_NE(mode.find("attribute 'mode' value 'sum'"), std::string::npos) << mode;
  EXPECT_NE(mode.find("RoiAlign_under_test"), std::string::npos) << mode;
  const std::string ctm = message(
      NodeBuilder("RoiAlign", 3).Str("coordinate_transformation_mode", "asymmetric").node(), 16);
  EXPECT_NE(ctm.find("attribute 'coordinate_transformation_mode' value 'asymmetric'"),
            std::string::npos)
      << ctm;
  const std::string height = message(NodeBuilder("RoiAlign", 3).Int("output_height", 0).node(), 16);
  EXPECT_NE(height.find("attribute 'output_height' value 0"), std::string::npos) << height;
  const std::string ratio =
      message(NodeBuilder("RoiAlign", 3).Int("sampling_ratio", -1).node(), 16);
  EXPECT_NE(ratio.find("attribute 'sampling_ratio' value -1"), std::string::npos) << ratio;
  // Opset 10 does not have the attribute at all.
  const std::string v10 = message(
      NodeBuilder("RoiAlign", 3).Str("coordinate_transformation_mode", "half_pixel").node(), 10);
  EXPECT_NE(v10.find("attribute 'coordinate_transformation_mode'"), std::string::npos) << v10;
  EXPECT_EQ(message(NodeBuilder("RoiAlign", 3).Str("mode", "max").node(), 10), "");
}

}  // namespace
}  // namespace porttool::runtime
