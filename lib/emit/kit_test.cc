// Test kits: one folder per distinct (op, attributes, shapes) in the ONNX backend layout; each
// kit model passes the ONNX checker (python onnx 1.12) and, run by ONNX Runtime (npm
// onnxruntime-node) on its input_i.pb, reproduces output_i.pb within the kit's tolerance; --data
// samples become test_data_set_N with the node's real inputs; kits are byte-identical across runs;
// CheckKits fails a wrong output and names its worst element.
#include "lib/emit/kit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lib/runtime/tensor_io.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::TempDir;

io::Model DemoModel() {
  io::Model m = io::Load(testing::TestData("demo_detector.onnx"));
  shape::ApplyInputShapes(m, shape::InputShapes{{"images", {1, 3, 64, 64}}});
  return m;
}

std::vector<fs::path> KitDirs(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

fs::path OrtScript() { return testing::SourceDir() / "scripts/ort_run.js"; }
// A broken scripts/ort (a dangling or looping symlink) means "not installed", not a crash.
bool HaveOrt() {
  std::error_code ec;
  return fs::exists(testing::SourceDir() / "scripts/ort/node_modules/onnxruntime-node", ec) &&
         !ec && RunShell("node --version").exit_code == 0;
}

TEST(KitTest, AllKitsOfTheDemoModelPassInOnnxRuntimeAndTheChecker) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kAll;
  auto kits = MakeKits(DemoModel(), options, dir / "kits");
  // 16 nodes; block2's BatchNormalization has block1's attributes and shapes, so one kit covers
  // both.
  EXPECT_EQ(kits.size(), 15u);
  for (const auto& k : kits) EXPECT_NE(k.node, "block2/BatchNormalization");
  for (const auto& kit : KitDirs(dir / "kits")) {
    SCOPED_TRACE(kit.string());
    for (const char* f : {"model.onnx", "kit.json", "kit.h", "test_data_set_0/output_0.pb"}) {
      EXPECT_TRUE(fs::exists(kit / f)) << f;
    }
    auto checker =
        RunShell(fmt::format("{} -c \"import onnx; onnx.checker.check_model(onnx.load('{}'))\"",
                             testing::kSystemPython, (kit / "model.onnx").string()));
    EXPECT_EQ(checker.exit_code, 0) << checker.err;
  }
  if (!HaveOrt()) GTEST_SKIP() << "onnxruntime-node not installed (scripts/setup.sh --ort)";
  for (const auto& kit : KitDirs(dir / "kits")) {
    std::string inputs;
    for (int i = 0; fs::exists(kit / fmt::format("test_data_set_0/input_{}.pb", i)); ++i) {
      std::string name;
      runtime::ReadPb(kit / fmt::format("test_data_set_0/input_{}.pb", i), &name);
      inputs += fmt::format(" --input '{}={}'", name,
                            (kit / fmt::format("test_data_set_0/input_{}.pb", i)).string());
    }
    auto ort = RunShell(fmt::format("node {} {}{} --output-dir {}", OrtScript().string(),
                                    (kit / "model.onnx").string(), inputs,
                                    (dir / "ort" / kit.filename()).string()));
    ASSERT_EQ(ort.exit_code, 0) << kit << ort.err;
  }
  KitCheckResult result = CheckKits(dir / "kits", dir / "ort");
  EXPECT_EQ(result.failed, 0);
  EXPECT_EQ(result.passed, 15);
  for (const auto& row : result.rows) EXPECT_TRUE(row.passed) << row.kit << ": " << row.detail;
}

