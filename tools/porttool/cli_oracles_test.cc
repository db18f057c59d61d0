// A missing oracle is a skip on a developer's machine and a failure on CI
// (PORTTOOL_REQUIRE_ORACLES=1, set by .ci/run), and ONNX Runtime is found outside the tree
// through PORTTOOL_ORT_DIR: run on one ONNX Runtime comparison of the runtime suite, built
// beside the porttool binary under test.
#include <gtest/gtest.h>

#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;

constexpr char kOrtCase[] = "Recurrent.LstmReverseClippedInputForgetMatchesOrt";

testing::CommandResult RunOrtCase(const std::string& env) {
  fs::path suite = fs::path(testing::PorttoolBin()).parent_path() / "porttool_runtime_tests";
  return testing::RunShell("env -u PORTTOOL_REQUIRE_ORACLES -u PORTTOOL_ORT_DIR " + env + " " +
                           testing::ShellQuote(suite) + " --gtest_filter=" + kOrtCase);
}

TEST(Oracles, AMissingOracleSkipsAndFailsWhenRequired) {
  auto skipped = RunOrtCase("PORTTOOL_ORT_DIR=/nonexistent");
  EXPECT_EQ(skipped.exit_code, 0) << skipped.out;
  EXPECT_NE(skipped.out.find("[  SKIPPED ] " + std::string(kOrtCase)), std::string::npos)
      << skipped.out;
  auto failed = RunOrtCase("PORTTOOL_ORT_DIR=/nonexistent PORTTOOL_REQUIRE_ORACLES=1");
  EXPECT_NE(failed.exit_code, 0) << failed.out;
  EXPECT_NE(failed.out.find("required by PORTTOOL_REQUIRE_ORACLES=1 but missing"),
            std::string::npos)
      << failed.out;
}

TEST(Oracles, OnnxRuntimeInstalledElsewhereIsFoundThroughTheEnvironment) {
  if (auto why = testing::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);
  testing::TempDir dir;
  fs::create_directories(dir / "elsewhere" / "node_modules");
  fs::create_directory_symlink(testing::OrtDir() / "node_modules" / "onnxruntime-node",
                               dir / "elsewhere" / "node_modules" / "onnxruntime-node");
  auto r = RunOrtCase("PORTTOOL_REQUIRE_ORACLES=1 PORTTOOL_ORT_DIR=" +
                      testing::ShellQuote(dir / "elsewhere"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("[       OK ] " + std::string(kOrtCase)), std::string::npos) << r.out;
}

}  // namespace
}  // namespace porttool
