#include "lib/analysis/check.h"

#include <gtest/gtest.h>

#include "lib/io/external_data.h"
#include "lib/util/testing.h"

namespace porttool::analysis {
namespace {

CheckReport Check(const std::string& text) {
  io::Model m = io::ParseText(text);
  return CheckModel(m);
}

bool Fires(const CheckReport& r, const std::string& id) { return !r.WithId(id).empty(); }

std::string Dump(const CheckReport& r) {
  std::string out;
  for (const auto& f : r.findings)
    out += SeverityName(f.severity) + " " + f.id + ": " + f.message + "\n";
  return out;
}

constexpr const char* kClean = R"(
<ir_version: 8, opset_import: ["" : 14]>
clean (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  a = Relu(x)
  y = Add(a, w)
}
)";

TEST(Check, CleanModelHasNoFindings) {
  CheckReport r = Check(kClean);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
}

TEST(Check, DemoModelFlagsCustomDomainAndDynamicInputOnly) {
  io::Model m = io::Load(porttool::testing::TestData("demo_detector.onnx"));
  int value_info_before = m.proto.graph().value_info_size();
  CheckReport r = CheckModel(m);
  EXPECT_FALSE(r.HasErrors()) << Dump(r);
  ASSERT_TRUE(Fires(r, "custom-domain"));
  EXPECT_EQ(r.WithId("custom-domain")[0]->node, "Custom_GELU_0");
  ASSERT_TRUE(Fires(r, "dynamic-input"));
  EXPECT_EQ(r.WithId("dynamic-input")[0]->tensor, "images");
  EXPECT_EQ(m.proto.graph().value_info_size(), value_info_before) << "inference results removed";
}

TEST(Check, OpsetTooNew) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  ASSERT_TRUE(Fires(r, "opset-too-new")) << Dump(r);
  EXPECT_NE(r.WithId("opset-too-new")[0]->message.find("17"), std::string::npos);
  EXPECT_TRUE(r.HasErrors());
  EXPECT_FALSE(Fires(Check(kClean), "opset-too-new"));
}

TEST(Check, DeprecatedUpsampleAtOpset10) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 10]>
g (float[1,1,2,2] x) => (float[1,1,4,4] y) <float[4] s = {1.0, 1.0, 2.0, 2.0}> {
  y = Upsample<mode = "nearest">(x, s)
}
)");
  EXPECT_TRUE(Fires(r, "deprecated-op")) << Dump(r);
  EXPECT_FALSE(Fires(Check(kClean), "deprecated-op"));
}

TEST(Check, UnusedInitializerAndInputAndDeadNode) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x, float[2] unused_in) => (float[2] y) <float[2] unused_w = {1.0, 2.0}> {
  y = Relu(x)
  dead = Neg(x)
}
)");
  ASSERT_TRUE(Fires(r, "unused-initializer")) << Dump(r);
  EXPECT_EQ(r.WithId("unused-initializer")[0]->tensor, "unused_w");
  ASSERT_TRUE(Fires(r, "unused-input"));
  EXPECT_EQ(r.WithId("unused-input")[0]->tensor, "unused_in");
  ASSERT_TRUE(Fires(r, "dead-node"));
  EXPECT_EQ(r.WithId("dead-node")[0]->tensor, "dead");
  CheckReport clean = Check(kClean);
  for (const char* id : {"unused-initializer", "unused-input", "dead-node"}) {
    EXPECT_FALSE(Fires(clean, id)) << id;
  }
}

TEST(Check, IdentityAndDropoutAreInferenceLeftovers) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y) {
  a = Identity(x)
  y = Dropout(a)
}
)");
  EXPECT_EQ(r.WithId("inference-leftover").size(), 2u) << Dump(r);
  EXPECT_FALSE(r.HasErrors()) << Dump(r);
  EXPECT_FALSE(Fires(Check(kClean), "inference-leftover"));
}

