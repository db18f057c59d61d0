// End-to-end: exit codes and --json documents of inspect, check and infer-shapes, and --version.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "lib/util/testing.h"

namespace porttool::cli {
namespace {

using porttool::testing::RunPorttool;
using porttool::testing::TempDir;
using porttool::testing::TestData;

nlohmann::json Json(const porttool::testing::CommandResult& r) {
  return nlohmann::json::parse(r.out);  // throws (fails the test) on anything but one document
}

TEST(CliFoundation, Version) {
  auto r = RunPorttool("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("porttool "), std::string::npos);
}

TEST(CliFoundation, InspectJson) {
  auto r = RunPorttool("inspect " + testing::DemoArg() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = Json(r);
  EXPECT_EQ(doc["opsets"]["com.microsoft"], 1);
  EXPECT_EQ(doc["inputs"][0]["name"], "images");
  EXPECT_EQ(doc["inputs"][0]["shape"], (nlohmann::json{"N", 3, "H", "W"}));
  EXPECT_EQ(doc["op_histogram"]["com.microsoft::Gelu"], 1);
  EXPECT_EQ(doc["custom_domains"], nlohmann::json{"com.microsoft"});
  EXPECT_GT(doc["parameters"]["count"].get<int64_t>(), 0);
  EXPECT_TRUE(doc["parameters_by_dtype"].contains("float32"));
  EXPECT_EQ(doc["subgraph_count"], 0);
}

TEST(CliFoundation, InspectText) {
  auto r = RunPorttool("inspect " + testing::DemoArg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("com.microsoft::Gelu"), std::string::npos) << r.out;
  // Symbolic dims are listed, not joined with 'x' (names such as "batchxsequence" contain it).
  EXPECT_NE(r.out.find("[N, 3, H, W]"), std::string::npos) << r.out;
}

TEST(CliFoundation, CheckPassesDemoWithWarnings) {
  auto r = RunPorttool("check " + testing::DemoArg() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = Json(r);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["errors"], 0);
  bool custom = false;
  for (const auto& f : doc["findings"]) {
    for (const char* key : {"severity", "id", "node", "tensor", "message", "fix"}) {
      EXPECT_TRUE(f.contains(key)) << key;
    }
    custom |= f["id"] == "custom-domain" && f["node"] == "Custom_GELU_0";
  }
  EXPECT_TRUE(custom);
}

TEST(CliFoundation, CheckFailsWithExit1OnErrorFinding) {
  TempDir dir;
  // Nodes out of order: the checker and the not-topological lint both fail it.
  auto r = RunPorttool("infer-shapes " + testing::DemoArg() + " -o '" + (dir / "s.onnx").string() +
                       "' --input-shape images:1x3x32x32 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string bad = R"(
import onnx, sys
m = onnx.load(sys.argv[1])
nodes = list(m.graph.node)
del m.graph.node[:]
m.graph.node.extend(reversed(nodes))
onnx.save(m, sys.argv[2])
)";
  porttool::testing::WriteFile(dir / "rev.py", bad);
  auto py = porttool::testing::RunShell(std::string(porttool::testing::kSystemPython) + " '" +
                                        (dir / "rev.py").string() + "' " + testing::DemoArg() +
                                        " '" + (dir / "rev.onnx").string() + "'");
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto c = RunPorttool("check '" + (dir / "rev.onnx").string() + "' --json");
  EXPECT_EQ(c.exit_code, 1) << c.out;
  auto doc = Json(c);
  EXPECT_EQ(doc["ok"], false);
  bool reorder = false;
  for (const auto& f : doc["findings"]) reorder |= f["id"] == "not-topological";
  EXPECT_TRUE(reorder) << c.out;
}

// Issue 16 item 1: one run, one verdict; the pinned shape answers the dynamic-input lint and the
// target's failures are findings like any other.
TEST(CliFoundation, CheckTargetGivesOneVerdictWithPinsApplied) {
  auto r = RunPorttool("check " + testing::DemoArg() +
                       " --target rknn-rk3588 --input-shape images:1x3x64x64");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("OK ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("result:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("dynamic-input"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("error[target-unsupported] node 'Custom_GELU_0'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": FAILED (1 errors"), std::string::npos) << r.out;
  auto doc = Json(RunPorttool("check " + testing::DemoArg() +
                              " --target rknn-rk3588 --input-shape images:1x3x64x64 --json"));
  EXPECT_EQ(doc["ok"], false);
  EXPECT_EQ(doc["errors"], 1);
  EXPECT_EQ(doc["target"]["ok"], false);
}

// Issue 16 item 1 on a real model: at 641x637 PP-OCRv4 det's down/up-sampling branches disagree
// (41x40 vs 42x40); check with that pin must say so, naming the node, as `run` would fail.
TEST(CliFoundation, CheckAppliesPinsToStrictInference) {
  auto det = porttool::testing::SharedModelsDir() / "ch_PP-OCRv4_det_infer.onnx";
  if (!std::filesystem::exists(det)) PORTTOOL_SKIP_MISSING(det << " is absent");
  auto r = RunPorttool("check '" + det.string() + "' --input-shape x:1x3x641x637 --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = Json(r);
  bool named = false;
  for (const auto& f : doc["findings"]) {
    EXPECT_NE(f["id"], "dynamic-input") << f.dump();
    named |= f["id"] == "shape-inference" && !f["node"].get<std::string>().empty();
  }
  EXPECT_TRUE(named) << r.out;
  EXPECT_EQ(RunPorttool("check '" + det.string() + "' --input-shape x:1x3x640x640").exit_code, 0);
}

// Issue 16 diagnostics: with every input pinned, `check --target` names the node that blocks
// inference (and why) where it used to say "pin dynamic inputs with --input-shape".
TEST(CliFoundation, CheckTargetWithPinnedInputsNamesTheBlockingNode) {
  TempDir dir;
  std::string make = R"(
import onnx, sys
from onnx import helper, TensorProto
n1 = helper.make_node("Relu", ["x"], ["a"], name="r")
n2 = helper.make_node("Mystery", ["a"], ["b"], name="mystery_0", domain="acme")
n3 = helper.make_node("Relu", ["b"], ["y"], name="r2")
g = helper.make_graph([n1, n2, n3], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("acme", 1)])
onnx.save(m, sys.argv[1])
)";
  porttool::testing::WriteFile(dir / "make.py", make);
  auto model = (dir / "custom.onnx").string();
  ASSERT_EQ(porttool::testing::RunShell(std::string(porttool::testing::kSystemPython) + " '" +
                                        (dir / "make.py").string() + "' '" + model + "'")
                .exit_code,
            0);
  auto r = RunPorttool("check '" + model + "' --target rknn-rk3588 --input-shape x:1x4");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("node 'mystery_0' (Mystery) blocks"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find("pin dynamic inputs"), std::string::npos) << r.out << r.err;
}

// Fix hints build their example from the input itself: a rank-3 state input named h keeps its
// known dims instead of getting an image shape named x.
TEST(CliFoundation, DynamicInputHintUsesTheInputsOwnNameAndRank) {
  TempDir dir;
  std::string make = R"(
import onnx, sys
from onnx import helper, TensorProto
n = helper.make_node("Tanh", ["h"], ["y"], name="t")
g = helper.make_graph([n], "g", [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", 1, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, 64])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), sys.argv[1])
)";
  porttool::testing::WriteFile(dir / "make.py", make);
  auto model = (dir / "state.onnx").string();
  ASSERT_EQ(porttool::testing::RunShell(std::string(porttool::testing::kSystemPython) + " '" +
                                        (dir / "make.py").string() + "' '" + model + "'")
                .exit_code,
            0);
  auto r = RunPorttool("check '" + model + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--input-shape h:1x1x64"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("640"), std::string::npos) << r.out;
}

TEST(CliFoundation, CheckUnreadableIsExit3) {
  TempDir dir;
  porttool::testing::WriteFile(dir / "x.onnx", "not a model");
  EXPECT_EQ(RunPorttool("check '" + (dir / "x.onnx").string() + "'").exit_code, 3);
}

TEST(CliFoundation, InferShapesJsonAndOutput) {
  TempDir dir;
  auto out = (dir / "static.onnx").string();
  auto r = RunPorttool("infer-shapes " + testing::DemoArg() + " -o '" + out +
                       "' --input-shape images:1x3x64x64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = Json(r);
  EXPECT_EQ(doc["tensors"], doc["static"]);
  EXPECT_TRUE(doc["unresolved"].empty());
  EXPECT_EQ(doc["written"][0], out);
  auto inspect = Json(RunPorttool("inspect '" + out + "' --json"));
  EXPECT_EQ(inspect["outputs"][0]["shape"], (nlohmann::json{1, 1, 32, 32}));
}

TEST(CliFoundation, InferShapesTextListsUnknownTensorsWithBlockingNode) {
  TempDir dir;
  std::string make = R"(
import onnx, sys
from onnx import helper, TensorProto
n1 = helper.make_node("Relu", ["x"], ["a"], name="r")
n2 = helper.make_node("Mystery", ["a"], ["b"], name="mystery_0", domain="acme")
n3 = helper.make_node("Relu", ["b"], ["y"], name="r2")
g = helper.make_graph([n1, n2, n3], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("acme", 1)])
onnx.save(m, sys.argv[1])
)";
  porttool::testing::WriteFile(dir / "make.py", make);
  auto model = (dir / "custom.onnx").string();
  ASSERT_EQ(porttool::testing::RunShell(std::string(porttool::testing::kSystemPython) + " '" +
                                        (dir / "make.py").string() + "' '" + model + "'")
                .exit_code,
            0);
  // Issue 16 item 2: tensors left unknown are a failed inference: exit 1 and nothing written,
  // unless --allow-partial asks for the partial graph.
  auto r = RunPorttool("infer-shapes '" + model + "' -o '" + (dir / "o.onnx").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("root blocker 'mystery_0' (Mystery)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--allow-partial"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "o.onnx"));
  r = RunPorttool("infer-shapes '" + model + "' -o '" + (dir / "o.onnx").string() +
                  "' --allow-partial -v");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unknown b: blocked at 'mystery_0'"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "o.onnx"));
}

// Issue 16 item 2 on a real model: PP-OCRv4 det at 641x637 cannot be inferred (41x40 vs 42x40
// after the down/up-sampling path); the root blocker is named first and nothing is written.
TEST(CliFoundation, InferShapesFailsOnIncompatiblePinnedShape) {
  auto det = porttool::testing::SharedModelsDir() / "ch_PP-OCRv4_det_infer.onnx";
  if (!std::filesystem::exists(det)) PORTTOOL_SKIP_MISSING(det << " is absent");
  TempDir dir;
  auto r = RunPorttool("infer-shapes '" + det.string() + "' --input-shape x:1x3x641x637 -o '" +
                       (dir / "o.onnx").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "o.onnx"));
  EXPECT_NE(r.out.find("root blocker 'p2o.Add.248' (Add)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Incompatible dimensions"), std::string::npos) << r.out;
  // A few lines, not one per blocked tensor.
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 8) << r.out;
}

TEST(CliFoundation, InferShapesUsageErrors) {
  TempDir dir;
  auto out = " -o '" + (dir / "o.onnx").string() + "'";
  auto bad_name =
      RunPorttool("infer-shapes " + testing::DemoArg() + out + " --input-shape nope:1x3x8x8");
  EXPECT_EQ(bad_name.exit_code, 2);
  EXPECT_NE(bad_name.err.find("images"), std::string::npos) << bad_name.err;
  EXPECT_EQ(RunPorttool("infer-shapes " + testing::DemoArg() + out + " --input-shape images:1x3")
                .exit_code,
            2);
  EXPECT_EQ(RunPorttool("infer-shapes " + testing::DemoArg() + out + " --input-shape images=oops")
                .exit_code,
            2);
  EXPECT_EQ(RunPorttool("infer-shapes " + testing::DemoArg()).exit_code, 2) << "-o is required";
  EXPECT_FALSE(std::filesystem::exists(dir / "o.onnx"));
}

TEST(CliFoundation, InferShapesNeverOverwritesItsInput) {
  TempDir dir;
  std::filesystem::copy_file(TestData("demo_detector.onnx"), dir / "m.onnx");
  auto before = porttool::testing::ReadFile(dir / "m.onnx");
  auto r = RunPorttool("infer-shapes '" + (dir / "m.onnx").string() + "' -o '" +
                       (dir / "m.onnx").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(porttool::testing::ReadFile(dir / "m.onnx"), before);
}

}  // namespace
}  // namespace porttool::cli
