// `porttool split` and `porttool extract` end to end: exit codes, files, pipeline.json, and every
// produced model checked by python onnx's checker (an independent implementation's verdict).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "lib/io/external_data.h"
#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

// Runs python onnx's checker (full_check: strict shape inference too) on every file; returns
// its stderr on failure.
std::string PythonCheck(const TempDir& dir, const std::vector<fs::path>& files) {
  testing::WriteFile(dir / "check.py", R"(
import sys, onnx
for path in sys.argv[1:]:
    onnx.checker.check_model(path, full_check=True)
)");
  std::string cmd = std::string(testing::kSystemPython) + " " + (dir / "check.py").string();
  for (const auto& f : files) cmd += " " + f.string();
  auto r = testing::RunShell(cmd);
  return r.exit_code == 0 ? "" : r.err + r.out;
}

std::vector<fs::path> SegmentFiles(const fs::path& dir, const nlohmann::json& manifest) {
  std::vector<fs::path> files;
  for (const auto& s : manifest["segments"]) files.push_back(dir / s["file"].get<std::string>());
  return files;
}

nlohmann::json ReadManifest(const fs::path& dir) {
  return nlohmann::json::parse(testing::ReadFile(dir / "pipeline.json"));
}

const nlohmann::json* BridgeFor(const nlohmann::json& manifest, const std::string& tensor) {
  for (const auto& b : manifest["bridges"]) {
    if (b["tensor"] == tensor) return &b;
  }
  return nullptr;
}

TEST(CliSplit, DemoAtCustomGeluGivesThreeValidSegmentsAndAManifest) {
  TempDir dir;
  fs::path out = dir / "demo.split";
  auto r = RunPorttool("split " + testing::TestData("demo_detector.onnx").string() +
                       " --at Custom_GELU_0 --input-shape images:1x3x64x64 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("01_host.onnx"), std::string::npos) << r.out;
  nlohmann::json m = ReadManifest(out);
  ASSERT_EQ(m["segments"].size(), 3u);
  EXPECT_EQ(m["segments"][0]["role"], "accelerator");
  EXPECT_EQ(m["segments"][1]["role"], "host");
  EXPECT_EQ(m["segments"][1]["host_nodes"], nlohmann::json::array({"Custom_GELU_0"}));
  EXPECT_EQ(m["segments"][2]["role"], "accelerator");
  EXPECT_EQ(m["source"]["sha256"], util::Sha256File(testing::TestData("demo_detector.onnx")));
  // The skip connection from the stem to the final Add crosses the host segment.
  const auto* skip = BridgeFor(m, "stem.out");
  ASSERT_NE(skip, nullptr);
  EXPECT_EQ((*skip)["producer"], 0);
  EXPECT_EQ((*skip)["consumers"], nlohmann::json::array({2}));
  ASSERT_NE(BridgeFor(m, "gelu.out"), nullptr);
  EXPECT_EQ(m["segments"][1]["outputs"][0]["dtype"], "float32");
  EXPECT_EQ(m["graph_outputs"]["score"], 2);
  EXPECT_EQ(PythonCheck(dir, SegmentFiles(out, m)), "");
}

TEST(CliSplit, PinnedInputShapesGiveBridgeBytesAndJsonMatchesTheFile) {
  TempDir dir;
  fs::path out = dir / "demo.split";
  auto r =
      RunPorttool("split " + testing::TestData("demo_detector.onnx").string() +
                  " --at Custom_GELU_0 --input-shape images:1x3x64x64 --json -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json printed = nlohmann::json::parse(r.out);
  nlohmann::json file = ReadManifest(out);
  EXPECT_EQ(printed["segments"], file["segments"]);
  EXPECT_EQ((*BridgeFor(file, "gelu.out"))["bytes"], 32 * 16 * 16 * 4);
  EXPECT_EQ(file["segments"][0]["inputs"][0]["shape"], nlohmann::json::array({1, 3, 64, 64}));
}

TEST(CliSplit, LargeBridgeWarnsWithCutAdvice) {
  TempDir dir;
  auto r = RunPorttool("split " + testing::TestData("demo_detector.onnx").string() +
                       " --at Custom_GELU_0 --input-shape images:1x3x64x64 "
                       "--bridge-warn-bytes 1000 -o " +
                       (dir / "s").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("over the 1000 B threshold"), std::string::npos) << r.err;
  EXPECT_FALSE(ReadManifest(dir / "s")["advice"].empty());
}

TEST(CliSplit, UnknownNodeIsAUsageErrorWithSuggestions) {
  TempDir dir;
  auto r = RunPorttool("split " + testing::TestData("demo_detector.onnx").string() +
                       " --at Custom_GELU -o " + (dir / "s").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Custom_GELU_0"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "s"));
  auto input = RunPorttool("split " + testing::TestData("demo_detector.onnx").string() +
                           " --at images -o " + (dir / "s").string());
  EXPECT_EQ(input.exit_code, 2);
  EXPECT_NE(input.err.find("graph input"), std::string::npos) << input.err;
  auto missing = RunPorttool("split " + (dir / "nope.onnx").string() + " --at x");
  EXPECT_EQ(missing.exit_code, 3) << missing.err;  // unreadable input
  EXPECT_NE(missing.err.find("nope.onnx"), std::string::npos) << missing.err;
}

TEST(CliSplit, DefaultOutputDirectoryIsTheModelStemInTheCurrentDirectory) {
  TempDir dir;
  auto r = testing::RunShell("cd " + dir.path().string() + " && " + testing::PorttoolBin() +
                             " split " + testing::TestData("demo_detector.onnx").string() +
                             " --at Custom_GELU_0 --input-shape images:1x3x64x64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "demo_detector.split" / "pipeline.json"));
}

// A chain whose weights live in an external data file, saved through porttool's own I/O.
fs::path MakeExternalModel(const TempDir& dir) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1024] x) => (float[1024] y)
<float[1024] w1 = {1.0}, float[1024] w2 = {2.0}>
{
  a = Add(x, w1)
  b = Neg(a)
  y = Mul(b, w2)
}
)");
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.set_name("n_" + node.output(0));
  for (auto& t : *m.proto.mutable_graph()->mutable_initializer()) {
    float v = t.float_data(0);
    t.clear_float_data();
    for (int i = 0; i < 1024; ++i) t.add_float_data(v);
  }
  fs::create_directories(dir / "src" / "weights");
  io::SaveOptions options;
  options.external_data = true;
  options.external_file = "weights/model.bin";
  io::Save(m, dir / "src" / "model.onnx", options);
  return dir / "src" / "model.onnx";
}

