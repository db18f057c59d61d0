// The one shape-completion stage: pins, static inference, one executor run for what inference
// misses, and a report naming the node that blocks whatever is still unknown.
#include "lib/runtime/shape_completion.h"

#include <gtest/gtest.h>

#include "lib/ir/dtype.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

// A Reshape target computed through Cast (ONNX 1.12's data propagation stops there), behind a
// dynamic batch dim that only the pin makes static.
constexpr const char* kCastShapeBatchModel = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3] x) => (float[?] y) {
    s = Shape(x)
    c = Cast<to = 6>(s)
    d = Cast<to = 7>(c)
    t = Transpose(x)
    r = Reshape(t, d)
    y = Relu(r)
  })";

TEST(ShapeCompletion, PinsInfersAndCompletesByOneExecution) {
  io::Model model = io::ParseText(kCastShapeBatchModel);
  ShapeCompletion c = CompleteShapes(model, {{"x", {4, 3}}});
  EXPECT_TRUE(c.complete()) << c.Summary();
  // Inference alone left r unknown; the executor measured it, and the report says so.
  EXPECT_NE(std::find(c.by_execution.begin(), c.by_execution.end(), "r"), c.by_execution.end());
  EXPECT_TRUE(c.inference.unresolved.empty());
  EXPECT_EQ(c.inference.tensors_static, c.inference.tensors_total);
  EXPECT_EQ(testing::ShapeOf(model, "r"), "4x3");
  EXPECT_EQ(testing::ShapeOf(model, "y"), "4x3");
}

TEST(ShapeCompletion, DynamicInputsAreReportedNotExecuted) {
  io::Model model = io::ParseText(kCastShapeBatchModel);
  ShapeCompletion c = CompleteShapes(model, {});
  EXPECT_FALSE(c.complete());
  EXPECT_TRUE(c.by_execution.empty());
  ASSERT_EQ(c.dynamic_inputs.size(), 1u);
  EXPECT_NE(c.Summary().find("x[0]=N"), std::string::npos) << c.Summary();
  EXPECT_THROW(CompleteShapes(model, {{"nope", {1}}}), Error);
}

TEST(ShapeCompletion, WhatNeitherCanSeeNamesTheBlockingNode) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13, "acme" : 1]>
    g (float[2,3] x) => (float[?] y) {
      a = Relu(x)
      b = acme.Mystery(a)
      y = Relu(b)
    })");
  model.proto.mutable_graph()->mutable_node(1)->set_name("mystery_0");
  ShapeCompletion c = CompleteShapes(model, {});
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(c.unresolved.size(), 2u);
  EXPECT_FALSE(c.execution_error.empty()) << "the executor has no kernel for acme.Mystery";
  std::string summary = c.Summary();
  EXPECT_NE(summary.find("node 'mystery_0' (Mystery) blocks 2 of them"), std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("--input-shape"), std::string::npos) << summary;
}

// Issue 49: tf2onnx declares what it could not infer with placeholder dims ("unk__363"). They
// used to count as symbolic, so nothing completed them and `port` failed at emit on
// [1,unk__363,unk__364,1]; they are unknown now, and one execution makes them static.
TEST(ShapeCompletion, PlaceholderDimsAreCompletedByExecution) {
  io::Model model = testing::PlaceholderDimsModel("N,3");
  ShapeCompletion c = CompleteShapes(model, {{"x", {4, 3}}});
  EXPECT_TRUE(c.complete()) << c.Summary();
  EXPECT_EQ(testing::ShapeOf(model, "r"), "4x3");
  EXPECT_EQ(testing::ShapeOf(model, "y"), "4x3");
}

// PyTorch 1.2 (UltraFace) lists every initializer as a graph input: the Reshape target is an
// initializer all the same, and the executor's measuring run uses its value, not a zero input.
TEST(ShapeCompletion, InitializersListedAsInputsAreInitializers) {
  io::Model model = io::ParseText(R"(<ir_version: 4, opset_import: ["" : 9]>
    g (float[2,3] x, int64[2] target) => (float[?,?] y) <int64[2] target = {3, 2}> {
      s = Shape(x)
      c = Cast<to = 6>(s)
      d = Cast<to = 7>(c)
      r = Reshape(x, d)
      y = Reshape(r, target)
    })");
  ASSERT_EQ(model.proto.graph().input_size(), 2);
  ShapeCompletion c = CompleteShapes(model, {});
  EXPECT_TRUE(c.complete()) << c.Summary();
  EXPECT_TRUE(c.dynamic_inputs.empty());
  EXPECT_EQ(testing::ShapeOf(model, "y"), "3x2");
}

}  // namespace
}  // namespace porttool::runtime
