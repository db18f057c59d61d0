// End-to-end tests of the options that join two libraries: `split --verify` (executor),
// `split --auto --target` and `check --target` (decision engine's compatibility scan).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;
using testing::TempDir;
using testing::TestData;

TEST(CliWiring, SplitVerifyRunsTheChainedSegmentsAndFindsThemIdentical) {
  TempDir dir;
  auto r = RunPorttool("split " + testing::DemoArg() +
                       " --at Custom_GELU_0 --input-shape images:1x3x32x32 " +
                       "--verify --json -o " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verified"], true);
  EXPECT_EQ(doc["segments"].size(), 3u);
}

TEST(CliWiring, SplitVerifyNeedsStaticInputs) {
  TempDir dir;
  auto r = RunPorttool("split " + testing::DemoArg() + " --at Custom_GELU_0 --verify -o " +
                       (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << "a usage problem must not look like a verification failure: "
                            << r.err;
}

TEST(CliWiring, SplitAutoPutsWhatTheTargetCannotRunOnTheHost) {
  TempDir dir;
  auto r =
      RunPorttool("split " + testing::DemoArg() + " --auto --target rknn-rk3588 " +
                  "--input-shape images:1x3x32x32 --verify --json -o " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> host_nodes;
  for (const auto& s : doc["segments"]) {
    if (s["role"] != "host") continue;
    for (const auto& n : s["host_nodes"]) host_nodes.push_back(n);
  }
  EXPECT_NE(std::find(host_nodes.begin(), host_nodes.end(), "Custom_GELU_0"), host_nodes.end());
  EXPECT_EQ(doc["verified"], true);
}

TEST(CliWiring, SplitAutoAndAtAreExclusiveAndAutoNeedsTarget) {
  EXPECT_EQ(RunPorttool("split " + testing::DemoArg() + " --auto").exit_code, 2);
  EXPECT_EQ(
      RunPorttool("split " + testing::DemoArg() + " --at Custom_GELU_0 --auto --target rknn-rk3588")
          .exit_code,
      2);
  EXPECT_EQ(RunPorttool("split " + testing::DemoArg()).exit_code, 2);
}

TEST(CliWiring, CheckTargetFailsOnUnsupportedNodeWithoutFallback) {
  auto r = RunPorttool("check " + testing::DemoArg() + " --target rknn-rk3588 " +
                       "--input-shape images:1x3x32x32 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("target"));
  EXPECT_NE(doc["target"].dump().find("Custom_GELU_0"), std::string::npos);
}

TEST(CliWiring, CheckTargetPassesWhereEveryOpRuns) {
  auto r = RunPorttool("check " + testing::DemoArg() + " --target onnxruntime-cpu " +
                       "--input-shape images:1x3x32x32");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(CliWiring, CheckUnknownTargetIsUsageError) {
  auto r = RunPorttool("check " + testing::DemoArg() + " --target rknn-rk3858");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rknn-rk3588"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace porttool