TEST(CliSplit, ExternalDataIsSplitZeroCopyWithHardLinks) {
  TempDir dir;
  fs::path model = MakeExternalModel(dir);
  fs::path data = dir / "src" / "weights" / "model.bin";
  std::string model_sha = util::Sha256File(model), data_sha = util::Sha256File(data);
  fs::path out = dir / "out";
  auto r = RunPorttool("split " + model.string() + " --at n_b -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat(data.c_str(), &a), 0);
  ASSERT_EQ(::stat((out / "weights" / "model.bin").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  nlohmann::json m = ReadManifest(out);
  EXPECT_EQ(m["weights"], "zero-copy");
  for (const auto& file : SegmentFiles(out, m)) {
    io::Model seg = io::Load(file);
    io::ForEachTensor(seg.proto.graph(), [&](const onnx::TensorProto& t) {
      std::string location = io::ParseExternalRef(t).location;
      EXPECT_EQ(location, "weights/model.bin");
      EXPECT_EQ(location.find(".."), std::string::npos);
    });
  }
  EXPECT_EQ(PythonCheck(dir, SegmentFiles(out, m)), "");
  EXPECT_EQ(util::Sha256File(model), model_sha);
  EXPECT_EQ(util::Sha256File(data), data_sha);

  fs::path copied = dir / "copied";
  r = RunPorttool("split " + model.string() + " --at n_b --copy-weights -o " + copied.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(copied / "weights"));
  EXPECT_EQ(PythonCheck(dir, SegmentFiles(copied, ReadManifest(copied))), "");
}

TEST(CliSplit, PpOcrDetAtFirstHardSigmoidAndAResize) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models is absent");
  fs::path det = models / "ch_PP-OCRv4_det_infer.onnx";
  io::Model model = io::Load(det);
  std::string hard_sigmoid, resize;
  ir::GraphView view(model.proto.graph());
  for (int i : view.TopoOrder()) {
    const auto& node = model.proto.graph().node(i);
    if (node.op_type() == "HardSigmoid" && hard_sigmoid.empty()) hard_sigmoid = node.name();
    if (node.op_type() == "Resize" && resize.empty()) resize = node.name();
  }
  ASSERT_FALSE(hard_sigmoid.empty() || resize.empty());
  TempDir dir;
  fs::path out = dir / "det.split";
  auto r = RunPorttool("split " + det.string() + " --at " + hard_sigmoid + " --at " + resize +
                       " --input-shape x:1x3x640x640 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json m = ReadManifest(out);
  EXPECT_EQ(m["segments"].size(), 5u);
  EXPECT_FALSE(m["bridges"].empty());
  for (const auto& b : m["bridges"]) {
    EXPECT_TRUE(b["bytes"].is_number()) << b.dump();
    EXPECT_NE(r.out.find(b["tensor"].get<std::string>()), std::string::npos);
  }
  EXPECT_EQ(PythonCheck(dir, SegmentFiles(out, m)), "");
}

// An attention-style shape computation: static inference stops at the Reshape fed by
// Shape -> Cast -> Cast, so without shape completion the bridge after it has no shape.
fs::path MakeShapeArithmeticModel(const TempDir& dir) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4,8] x) => (float[N,32] y)
{
  s = Shape(x)
  f = Cast<to = 1>(s)
  i = Cast<to = 7>(f)
  r = Reshape(x, i)
  a = Relu(r)
  b = Flatten(a)
  y = Neg(b)
}
)");
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.set_name("n_" + node.output(0));
  io::Save(m, dir / "attn.onnx");
  return dir / "attn.onnx";
}

