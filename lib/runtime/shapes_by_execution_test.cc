#include "lib/runtime/shapes_by_execution.h"

#include <gtest/gtest.h>

#include "lib/ir/dtype.h"
#include "lib/shape/infer.h"
#include "lib/shape/test_models.h"

namespace porttool::runtime {
namespace {

// The PP-OCR cls pattern: a reshape target computed through Cast, which ONNX 1.12's data
// propagation does not follow.
constexpr const char* kCastShapeModel = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[2,3] x) => (float[?] y) {
    s = Shape(x)
    c = Cast<to = 6>(s)
    d = Cast<to = 7>(c)
    t = Transpose(x)
    y = Reshape(t, d)
  })";

TEST(CompleteShapesByExecution, FillsWhatStaticInferenceCannotSee) {
  io::Model model = io::ParseText(kCastShapeModel);
  shape::InferReport report = shape::InferShapes(model);
  ASSERT_FALSE(report.unresolved.empty()) << "precondition: inference must leave y unknown";
  auto filled = CompleteShapesByExecution(model);
  EXPECT_NE(std::find(filled.begin(), filled.end(), "y"), filled.end());
  EXPECT_EQ(testing::ShapeOf(model, "y"), "2x3");
  EXPECT_EQ(testing::ShapeOf(model, "t"), "3x2");
}

TEST(CompleteShapesByExecution, LeavesValueDependentModelsAlone) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (int64[?,?] y) { y = NonZero(x) })");
  EXPECT_TRUE(CompleteShapesByExecution(model).empty());
  EXPECT_EQ(testing::ShapeOf(model, "y"), "[?, ?]");
}

}  // namespace
}  // namespace porttool::runtime
