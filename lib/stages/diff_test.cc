#include "lib/stages/diff.h"

#include <gtest/gtest.h>

#include "lib/analysis/renamed_copy_test_util.h"
#include "lib/io/model.h"
#include "lib/util/testing.h"

namespace porttool::stages {
namespace {

constexpr const char* kNet = R"(
<ir_version: 8, opset_import: ["" : 14]>
net (float[1,4] x) => (float[1,8] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  a = Relu(x)
  b = Add(a, w)
  c = Sigmoid(a)
  y = Concat<axis = 1>(b, c)
}
)";

using analysis::RenamedCopy;

TEST(DiffStage, RenamedCopyIsTheSame) {
  io::Model a = io::ParseText(kNet);
  ModelDiff d = DiffStage(a, RenamedCopy(a), {});
  EXPECT_TRUE(d.Same());
  EXPECT_EQ(d.matched, 4);
  EXPECT_TRUE(DiffJson(d)["same"].get<bool>());
  EXPECT_NE(DiffText(d, 10).find("no structural differences"), std::string::npos);
}

TEST(DiffStage, ChangedAttributeNamesBothValues) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  b.proto.mutable_graph()->mutable_node(3)->mutable_attribute(0)->set_i(0);
  ModelDiff d = DiffStage(a, b, {});
  EXPECT_FALSE(d.Same());
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].a.op, "Concat");
  ASSERT_EQ(d.changed[0].attributes.size(), 1u);
  EXPECT_EQ(d.changed[0].attributes[0].name, "axis");
  EXPECT_EQ(d.changed[0].attributes[0].a, "1");
  EXPECT_EQ(d.changed[0].attributes[0].b, "0");
  EXPECT_TRUE(d.removed.empty());
  EXPECT_TRUE(d.added.empty());
}

TEST(DiffStage, ChangedWeightHasItsMaxAbsDifference) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  b.proto.mutable_graph()->mutable_initializer(0)->set_float_data(1, 2.25f);
  ModelDiff d = DiffStage(a, b, {});
  ASSERT_EQ(d.values.size(), 1u);
  EXPECT_EQ(d.values[0].a_name, "w");
  EXPECT_EQ(d.values[0].b_name, "renamed/w/x");
  EXPECT_EQ(d.values[0].a_type, "float32[4]");
  ASSERT_TRUE(d.values[0].max_abs.has_value());
  EXPECT_DOUBLE_EQ(*d.values[0].max_abs, 0.25);
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].inputs[0].position, 1);
}

TEST(DiffStage, RemovedNodeSaysWhatBecameOfIt) {
  io::Model a = io::ParseText(kNet);
  io::Model b = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
net (float[1,4] x) => (float[1,8] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  a = Relu(x)
  b = Add(a, w)
  t = Tanh(a)
  c = Sigmoid(x)
  y = Concat<axis = 1>(b, c)
}
)");
  ModelDiff d = DiffStage(a, b, {});
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_EQ(d.added[0].op, "Tanh");
  EXPECT_TRUE(d.removed.empty());
  ASSERT_EQ(d.changed.size(), 1u);  // Sigmoid now reads x
  EXPECT_EQ(d.changed[0].a.op, "Sigmoid");
  EXPECT_EQ(d.changed[0].inputs[0].b, "graph input 'x'");

  ModelDiff back = DiffStage(b, a, {});
  ASSERT_EQ(back.removed.size(), 1u);
  EXPECT_EQ(back.removed[0].node.op, "Tanh");
}

TEST(DiffStage, OpsetAndGraphInputChanges) {
  io::Model a = io::ParseText(kNet);
  io::Model b = a;
  b.proto.mutable_opset_import(0)->set_version(13);
  b.proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::DOUBLE);
  ModelDiff d = DiffStage(a, b, {});
  ASSERT_EQ(d.header.size(), 1u);
  EXPECT_EQ(d.header[0], "opset ai.onnx: 14 -> 13");
  ASSERT_EQ(d.io.size(), 1u);
  EXPECT_EQ(d.io[0].change, "changed");
  EXPECT_EQ(d.io[0].a_type, "float32[1,4]");
  EXPECT_FALSE(d.Same());
}

TEST(DiffStage, NumericComparesMatchedTensorsOfARenamedCopy) {
  io::Model a = io::ParseText(kNet);
  testing::TempDir scratch;
  DiffOptions o;
  o.numeric = true;
  o.compare.scratch_dir = scratch.path();
  ModelDiff d = DiffStage(a, RenamedCopy(a), o);
  ASSERT_TRUE(d.numeric.has_value());
  EXPECT_TRUE(d.Same());
  ASSERT_EQ(d.numeric->comparison.outputs.size(), 1u);
  EXPECT_EQ(d.numeric->comparison.outputs[0].name, "renamed/y/x");
  EXPECT_EQ(d.numeric->comparison.outputs[0].stats.max_abs, 0.0);
  EXPECT_EQ(d.numeric->comparison.intermediates.size(), 4u);  // a, b, c, y
  EXPECT_EQ(d.numeric->a_names.at("renamed/c/x"), "c");
}

TEST(DiffStage, HtmlHasBothGraphsAndTheTables) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  b.proto.mutable_graph()->mutable_initializer(0)->set_float_data(1, 2.25f);
  ModelDiff d = DiffStage(a, b, {});
  std::string html = DiffHtml(d, a, b, "a.onnx", "b.onnx");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("A: a.onnx"), std::string::npos);
  EXPECT_NE(html.find("B: b.onnx"), std::string::npos);
  EXPECT_NE(html.find("Weights changed"), std::string::npos);
  EXPECT_NE(html.find("data-placement=\"host\""), std::string::npos);  // the changed Add
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);               // self-contained
}

}  // namespace
}  // namespace porttool::stages
