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
  EXPECT_FALSE(c.inference.unresolved.empty()) << "precondition: inference alone leaves r unknown";
  EXPECT_NE(std::find(c.by_execution.begin(), c.by_execution.end(), "r"), c.by_execution.end());
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

}  // namespace
}  // namespace porttool::runtime
