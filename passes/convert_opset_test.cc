// convert-opset and If bodies: the bodies share the model's opset import and the version
// converter converts only the main graph, so a body whose nodes are the same at both versions is
// relabelled with the model (and the result passes the ONNX checker), and a body node that needs
// converting is refused naming the If that holds it, the model untouched; so is a main graph that
// needs the converter, which has no adapter for If.
#include <gtest/gtest.h>

#include "lib/analysis/check.h"
#include "lib/ir/rewrite.h"
#include "lib/util/error.h"
#include "passes/pass_test_util.h"

namespace porttool::passes {
namespace {

using testing_util::MaxOutputDiff;
using testing_util::RunOne;

TEST(ConvertOpsetBodies, ABodyNodeThatNeedsConvertingIsRefusedNamingTheIf) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 16]>
    g (float[4] x, bool c) => (float[4] y) <int64[1,1] idx = {1}, float[1] upd = {5.0}> {
      y = If (c) <
        then_branch = scatter () => (float[4] s) {
          s = ScatterND <reduction = "add"> (x, idx, upd) },
        else_branch = plain () => (float[4] r) { r = Relu(x) } > })");
  io::Model m = model;
  m.proto.mutable_graph()->mutable_node(0)->set_name("rate_if");
  const std::string before = m.proto.SerializeAsString();
  try {
    RunOne(m, "convert-opset{to=13}");
    FAIL() << "converted a model whose If body holds an opset-16 ScatterND";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.node(), "rate_if");
    EXPECT_NE(std::string(e.what()).find("convert-opset 16 -> 13: If 'rate_if' has a body node "
                                         "'ScatterND' that needs converting (ScatterND changed "
                                         "signature)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(m.proto.SerializeAsString(), before);
}

TEST(ConvertOpsetBodies, BodiesOfOpsThatDidNotChangeAreRelabelledAndPassTheChecker) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 16]>
    g (float[4] x, bool c) => (float[4] y) {
      y = If (c) <
        then_branch = a () => (float[4] s) { s = Relu(x) },
        else_branch = b () => (float[4] r) { r = Sigmoid(x) } > })");
  io::Model m = model;
  RunOne(m, "convert-opset{to=13}");
  EXPECT_EQ(ir::OnnxOpset(m.proto), 13);
  analysis::CheckReport report;
  analysis::RunOnnxChecker(m, report);
  EXPECT_TRUE(report.findings.empty()) << report.findings.front().message;
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
}

// The main graph needs the converter (Unsqueeze-13 takes its axes as an input, Unsqueeze-11 as an
// attribute): libonnx 1.12's converter has no adapter for If at all, so the model is refused,
// untouched, with the converter's reason, never relabelled around the If.
TEST(ConvertOpsetBodies, ConverterOnAModelWithAnIfIsRefusedUntouched) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, bool c) => (float[1,4] y) {
      axes = Constant <value = int64[1] {0}> ()
      a = Unsqueeze(x, axes)
      y = If (c) <
        then_branch = t () => (float[1,4] s) { s = Relu(a) },
        else_branch = e () => (float[1,4] r) { r = Neg(a) } > })");
  const std::string before = m.proto.SerializeAsString();
  try {
    RunOne(m, "convert-opset{to=12}");
    FAIL() << "converted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("for If"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m.proto.SerializeAsString(), before);
}

}  // namespace
}  // namespace porttool::passes
