// `porttool port` end to end: every shipped target on the bundled demo and the real models in
// ../shared/models, checked structurally (every bundle file present, every path in pipeline.json
// inside the bundle, headers compiling as strict C99, the runner building and reproducing the
// model) and numerically (the onnxruntime-cpu bundle's segments chained in ONNX Runtime match the
// original model in ONNX Runtime). Also: byte-identical bundles for any --threads and -o name,
// a dry run that writes nothing, the existing-directory rule, and bad input that leaves no bundle.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

const char* kDemoPin = "--input-shape images:1x3x64x64";

// Under AddressSanitizer libporttool-runtime.so is instrumented, and a runner built by the system
// compiler does not carry the ASan runtime it needs: the runner builds are skipped there (the
// sanitizer job's own reason for leaving out EmitRunner.*); everything else runs.
using testing::kAsan;

nlohmann::json ReadJson(const fs::path& path) {
  return nlohmann::json::parse(testing::ReadFile(path));
}

std::vector<std::string> ShippedTargets() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "rules" / "targets")) {
    names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Nothing but `keep` in `dir`: no bundle, no staging directory left behind.
void ExpectOnly(const fs::path& dir, const std::set<std::string>& keep) {
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_TRUE(keep.count(e.path().filename().string())) << "left behind: " << e.path();
  }
}

std::string PkgConfig() {
  const char* dir = std::getenv("PORTTOOL_PKG_CONFIG_PATH");
  return std::string("PKG_CONFIG_PATH=") + (dir ? dir : "");
}

// The bundle layout of port.h: reports, log, pipeline.json whose every path is inside the bundle,
// a header per segment, the reference runner.
nlohmann::json ExpectBundle(const fs::path& bundle) {
  for (const char* f : {"pipeline.json", "report.md", "report.json", "report.html", "port.log",
                        "runner/reference/pipeline.h", "runner/reference/CMakeLists.txt"}) {
    EXPECT_TRUE(fs::is_regular_file(bundle / f)) << f;
  }
  nlohmann::json m = ReadJson(bundle / "pipeline.json");
  EXPECT_EQ(m["source"]["path"].get<std::string>().find('/'), std::string::npos) << m["source"];
  for (const auto& seg : m["segments"]) {
    std::string file = seg["file"];
    EXPECT_EQ(file.rfind("segments/", 0), 0u) << file;
    EXPECT_TRUE(fs::is_regular_file(bundle / file)) << file;
    std::string header = "headers/" + fs::path(file).stem().string() + ".h";
    EXPECT_TRUE(fs::is_regular_file(bundle / header)) << header;
  }
  nlohmann::json report = ReadJson(bundle / "report.json");
  EXPECT_EQ(report["format"], "porttool-port-report/1");
  EXPECT_FALSE(report["verdict"]["text"].get<std::string>().empty());
  EXPECT_EQ(report["steps"].size(), 7u) << report["steps"];
  return m;
}

// Each header on its own, as firmware would include it: strict C99, no warnings.
void ExpectHeadersCompile(const fs::path& bundle, const TempDir& tmp) {
  for (const auto& e : fs::directory_iterator(bundle / "headers")) {
    fs::path c = tmp / (e.path().stem().string() + "_use.c");
    testing::WriteFile(c, "#include \"" + e.path().string() + "\"\nint main(void) { return 0; }\n");
    auto r = RunShell("cc -std=c99 -pedantic -Wall -Wextra -Werror -c " + c.string() + " -o " +
                      (tmp / "use.o").string());
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.err;
  }
}

runtime::Tensor Random(const std::vector<int64_t>& dims, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return runtime::RandomTensor({"x", 1, dims, true}, rng);
}

double MaxAbs(const runtime::Tensor& a, const runtime::Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  }
  return m;
}

// `count` random demo inputs as calibration samples (<id>.images.npy) in tmp/samples.
fs::path WriteDemoSamples(const TempDir& tmp, int count) {
  fs::path samples = tmp / "samples";
  fs::create_directories(samples);
  for (int i = 0; i < count; ++i) {
    runtime::WriteNpy(samples / fmt::format("{:04d}.images.npy", i), Random({1, 3, 64, 64}, i));
  }
  return samples;
}

