// End-to-end tests of `porttool chain` and `porttool passes`: exit codes, JSON shape, and that a
// chain loads once, runs every stage on the same in-memory model and saves once.
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

TEST(CliChain, InferShapesThenCheckSavesOnceWithShapes) {
  TempDir dir;
  std::string model = TestData("demo_detector.onnx").string();
  std::string before = util::Sha256File(model);
  auto r = RunPorttool("chain " + model + " -o " + (dir / "out.onnx").string() +
                       " --json -p 'infer-shapes{input-shape=images:1x3x64x64},eliminate-identity,"
                       "topo-sort,check'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["steps"].size(), 4u);
  EXPECT_EQ(doc["steps"][0]["pass"], "infer-shapes");
  EXPECT_EQ(doc["steps"][3]["pass"], "check");
  EXPECT_EQ(doc["output"][0], (dir / "out.onnx").string());

  io::Model out = io::Load(dir / "out.onnx");
  bool gelu_shaped = false;
  for (const auto& vi : out.proto.graph().value_info()) {
    if (vi.name() == "gelu.out") {
      const auto& shape = vi.type().tensor_type().shape();
      gelu_shaped = shape.dim_size() == 4 && shape.dim(2).dim_value() == 16;
    }
  }
  EXPECT_TRUE(gelu_shaped) << "shape inference did not flow through Custom_GELU_0";
  EXPECT_EQ(util::Sha256File(model), before) << "the input model was modified";
}

TEST(CliChain, MalformedPipelineIsUsageErrorAndWritesNothing) {
  TempDir dir;
  auto r = RunPorttool("chain " + TestData("demo_detector.onnx").string() + " -o " +
                       (dir / "out.onnx").string() + " -p 'infer-shapes{input-shape'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("column"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.onnx"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CliChain, UnknownPassNamesClosestId) {
  auto r = RunPorttool("chain " + TestData("demo_detector.onnx").string() + " -p infer-shape");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("infer-shapes"), std::string::npos) << r.err;
}

TEST(CliChain, RefusesToOverwriteInputWithoutInPlace) {
  TempDir dir;
  std::filesystem::copy_file(TestData("demo_detector.onnx"), dir / "m.onnx");
  std::string before = util::Sha256File(dir / "m.onnx");
  auto r = RunPorttool("chain " + (dir / "m.onnx").string() + " -o " + (dir / "m.onnx").string() +
                       " -p topo-sort");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--in-place"), std::string::npos) << r.err;
  EXPECT_EQ(util::Sha256File(dir / "m.onnx"), before);
}

TEST(CliPasses, ListsEveryRegisteredPassAsJson) {
  auto r = RunPorttool("passes --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> ids;
  for (const auto& p : doc["passes"]) ids.push_back(p["id"]);
  for (const char* id : {"infer-shapes", "check", "topo-sort", "eliminate-identity"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
}

}  // namespace
}  // namespace porttool
