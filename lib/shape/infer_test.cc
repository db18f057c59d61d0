#include "lib/shape/infer.h"

#include <gtest/gtest.h>

#include <regex>

#include "lib/io/external_data.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::shape {
namespace {

TEST(InferShapes, DemoModelFlowsThroughCustomGelu) {
  io::Model m = io::Load(porttool::testing::TestData("demo_detector.onnx"));
  InferOptions o;
  o.input_shapes = InputShapes{{"images", {1, 3, 64, 64}}};
  InferReport r = InferShapes(m, o);
  EXPECT_TRUE(r.unresolved.empty())
      << r.unresolved.front().tensor << ": " << r.unresolved.front().reason;
  EXPECT_EQ(r.tensors_static, r.tensors_total);
  EXPECT_EQ(testing::ShapeOf(m, "gelu.out").find('?'), std::string::npos)
      << testing::ShapeOf(m, "gelu.out");
  EXPECT_EQ(testing::ShapeOf(m, "score"), "1x1x32x32");
  EXPECT_GE(r.iterations, 1);
}

TEST(InferShapes, DimsTheInputsNameAreSymbolic) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
    g (float[N,3] x) => (float[N,3] y) {
      a = Relu(x)
      y = Sigmoid(a)
    })");
  InferReport r = InferShapes(m);
  EXPECT_EQ(r.tensors_symbolic, 2);
  EXPECT_TRUE(r.unresolved.empty());
}

// Issue 49: a dim whose name no graph input carries is a placeholder for a dim nobody knows
// (tf2onnx writes "unk__363"; ONNX's own inference writes "unk__0" for a Conv of a symbolic H):
// unknown, with the node to blame, never "symbolic" as if a pin could set it.
TEST(InferShapes, PlaceholderDimsAreUnknownNotSymbolic) {
  io::Model m = testing::PlaceholderDimsModel("2,3");
  m.proto.mutable_graph()->mutable_node(4)->set_name("reshape");
  InferReport r = InferShapes(m);
  EXPECT_EQ(r.tensors_symbolic, 0);
  ASSERT_FALSE(r.unresolved.empty());
  EXPECT_EQ(r.unresolved.front().tensor, "r");
  EXPECT_EQ(r.unresolved.front().node, "reshape");
  EXPECT_TRUE(r.unresolved.front().root);
  EXPECT_NE(r.unresolved.front().reason.find("the executor computes it"), std::string::npos)
      << r.unresolved.front().reason;
  EXPECT_EQ(DescribeShapes(m).unresolved.size(), r.unresolved.size());
}

// Unpinned, ONNX names a Conv's output dims "unk__N": unknown, blamed on the first node that
// turned the input's named dims into unnamed ones, with what to do.
TEST(InferShapes, UnpinnedDemoBlamesTheFirstConvAndAsksForAPin) {
  io::Model m = io::Load(porttool::testing::TestData("demo_detector.onnx"));
  InferReport r = InferShapes(m);
  EXPECT_EQ(r.tensors_static + r.tensors_symbolic + static_cast<int>(r.unresolved.size()),
            r.tensors_total);
  ASSERT_FALSE(r.unresolved.empty());
  const UnresolvedTensor& first = r.unresolved.front();
  EXPECT_EQ(first.op_type, "Conv");
  EXPECT_NE(first.reason.find("symbolic dims of input 'images' [N, 3, H, W]"), std::string::npos)
      << first.reason;
  EXPECT_NE(first.reason.find("pin the input shape"), std::string::npos) << first.reason;
}

TEST(InferShapes, ReportsTheNodeThatBlocksUnknownTensors) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14, "acme" : 1]>
g (float[1,4] x) => (float[1,4] z) {
  a = Relu(x)
  b = acme.Mystery(a)
  c = Relu(b)
  z = Add(c, a)
}
)");
  m.proto.mutable_graph()->mutable_node(1)->set_name("mystery_0");
  InferReport r = InferShapes(m);
  ASSERT_EQ(r.unresolved.size(), 2u);  // b and c (z is a declared output)
  for (const auto& u : r.unresolved) {
    EXPECT_EQ(u.node, "mystery_0") << u.tensor;
    EXPECT_EQ(u.op_type, "Mystery");
    EXPECT_NE(u.reason.find("no schema"), std::string::npos) << u.reason;
  }
  EXPECT_EQ(testing::ShapeOf(m, "a"), "1x4");
}

TEST(InferShapes, DataPropagationResolvesReshapeFromShapeArithmetic) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3,4] x) => (float[6,4] y) {
  s = Shape(x)
  prod = Constant<value = int64[2] {6, 4}>()
  y = Reshape(x, prod)
  flat_shape = Concat<axis = 0>(s, s)
}
)");
  InferReport r = InferShapes(m);
  EXPECT_EQ(testing::ShapeOf(m, "flat_shape"), "6");
}