// Builds the reference runner with one compiler call (-Werror), runs it from the bundle root on
// `input`, and compares every output with porttool's executor on the original model.
void ExpectRunnerReproduces(const fs::path& bundle, const std::string& model,
                            const std::string& input_name, const std::vector<int64_t>& dims,
                            const std::string& pin, const TempDir& tmp) {
  if (kAsan) {
    // Marks the calling test skipped (with the bundle checks before this still asserted).
    GTEST_SKIP() << "runner not built under AddressSanitizer (an uninstrumented program cannot "
                    "link the instrumented library); the normal build runs it";
  }
  fs::path pkg = bundle / "runner" / "reference";
  fs::path exe = tmp / "runner";
  auto r = RunShell("cc -std=c99 -O2 -Wall -Wextra -Werror -I" + pkg.string() + " " + pkg.string() +
                    "/*.c $(" + PkgConfig() +
                    " pkg-config --cflags --libs porttool-runtime) -lm -o " + exe.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path in = tmp / "input.npy";
  runtime::WriteNpy(in, Random(dims, 7));
  r = RunShell("cd " + bundle.string() + " && " + exe.string() + " --input " + input_name + "=" +
               in.string() + " --output-dir " + (tmp / "runner.out").string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunPorttool("run " + model + " " + pin + " --input " + input_name + "=" + in.string() +
                  " --output-dir " + (tmp / "ref.out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : testing::RelativeFiles(tmp / "ref.out")) {
    double diff =
        MaxAbs(runtime::ReadNpy(tmp / "runner.out" / f), runtime::ReadNpy(tmp / "ref.out" / f));
    EXPECT_LE(diff, 1e-4) << f;
  }
}

// Every target gets a complete, working bundle, ready or not: RV1106 is not (its NPU runs no
// float and has no Erf), which its gates say with exit 1; the others are ready.
TEST(CliPort, DemoOnEveryShippedTargetGivesAWorkingBundle) {
  for (const auto& target : ShippedTargets()) {
    SCOPED_TRACE(target);
    TempDir tmp;
    fs::path bundle = tmp / "demo.port";
    auto r = RunPorttool("port " + testing::DemoArg() + " --target " + target + " " + kDemoPin +
                         " -o " + bundle.string());
    const bool ready = target != "rknn-rv1106";
    ASSERT_EQ(r.exit_code, ready ? 0 : 1) << r.out << r.err;
    EXPECT_EQ(ReadJson(bundle / "report.json")["status"], ready ? "ready" : "not-ready");
    EXPECT_NE(r.out.find("report: " + (bundle / "report.html").string()), std::string::npos)
        << r.out;
    ExpectBundle(bundle);
    ExpectHeadersCompile(bundle, tmp);
    ExpectRunnerReproduces(bundle, testing::DemoArg(), "images", {1, 3, 64, 64}, kDemoPin, tmp);
  }
}

TEST(CliPort, DemoOnRknnRewritesResizeAndGeluAndListsWhatRunsOnTheCpu) {
  TempDir tmp;
  fs::path bundle = tmp / "b";
  auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " -o " +
                       bundle.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["ok"]);
  ASSERT_EQ(doc["steps"].size(), 8u);
  for (const auto& s : doc["steps"]) EXPECT_TRUE(s["ms"].is_number()) << s;
  std::string rewrite = doc["steps"][2]["details"].dump();
  EXPECT_NE(rewrite.find("resize-nearest-half-pixel 1"), std::string::npos) << rewrite;
  EXPECT_NE(rewrite.find("decompose-gelu 1"), std::string::npos) << rewrite;
  // The decomposed GELU's Erf has only a CPU kernel on RKNN: it is listed, not hidden.
  EXPECT_NE(doc["left"].dump().find("Erf runs on the host CPU"), std::string::npos) << doc["left"];
  EXPECT_TRUE(fs::is_regular_file(bundle / "runner" / "rknn" / "pl_backend_rknn.c"));
  // Reports carry no timings: the steps in report.json have no "ms".
  nlohmann::json report = ReadJson(bundle / "report.json");
  EXPECT_EQ(report["steps"][0].count("ms"), 0u);
  EXPECT_EQ(report["source"]["file"], "demo_detector.onnx");
}

// The step of port's --json output with this id (null when it did not run).
nlohmann::json StepById(const nlohmann::json& doc, const std::string& id) {
  for (const auto& step : doc["steps"]) {
    if (step["id"] == id) return step;
  }
  return nullptr;
}

// A model no pass changes (named nodes, an opset the target takes, nothing to fold or fuse):
// simplify and rewrite say so and do not run the model against itself; the split after them
// still verifies the bundle against the model.
TEST(CliPort, StepsThatChangedNothingAreNotVerifiedAgain) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,16,16] x) => (float[1,8,16,16] y) {
  y = Relu(x)
})");
  m.proto.mutable_graph()->mutable_node(0)->set_name("act");
  io::Save(m, tmp / "relu.onnx");
  auto r = RunPorttool("port " + (tmp / "relu.onnx").string() + " --target rknn-rk3588 -o " +
                       (tmp / "b").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_GE(doc["steps"].size(), 4u);
  for (int i : {1, 2}) {
    const std::string details = doc["steps"][i]["details"].dump();
    EXPECT_NE(details.find("not verified again: no pass changed the model"), std::string::npos)
        << details;
    EXPECT_EQ(details.find("verified: "), std::string::npos) << details;
    EXPECT_EQ(doc["steps"][i]["verify_ms"], 0.0) << doc["steps"][i];
  }
  // Verification time is reported apart from each step's time, and is part of it.
  const nlohmann::json split = StepById(doc, "split");
  EXPECT_GT(split["verify_ms"].get<double>(), 0.0) << split;
  for (const auto& step : doc["steps"]) {
    EXPECT_LE(step["verify_ms"].get<double>(), step["ms"].get<double>()) << step;
  }
  EXPECT_NE(split["details"].dump().find("reproduce the model's 1 output(s) bit for bit"),
            std::string::npos)
      << split;
}

int EquivalenceChecks(const nlohmann::json& doc) {
  int n = 0;
  for (const auto& step : doc["steps"]) n += step["equivalence_checks"].get<int>();
  return n;
}

// Simplify and the rewrites change the demo (fusions, the Gelu decomposed, the opset raised): each
// gets the ONNX checker at once, and the outputs are compared once, the chained segments against
// the original model, with a result line that says what was compared.
TEST(CliPort, AnEquivalentPortComparesTheOutputsOnceEndToEnd) {
  TempDir tmp;
  fs::path bundle = tmp / "b";
  auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " -o " +
                       bundle.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_GE(doc["steps"].size(), 4u);
  for (int i : {1, 2}) {
    const nlohmann::json& step = doc["steps"][i];
    const std::string details = step["details"].dump();
    EXPECT_NE(details.find("passes the ONNX checker; its outputs are left to the one end-to-end "
                           "comparison after the split"),
              std::string::npos)
        << details;
    // Nothing claims a comparison that did not run.
    EXPECT_EQ(details.find("verified"), std::string::npos) << details;
    EXPECT_EQ(step["equivalence_checks"], 0) << step;
    EXPECT_GT(step["verify_ms"].get<double>(), 0.0) << step;  // the checker's time
  }
  const nlohmann::json split = StepById(doc, "split");
  EXPECT_EQ(split["equivalence_checks"], 1) << split;
  EXPECT_EQ(EquivalenceChecks(doc), 1) << doc["steps"];
  const std::string details = split["details"].dump();
  EXPECT_NE(details.find("verified end to end: the 2 chained segment(s) reproduce the 1 "
                         "output(s) of the original model (as check pinned it, before simplify "
                         "and the target's rewrites) within rtol 0.0001 atol 1e-05 (worst: "
                         "output 'score', max abs "),
            std::string::npos)
      << details;
  const std::string log = testing::ReadFile(bundle / "port.log");
  EXPECT_NE(log.find(", 1 equivalence check(s)): scan the target"), std::string::npos) << log;
}

