// End-to-end tests of `porttool fold-constants`, `simplify`, `rewrite` and `chain --fixed-point`:
// exit codes, the op table and JSON, the demo model's "go through ONNX" remedy made real, and bad
// input writing nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;
using testing::TempDir;
using testing::TestData;

TEST(CliTransform, DecomposeGeluMakesTheDemoRk3588Clean) {
  TempDir dir;
  std::string model = TestData("demo_detector.onnx").string();
  std::string out = (dir / "demo.std.onnx").string();
  auto before =
      RunPorttool("check " + model + " --target rknn-rk3588 --input-shape images:1x3x64x64");
  EXPECT_NE(before.out.find("unsupported  Custom_GELU_0"), std::string::npos) << before.out;
  EXPECT_EQ(before.exit_code, 1);
  auto r = RunPorttool("rewrite " + model + " --rule decompose-gelu -o " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nodes_before"], 16);
  EXPECT_EQ(doc["nodes_after"], 20);
  auto after = RunPorttool("check " + out + " --target rknn-rk3588 --input-shape images:1x3x64x64");
  EXPECT_EQ(after.out.find("unsupported  Custom_GELU_0"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find(" 0 unsupported"), std::string::npos) << after.out;
  EXPECT_EQ(after.exit_code, 0) << after.out;
  io::Model m = io::Load(out);
  for (const auto& op : m.proto.opset_import()) EXPECT_NE(op.domain(), "com.microsoft");
  auto cmp = RunPorttool("compare " + model + " " + out +
                         " --input-shape images:1x3x64x64 --atol 1e-5 --rtol 0");
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
}

TEST(CliTransform, SimplifyPrintsTheOpTableAndFusesTheDemo) {
  TempDir dir;
  std::string out = (dir / "demo.sim.onnx").string();
  auto r = RunPorttool("simplify " + TestData("demo_detector.onnx").string() +
                       " --input-shape images:1x3x64x64 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("BatchNormalization"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total nodes"), std::string::npos) << r.out;
  io::Model m = io::Load(out);
  EXPECT_EQ(m.proto.graph().node_size(), 13);  // 3 BatchNormalization fused into their Conv
}

TEST(CliTransform, UnknownRuleIsUsageErrorWithClosestIdsAndWritesNothing) {
  TempDir dir;
  auto r = RunPorttool("rewrite " + TestData("demo_detector.onnx").string() +
                       " --rule decompose-gleu -o " + (dir / "o.onnx").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("decompose-gelu"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CliTransform, OutputEqualToInputIsRefusedWithoutInPlace) {
  TempDir dir;
  std::filesystem::copy_file(TestData("demo_detector.onnx"), dir / "m.onnx");
  std::string model = (dir / "m.onnx").string();
  std::string hash = util::Sha256File(model);
  auto r = RunPorttool("simplify " + model + " -o " + model);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // usage: would overwrite the input
  EXPECT_EQ(util::Sha256File(model), hash);
}

TEST(CliTransform, ChainFixedPointAndFoldConstantsJson) {
  TempDir dir;
  auto r = RunPorttool("chain " + TestData("demo_detector.onnx").string() +
                       " --fixed-point -p 'fuse-conv-bn,eliminate-dead-code' -o " +
                       (dir / "c.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = RunPorttool("fold-constants " + TestData("demo_detector.onnx").string() + " -o " +
                       (dir / "f.onnx").string() + " --json");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto doc = nlohmann::json::parse(f.out);
  EXPECT_TRUE(doc["ops"].is_array());
  EXPECT_EQ(doc["nodes_before"], 16);
}

}  // namespace
}  // namespace porttool