TEST(Check, NodesOutOfOrderSayPorttoolCanReorder) {
  io::Model m = io::ParseText(kClean);
  m.proto.mutable_graph()->mutable_node()->SwapElements(0, 1);
  CheckReport r = CheckModel(m);
  ASSERT_TRUE(Fires(r, "not-topological")) << Dump(r);
  EXPECT_NE(r.WithId("not-topological")[0]->fix.find("reorder"), std::string::npos);
  EXPECT_TRUE(r.HasErrors());
}

TEST(Check, DuplicateTensorName) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] a) {
  a = Relu(x)
  a = Neg(x)
}
)");
  ASSERT_TRUE(Fires(r, "duplicate-name")) << Dump(r);
  EXPECT_EQ(r.WithId("duplicate-name")[0]->tensor, "a");
  EXPECT_FALSE(Fires(Check(kClean), "duplicate-name"));
}

TEST(Check, DanglingInput) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y) {
  y = Add(x, ghost)
}
)");
  ASSERT_TRUE(Fires(r, "dangling-input")) << Dump(r);
  EXPECT_EQ(r.WithId("dangling-input")[0]->tensor, "ghost");
  EXPECT_FALSE(Fires(Check(kClean), "dangling-input"));
}

TEST(Check, ShapeContradictionIsAnErrorFinding) {
  CheckReport r = Check(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3] x) => (float[5,7] y) { y = Relu(x) }
)");
  EXPECT_TRUE(Fires(r, "shape-inference")) << Dump(r);
  EXPECT_TRUE(r.HasErrors());
}

TEST(Check, ExternalDataModelOutsideTheWorkingDirectory) {
  porttool::testing::TempDir dir;
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,4] x) => (float[1,4] y) {
  y = Add(x, w)
}
)");
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  porttool::testing::WriteFile(dir / "w.bin", std::string(16, '\0'));
  io::SetExternalRef(*w, "w.bin", 0, 16);
  porttool::testing::WriteFile(dir / "m.onnx", m.proto.SerializeAsString());
  io::Model loaded = io::Load(dir / "m.onnx");
  CheckReport r = CheckModel(loaded);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
  EXPECT_TRUE(io::IsExternal(loaded.proto.graph().initializer(0)));
}

TEST(Check, OthersCanAppendFindings) {
  CheckReport r = Check(kClean);
  r.Add({Severity::kError, "target-unsupported-op", "n", "", "op not on target", "split"});
  EXPECT_TRUE(r.HasErrors());
  EXPECT_EQ(r.Count(Severity::kError), 1);
}

// Printing a report of 10^5 findings shows the first few of each id and counts the rest on the
// last one shown; the total cap never hides a whole id.
TEST(Check, SelectFindingsShowsTheFirstOfEachIdAndCountsTheRest) {
  CheckReport report;
  for (int i = 0; i < 25; ++i) report.Add({Severity::kError, "dangling-input", "", "", "d", ""});
  report.Add({Severity::kWarning, "dead-node", "", "", "x", ""});
  report.Add({Severity::kWarning, "dead-node", "", "", "y", ""});
  auto shown = SelectFindings(report, {.per_id = 10, .total = 10});
  ASSERT_EQ(shown.size(), 11u)
      << "10 of the first id fill the cap; the first dead-node still shows";
  EXPECT_EQ(shown[9].finding->id, "dangling-input");
  EXPECT_EQ(shown[9].more_like_this, 15);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(shown[i].more_like_this, 0);
  EXPECT_EQ(shown[10].finding->message, "x");
  EXPECT_EQ(shown[10].more_like_this, 1) << "the last shown of the id carries the count";
  EXPECT_EQ(SelectFindings(report, {.per_id = 10, .total = 100}).size(), 12u);
  EXPECT_EQ(CountById(report).at("dangling-input"), 25);
  EXPECT_EQ(MoreLikeThis(99990), "and 99,990 more like this");
}

}  // namespace
}  // namespace porttool::analysis