TEST(KitTest, CheckFailsAWrongOutputAndNamesTheWorstElement) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kNode;
  options.name = "Custom_GELU_0";
  auto kits = MakeKits(DemoModel(), options, dir / "kits");
  ASSERT_EQ(kits.size(), 1u);
  fs::path kit = dir / "kits" / kits[0].dir;
  std::string name;
  runtime::Tensor want = runtime::ReadPb(kit / "test_data_set_0/output_0.pb", &name);
  fs::create_directories(dir / "board");
  runtime::WritePb(dir / "board/output_0.pb", want, name);
  EXPECT_EQ(CheckKits(kit, dir / "board").passed, 1);

  runtime::Tensor bad = want.Clone();
  bad.mutable_data<float>()[77] += 0.01f;  // transcendental tolerance: atol 1e-4 + rtol 1e-3
  runtime::WritePb(dir / "board/output_0.pb", bad, name);
  KitCheckResult r = CheckKits(kit, dir / "board");
  EXPECT_EQ(r.failed, 1);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NE(r.rows[0].detail.find("worst element 77"), std::string::npos) << r.rows[0].detail;
  fs::remove(dir / "board/output_0.pb");
  EXPECT_EQ(CheckKits(kit, dir / "board").failed, 1);  // missing output
}

TEST(KitTest, DataSamplesBecomeTestDataSetsWithTheNodesRealInputs) {
  TempDir dir;
  io::Model model = DemoModel();
  runtime::Session session(model);
  KitOptions options;
  options.select = KitOptions::Select::kOp;
  options.name = "Conv";
  options.samples = {runtime::RandomInputs(session, 11), runtime::RandomInputs(session, 12)};
  auto kits = MakeKits(model, options, dir / "kits");
  EXPECT_EQ(kits.size(), 5u);  // five Convs, all with different shapes or attributes
  fs::path stem = dir / "kits/Conv_stem_Conv";
  ASSERT_TRUE(fs::exists(stem)) << kits[0].dir;
  for (int set = 0; set < 2; ++set) {
    runtime::Tensor in = runtime::ReadPb(stem / fmt::format("test_data_set_{}/input_0.pb", set));
    const runtime::Tensor& sample = options.samples[set].at("images");
    ASSERT_EQ(in.shape(), sample.shape());
    EXPECT_EQ(0, std::memcmp(in.raw(), sample.raw(), sample.bytes()));
  }
  auto info = nlohmann::json::parse(testing::ReadFile(stem / "kit.json"));
  EXPECT_EQ(info["test_data_sets"], 2);
  EXPECT_EQ(info["tolerance"][0]["kind"], "float");
  EXPECT_EQ(info["attributes"]["strides"], (std::vector<int>{2, 2}));
}

TEST(KitTest, KitsAreByteIdenticalAcrossRuns) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kOp;
  options.name = "Relu";
  MakeKits(DemoModel(), options, dir / "a");
  MakeKits(DemoModel(), options, dir / "b");
  auto a = KitDirs(dir / "a");
  ASSERT_EQ(a.size(), 3u);
  for (const auto& e : fs::recursive_directory_iterator(dir / "a")) {
    if (!e.is_regular_file()) continue;
    auto other = dir / "b" / fs::relative(e.path(), dir / "a");
    EXPECT_EQ(testing::ReadFile(e.path()), testing::ReadFile(other)) << other;
  }
}

TEST(KitTest, ToleranceFollowsTheOpClass) {
  EXPECT_EQ(ToleranceFor("Reshape", onnx::TensorProto::FLOAT)["kind"], "bitwise");
  EXPECT_EQ(ToleranceFor("Conv", onnx::TensorProto::FLOAT)["atol"], 1e-5);
  EXPECT_EQ(ToleranceFor("Sigmoid", onnx::TensorProto::FLOAT)["atol"], 1e-4);
  EXPECT_EQ(ToleranceFor("QLinearConv", onnx::TensorProto::INT8)["atol"], 1.0);
  EXPECT_EQ(ToleranceFor("Add", onnx::TensorProto::INT64)["kind"], "bitwise");
}

TEST(KitTest, UnknownNodeIsAUsageErrorWithASuggestion) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kNode;
  options.name = "stem/conv";
  try {
    MakeKits(DemoModel(), options, dir / "kits");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("stem/Conv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::emit
