// port's verdict as gates (issue 48): "ready" only when the bundle fits the target's memory, its
// accuracy was judged and holds, the device's arithmetic is what was verified (or says it was
// not), and nothing is left before the device. A failing gate is exit 1 with the whole bundle
// written; a failed step prints the failure in place of a verdict and claims no file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

nlohmann::json ReadJson(const fs::path& path) {
  return nlohmann::json::parse(testing::ReadFile(path));
}

const nlohmann::json& GateOf(const nlohmann::json& doc, const std::string& id) {
  for (const auto& g : doc["gates"]) {
    if (g["id"] == id) return g;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no gate " << id << " in " << doc["gates"];
  return none;
}

std::string Port(const std::string& target, const std::string& pin, const fs::path& out) {
  return "port " + testing::DemoArg() + " --target " + target + " --input-shape " + pin + " -o " +
         out.string();
}

void WriteSamples(const fs::path& dir, int n, int64_t hw, float scale) {
  fs::create_directories(dir);
  std::mt19937_64 rng(7);
  for (int i = 0; i < n; ++i) {
    runtime::Tensor t = runtime::RandomTensor({"x", 1, {1, 3, hw, hw}, true}, rng);
    for (int64_t k = 0; k < t.size(); ++k) t.mutable_data<float>()[k] *= scale;
    runtime::WriteNpy(dir / fmt::format("{:04d}.images.npy", i), t);
  }
}

TEST(PortGates, ReadyWhenEveryGatePassesAndTheGatesArePrinted) {
  TempDir tmp;
  auto r = RunPorttool(Port("onnxruntime-cpu", "images:1x3x64x64", tmp / "b"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* gate : {"fit", "accuracy", "arithmetic", "completeness"}) {
    EXPECT_NE(r.out.find(std::string("  ") + gate), std::string::npos) << gate << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("verdict: ready: one accelerator segment"), std::string::npos) << r.out;
  nlohmann::json report = ReadJson(tmp / "b" / "report.json");
  EXPECT_EQ(report["status"], "ready");
  ASSERT_EQ(report["gates"].size(), 4u);
  for (const auto& g : report["gates"]) EXPECT_EQ(g["status"], "pass") << g;
  EXPECT_NE(testing::ReadFile(tmp / "b" / "report.md").find("| fit | pass |"), std::string::npos);
}

// The demo at 320x320 needs megabytes of activations; the Cortex-M7 has 358 KiB usable.
TEST(PortGates, ModelOverTheMcuMemoryDoesNotFitWithBothFigures) {
  TempDir tmp;
  auto r = RunPorttool(Port("stm32f767", "images:1x3x320x320", tmp / "b") + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["status"], "not-ready");
  const nlohmann::json& fit = GateOf(doc, "fit");
  EXPECT_EQ(fit["status"], "fail") << fit;
  EXPECT_NE(fit["finding"].get<std::string>().find("does not fit stm32f767: RAM"),
            std::string::npos)
      << fit;
  EXPECT_NE(fit["needed"].get<std::string>().find("RAM <= 358.40 KiB"), std::string::npos) << fit;
  EXPECT_EQ(doc["verdict"].get<std::string>().rfind("not ready (failed: fit", 0), 0u)
      << doc["verdict"];
  // The bundle is written: it is where the user reads why.
  nlohmann::json report = ReadJson(tmp / "b" / "report.json");
  EXPECT_EQ(report["status"], "not-ready");
  const nlohmann::json& figures = GateOf(report, "fit")["figures"];
  EXPECT_GT(figures["ram_bytes"].get<uint64_t>(), figures["usable_ram_bytes"].get<uint64_t>());
  EXPECT_EQ(figures["usable_ram_bytes"], static_cast<uint64_t>(524288 * 0.7));
  std::string html = testing::ReadFile(tmp / "b" / "report.html");
  EXPECT_NE(html.find("pt-verdict-fail"), std::string::npos);
  EXPECT_NE(html.find("pt-bar pt-bar-over"), std::string::npos);
}

// RK3588 runs an unquantized segment in float16: port runs the accelerator segments in float16
// (weights and op boundaries rounded, float32 accumulation) and judges what comes out.
TEST(PortGates, Fp16ArithmeticIsComputedAsTheNpuComputesIt) {
  TempDir tmp;
  // At 320x320 the convolutions go to the NPU (at 64x64 the cost model keeps all on the CPU).
  auto r = RunPorttool(Port("rknn-rk3588", "images:1x3x320x320", tmp / "b") + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& arithmetic = GateOf(doc, "arithmetic");
  EXPECT_EQ(arithmetic["status"], "pass") << arithmetic;
  EXPECT_NE(arithmetic["measured"].get<std::string>().find("float16 worst output"),
            std::string::npos)
      << arithmetic;
  EXPECT_NE(arithmetic["measured"].get<std::string>().find("0 overflow(s)"), std::string::npos);
  // A dry run computes nothing in float16: not evaluated, and nothing the user could do about it.
  r = RunPorttool(Port("rknn-rk3588", "images:1x3x320x320", tmp / "c") + " --dry-run --json");
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(GateOf(doc, "arithmetic")["status"], "not evaluated");
  EXPECT_EQ(GateOf(doc, "arithmetic")["blocking"], false);
}

// A model built to overflow float16 (x * 1000 * 1000 on inputs in [0, 1)): fine in float32, +inf
// on the NPU. The gate names the tensor and the node.
TEST(PortGates, Float16OverflowIsCaughtAndNamed) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) {
  k = Constant<value = float[1] {1000.0}>()
  big = Mul(x, k)
  huge = Mul(big, k)
  y = Relu(huge)
})");
  m.proto.mutable_graph()->mutable_node(2)->set_name("amplify");
  io::Save(m, tmp / "big.onnx");
  auto r = RunPorttool("port " + (tmp / "big.onnx").string() + " --target rknn-rk3588 -o " +
                       (tmp / "b").string() + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& arithmetic = GateOf(doc, "arithmetic");
  EXPECT_EQ(arithmetic["status"], "fail") << arithmetic;
  EXPECT_NE(arithmetic["finding"].get<std::string>().find("'huge' (node 'amplify') overflows"),
            std::string::npos)
      << arithmetic;
  // The same model on the CPU target runs float32: ready.
  r = RunPorttool("port " + (tmp / "big.onnx").string() + " --target onnxruntime-cpu -o " +
                  (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A one-value output (a wake-word score): its range over one sample is 0, so the error bound is a
// share of its magnitude, and float16 rounding (~1e-4 relative) passes where a share of 0 failed.
TEST(PortGates, Float16OnAOneValueOutputIsJudgedByItsMagnitude) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,320,320] x) => (float[1,1] y) {
  w = Constant<value = float[1,4,1,1] {0.3, 0.1, 0.7, 0.2}>()
  c = Conv(x, w)
  p = GlobalAveragePool(c)
  f = Flatten(p)
  y = Sigmoid(f)
})");
  io::Save(m, tmp / "score.onnx");
  auto r = RunPorttool("port " + (tmp / "score.onnx").string() + " --target rknn-rk3588 -o " +
                       (tmp / "b").string() + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& arithmetic = GateOf(doc, "arithmetic");
  EXPECT_EQ(arithmetic["status"], "pass") << arithmetic;
  EXPECT_NE(arithmetic["measured"].get<std::string>().find("float16 worst output"),
            std::string::npos)
      << arithmetic;
}

// A model that subtracts a large offset (as an input normalisation does): on [0, 1) inputs float16
// keeps almost nothing of x + 1000 (steps of 0.5), over 0..1000 it keeps enough. The failing
// gate names the input the check drew in [0, 1) and the flag that gives its real range, and the
// range given turns the same port ready.
TEST(PortGates, Float16FailureOnDefaultRandomInputsNamesTheInputRangeFlag) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,16,16] pixels) => (float[1,4,16,16] y) {
  k = Constant<value = float[1] {1000.0}>()
  shifted = Add(pixels, k)
  y = Sub(shifted, k)
})");
  io::Save(m, tmp / "offset.onnx");
  auto r = RunPorttool("port " + (tmp / "offset.onnx").string() + " --target rknn-rk3588 -o " +
                       (tmp / "a").string() + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json arithmetic = GateOf(nlohmann::json::parse(r.out), "arithmetic");
  EXPECT_EQ(arithmetic["status"], "fail") << arithmetic;
  EXPECT_NE(arithmetic["finding"].get<std::string>().find(
                "drew 'pixels' uniform in [0, 1): if the model reads another range"),
            std::string::npos)
      << arithmetic;
  r = RunPorttool("port " + (tmp / "offset.onnx").string() +
                  " --target rknn-rk3588 --input-range pixels=0:1000 -o " + (tmp / "b").string() +
                  " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(GateOf(nlohmann::json::parse(r.out), "arithmetic")["status"], "pass");
}

// RV1106's NPU has no float unit and no kernel for Erf: two gates fail, and both say what to do.
TEST(PortGates, FloatOnAnInt8OnlyNpuAndACustomOperatorLeftAreNotReady) {
  TempDir tmp;
  auto r = RunPorttool(Port("rknn-rv1106", "images:1x3x64x64", tmp / "b") + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(GateOf(doc, "arithmetic")["status"], "fail");
  EXPECT_NE(GateOf(doc, "arithmetic")["finding"].get<std::string>().find("calibration data"),
            std::string::npos);
  EXPECT_EQ(GateOf(doc, "completeness")["status"], "fail");
  EXPECT_NE(GateOf(doc, "completeness")["finding"].get<std::string>().find("Erf"),
            std::string::npos);
  EXPECT_TRUE(fs::is_directory(tmp / "b" / "custom-ops" / "Erf"));
}

// Calibrated on near-black images, evaluated on ordinary ones: the int8 ranges clip what the
// model meets, the outputs collapse, and without a task the similarity floor catches it.
TEST(PortGates, CollapsedInt8IsNotReadyAndTheCalibrationGapIsNamed) {
  TempDir tmp;
  WriteSamples(tmp / "calib", 4, 64, 1e-3f);
  WriteSamples(tmp / "eval", 2, 64, 1.0f);
  auto r = RunPorttool(Port("onnxruntime-cpu", "images:1x3x64x64", tmp / "b") + " --data " +
                       (tmp / "calib").string() + " --eval-data " + (tmp / "eval").string() +
                       " --method minmax --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& accuracy = GateOf(doc, "accuracy");
  EXPECT_EQ(accuracy["status"], "fail") << accuracy;
  EXPECT_NE(accuracy["needed"].get<std::string>().find("cosine >= 0.99"), std::string::npos);
  nlohmann::json report = ReadJson(tmp / "b" / "report.json");
  std::string notes = GateOf(report, "accuracy")["notes"].dump();
  EXPECT_NE(notes.find("fall outside the range calibrated for it"), std::string::npos) << notes;
  EXPECT_NE(notes.find("judged by output similarity only"), std::string::npos) << notes;
  // The same samples for both: nothing clips, the floor holds.
  r = RunPorttool(Port("onnxruntime-cpu", "images:1x3x64x64", tmp / "c") + " --data " +
                  (tmp / "eval").string() + " --eval-data " + (tmp / "eval").string() +
                  " --per-channel --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A failed step: the failure where the verdict would be, exit 3, no verdict, no "left", nothing
// written; --json has status "failed", no verdict key and an error naming the step.
TEST(PortGates, FailedStepPrintsTheFailureAndNoVerdict) {
  TempDir tmp;
  fs::create_directories(tmp / "empty");
  std::string args =
      Port("rknn-rv1106", "images:1x3x64x64", tmp / "b") + " --data " + (tmp / "empty").string();
  auto r = RunPorttool(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // The first step that reads the samples (equalization, on by default) is the failed one.
  EXPECT_NE(r.out.find("failed at step 'equalize'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  left: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("custom-ops"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "b"));
  r = RunPorttool(args + " --json");
  EXPECT_EQ(r.exit_code, 3);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["status"], "failed");
  EXPECT_FALSE(doc.contains("verdict"));
  EXPECT_FALSE(doc.contains("gates"));
  EXPECT_EQ(doc["error"]["step"], "equalize");
  EXPECT_EQ(doc["error"]["exit_code"], 3);
  EXPECT_FALSE(doc["error"]["message"].get<std::string>().empty());
}

// The real models on the microcontroller: neither PP-OCRv4 det's arena nor rec's weights fit.
TEST(PortGates, DetAndRecDoNotFitTheMicrocontroller) {
  fs::path models = testing::SharedModelsDir();
  if (!fs::is_directory(models)) PORTTOOL_SKIP_MISSING("no " << models);
  struct Case {
    const char* file;
    const char* pin;
    const char* over;
  };
  for (const Case& c : {Case{"ch_PP-OCRv4_det_infer.onnx", "x:1x3x640x640", "RAM"},
                        Case{"ch_PP-OCRv4_rec_infer.onnx", "x:1x3x48x320", "weights"}}) {
    SCOPED_TRACE(c.file);
    TempDir tmp;
    auto r = RunPorttool("port " + (models / c.file).string() + " --target stm32f767 --dry-run " +
                         "--input-shape " + c.pin + " --json");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    nlohmann::json doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["status"], "not-ready");
    const nlohmann::json& fit = GateOf(doc, "fit");
    EXPECT_EQ(fit["status"], "fail") << fit;
    EXPECT_NE(fit["measured"].get<std::string>().find("weights"), std::string::npos) << fit;
    EXPECT_NE(fit["needed"].get<std::string>().find("RAM <= 358.40 KiB"), std::string::npos) << fit;
  }
}

}  // namespace
}  // namespace porttool
