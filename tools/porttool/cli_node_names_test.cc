// Issue 49 item 2, end to end: on a model whose nodes have no names (PyTorch 1.x exports), every
// option that takes a node accepts "#N" and "#N (Op)" as infer-shapes and check print them, a
// position past the end is exit 2 with the range, and nothing prints a blank where a node goes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "lib/io/model.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::cli_node_names_test {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

constexpr const char* kPin = " --input-shape images:1x3x64x64";

// The demo detector with every node name cleared: #9 is the com.microsoft Gelu, #10 a Conv.
std::string UnnamedDemo(const TempDir& dir) {
  io::Model m = io::Load(testing::DemoModelPath());
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.clear_name();
  fs::path path = dir / "unnamed.onnx";
  io::Save(m, path);
  return testing::ShellQuote(path);
}

void WriteSamples(const fs::path& dir, int n) {
  fs::create_directories(dir);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int s = 0; s < n; ++s) {
    runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 64, 64});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng);
    runtime::WriteNpy(dir / ("s" + std::to_string(s) + ".images.npy"), t);
  }
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

nlohmann::json ReadJson(const fs::path& path) {
  return nlohmann::json::parse(testing::ReadFile(path));
}

TEST(CliNodeNames, SplitAtPositionWithAndWithoutTheOp) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  for (const std::string at : {"'#9'", "'#9 (Gelu)'"}) {
    SCOPED_TRACE(at);
    fs::path out = dir / "s";
    auto r = RunPorttool("split " + model + " --at " + at + kPin + " -o " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json m = ReadJson(out / "pipeline.json");
    ASSERT_EQ(m["segments"].size(), 3u);
    EXPECT_EQ(m["segments"][1]["host_nodes"], nlohmann::json::array({"#9 (Gelu)"}));
    fs::remove_all(out);
  }
}

TEST(CliNodeNames, PositionPastTheEndIsAUsageErrorWithTheRangeEverywhere) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  WriteSamples(dir / "data", 2);
  const std::string data = " --data " + (dir / "data").string();
  const std::string out = " -o " + (dir / "out").string();
  for (const std::string& args :
       {"split " + model + " --at '#16'" + out, "kit " + model + " --node '#16'" + kPin + out,
        "scaffold-op " + model + " --node '#16'" + kPin + out,
        "quantize-calibrate " + model + data + " --exclude-nodes '#16' --table " +
            (dir / "t.json").string(),
        "quantize-calibrate " + model + data + " --precision 'int16:#16' --table " +
            (dir / "t.json").string(),
        "rewrite " + model + " --rule \"replace-with-custom-op{node='#16' domain=x.y op=T}\"" + out,
        "port " + model + " --target rknn-rk3588" + kPin + data +
            " --precision 'float:#16' --dry-run"}) {
    SCOPED_TRACE(args);
    auto r = RunPorttool(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(Has(r.err, "'#16' is out of range: the graph has 16 node(s), #0 to #15")) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
    EXPECT_FALSE(fs::exists(dir / "t.json"));
  }
}