TEST(InferShapes, SmallExternalInt64TensorsFeedDataPropagationAndStayExternal) {
  porttool::testing::TempDir dir;
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3,4] x) => (float[N,M] y) {
  y = Reshape(x, target)
}
)");
  auto* t = m.proto.mutable_graph()->add_initializer();
  t->set_name("target");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  int64_t dims[2] = {6, 4};
  porttool::testing::WriteFile(dir / "t.bin", std::string(reinterpret_cast<char*>(dims), 16));
  io::SetExternalRef(*t, "t.bin", 0, 16);
  m.base_dir = dir.path();
  InferShapes(m);
  EXPECT_EQ(testing::ShapeOf(m, "y"), "6x4");
  EXPECT_TRUE(io::IsExternal(m.proto.graph().initializer(0)));
  EXPECT_FALSE(m.proto.graph().initializer(0).has_raw_data());
}

// Found by fuzz_check (testdata/fuzz-regressions/fuzz_check/crash-9bcc50d6...): a Scan whose
// num_scan_inputs attribute is missing (its name mutated) made ONNX 1.12's Scan inference
// dereference a null attribute. It is bad input naming the node; with the attribute it infers.
TEST(InferShapes, MissingRequiredAttributeIsBadInputNotACrash) {
  const std::string text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] init, float[3, 2] xs) => (float[2] y, float[3, 2] z) {
  y, z = Scan <ATTR = 1, body = b (float[2] s_in, float[2] x) => (float[2] s_out, float[2] o) {
    s_out = Add(s_in, x)
    o = Identity(s_out)
  }> (init, xs)
})";
  auto with_attr = [&](const std::string& name) {
    io::Model m = io::ParseText(std::regex_replace(text, std::regex("ATTR"), name));
    m.proto.mutable_graph()->mutable_node(0)->set_name("scan");
    return m;
  };
  io::Model broken = with_attr("num_scan_input_");
  try {
    InferShapes(broken);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.node(), "scan");
    EXPECT_NE(std::string(e.what()).find("required attribute 'num_scan_inputs'"), std::string::npos)
        << e.what();
  }
  io::Model valid = with_attr("num_scan_inputs");
  EXPECT_NO_THROW(InferShapes(valid));
}

// Found by fuzz_passes: ONNX 1.12's data propagation segfaults on Shape(X) when nothing before
// the node defines X (X defined nowhere, or by a later node: an unsorted graph). Such graphs
// are inferred without data propagation instead.
TEST(InferShapes, ShapeOfAValueNotYetDefinedDoesNotCrash) {
  io::Model unsorted = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] inp) => (int64[?] s) {
  s = Shape(x)
  x = Relu(inp)
})");
  InferShapes(unsorted);
  io::Model undefined = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] inp) => (int64[?] s) {
  s = Shape(x)
})");
  InferShapes(undefined);
  // A sorted graph still gets data propagation: the Reshape target comes from Shape's value.
  io::Model sorted = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] inp) => (float[?, ?] y) {
  s = Shape(inp)
  y = Reshape(inp, s)
})");
  InferShapes(sorted);
  ir::GraphView view(sorted.proto.graph());
  const auto* y = view.ValueInfo("y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->type().tensor_type().shape().dim_size(), 2);
  EXPECT_EQ(y->type().tensor_type().shape().dim(0).dim_value(), 2);
  EXPECT_EQ(y->type().tensor_type().shape().dim(1).dim_value(), 3);
}

TEST(InferShapes, BadInputShapeIsUsageError) {
  io::Model m = io::Load(porttool::testing::TestData("demo_detector.onnx"));
  InferOptions o;
  o.input_shapes = InputShapes{{"nope", {1, 3, 64, 64}}};
  try {
    InferShapes(m, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("images"), std::string::npos) << e.what();
  }
  o.input_shapes = InputShapes{{"images", {1, 3, 64}}};
  EXPECT_THROW(InferShapes(m, o), Error);
}

TEST(InferShapes, ContradictingDeclaredShapeFailsInsteadOfReturningLess) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3] x) => (float[5,7] y) {
  y = Relu(x)
}
)");
  EXPECT_THROW(InferShapes(m), Error);
  EXPECT_EQ(m.proto.graph().node_size(), 1);
}

TEST(InferShapes, PpOcrDetIsFullyStaticWithPinnedInput) {
  auto dir = porttool::testing::SharedModelsDir();
  if (dir.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  io::Model m = io::Load(dir / "ch_PP-OCRv4_det_infer.onnx");
  InferOptions o;
  o.input_shapes = InputShapes{{"x", {1, 3, 640, 640}}};
  InferReport r = InferShapes(m, o);
  EXPECT_TRUE(r.unresolved.empty());
  EXPECT_EQ(r.tensors_static, r.tensors_total);
  // Every node output, and the graph output, has a value_info with static dims.
  ir::GraphView v(m.proto.graph());
  for (const auto& node : m.proto.graph().node()) {
    for (const auto& out : node.output()) {
      const auto* vi = v.ValueInfo(out);
      ASSERT_NE(vi, nullptr) << out;
      EXPECT_TRUE(ir::StaticShape(vi->type()).has_value()) << out;
    }
  }
}

}  // namespace
}  // namespace porttool::shape