// A Gelu the profile's rewrite turns into its tanh approximation (4.7e-4 off, beyond the
// tolerance): the end-to-end comparison misses, the steps are verified one by one (simplify only
// named the node: exact), and the port fails at the rewrite in the words and with the exit code
// of verifying after each step; nothing is written.
TEST(CliPort, AStepThatBreaksTheOutputsIsNamedAfterTheEndToEndMiss) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
g (float[1,8,16,16] x) => (float[1,8,16,16] y) {
  y = com.microsoft.Gelu(x)
})");
  io::Save(m, tmp / "gelu.onnx");
  fs::copy(testing::SourceDir() / "rules" / "targets" / "onnxruntime-cpu.json", tmp.path());
  testing::WriteFile(tmp / "tanh-cpu.json", R"({"schema": "porttool.target/1", "name": "tanh-cpu",
    "extends": "onnxruntime-cpu", "rewrites": "gelu-to-tanh"})");
  fs::path bundle = tmp / "b";
  auto r = RunPorttool("port " + (tmp / "gelu.onnx").string() + " --target " +
                       (tmp / "tanh-cpu.json").string() + " --input-range x=-3:3 -o " +
                       bundle.string() + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("port failed at step 'rewrite': the target's rewrites changed output 'y' "
                       "beyond rtol 0.0001 atol 1e-05 (max abs "),
            std::string::npos)
      << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["error"]["step"], "rewrite") << doc["error"];
  ASSERT_EQ(doc["steps"].size(), 5u) << doc["steps"];
  EXPECT_EQ(doc["steps"][1]["outcome"], "ok");
  EXPECT_EQ(doc["steps"][2]["outcome"], "failed");
  const std::string split = StepById(doc, "split")["details"].dump();
  for (const char* line : {"verify: end to end: the chained segments changed output 'y' beyond",
                           "verifying each step against the model before it",
                           "verify: simplify alone: within rtol 0.0001 atol 1e-05 of the model "
                           "before it (max abs 0)",
                           "verify: step 'rewrite' broke the outputs"}) {
    EXPECT_NE(split.find(line), std::string::npos) << line << "\n" << split;
  }
  // The end-to-end comparison, then simplify's and the rewrites' on their own.
  EXPECT_EQ(EquivalenceChecks(doc), 3) << doc["steps"];
  EXPECT_FALSE(fs::exists(bundle));

  // A tolerance no fusion keeps: simplify is the culprit, as it was when it verified itself.
  r = RunPorttool("port " + testing::DemoArg() + " --target onnxruntime-cpu " + kDemoPin +
                  " --rtol 0 --atol 0 -o " + (tmp / "d").string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("failed at step 'simplify': simplify changed output 'score' beyond rtol 0 "
                       "atol 0 (max abs "),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(tmp / "d"));
}

// Seven Erf nodes on the host CPU: the verdict's "left" line names five and counts the rest (a
// real model listed 119 names in one line); report.json keeps every name.
TEST(CliPort, LeftLinesNameTheFirstFewNodesAndCountTheRest) {
  TempDir tmp;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,4,4] x) => (float[1,8,4,4] y) {
  a1 = Erf(x)
  a2 = Erf(a1)
  a3 = Erf(a2)
  a4 = Erf(a3)
  a5 = Erf(a4)
  a6 = Erf(a5)
  y = Erf(a6)
})");
  for (int i = 0; i < 7; ++i) {
    m.proto.mutable_graph()->mutable_node(i)->set_name("erf" + std::to_string(i));
  }
  io::Save(m, tmp / "erfs.onnx");
  fs::path bundle = tmp / "b";
  auto r = RunPorttool("port " + (tmp / "erfs.onnx").string() + " --target rknn-rk3588 -o " +
                       bundle.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(7 node(s): erf0, erf1, erf2, erf3, erf4 and 2 more)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("erf5"), std::string::npos) << r.out;
  nlohmann::json report = ReadJson(bundle / "report.json");
  EXPECT_NE(report["left"].dump().find("erf6"), std::string::npos) << report["left"];
}

TEST(CliPort, TargetWithoutTheOpGetsACustomOperatorPackage) {
  TempDir tmp;
  fs::path bundle = tmp / "b";
  // rknn-rv1106 has no CPU kernel for Erf: a custom operator is what is left.
  auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rv1106 " + kDemoPin + " -o " +
                       bundle.string());
  // The package is written, and a custom operator left is not ready.
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("custom operator Erf to write (custom-ops/Erf/)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::is_regular_file(bundle / "custom-ops" / "Erf" / "op.json"));
  EXPECT_TRUE(fs::is_directory(bundle / "custom-ops" / "Erf" / "test" / "kit"));
  nlohmann::json report = ReadJson(bundle / "report.json");
  ASSERT_EQ(report["left"].size(), 1u) << report["left"];
  EXPECT_EQ(report["left"][0]["kind"], "custom-op");
  EXPECT_EQ(report["left"][0]["package"], "custom-ops/Erf");
  EXPECT_EQ(report["left"][0]["signature"]["op_type"], "Erf");
}

// Calibrating: one table for every segment, accuracy end to end through the chain, and a bundle
// that is byte-identical for any --threads and any -o name (port.log, with its timings, aside).
TEST(CliPort, CalibratedBundleIsTheSameForAnyThreadsAndOutputName) {
  TempDir tmp;
  const fs::path samples = WriteDemoSamples(tmp, 8);
  std::string args = "port " + testing::DemoArg() + " --target onnxruntime-cpu " + kDemoPin +
                     " --data " + samples.string() + " --per-channel";
  std::string model_bytes = testing::ReadFile(testing::DemoModelPath());
  auto a = RunPorttool(args + " --threads 1 -o " + (tmp / "a.port").string());
  EXPECT_EQ(testing::ReadFile(testing::DemoModelPath()), model_bytes) << "port wrote its input";
  ASSERT_EQ(a.exit_code, 0) << a.err;
  fs::create_directories(tmp / "elsewhere");
  auto b = RunPorttool(args + " --threads 2 -o " + (tmp / "elsewhere" / "other").string());
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::vector<std::string> files = testing::RelativeFiles(tmp / "a.port");
  EXPECT_EQ(files, testing::RelativeFiles(tmp / "elsewhere" / "other"));
  for (const auto& f : files) {
    if (f == "port.log") continue;
    EXPECT_EQ(testing::ReadFile(tmp / "a.port" / f),
              testing::ReadFile(tmp / "elsewhere" / "other" / f))
        << f;
  }
  for (const char* f : {"calibration.json", "segments/00_accelerator.qdq.onnx"}) {
    EXPECT_TRUE(fs::is_regular_file(tmp / "a.port" / f)) << f;
  }
  for (const auto& f : files) {
    std::string text = testing::ReadFile(tmp / "a.port" / f);
    if (f == "port.log") continue;
    EXPECT_EQ(text.find(tmp.path().string()), std::string::npos) << f << " names the temp dir";
    EXPECT_EQ(text.find("a.port"), std::string::npos) << f << " names the bundle directory";
  }
  nlohmann::json report = ReadJson(tmp / "a.port" / "report.json");
  const auto& q = report["quantization"];
  EXPECT_EQ(q["qdq_segments"]["0"], "segments/00_accelerator.qdq.onnx");
  ASSERT_FALSE(q["accuracy"].is_null());
  EXPECT_EQ(q["accuracy"]["samples"], 2);
  EXPECT_GT(q["accuracy"]["outputs"][0]["sqnr_db"].get<double>(), 20) << q;
  nlohmann::json m = ReadJson(tmp / "a.port" / "pipeline.json");
  EXPECT_EQ(m["quantization"]["table"], "calibration.json");
}

