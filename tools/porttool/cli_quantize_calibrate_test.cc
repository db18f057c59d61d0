// `porttool quantize-calibrate` end to end on the bundled demo model: outputs written and
// loadable, the table reused on a split segment, and exit codes with nothing written on errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "lib/io/model.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;
using testing::TempDir;
namespace fs = std::filesystem;

void WriteSamples(const fs::path& dir, int n) {
  fs::create_directories(dir);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int s = 0; s < n; ++s) {
    runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 64, 64});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng);
    runtime::WriteNpy(dir / ("s" + std::to_string(s) + ".images.npy"), t);
  }
}

TEST(CliQuantizeCalibrate, WritesTableCacheQdqAndReport) {
  TempDir tmp;
  WriteSamples(tmp / "data", 5);
  std::string model = testing::TestData("demo_detector.onnx").string();
  auto r = RunPorttool(model.insert(0, "quantize-calibrate ") + " --data " +
                       (tmp / "data").string() + " --method entropy --per-channel --table " +
                       (tmp / "t.json").string() + " --trt-cache " + (tmp / "trt").string() +
                       " --qdq " + (tmp / "q.onnx").string() + " --threshold score:0.5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["method"], "entropy");
  EXPECT_EQ(doc["calibration_samples"], 4);
  EXPECT_GT(doc["qdq"]["quantized_nodes"].get<int>(), 0);
  ASSERT_FALSE(doc["accuracy"].is_null());
  EXPECT_GT(doc["accuracy"]["outputs"][0]["sqnr_db"].get<double>(), 30);
  EXPECT_EQ(doc["accuracy"]["outputs"][0]["quantiles"].size(), 7u);
  EXPECT_EQ(doc["accuracy"]["thresholds"][0]["output"], "score");
  EXPECT_GT(doc["accuracy"]["thresholds"][0]["iou"].get<double>(), 0.5);
  // The demo's three Conv + BatchNormalization pairs are folded before calibration.
  EXPECT_NE(doc["notes"].dump().find("folded 3 BatchNormalization"), std::string::npos)
      << doc["notes"];
  auto table = nlohmann::json::parse(testing::ReadFile(tmp / "t.json"));
  EXPECT_EQ(table["format"], "porttool-calibration-table");
  EXPECT_EQ(table["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(table["tensors"].contains("images"));
  EXPECT_EQ(testing::ReadFile(tmp / "trt").rfind("TRT-8601-EntropyCalibration2\n", 0), 0u);
  io::Model q = io::Load(tmp / "q.onnx");
  int qdq = 0;
  for (const auto& n : q.proto.graph().node()) qdq += n.op_type() == "QuantizeLinear";
  EXPECT_GT(qdq, 0);
  // The QDQ model runs.
  auto run = RunPorttool("run " + (tmp / "q.onnx").string() +
                         " --random-inputs --input-shape images:1x3x64x64");
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(CliQuantizeCalibrate, AppliesTheTableToASplitSegment) {
  TempDir tmp;
  WriteSamples(tmp / "data", 3);
  std::string model = testing::TestData("demo_detector.onnx").string();
  ASSERT_EQ(RunPorttool("quantize-calibrate " + model + " --data " + (tmp / "data").string() +
                        " --table " + (tmp / "t.json").string())
                .exit_code,
            0);
  auto split =
      RunPorttool("split " + model + " --at Custom_GELU_0 --input-shape images:1x3x64x64 -o " +
                  (tmp / "parts").string() + " --json");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  fs::path seg;
  for (const auto& e : fs::directory_iterator(tmp / "parts")) {
    if (e.path().extension() == ".onnx" && seg.empty()) seg = e.path();
  }
  ASSERT_FALSE(seg.empty());
  auto r =
      RunPorttool("quantize-calibrate " + seg.string() + " --table " + (tmp / "t.json").string() +
                  " --qdq " + (tmp / "seg.q.onnx").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["qdq"]["missing_ranges"].empty()) << doc.dump();
  EXPECT_TRUE(fs::exists(tmp / "seg.q.onnx"));
}

// The target search on the demo: a reachable target exits 0 and says reached, a missed one
// says NOT reached with every raised node listed and exits 1; detect-db figures are reported.
TEST(CliQuantizeCalibrate, AccuracyTargetReachedAndMissed) {
  TempDir tmp;
  WriteSamples(tmp / "data", 5);
  const std::string base = "quantize-calibrate " +
                           testing::TestData("demo_detector.onnx").string() + " --data " +
                           (tmp / "data").string() + " --task detect-db:thresh=0.5 ";
  auto r = RunPorttool(base + "--accuracy-target sqnr:1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("target sqnr:1 reached"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("score (detect-db:thresh=0.5"), std::string::npos) << r.out;
  r = RunPorttool(base + "--accuracy-target sqnr:199 --max-raised 2 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc["mixed_precision"]["reached"].get<bool>());
  // Two nodes to int16, then those to float; a step that lowered the metric is undone.
  const auto& raised = doc["mixed_precision"]["raised"];
  ASSERT_GE(raised.size(), 2u);
  EXPECT_LE(raised.size(), 8u);
  std::set<std::string> nodes;
  for (const auto& step : raised) {
    const double before = step["metric_before"].get<double>();
    const double after = step["metric_after"].get<double>();
    EXPECT_EQ(step["kept"].get<bool>(), after >= before) << step.dump();
    if (step["kept"].get<bool>()) nodes.insert(step["node"].get<std::string>());
  }
  EXPECT_LE(nodes.size(), 2u);
  EXPECT_EQ(raised[0]["precision"], "int16");
  EXPECT_EQ(doc["accuracy"]["tasks"][0]["output"], "score");
}

TEST(CliQuantizeCalibrate, BadInputExitCodesAndNothingWritten) {
  TempDir tmp;
  std::string model = testing::TestData("demo_detector.onnx").string();
  fs::create_directories(tmp / "empty");
  auto r = RunPorttool("quantize-calibrate " + model + " --data " + (tmp / "empty").string() +
                       " --table " + (tmp / "t.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no samples"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "t.json"));
  WriteSamples(tmp / "data", 2);
  r = RunPorttool("quantize-calibrate " + model + " --data " + (tmp / "data").string() +
                  " --exclude-nodes nosuchnode --qdq " + (tmp / "q.onnx").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "q.onnx"));
  r = RunPorttool("quantize-calibrate " + model + " --data " + (tmp / "data").string() +
                  " --target-sqnr 30 --no-eval --qdq " + (tmp / "q.onnx").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("accuracy target needs evaluation samples"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "q.onnx"));
  // Task metrics and targets: usage errors (2) and unreadable labels or outputs (3), each naming
  // the culprit, and nothing written.
  const std::string base = "quantize-calibrate " + model + " --data " + (tmp / "data").string() +
                           " --qdq " + (tmp / "q.onnx").string() + " --table " +
                           (tmp / "t.json").string() + " ";
  testing::WriteFile(tmp / "unknown.json", R"({"s0": [[0, 0, 4, 4]], "nosuch": []})");
  testing::WriteFile(tmp / "malformed.json", R"({"s1": [[0, 0, 4]]})");
  const std::pair<std::string, std::pair<int, std::string>> cases[] = {
      {"--accuracy-target recall:0.9", {2, "unknown metric 'recall'"}},
      {"--accuracy-target hmean:1.5", {2, "hmean:1.5"}},
      {"--precision float:nosuch", {2, "'nosuch'"}},
      // The one --precision grammar (run, compare): fp32:NODES is kept float here too; a
      // whole-model fp16 and int8:NODES are not this command's.
      {"--precision fp32:nosuch", {2, "'nosuch'"}},
      {"--precision fp16", {2, "compare MODEL --precision fp16"}},
      {"--precision int8:head/Conv", {2, "float:NODES, int16:NODES"}},
      {"--task segment", {2, "'segment'"}},
      {"--task score:ctc", {3, "[N, T, C]"}},
      {"--task detect-db --labels " + (tmp / "unknown.json").string(), {3, "'nosuch'"}},
      {"--task detect-db --labels " + (tmp / "malformed.json").string(), {3, "'s1'"}},
  };
  for (const auto& [flags, expected] : cases) {
    r = RunPorttool(base + flags);
    EXPECT_EQ(r.exit_code, expected.first) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find(expected.second), std::string::npos) << flags << "\n" << r.err;
    EXPECT_FALSE(fs::exists(tmp / "q.onnx")) << flags;
    EXPECT_FALSE(fs::exists(tmp / "t.json")) << flags;
  }
  r = RunPorttool("quantize-calibrate " + model + " --method kl");
  EXPECT_EQ(r.exit_code, 2);
  r = RunPorttool("quantize-calibrate " + model);  // neither --data nor --table
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace porttool
