// The decision report end to end: the bundled demo without a target (unknown, never guessed),
// and golden reports for PP-OCRv4 det on rknn-rk3588 and stm32f767 (skipped without the shared
// models). Regenerate goldens with PORTTOOL_UPDATE_GOLDEN=1 after an intended change.
#include "lib/decide/report.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/shape/input_shapes.h"
#include "lib/util/testing.h"

namespace porttool::decide {
namespace {

std::vector<FlagFact> ProjectFacts() {
  return {{"performance.fps", 10, "--fps"},
          {"performance.resolution", "640x640", "--resolution"},
          {"performance.latency_ms", 0, "--latency-ms"},
          {"performance.power_w", 0, "--power-w"},
          {"precision.int8_loss_pct", 1.5, "--int8-loss"},
          {"precision.requires_fp16", false, "--fp16"},
          {"precision.mixed", false, "--mixed-precision"},
          {"schedule.dev_days", 5, "--dev-days"},
          {"maintenance.model_update", "reexport", "--model-update"},
          {"cost.day_rate", 800, "--day-rate"},
          {"cost.benefit", 20000, "--benefit"}};
}

TEST(DecisionReport, DemoWithoutTargetLeavesHardwareUnknown) {
  DecideOptions options;
  options.rules_dir = testing::SourceDir() / "rules";
  options.input_shapes = {{"images", {1, 3, 64, 64}}};
  DecisionReport r = Decide(io::Load(testing::TestData("demo_detector.onnx")), options);
  nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["verdict"], "verify");
  EXPECT_EQ(j["dimensions"][0]["id"], "hardware");
  EXPECT_EQ(j["dimensions"][0]["outcome"], "unknown");
  EXPECT_EQ(j["facts"]["model.custom_domain_ops"]["value"], 1);
  EXPECT_EQ(j["facts"]["model.custom_domain_ops"]["origin"], "model");
  EXPECT_FALSE(j["facts"].contains("performance.fps"));  // absent, not defaulted
  std::string md = r.ToMarkdown();
  EXPECT_NE(md.find("**Verdict: `verify`**"), std::string::npos);
  EXPECT_NE(md.find("Needs a target."), std::string::npos);
}

TEST(DecisionReport, DemoOnRk3588NamesTheCustomOpAndItsRemedy) {
  DecideOptions options;
  options.rules_dir = testing::SourceDir() / "rules";
  options.target = "rknn-rk3588";
  options.input_shapes = {{"images", {1, 3, 64, 64}}};
  options.flag_facts = ProjectFacts();
  DecisionReport r = Decide(io::Load(testing::TestData("demo_detector.onnx")), options);
  ASSERT_EQ(r.remedies.size(), 1u);
  EXPECT_EQ(r.remedies[0].node, "Custom_GELU_0");
  EXPECT_EQ(r.remedies[0].remedies[0].id, "rewrite.gelu-decompose");
  EXPECT_EQ(r.facts.Get("hardware.class")->origin, "target rknn-rk3588");
  EXPECT_EQ(r.facts.Get("performance.fps")->origin, "--fps");
}

// The report for `model` on `target` must equal testdata/golden/<stem>.{json,md}.
void CheckGolden(const std::filesystem::path& model, const shape::InputShapes& shapes,
                 const std::string& target, const std::string& stem) {
  DecideOptions options;
  options.rules_dir = testing::SourceDir() / "rules";
  options.target = target;
  options.input_shapes = shapes;
  options.flag_facts = ProjectFacts();
  DecisionReport r = Decide(io::Load(model), options);
  std::string json = r.ToJson().dump(2) + "\n", md = r.ToMarkdown();
  auto golden = testing::SourceDir() / "testdata" / "golden";
  if (std::getenv("PORTTOOL_UPDATE_GOLDEN")) {
    testing::WriteFile(golden / (stem + ".json"), json);
    testing::WriteFile(golden / (stem + ".md"), md);
  }
  EXPECT_EQ(json, testing::ReadFile(golden / (stem + ".json")));
  EXPECT_EQ(md, testing::ReadFile(golden / (stem + ".md")));
}

// The bundled demo: a golden that runs on every machine, shared models or not.
TEST(DecisionReport, GoldenDemoOnRk3588) {
  CheckGolden(testing::DemoModelPath(), {{"images", {1, 3, 64, 64}}}, "rknn-rk3588",
              "decide_demo_rknn-rk3588");
}

std::filesystem::path PpOcrDet() {
  auto models = testing::SharedModelsDir();
  return models.empty() ? models : models / "ch_PP-OCRv4_det_infer.onnx";
}

TEST(DecisionReport, GoldenPpOcrDetOnRk3588) {
  if (PpOcrDet().empty()) PORTTOOL_SKIP_MISSING("../shared/models not present");
  CheckGolden(PpOcrDet(), {{"x", {1, 3, 640, 640}}}, "rknn-rk3588", "decide_ppocr_det_rknn-rk3588");
}

TEST(DecisionReport, GoldenPpOcrDetOnStm32f767) {
  if (PpOcrDet().empty()) PORTTOOL_SKIP_MISSING("../shared/models not present");
  CheckGolden(PpOcrDet(), {{"x", {1, 3, 640, 640}}}, "stm32f767", "decide_ppocr_det_stm32f767");
}

}  // namespace
}  // namespace porttool::decide