// Conv A (2 -> 3 channels) whose output channels differ 40x in range, read only by a depthwise
// Conv B: the pair channel equalization rescales (lib/quant/equalize.h).
const char* kConvPairModel = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1,2,6,6] x) => (float[1,3,6,6] z) {
  wa = Constant <value = float[3,2,1,1] {4.0, -2.0, 0.1, 0.05, -1.0, 0.5}> ()
  ba = Constant <value = float[3] {0.5, 0.01, -0.1}> ()
  y = Conv (x, wa, ba)
  wb = Constant <value = float[3,1,3,3] {0.1, 0.2, 0.1, 0.0, 0.5, -0.3, 0.2, 0.1, 0.1,
      0.3, -0.2, 0.1, 0.4, 0.5, 0.3, -0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.9, 0.2, 0.1, 0.1, 0.1}> ()
  z = Conv <group = 3, pads = [1, 1, 1, 1]> (y, wb)
})";

// The raw bytes of each initializer of a bundle's file, by name.
std::map<std::string, std::string> InitializerBytes(const fs::path& file) {
  std::map<std::string, std::string> out;
  const io::Model model = io::Load(file);
  for (const auto& t : model.proto.graph().initializer()) out[t.name()] = t.raw_data();
  return out;
}

double OutputSqnr(const fs::path& bundle) {
  return ReadJson(bundle / "report.json")["quantization"]["accuracy"]["outputs"][0]["sqnr_db"]
      .get<double>();
}

// Both weight remedies of quantize-calibrate in the one-command path, on by default: equalization
// before the split (the segments are cut from the rescaled model and verified end to end against
// the original), bias correction applied to each quantized segment with the whole model's means.
TEST(CliPort, EqualizeAndBiasCorrectionReachTheQuantizedSegments) {
  TempDir tmp;
  io::Model pair = io::ParseText(kConvPairModel);
  for (int i = 0; auto& n : *pair.proto.mutable_graph()->mutable_node()) {
    n.set_name(fmt::format("n{}", i++));
  }
  io::Save(pair, tmp / "pair.onnx");
  fs::path samples = tmp / "samples";
  fs::create_directories(samples);
  for (int i = 0; i < 8; ++i) {
    runtime::WriteNpy(samples / fmt::format("{:04d}.x.npy", i), Random({1, 2, 6, 6}, i));
  }
  const std::string args = "port " + (tmp / "pair.onnx").string() +
                           " --target rknn-rk3588 --method percentile --data " + samples.string();
  const std::string neither = " --no-equalize --no-bias-correction";
  auto plain = RunPorttool(args + neither + " --json -o " + (tmp / "plain").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto both = RunPorttool(args + " --threads 1 --json -o " + (tmp / "both").string());
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const nlohmann::json doc = nlohmann::json::parse(both.out);
  const nlohmann::json equalize = StepById(doc, "equalize");
  EXPECT_EQ(equalize["outcome"], "ok") << doc["steps"];
  EXPECT_NE(equalize["details"].dump().find("rescaled per channel"), std::string::npos) << equalize;
  EXPECT_NE(StepById(doc, "split")["details"].dump().find("verified end to end"), std::string::npos)
      << doc["steps"];
  EXPECT_EQ(StepById(nlohmann::json::parse(plain.out), "equalize")["outcome"], "skipped");
  // The equalized channels gain resolution: the quantized segment is measurably closer.
  EXPECT_GT(OutputSqnr(tmp / "both"), OutputSqnr(tmp / "plain") + 6);
  // Rescaled weights and corrected biases are in the segment the bundle ships.
  const fs::path qdq = "segments/00_accelerator.qdq.onnx";
  auto a = InitializerBytes(tmp / "plain" / qdq), b = InitializerBytes(tmp / "both" / qdq);
  int differ = 0;
  for (const auto& [name, bytes] : a) differ += b.count(name) && b.at(name) != bytes;
  EXPECT_GE(differ, 2);
  const nlohmann::json q = ReadJson(tmp / "both" / "report.json")["quantization"];
  EXPECT_EQ(q["equalized"], nlohmann::json::array({"y"})) << q;
  EXPECT_EQ(q["bias_correction"], true) << q;
  EXPECT_EQ(ReadJson(tmp / "plain" / "report.json")["quantization"]["bias_correction"], false);
  // Bias correction alone changes the biases of the quantized convs.
  auto bc = RunPorttool(args + " --no-equalize -o " + (tmp / "bc").string());
  ASSERT_EQ(bc.exit_code, 0) << bc.err;
  EXPECT_NE(InitializerBytes(tmp / "bc" / qdq), a);
  // The same bundle for any thread count.
  auto two =
      RunPorttool(args + " --equalize --bias-correction --threads 2 -o " + (tmp / "two").string());
  ASSERT_EQ(two.exit_code, 0) << two.err;
  for (const char* f : {"segments/00_accelerator.qdq.onnx", "calibration.json", "report.json"}) {
    EXPECT_EQ(testing::ReadFile(tmp / "both" / f), testing::ReadFile(tmp / "two" / f)) << f;
  }
}

// The demo has no conv pair to equalize: the step says so and the port goes on.
TEST(CliPort, EqualizeOnTheDemoSaysWhenNothingIsRescaled) {
  TempDir tmp;
  const fs::path samples = WriteDemoSamples(tmp, 4);
  auto r =
      RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " --data " +
                  samples.string() + " --per-channel --equalize --bias-correction --json -o " +
                  (tmp / "b").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json equalize = StepById(doc, "equalize");
  EXPECT_EQ(equalize["outcome"], "skipped") << equalize;
  EXPECT_NE(equalize["details"].dump().find("no conv pair to equalize"), std::string::npos);
  EXPECT_EQ(StepById(doc, "quantize")["outcome"], "ok") << doc["steps"];
  // Without per-channel weights equalization would cost precision: skipped, with the reason.
  r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " --data " +
                  samples.string() + " --per-tensor --json -o " + (tmp / "c").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      StepById(nlohmann::json::parse(r.out), "equalize")["details"].dump().find("per-channel"),
      std::string::npos);
}