// Issue 16 item 3: segments carry complete types (shape completion by one executor run), bridge
// sizes are known, and --verify runs the ONNX checker on every segment too.
TEST(CliSplit, BridgesAfterShapeArithmeticHaveCompleteTypes) {
  TempDir dir;
  fs::path model = MakeShapeArithmeticModel(dir);
  fs::path out = dir / "attn.split";
  auto r = RunPorttool("split " + model.string() + " --at n_a --input-shape x:2x4x8 --verify -o " +
                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("every segment passes the ONNX checker"), std::string::npos) << r.out;
  nlohmann::json m = ReadManifest(out);
  ASSERT_EQ(m["segments"].size(), 3u);
  const nlohmann::json* bridge = BridgeFor(m, "r");
  ASSERT_NE(bridge, nullptr) << m.dump();
  EXPECT_EQ((*bridge)["bytes"], 2 * 4 * 8 * 4) << bridge->dump();
  EXPECT_EQ(m["segments"][0]["outputs"][0]["shape"], (nlohmann::json{2, 4, 8}));
  EXPECT_EQ(r.out.find("?"), std::string::npos) << r.out;
  EXPECT_EQ(PythonCheck(dir, SegmentFiles(out, m)), "");
}

// A three-node chain x -> a -> b -> `output` with nodes n_a, n_b, n_<output>.
fs::path SaveChain(const TempDir& dir, const std::string& output, const std::string& x_dim0) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4] x) => (float[1, 4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  auto& graph = *m.proto.mutable_graph();
  for (auto& node : *graph.mutable_node()) node.set_name("n_" + node.output(0));
  graph.mutable_node(2)->set_output(0, output);
  graph.mutable_node(2)->set_name("n_" + output);
  graph.mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param(x_dim0);
  fs::path path = dir / "chain.onnx";
  io::Save(m, path);
  return path;
}

// The two fuzz_split findings (testdata/fuzz-regressions/fuzz_split/crash-13205638...,
// crash-385ef7bc...) end to end: both used to exit 4 ("please report").
TEST(CliSplit, GraphOutputThatNothingProducesIsExit3NamingTheTensor) {
  TempDir dir;
  fs::path model = SaveChain(dir, "Y", "N");
  auto r = RunPorttool("split " + model.string() + " --at n_b --json -o " + (dir / "s").string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  nlohmann::json error = nlohmann::json::parse(r.out)["error"];
  EXPECT_EQ(error["kind"], "bad_input");
  EXPECT_EQ(error["tensor"], "y");
  EXPECT_NE(error["message"].get<std::string>().find("not produced by any node"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "s"));
}

TEST(CliSplit, DimLabelThatIsNotUtf8GivesValidJsonEverywhere) {
  TempDir dir;
  fs::path model = SaveChain(dir, "y", "d\xCF");
  fs::path out = dir / "s";
  auto r = RunPorttool("split " + model.string() + " --at n_b --json -o " + out.string());
  // The dim is symbolic, so the boundary sizes are unknown: written, but exit 1 (issue 49).
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  nlohmann::json printed = nlohmann::json::parse(r.out);
  nlohmann::json m = ReadManifest(out);
  EXPECT_EQ(m["segments"][0]["inputs"][0]["shape"][0], "d\xEF\xBF\xBD");
  EXPECT_EQ(printed["segments"], m["segments"]) << r.out;
}

// A --verify that cannot run (no kernel for a custom op) keeps its exit code but says the split
// itself was written, and the files are there.
TEST(CliSplit, VerifyThatCannotRunSaysTheSplitWasWritten) {
  TempDir dir;
  fs::path out = dir / "custom.split";
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13, "acme" : 1]>
g (float[1,4] x) => (float[1,4] y)
{
  a = Relu(x)
  b = acme.Mystery(a)
  y = Neg(b)
}
)");
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.set_name("n_" + node.output(0));
  io::Save(m, dir / "custom.onnx");
  auto r = RunPorttool("split " + (dir / "custom.onnx").string() + " --at n_b --verify -o " +
                       out.string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("the split itself was written to"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("verify: could not run (the split was written)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(out / "pipeline.json"));
}

// Issue 16 split --auto: the cost model keeps a one-node Relu island between two Abs nodes (no
// RK3588 kernel) on the host, reports the estimate per segment and the alternatives, in the
// table and in pipeline.json; the options bound it.
TEST(CliSplit, AutoUsesTheCostModelAndReportsEstimates) {
  TempDir dir;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,32,64,64] x) => (float[1,32,64,64] y) {
  ws = Constant <value = int64[4] {32, 32, 3, 3}> ()
  w = ConstantOfShape (ws)
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w)
  a1 = Abs (c1)
  r = Relu (a1)
  a2 = Abs (r)
  y = Conv <pads = [1, 1, 1, 1]> (a2, w)
})");
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.set_name("n_" + node.output(0));
  io::Save(m, dir / "island.onnx");
  fs::path out = dir / "island.split";
  auto r = RunPorttool("split " + (dir / "island.onnx").string() +
                       " --auto --target rknn-rk3588 --verify -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("alternatives considered"), std::string::npos) << r.out;
  nlohmann::json manifest = ReadManifest(out);
  EXPECT_EQ(manifest["segments"].size(), 3u) << r.out;
  EXPECT_EQ(manifest["segments"][1]["nodes"], 3);
  EXPECT_EQ(manifest["estimate"]["chosen"]["segments"], 3);
  EXPECT_EQ(manifest["estimate"]["alternatives"][0]["segments"], 5);
  EXPECT_GT(manifest["estimate"]["chosen"]["total_ms"].get<double>(), 0.0);
  auto one = RunPorttool("split " + (dir / "island.onnx").string() +
                         " --auto --target rknn-rk3588 --max-segments 1 --json -o " +
                         (dir / "one").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["segments"].size(), 1u);
  // Accelerator segments with fewer nodes than --min-segment-nodes run on the host, so
  // segments merge: two at 2, one (all on the host) at 4.
  auto two = RunPorttool("split " + (dir / "island.onnx").string() +
                         " --auto --target rknn-rk3588 --min-segment-nodes 2 --json -o " +
                         (dir / "two").string());
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["segments"].size(), 2u) << two.out;
  auto min4 = RunPorttool("split " + (dir / "island.onnx").string() +
                          " --auto --target rknn-rk3588 --min-segment-nodes 4 --json -o " +
                          (dir / "min4").string());
  ASSERT_EQ(min4.exit_code, 0) << min4.err;
  EXPECT_EQ(nlohmann::json::parse(min4.out)["segments"].size(), 1u) << min4.out;
  auto misuse = RunPorttool("split " + (dir / "island.onnx").string() +
                            " --at n_r --max-segments 2 -o " + (dir / "x").string());
  EXPECT_EQ(misuse.exit_code, 2);
}

TEST(CliExtract, DemoTailIsValidAndUnreachableOutputsNameTheTensor) {
  TempDir dir;
  fs::path out = dir / "tail.onnx";
  auto r = RunPorttool("extract " + testing::TestData("demo_detector.onnx").string() +
                       " --inputs gelu.out,stem.out --outputs score -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(PythonCheck(dir, {out}), "");
  auto bad = RunPorttool("extract " + testing::TestData("demo_detector.onnx").string() +
                         " --inputs gelu.out --outputs score -o " + (dir / "x.onnx").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'images'"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
}

}  // namespace
}  // namespace porttool
