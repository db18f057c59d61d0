// `porttool decide` and `porttool rules validate` through the binary: formats, exit codes, errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;

TEST(CliDecide, JsonReportHasTheDocumentedShape) {
  auto r = RunPorttool("decide " + testing::DemoArg() +
                       " --target rknn-rk3588 --format json --input-shape images:1x3x64x64 "
                       "--fps 10 --resolution 1080p --latency-ms 0 --power-w 0 --int8-loss 1 "
                       "--fp16 false --mixed-precision false --dev-days 2 --model-update reexport");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["verdict"] == "onnx" || j["verdict"] == "verify" || j["verdict"] == "custom-op");
  ASSERT_EQ(j["dimensions"].size(), 6u);
  for (const auto& d : j["dimensions"]) {
    EXPECT_TRUE(d.contains("id") && d.contains("outcome") && d.contains("rule") &&
                d.contains("reason"));
  }
  EXPECT_EQ(j["facts"]["performance.fps"]["origin"], "--fps");
  EXPECT_TRUE(j["unsupported"].is_array());
  EXPECT_EQ(j["remedies"][0]["node"], "Custom_GELU_0");
  EXPECT_EQ(j["steps"].size(), 5u);
}

TEST(CliDecide, MarkdownToFileAndFactsFile) {
  testing::TempDir dir;
  testing::WriteFile(dir / "project.json",
                     R"({"hardware": {"class": "cortex-m", "onnx_toolchain": false},
                         "schedule": {"dev_days": 12}})");
  auto r = RunPorttool("decide " + testing::DemoArg() + " --facts " +
                       (dir / "project.json").string() + " -o " + (dir / "report.md").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::string md = testing::ReadFile(dir / "report.md");
  EXPECT_NE(md.find("**Verdict: `custom-op`**"), std::string::npos) << md;
  EXPECT_NE(md.find("| hardware.class | cortex-m | facts file "), std::string::npos);
}

TEST(CliDecide, BadFactsAndTargetsGiveClearErrors) {
  testing::TempDir dir;
  testing::WriteFile(dir / "bad.json", "{\"performance\": {\"fps\": \"fast\"}}");
  auto r = RunPorttool("decide " + testing::DemoArg() + " --facts " + (dir / "bad.json").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("at /performance/fps"), std::string::npos) << r.err;
  r = RunPorttool("decide " + testing::DemoArg() + " --target rknn-rk3589");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'rknn-rk3588'"), std::string::npos) << r.err;
  r = RunPorttool("decide " + testing::DemoArg() + " --model-update sometimes");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--model-update"), std::string::npos) << r.err;
}

// Issue 16 item 6: a fact outside its documented range (or not finite) is bad input naming the
// file, line and pointer (or the flag), never a verdict built on it and never an internal error.
TEST(CliDecide, FactsOutOfRangeAreBadInput) {
  testing::TempDir dir;
  testing::WriteFile(dir / "neg.json", "{\n  \"performance\": {\"fps\": -5}\n}");
  auto r = RunPorttool("decide " + testing::DemoArg() + " --facts " + (dir / "neg.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.err.find("neg.json:2: at /performance/fps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  testing::WriteFile(dir / "huge.json", "{\"precision\": {\"int8_loss_pct\": 1e400}}");
  r = RunPorttool("decide " + testing::DemoArg() + " --facts " + (dir / "huge.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/precision/int8_loss_pct"), std::string::npos) << r.err;
  r = RunPorttool("decide " + testing::DemoArg() + " --fps nan");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.err.find("--fps"), std::string::npos) << r.err;
  r = RunPorttool("decide " + testing::DemoArg() + " --dev-days -3");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.err.find("--dev-days"), std::string::npos) << r.err;
  r = RunPorttool("decide " + testing::DemoArg() + " --fps 0 --dev-days 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A --facts file nested 100000 deep used to hang (the pointer index is quadratic in the depth);
// it is bad input naming the file, line and column.
TEST(CliDecide, DeeplyNestedFactsFileIsBadInput) {
  testing::TempDir dir;
  std::string deep = "{\"performance\": {\"fps\": ";
  for (int i = 0; i < 100000; ++i) deep += "[";
  for (int i = 0; i < 100000; ++i) deep += "]";
  deep += "}}";
  testing::WriteFile(dir / "deep.json", deep);
  auto r = RunPorttool("decide " + testing::DemoArg() + " --facts " + (dir / "deep.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("deep.json:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nested deeper than 64 levels"), std::string::npos) << r.err;
}

// Issue 16 item 5: STM32's ST Edge AI Core imports ONNX, so a small model whose every op it
// runs and that fits with room to spare takes the ONNX path instead of "MCU means custom-op".
TEST(CliDecide, McuWithOnnxToolchainAndFittingModelIsOnnx) {
  testing::TempDir dir;
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
timer (float[1,2] x) => (float[1,2] y)
<float[2,2] w = {1.0, 2.0, 3.0, 4.0}>
{
  h = MatMul(x, w)
  y = Relu(h)
}
)");
  io::Save(m, dir / "timer.onnx");
  auto r =
      RunPorttool("decide " + (dir / "timer.onnx").string() + " --target stm32f767 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["dimensions"][0]["id"], "hardware");
  EXPECT_EQ(j["dimensions"][0]["outcome"], "onnx") << j["dimensions"][0].dump();
  EXPECT_EQ(j["dimensions"][0]["rule"], "hardware.onnx.mcu-onnx-toolchain");
  EXPECT_EQ(j["facts"]["hardware.onnx_toolchain"]["value"], true);
}

// The shared shape-completion stage: PP-OCR cls's Reshape target goes through Cast, which static
// inference does not follow; one executor run completes it, so decide gets its memory fit.
TEST(CliDecide, PpOcrClsGetsItsMemoryFit) {
  auto cls = testing::SharedModelsDir() / "ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!std::filesystem::exists(cls)) PORTTOOL_SKIP_MISSING(cls << " is absent");
  auto r = RunPorttool("decide " + cls.string() +
                       " --target rknn-rk3588 --input-shape x:1x3x48x192 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["memory"]["arena_bytes"].is_number()) << j["memory"].dump();
  EXPECT_EQ(j["memory"]["fits"], true) << j["memory"].dump();
  EXPECT_EQ(j["facts"]["target.memory_fits"]["value"], true);
}

TEST(CliRules, ValidateShippedAndMalformedFiles) {
  auto r = RunPorttool("rules validate");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok  target"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rknn-rk3588.json"), std::string::npos);
  testing::TempDir dir;
  testing::WriteFile(dir / "t.json", "{\n  \"schema\": \"porttool.target/1\",\n  \"name\": 3\n}");
  r = RunPorttool("rules validate " + (dir / "t.json").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("t.json:3: at /name: expected a string, got a number"), std::string::npos)
      << r.err;
}

TEST(CliRules, RulesDirFromEnvironment) {
  testing::TempDir dir;
  auto r = testing::RunShell("PORTTOOL_RULES_DIR=" + dir.path().string() + " " +
                             testing::PorttoolBin() + " rules validate");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no rule files under " + dir.path().string()), std::string::npos) << r.err;
}

}  // namespace
}  // namespace porttool
