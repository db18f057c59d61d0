// PP-OCRv4 det and PP-OCR cls end to end through simplify and resize-to-upsample, compared with
// the original in the executor. Skips cleanly when ../shared/models is absent.
#include <gtest/gtest.h>

#include "lib/shape/input_shapes.h"
#include "lib/util/testing.h"
#include "passes/pass_test_util.h"
#include "passes/transform.h"

namespace porttool::passes {
namespace {

using testing_util::CountOp;
using testing_util::MaxOutputDiff;

io::Model LoadShared(const std::string& file) {
  auto path = porttool::testing::SharedModelsDir() / file;
  if (!std::filesystem::exists(path)) return {};
  return io::Load(path);
}

TEST(RealModels, SimplifyPpOcrV4DetReachesOrtBasicLevelWithSameOutputs) {
  io::Model det = LoadShared("ch_PP-OCRv4_det_infer.onnx");
  if (!det.proto.has_graph())
    PORTTOOL_SKIP_MISSING("../shared/models/ch_PP-OCRv4_det_infer.onnx absent");
  io::Model original = det;
  shape::ApplyInputShapes(original, {{"x", {1, 3, 640, 640}}});
  PassContext context;
  auto report = Simplify(det, "x:1x3x640x640", context);
  EXPECT_FALSE(report.failed);
  EXPECT_EQ(report.nodes_before, 672);
  EXPECT_LE(report.nodes_after, 328) << "ONNX Runtime's basic level reaches 328";
  EXPECT_EQ(CountOp(det, "Constant"), 0);
  EXPECT_EQ(CountOp(det, "BatchNormalization"), 0);
  EXPECT_EQ(det.proto.graph().output(0).name(), original.proto.graph().output(0).name());
  EXPECT_LE(MaxOutputDiff(original, det), 1e-5);
}

TEST(RealModels, PpOcrV4DetAllSixResizeBecomeUpsampleWithIdenticalOutputs) {
  io::Model det = LoadShared("ch_PP-OCRv4_det_infer.onnx");
  if (!det.proto.has_graph())
    PORTTOOL_SKIP_MISSING("../shared/models/ch_PP-OCRv4_det_infer.onnx absent");
  shape::ApplyInputShapes(det, {{"x", {1, 3, 160, 160}}});
  io::Model original = det;
  PassContext context;
  auto report = Transform(det, ParsePipeline("resize-to-upsample"), false, context);
  EXPECT_EQ(report.steps[0].result.changes, 6);
  EXPECT_EQ(CountOp(det, "Resize"), 0);
  EXPECT_EQ(CountOp(det, "Upsample"), 6);
  EXPECT_EQ(MaxOutputDiff(original, det), 0.0);
}

// det (opset 11) spells hard-swish as x * relu6(x + 3) / 6 in 24 places; after convert-opset 14
// each becomes one HardSwish node.
TEST(RealModels, PpOcrV4DetRelu6HardSwishFusesAfterOpset14) {
  io::Model det = LoadShared("ch_PP-OCRv4_det_infer.onnx");
  if (!det.proto.has_graph())
    PORTTOOL_SKIP_MISSING("../shared/models/ch_PP-OCRv4_det_infer.onnx absent");
  shape::ApplyInputShapes(det, {{"x", {1, 3, 160, 160}}});
  io::Model original = det;
  PassContext context;
  auto report =
      Transform(det, ParsePipeline("convert-opset{to=14},fuse-hardswish"), false, context);
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[1].result.changes, 24);
  EXPECT_EQ(CountOp(det, "HardSwish"), 24);
  EXPECT_EQ(CountOp(det, "Clip"), 0);
  EXPECT_LE(MaxOutputDiff(original, det), 1e-5);
}

TEST(RealModels, SimplifyPpOcrClsKeepsOutputs) {
  io::Model cls = LoadShared("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  if (!cls.proto.has_graph())
    PORTTOOL_SKIP_MISSING("../shared/models/ch_ppocr_mobile_v2.0_cls_infer.onnx absent");
  io::Model original = cls;
  shape::ApplyInputShapes(original, {{"x", {1, 3, 48, 192}}});
  PassContext context;
  auto report = Simplify(cls, "x:1x3x48x192", context);
  EXPECT_FALSE(report.failed);
  EXPECT_LT(report.nodes_after, report.nodes_before);
  EXPECT_LE(MaxOutputDiff(original, cls), 1e-5);
}

}  // namespace
}  // namespace porttool::passes