TEST(CliNodeNames, KitScaffoldAndRewriteTakeAPosition) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  auto r =
      RunPorttool("kit " + model + " --node '#9 (Gelu)'" + kPin + " -o " + (dir / "kits").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "kits"));
  int kits = 0;
  for (const auto& e : fs::directory_iterator(dir / "kits")) {
    if (!fs::exists(e.path() / "kit.json")) continue;
    ++kits;
    EXPECT_EQ(ReadJson(e.path() / "kit.json")["node"], "#9 (Gelu)");
  }
  EXPECT_EQ(kits, 1);
  r = RunPorttool("scaffold-op " + model + " --node '#9'" + kPin + " -o " + (dir / "pkg").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(testing::ReadFile(dir / "pkg" / "op.json"), "\"node\": \"#9 (Gelu)\""));
  r = RunPorttool("rewrite " + model +
                  " --rule \"replace-with-custom-op{node='#9' domain=com.example op=MyGelu}\" -o " +
                  (dir / "r.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  io::Model rewritten = io::Load(dir / "r.onnx");
  EXPECT_EQ(rewritten.proto.graph().node(9).op_type(), "MyGelu");
}

// The quantizer names every node before it prepares the graph, so "#10" is the Conv at position
// 10 of the file whatever preparation folds, and the lists say "Conv_10", never a blank.
TEST(CliNodeNames, QuantizeTakesPositionsInExcludeAndPrecision) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  WriteSamples(dir / "data", 3);
  auto r =
      RunPorttool("quantize-calibrate " + model + " --data " + (dir / "data").string() +
                  " --exclude-nodes '#10 (Conv)' --precision 'int16:#14' --table " +
                  (dir / "t.json").string() + " --qdq " + (dir / "q.onnx").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string doc = r.out;
  EXPECT_TRUE(Has(doc, "\"Conv_10\"")) << doc;
  EXPECT_TRUE(Has(doc, "\"Conv_14\"")) << doc;
  EXPECT_FALSE(Has(doc, "\"node\":\"\"")) << doc;
  EXPECT_FALSE(Has(doc, "\"name\":\"\"")) << doc;
}

// port resolves positions in the model as given, before simplify moves nodes (BatchNormalization
// folds into the convs: #10 is no longer the tenth node afterwards).
TEST(CliNodeNames, PortKeepsTheAddressedNodeFloat) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  WriteSamples(dir / "data", 3);
  fs::path bundle = dir / "b";
  auto r = RunPorttool("port " + model + " --target rknn-rk3588" + kPin + " --data " +
                       (dir / "data").string() + " --precision 'float:#10 (Conv)' -o " +
                       bundle.string());
  ASSERT_LE(r.exit_code, 1) << r.out << r.err;  // exit 1 would be a gate, not the option
  std::string report = testing::ReadFile(bundle / "report.json");
  EXPECT_TRUE(Has(report, "Conv_10")) << "the node kept float is named in the report";
  EXPECT_FALSE(Has(r.out, "node(s): )")) << r.out;
}

// What check and split --auto print for unnamed nodes is what the options take, quoted for the
// shell where a bare '#' would start a comment.
TEST(CliNodeNames, PrintedLabelsAreAddressesNotBlanks) {
  TempDir dir;
  std::string model = UnnamedDemo(dir);
  auto r = RunPorttool("check " + model);
  EXPECT_TRUE(Has(r.out, "porttool split " + (dir / "unnamed.onnx").string() + " --at '#9 (Gelu)'"))
      << r.out;
  // The placement table of check --target: "cpu-fallback  (Gelu)" before unnamed nodes had labels.
  r = RunPorttool("check " + model + " --target rknn-rk3588" + kPin);
  EXPECT_TRUE(Has(r.out, "unsupported  #9 (Gelu)")) << r.out;
  EXPECT_TRUE(Has(r.out, "cpu-fallback #12 (Resize): ")) << r.out;
  EXPECT_FALSE(Has(r.out, "  (Gelu)")) << r.out;
  r = RunPorttool("split " + model + " --auto --target rknn-rk3588" + kPin + " -o " +
                  (dir / "auto").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string manifest = testing::ReadFile(dir / "auto" / "pipeline.json");
  EXPECT_TRUE(Has(manifest, "\"#9 (Gelu)\"")) << manifest;
  EXPECT_FALSE(Has(manifest, "\"\"")) << "no blank name: " << manifest;
}

TEST(CliNodeNames, AnEmptyNodeNameSaysHowToAddressUnnamedNodes) {
  TempDir dir;
  auto r = RunPorttool("split " + UnnamedDemo(dir) + " --at '' -o " + (dir / "s").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "16 node(s) have no name")) << r.err;
  EXPECT_TRUE(Has(r.err, "e.g. '#0'")) << r.err;
}

// Names are the model author's: inspect prints control bytes in them as \xNN, so a name cannot
// clear the terminal or forge a line of the report.
TEST(CliNodeNames, InspectPrintsControlBytesInNamesAsEscapes) {
  TempDir dir;
  io::Model model = io::Load(testing::DemoModelPath());
  const std::string hostile = "img\x1b[2J\nmodel      forged.onnx";
  auto* g = model.proto.mutable_graph();
  g->mutable_input(0)->set_name(hostile);
  for (auto& node : *g->mutable_node()) {
    for (auto& in : *node.mutable_input()) {
      if (in == "images") in = hostile;
    }
  }
  model.proto.set_producer_name("evil\x07");
  io::Save(model, dir / "m.onnx");
  auto r = RunPorttool("inspect " + testing::ShellQuote(dir / "m.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_NE(r.out.find("img\\x1b[2J\\x0amodel      forged.onnx"), std::string::npos) << r.out;
  EXPECT_EQ(testing::CountOf(r.out, "\nmodel "), 0u) << "a forged line: " << r.out;
}

}  // namespace
}  // namespace porttool::cli_node_names_test