// A float port to a target that computes float in float16 is judged on the user's samples too:
// the chain with its accelerator segments in float16 against the float model, in the step's
// lines, report.json and the arithmetic gate. On a float32 target there is nothing to judge.
TEST(CliPort, AFloatPortIsJudgedInFloat16OnTheEvaluationSamples) {
  TempDir tmp;
  const fs::path samples = WriteDemoSamples(tmp, 3);
  const std::string port = "port " + testing::DemoArg() + " " + kDemoPin + " --eval-data " +
                           samples.string() + " --json --target ";
  auto r = RunPorttool(port + "rknn-rk3588 -o " + (tmp / "b").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const std::string split = StepById(doc, "split")["details"].dump();
  EXPECT_NE(split.find("float16 on 3 evaluation sample(s), against the float model"),
            std::string::npos)
      << split;
  EXPECT_EQ(StepById(doc, "quantize")["outcome"], "skipped");
  const nlohmann::json fp16 = ReadJson(tmp / "b" / "report.json")["float16"];
  ASSERT_TRUE(fp16["evaluation"].is_object()) << fp16;
  EXPECT_EQ(fp16["evaluation"]["samples"], 3);
  const double sqnr = fp16["evaluation"]["outputs"][0]["sqnr_db"].get<double>();
  // float16 keeps about 11 bits: far from exact, far from broken.
  EXPECT_GT(sqnr, 40) << fp16;
  EXPECT_LT(sqnr, 140) << fp16;
  EXPECT_EQ(fp16["overflows"].size(), 0u);
  r = RunPorttool(port + "onnxruntime-cpu -o " + (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("computes fp32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "c"));
  r = RunPorttool("port " + testing::DemoArg() + " " + kDemoPin +
                  " --target rknn-rk3588 --accuracy-target sqnr:30 -o " + (tmp / "d").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--data"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "d"));
}

// A missed target fails the accuracy gate: exit 1 with the whole bundle written, for the user to
// read why.
TEST(CliPort, AccuracyTargetMissedIsExitOneWithTheBundleWritten) {
  TempDir tmp;
  const fs::path samples = WriteDemoSamples(tmp, 4);
  std::string args = "port " + testing::DemoArg() + " --target onnxruntime-cpu " + kDemoPin +
                     " --data " + samples.string();
  auto r =
      RunPorttool(args + " --accuracy-target sqnr:150 --max-raised 1 -o " + (tmp / "b").string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("accuracy target sqnr:150 NOT reached"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: not ready (failed: accuracy)"), std::string::npos) << r.out;
  nlohmann::json report = ReadJson(tmp / "b" / "report.json");
  EXPECT_EQ(report["status"], "not-ready");
  EXPECT_EQ(report["gates"][1]["id"], "accuracy");
  EXPECT_EQ(report["gates"][1]["status"], "fail");
  EXPECT_EQ(report["gates"][1]["needed"], "sqnr >= 150 (the accuracy target)");
  r = RunPorttool(args + " --accuracy-target sqnr:5 -o " + (tmp / "b2").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("accuracy target sqnr:5 reached"), std::string::npos) << r.out;
  r = RunPorttool(args + " --accuracy-target acc:0.99 -o " + (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown metric 'acc'"), std::string::npos) << r.err;
  // A task metric no output reports: the task it needs is named.
  r = RunPorttool(args + " --accuracy-target top1:0.99 -o " + (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--task classify"), std::string::npos) << r.err;
  // Kept float by hand: a node the model lacks is a usage error naming it.
  r = RunPorttool(args + " --precision float:head/Konv -o " + (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("head/Konv"), std::string::npos) << r.err;
  r = RunPorttool(args + " --precision float:head/Conv -o " + (tmp / "c").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(tmp / "c" / "report.json")["quantization"]["kept_float"],
            nlohmann::json::array({"head/Conv"}));
}

TEST(CliPort, DryRunPrintsThePlanAndWritesNothing) {
  TempDir tmp;
  auto r = RunShell("cd " + tmp.path().string() + " && " + testing::PorttoolBin() + " port " +
                    testing::DemoArg() +
                    " --target rknn-rk3588 --input-shape images:1x3x320x320 --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 segment(s): 00_accelerator"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("planned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing written"), std::string::npos) << r.out;
  ExpectOnly(tmp.path(), {});
}

// An earlier bundle is replaced only with --force; a directory porttool did not write never
// (docs/cli/safety.md; the rule's own tests are CliSafety.*).
// A float port (no --data) quantizes nothing: a flag choosing what stays float would be ignored
// and the node it names never checked ('#-1' passed unnoticed). Each is a usage error naming
// --data, and nothing is written.
TEST(CliPort, QuantizationChoicesWithoutDataAreUsageErrors) {
  TempDir tmp;
  for (const char* flag :
       {"--precision float:#-1", "--exclude-nodes stem/Conv", "--exclude-ops Conv"}) {
    SCOPED_TRACE(flag);
    auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " " +
                         flag + " -o " + (tmp / "b").string());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("need --data DIR"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / "b"));
  }
}

TEST(CliPort, ExistingDirectoryIsUsageErrorUnlessForced) {
  TempDir tmp;
  fs::path bundle = tmp / "b";
  fs::create_directories(bundle);
  testing::WriteFile(bundle / "mine.txt", "keep");
  std::string args = "port " + testing::DemoArg() + " --target onnxruntime-cpu " + kDemoPin +
                     " -o " + bundle.string();
  for (const char* force : {"", " --force"}) {
    auto r = RunPorttool(args + force);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("porttool did not write it"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::ReadFile(bundle / "mine.txt"), "keep");
  fs::remove_all(bundle);
  ASSERT_EQ(RunPorttool(args).exit_code, 0);
  testing::WriteFile(bundle / "mine.txt", "from an earlier run");
  auto r = RunPorttool(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  r = RunPorttool(args + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(bundle / "mine.txt"));
  EXPECT_TRUE(fs::exists(bundle / "report.html"));
  ExpectOnly(tmp.path(), {"b"});
}

TEST(CliPort, BadInputGetsItsExitCodeNamesTheCulpritAndLeavesNoBundle) {
  TempDir tmp;
  std::string demo = testing::ReadFile(testing::DemoModelPath());
  testing::WriteFile(tmp / "broken.onnx", demo.substr(0, demo.size() / 2));
  // A profile extending the shipped one with a rewrites list naming no pass.
  fs::path rules = tmp / "rules";
  fs::create_directories(rules);
  fs::copy(testing::SourceDir() / "rules" / "targets" / "rknn-rk3588.json", rules);
  testing::WriteFile(rules / "bad-rewrites.json",
                     R"({"schema": "porttool.target/1", "name": "bad-rewrites",
  "extends": "rknn-rk3588", "rewrites": "decompose-gelu,resize-to-nowhere"})");
  fs::path samples = tmp / "samples";
  fs::create_directories(samples);
  runtime::WriteNpy(samples / "0000.pixels.npy", Random({1, 3, 64, 64}, 1));
  struct Case {
    std::string args;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {(tmp / "broken.onnx").string() + " --target rknn-rk3588 " + kDemoPin, 3, "broken.onnx"},
      {testing::DemoArg() + " --target rknn-rk3599 " + kDemoPin, 2, "did you mean 'rknn-rk3588'"},
      {testing::DemoArg() + " --target " + (rules / "bad-rewrites.json").string() + " " + kDemoPin,
       3, "bad-rewrites.json:2: at /rewrites: unknown pass 'resize-to-nowhere'"},
      {testing::DemoArg() + " --target rknn-rk3588", 2, "images[0]=N"},
      {testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " --data " + samples.string(), 3,
       "pixels"},
      {testing::DemoArg() + " --target rknn-rk3588 --input-shape pictures:1x3x64x64", 2,
       "pictures"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = RunPorttool("port " + c.args + " -o " + (tmp / "out.port").string());
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    ExpectOnly(tmp.path(), {"broken.onnx", "rules", "samples"});
  }
  // With --keep-failed the partial bundle stays, and its path is printed.
  auto r =
      RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " --data " +
                  samples.string() + " --keep-failed -o " + (tmp / "out.port").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto at = r.err.find("the partial bundle is kept in ");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string kept = r.err.substr(at + 30, r.err.find('\n', at) - at - 30);
  EXPECT_TRUE(fs::is_regular_file(fs::path(kept) / "port.log")) << kept;
  EXPECT_FALSE(fs::exists(tmp / "out.port"));
}

TEST(CliPort, TargetDefaultInputShapePinsWhenNoneIsGiven) {
  TempDir tmp;
  fs::copy(testing::SourceDir() / "rules" / "targets" / "rknn-rk3588.json", tmp.path());
  testing::WriteFile(tmp / "rk-cam.json", R"({"schema": "porttool.target/1", "name": "rk-cam",
  "extends": "rknn-rk3588", "default_input_shape": "*:1x3x96x96"})");
  auto r = RunPorttool("port " + testing::DemoArg() + " --target " +
                       (tmp / "rk-cam.json").string() + " -o " + (tmp / "b").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pinned images:1x3x96x96 (from the target profile's default_input_shape)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ReadJson(tmp / "b" / "report.json")["input_shapes"]["images"],
            nlohmann::json::array({1, 3, 96, 96}));
}

// ---- the real models ----------------------------------------------------------------------------

struct RealModel {
  const char* file;
  const char* input;
  std::vector<int64_t> dims;
};

const RealModel kRealModels[] = {
    {"ch_PP-OCRv4_det_infer.onnx", "x", {1, 3, 640, 640}},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}},
    {"hey_jarvis_v0.1.onnx", "x.1", {}},
};

std::string PinFor(const RealModel& m) {
  return m.dims.empty() ? "" : fmt::format("--input-shape {}:{}", m.input, fmt::join(m.dims, "x"));
}

// The onnxruntime-cpu bundle's segments, chained in ONNX Runtime, against the original model
// in ONNX Runtime on the same input.
void ExpectOrtChainMatches(const fs::path& bundle, const fs::path& model, const std::string& input,
                           const TempDir& tmp) {
  std::string node = testing::OrtRunCommand();
  std::string in = " --input " + input + "=" + (tmp / "input.npy").string();
  auto r = RunShell(node + " " + model.string() + in + " --output-dir " + (tmp / "ort.a").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunShell(node + " --pipeline " + (bundle / "pipeline.json").string() + in + " --output-dir " +
               (tmp / "ort.b").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : testing::RelativeFiles(tmp / "ort.a")) {
    runtime::Tensor a = runtime::ReadNpy(tmp / "ort.a" / f),
                    b = runtime::ReadNpy(tmp / "ort.b" / f);
    double range = 0;
    for (int64_t i = 0; i < a.size(); ++i)
      range = std::max(range, std::fabs(double(a.data<float>()[i])));
    EXPECT_LE(MaxAbs(a, b), 1e-5 * std::max(range, 1.0)) << f;
  }
}

TEST(CliPort, RealModelsOnRknnAndOnnxRuntime) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models is absent");
  std::string ort = testing::OrtUnavailableReason();
  for (const auto& m : kRealModels) {
    for (const char* target : {"rknn-rk3588", "onnxruntime-cpu"}) {
      SCOPED_TRACE(std::string(m.file) + " on " + target);
      TempDir tmp;
      fs::path bundle = tmp / "b";
      std::string model = (models / m.file).string();
      auto r = RunPorttool("port " + model + " --target " + target + " " + PinFor(m) + " -o " +
                           bundle.string());
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      nlohmann::json manifest = ExpectBundle(bundle);
      ExpectHeadersCompile(bundle, tmp);
      std::vector<int64_t> dims = m.dims.empty() ? std::vector<int64_t>{1, 16, 96} : m.dims;
      ExpectRunnerReproduces(bundle, model, m.input, dims, PinFor(m), tmp);
      if (std::string(m.file) == "ch_PP-OCRv4_det_infer.onnx" &&
          std::string(target) == "rknn-rk3588") {
        // The 6 asymmetric nearest Resize and opset 11 have exact remedies: one NPU segment.
        ASSERT_EQ(manifest["segments"].size(), 1u) << manifest["segments"];
        EXPECT_EQ(manifest["segments"][0]["role"], "accelerator");
      }
      if (std::string(target) == "onnxruntime-cpu") {
        EXPECT_EQ(manifest["segments"].size(), 1u);
        if (!ort.empty()) {
          std::cout << "skipping the ONNX Runtime chain check: " << ort << "\n";
          continue;
        }
        ExpectOrtChainMatches(bundle, model, m.input, tmp);
      }
    }
  }
  if (!ort.empty()) PORTTOOL_SKIP_MISSING(ort << " (the structural checks ran)");
}

// The visible text of a dumped DOM: scripts and styles dropped, tags removed, entities kept.
std::string VisibleText(std::string dom) {
  for (const char* tag : {"script", "style"}) {
    const std::string open = std::string("<") + tag, close = std::string("</") + tag + ">";
    for (size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at)) {
      size_t end = dom.find(close, at);
      dom.erase(at, end == std::string::npos ? std::string::npos : end + close.size() - at);
    }
  }
  std::string text;
  bool in_tag = false;
  for (char c : dom) {
    if (c == '<') in_tag = true;
    if (!in_tag) text += c;
    if (c == '>') in_tag = false;
  }
  return text;
}

// The page in a real browser: no console errors, one SVG element per (collapsed) node, the gates
// first with every gate shown, no backslash escape anywhere a person reads, and the banner drawn
// in the colour of the verdict (green ready, amber ready with caveats, red not ready).
TEST(CliPort, ReportPageRendersInChromiumWithOneElementPerBox) {
  fs::path script = testing::SourceDir() / "scripts" / "render_html.sh";
  struct Case {
    std::string model, args, banner;
  };
  std::vector<Case> cases = {
      {testing::DemoArg(), std::string("--target rknn-rk3588 ") + kDemoPin, "rgb(249, 168, 37)"},
      {testing::DemoArg(), "--target stm32f767 --input-shape images:1x3x320x320",
       "rgb(198, 40, 40)"},
      {testing::DemoArg(), std::string("--target onnxruntime-cpu ") + kDemoPin,
       "rgb(46, 125, 50)"}};
  fs::path shared = testing::SharedModelsDir();
  if (!shared.empty()) {
    // One float16 segment, every gate passing with nothing left: green.
    cases.push_back({(shared / "ch_PP-OCRv4_det_infer.onnx").string(),
                     "--target rknn-rk3588 --input-shape x:1x3x640x640", "rgb(46, 125, 50)"});
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model + " " + c.args);
    TempDir tmp;
    auto r = RunPorttool("port " + c.model + " " + c.args + " -o " + (tmp / "b").string());
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    std::string html = testing::ReadFile(tmp / "b" / "report.html");
    size_t boxes = 0;
    for (size_t at = html.find("<g class=\"node\""); at != std::string::npos;
         at = html.find("<g class=\"node\"", at + 1)) {
      ++boxes;
    }
    EXPECT_GT(boxes, 0u);
    // Self-contained: nothing fetched (the SVG namespace URI is a name, not a request).
    for (const char* fetch : {"src=\"http", "href=\"http", "url(", "@import"}) {
      EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
    }
    EXPECT_EQ(html.find('\\'), std::string::npos) << "a backslash in report.html";
    r = RunShell(script.string() + " " + (tmp / "b" / "report.html").string() + " " +
                 (tmp / "page.png").string() + " " + (tmp / "dom.html").string());
    if (r.exit_code == 77) PORTTOOL_SKIP_MISSING(r.out << r.err);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("console errors 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(fmt::format("boxes {}\n", boxes)), std::string::npos) << r.out;
    EXPECT_GT(fs::file_size(tmp / "page.png"), 10000u);
    std::string dom = testing::ReadFile(tmp / "dom.html");
    EXPECT_NE(dom.find("data-pt-banner=\"" + c.banner + "\""), std::string::npos)
        << dom.substr(0, dom.find('>') + 1);
    std::string text = VisibleText(dom);
    EXPECT_EQ(text.find('\\'), std::string::npos) << "a backslash a person reads";
    size_t gates = dom.find("<section id=\"pt_lead_0\">\n<h2>Gates</h2>");
    ASSERT_NE(gates, std::string::npos);
    EXPECT_LT(gates, dom.find("id=\"pt_graph_section\"")) << "the gates come first";
    std::string table = VisibleText(dom.substr(gates, dom.find("</table>", gates) - gates));
    for (const char* gate : {"fit", "accuracy", "arithmetic", "completeness"}) {
      EXPECT_NE(table.find(gate), std::string::npos) << gate << " not in " << table;
    }
  }
}

// ---- a voice-activity detector with Ifs (testdata/vad.onnx, scripts/gen_vad_model.py) ----------

std::string VadArg() { return testing::ShellQuote(testing::TestData("vad.onnx")); }

// The largest difference between the .npy outputs ONNX Runtime wrote to two directories.
double MaxAbsBetween(const fs::path& a, const fs::path& b) {
  double worst = 0;
  std::vector<std::string> files = testing::RelativeFiles(a);
  EXPECT_EQ(files, (std::vector<std::string>{"cn.npy", "hn.npy", "output.npy"}));
  for (const auto& f : files) {
    runtime::Tensor x = runtime::ReadNpy(a / f), y = runtime::ReadNpy(b / f);
    EXPECT_EQ(x.shape(), y.shape()) << f;
    worst = std::max(worst, MaxAbs(x, y));
  }
  return worst;
}

struct VadDiffs {
  double to_original = 0;  // chained segments vs the VAD with its Ifs at the given rate
  double to_inlined = 0;   // chained segments vs `simplify --input-value sr=RATE` of the VAD
};

// The bundle's chained segments in ONNX Runtime against the original VAD and against the VAD
// with the rate made a constant (its Ifs inlined, one file), on the same audio and LSTM state.
VadDiffs VadChainDiffInOrt(const fs::path& bundle, int64_t rate, const TempDir& tmp) {
  io::Model vad = io::Load(testing::TestData("vad.onnx"));
  runtime::Session session(vad);
  const double r = static_cast<double>(rate);
  runtime::TensorMap feeds = runtime::RandomInputs(
      session, 11, {{"input", {-1, 1}}, {"h", {-1, 1}}, {"c", {-1, 1}}, {"sr", {r, r}}});
  std::string audio, rate_arg;
  for (const auto& [name, t] : feeds) {
    runtime::WriteNpy(tmp / (name + ".npy"), t);
    (name == "sr" ? rate_arg : audio) +=
        " --input " + name + "=" + (tmp / (name + ".npy")).string();
  }
  auto simplified =
      RunPorttool("simplify " + VadArg() + " --input-value sr=" + std::to_string(rate) + " -o " +
                  (tmp / "inlined.onnx").string());
  EXPECT_EQ(simplified.exit_code, 0) << simplified.err;
  std::string node = testing::OrtRunCommand();
  const std::vector<std::pair<std::string, std::string>> runs = {
      {VadArg() + audio + rate_arg, "ort.original"},
      {(tmp / "inlined.onnx").string() + audio, "ort.inlined"},
      {"--pipeline " + (bundle / "pipeline.json").string() + audio + rate_arg, "ort.chain"}};
  for (const auto& [args, dir] : runs) {
    auto run = RunShell(node + " " + args + " --output-dir " + (tmp / dir).string());
    EXPECT_EQ(run.exit_code, 0) << dir << ": " << run.err;
  }
  return {MaxAbsBetween(tmp / "ort.original", tmp / "ort.chain"),
          MaxAbsBetween(tmp / "ort.inlined", tmp / "ort.chain")};
}

// With its sample rate known the VAD is a static graph: every If inlined, a bundle on the CPU
// target and on the NPU, whose chained segments compute what the model computes at 16 kHz.
TEST(CliPort, VadWithAKnownSampleRatePortsToTheCpuAndTheNpu) {
  std::string ort = testing::OrtUnavailableReason();
  for (const char* target : {"onnxruntime-cpu", "rknn-rk3588"}) {
    SCOPED_TRACE(target);
    TempDir tmp;
    fs::path bundle = tmp / "vad.port";
    auto r = RunPorttool("port " + VadArg() + " --target " + target +
                         " --input-value sr=16000 -o " + bundle.string() + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    nlohmann::json doc = nlohmann::json::parse(r.out);
    std::string steps = doc["steps"].dump();
    EXPECT_NE(steps.find("made constants: sr=16000"), std::string::npos) << steps;
    EXPECT_NE(steps.find("the result passes the ONNX checker"), std::string::npos) << steps;
    nlohmann::json manifest = ExpectBundle(bundle);
    for (const auto& seg : manifest["segments"]) {
      io::Model m = io::Load(bundle / seg["file"].get<std::string>());
      for (const auto& n : m.proto.graph().node()) EXPECT_NE(n.op_type(), "If") << seg["file"];
      for (const auto& in : m.proto.graph().input()) EXPECT_NE(in.name(), "sr") << seg["file"];
    }
    if (!ort.empty()) continue;
    // Against the static graph the port computes, bit for bit. Against the original a few ulp:
    // ONNX Runtime pre-packs the LSTM's weights when they are initializers of the LSTM's own
    // graph, as after inlining, and not when an If body captures them (measured: the inlined
    // model with the weights fed as inputs equals the original exactly).
    VadDiffs diff = VadChainDiffInOrt(bundle, 16000, tmp);
    std::cout << target << ": chained segments in ONNX Runtime, max abs vs the inlined VAD "
              << diff.to_inlined << ", vs the VAD with its Ifs " << diff.to_original << "\n";
    EXPECT_EQ(diff.to_inlined, 0.0);
    EXPECT_LE(diff.to_original, 1e-6);
  }
  if (!ort.empty()) PORTTOOL_SKIP_MISSING(ort << " (the bundles were checked structurally)");
}

// Without the rate, the random verification inputs take the 8 kHz branch with a zero frame
// length: the port fails at simplify, naming the If that stayed and the input it depends on, and
// nothing claims to be verified or is written.
TEST(CliPort, VadWithoutTheSampleRateFailsNamingTheIfAndTheInput) {
  TempDir tmp;
  fs::path bundle = tmp / "vad.port";
  auto r = RunPorttool("port " + VadArg() + " --target rknn-rk3588 -o " + bundle.string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("If 'sr_if'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the value of graph input(s) sr"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--input-value"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("verified"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(bundle));
  ExpectOnly(tmp.path(), {});
}

// A profile may fix the value (a product that always records at 16 kHz); a given value wins, and
// a profile value for an input the model lacks is ignored.
TEST(CliPort, ProfileInputValuesApplyToTheInputsTheModelHas) {
  TempDir tmp;
  fs::copy(testing::SourceDir() / "rules" / "targets" / "onnxruntime-cpu.json", tmp.path());
  fs::path profile = tmp / "vad-cpu.json";
  testing::WriteFile(profile, R"({"schema": "porttool.target/1", "name": "vad-cpu",
    "extends": "onnxruntime-cpu", "input_values": {"sr": 16000, "channels": [1]}})");
  std::string args = "port " + VadArg() + " --target " + profile.string() + " --dry-run --json";
  auto r = RunPorttool(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("made constants: sr=16000 (from the target profile)"), std::string::npos)
      << r.out;
  r = RunPorttool(args + " --input-value sr=8000");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("made constants: sr=8000\""), std::string::npos) << r.out;
  testing::WriteFile(profile, R"({"schema": "porttool.target/1", "name": "vad-cpu",
    "extends": "onnxruntime-cpu", "input_values": {"sr": "16000"}})");
  r = RunPorttool(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/input_values/sr"), std::string::npos) << r.err;
}

// An If no target unit runs and simplify could not inline cannot become a custom operator: the
// port stops at split naming it and what its condition depends on (before: a failure at emit,
// "attribute 'then_branch' has type 5"). The VAD on the MCU with its rate only ranged, and
// hey_jarvis (a data-driven If) on rknn-rv1106 and stm32f767.
TEST(CliPort, AnIfTheTargetCannotRunIsRefusedAtSplitNamingWhy) {
  TempDir tmp;
  auto r = RunPorttool("port " + VadArg() + " --target stm32f767 --input-range sr=16000:16000 -o " +
                       (tmp / "a").string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("port failed at step 'split': If 'sr_if' cannot run on stm32f767"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cannot be written as a custom operator; it was not inlined: its condition "
                       "'is16k' is computed at run time from the value of graph input(s) sr"),
            std::string::npos)
      << r.err;
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models is absent (hey_jarvis not tried)");
  for (const char* target : {"rknn-rv1106", "stm32f767"}) {
    SCOPED_TRACE(target);
    r = RunPorttool("port " + (models / "hey_jarvis_v0.1.onnx").string() + " --target " + target +
                    " -o " + (tmp / target).string());
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("If 'If_32' cannot run on " + std::string(target)), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("the data decides the branch at run time"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / target));
  }
}

}  // namespace
}  // namespace porttool
