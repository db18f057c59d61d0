// Issue 49 item 1, end to end: placeholder dims are unknown and completed by execution in
// infer-shapes as in every other subcommand; what stays unknown is exit 1 naming the tensor and
// the node; split never writes "bytes": null with exit 0; initializers listed as graph inputs
// are initializers (check warns and --fix drops them; a value the user feeds wins, said once);
// and the real models nobody tuned for (UltraFace, M-LSD, BlazeFace) come out fully static.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/test_models.h"
#include "lib/util/testing.h"

namespace porttool::cli_shapes_test {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Quoted(const fs::path& path) { return testing::ShellQuote(path); }

// Every tensor a node produces, with no static shape in value_info or the graph outputs (the
// interface of issue 49: a model infer-shapes wrote with pinned inputs has none).
std::vector<std::string> TensorsWithoutStaticShape(const io::Model& model) {
  ir::GraphView view(model.proto.graph());
  std::vector<std::string> out;
  for (const auto& node : model.proto.graph().node()) {
    for (const auto& name : node.output()) {
      if (name.empty()) continue;
      const auto* vi = view.ValueInfo(name);
      if (!vi || !ir::StaticShape(vi->type())) out.push_back(name);
    }
  }
  return out;
}

// testing::PlaceholderDimsModel on disk.
fs::path PlaceholderModel(const TempDir& dir) {
  io::Model m = testing::PlaceholderDimsModel("N,3");
  fs::path path = dir / "placeholder.onnx";
  io::Save(m, path);
  return path;
}

TEST(CliShapes, InferShapesCompletesPlaceholderDimsByExecution) {
  TempDir dir;
  fs::path model = PlaceholderModel(dir);
  auto r = RunPorttool("infer-shapes " + Quoted(model) + " --input-shape x:4x3 -o " +
                       Quoted(dir / "s.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "0 symbolic, 0 unknown")) << r.out;
  EXPECT_TRUE(Has(r.out, "measured by one executor run")) << r.out;
  io::Model written = io::Load(dir / "s.onnx");
  EXPECT_EQ(TensorsWithoutStaticShape(written), std::vector<std::string>{});
}

TEST(CliShapes, WhatStaysUnknownIsExitOneNamingTensorNodeAndPin) {
  TempDir dir;
  auto r = RunPorttool("infer-shapes " + Quoted(PlaceholderModel(dir)) + " -o " +
                       Quoted(dir / "s.onnx"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "s.onnx"));
  EXPECT_TRUE(Has(r.err, "tensor 'r' has no known shape (blocked at node '#4 (Reshape)')"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "inputs with dynamic dims: x[0]=N")) << r.err;
  EXPECT_TRUE(Has(r.err, "--input-shape x:1x3")) << r.err;
  // The demo unpinned: its Convs' output dims are ONNX placeholders, not pinnable names.
  r = RunPorttool("infer-shapes " + testing::DemoArg() + " -o " + Quoted(dir / "d.onnx"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Has(r.out,
                  "root blocker 'stem/Conv' (Conv): its output dims are computed from the "
                  "symbolic dims of input 'images'"))
      << r.out;
}

// The split is written (it is a valid split), but its bridges have no size: exit 1, naming the
// tensor and the pin that would size it.
TEST(CliShapes, SplitWithUnsizedBridgesIsExitOneNeverBytesNullWithZero) {
  TempDir dir;
  auto r =
      RunPorttool("split " + testing::DemoArg() + " --at Custom_GELU_0 -o " + Quoted(dir / "s"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(Has(r.err, "has no static size (pipeline.json records \"bytes\": null)")) << r.err;
  EXPECT_TRUE(Has(r.err, "--input-shape images:1x3x640x640")) << r.err;
  EXPECT_TRUE(fs::exists(dir / "s" / "pipeline.json"));
  r = RunPorttool("split " + testing::DemoArg() + " --at Custom_GELU_0 --input-shape " +
                  "images:1x3x64x64 -o " + Quoted(dir / "p"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Has(testing::ReadFile(dir / "p" / "pipeline.json"), "null"));
}

// IR 4 as PyTorch 1.2 wrote it: the weight `w` is an initializer and a graph input.
fs::path WeightAlsoAnInput(const TempDir& dir) {
  io::Model m = io::ParseText(R"(<ir_version: 4, opset_import: ["" : 9]>
    g (float[2] x, float[2] w) => (float[2] y) <float[2] w = {1.0, 2.0}> {
      y = Add(x, w)
    })");
  fs::path path = dir / "ir4.onnx";
  io::Save(m, path);
  return path;
}

void WriteFloats(const fs::path& path, std::vector<float> values) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<float>()[i] = values[i];
  runtime::WriteNpy(path, t);
}

TEST(CliShapes, CheckWarnsAboutInitializersListedAsInputsAndFixDropsThem) {
  TempDir dir;
  fs::path model = WeightAlsoAnInput(dir);
  auto r = RunPorttool("check " + Quoted(model));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out,
                  "warning[initializer-input] 1 initializer(s) are also listed as graph "
                  "inputs (w)"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "run: porttool check " + model.string() + " --fix -o ir4.fixed.onnx"))
      << r.out;
  const std::string before = testing::ReadFile(model);
  r = RunPorttool("check " + Quoted(model) + " --fix -o " + Quoted(dir / "fixed.onnx"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "fixed: [initializer-input] dropped 1 initializer(s)")) << r.out;
  EXPECT_EQ(testing::ReadFile(model), before) << "--fix never touches its input";
  io::Model fixed = io::Load(dir / "fixed.onnx");
  ASSERT_EQ(fixed.proto.graph().input_size(), 1);
  EXPECT_EQ(fixed.proto.graph().input(0).name(), "x");
  EXPECT_EQ(fixed.proto.graph().initializer_size(), 1);
  EXPECT_FALSE(Has(RunPorttool("check " + Quoted(dir / "fixed.onnx")).out, "initializer-input"));
  EXPECT_EQ(RunPorttool("check " + Quoted(model) + " --fix").exit_code, 2) << "--fix needs -o";
}

TEST(CliShapes, AValueTheUserFeedsForAnInitializerInputWinsSaidOnce) {
  TempDir dir;
  fs::path model = WeightAlsoAnInput(dir);
  WriteFloats(dir / "x.npy", {10, 20});
  WriteFloats(dir / "w.npy", {5, 5});
  auto r = RunPorttool("run " + Quoted(model) + " --input x=" + Quoted(dir / "x.npy") +
                       " --output-dir " + Quoted(dir / "own"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Has(r.err, "replace")) << r.err;
  runtime::Tensor own = runtime::ReadNpy(dir / "own" / "y.npy");
  EXPECT_EQ(own.data<float>()[1], 22.f);
  r = RunPorttool("run " + Quoted(model) + " --input x=" + Quoted(dir / "x.npy") + " --input w=" +
                  Quoted(dir / "w.npy") + " --repeat 3 --output-dir " + Quoted(dir / "fed"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::CountOf(r.err,
                             "replace initializer(s) the model also lists as graph "
                             "inputs: w"),
            1u)
      << r.err;
  runtime::Tensor fed = runtime::ReadNpy(dir / "fed" / "y.npy");
  EXPECT_EQ(fed.data<float>()[1], 25.f);
}

// The three shared models from issue 49's figures.
struct SharedModel {
  const char* file;
  const char* pin;
};
const SharedModel kUnseenModels[] = {
    {"ultraface_RFB-320.onnx", "input:1x3x240x320"},
    {"mlsd_320_large.onnx", "input_image_with_alpha:0:1x320x320x4"},
    {"blazeface_back_256.onnx", "input:0:1x256x256x3"},
};

TEST(CliShapes, UnseenRealModelsInferFullyStaticAndPlanAPort) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models is absent");
  for (const auto& m : kUnseenModels) {
    SCOPED_TRACE(m.file);
    TempDir dir;
    const std::string model = Quoted(models / m.file);
    auto r = RunPorttool("infer-shapes " + model + " --input-shape " + m.pin + " -o " +
                         Quoted(dir / "s.onnx"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(Has(r.out, " 0 unknown")) << r.out;
    EXPECT_EQ(TensorsWithoutStaticShape(io::Load(dir / "s.onnx")), std::vector<std::string>{});
    r = RunPorttool("port " + model + " --target rknn-rk3588 --input-shape " + m.pin +
                    " --dry-run -o " + Quoted(dir / "b"));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(Has(r.out, "node(s): )")) << r.out;
    EXPECT_FALSE(Has(r.out, "  (")) << "a blank node name before its op: " << r.out;
  }
}

// UltraFace (PyTorch 1.2: every node unnamed, every initializer also an input) ported for the
// CPU target: its bundle's segments, chained in ONNX Runtime, against the model in ONNX Runtime.
TEST(CliShapes, UltraFaceBundleMatchesOnnxRuntime) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models is absent");
  std::string ort = testing::OrtUnavailableReason();
  if (!ort.empty()) PORTTOOL_SKIP_MISSING(ort);
  TempDir dir;
  const fs::path model = models / "ultraface_RFB-320.onnx";
  auto r = RunPorttool("port " + Quoted(model) +
                       " --target onnxruntime-cpu --input-shape input:1x3x240x320 -o " +
                       Quoted(dir / "b"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  runtime::Tensor input(onnx::TensorProto::FLOAT, {1, 3, 240, 320});
  for (int64_t i = 0; i < input.size(); ++i) {
    input.mutable_data<float>()[i] = static_cast<float>(std::sin(0.001 * i));
  }
  runtime::WriteNpy(dir / "input.npy", input);
  const std::string node = testing::OrtRunCommand();
  const std::string in = " --input input=" + Quoted(dir / "input.npy");
  r = RunShell(node + " " + Quoted(model) + in + " --output-dir " + Quoted(dir / "a"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunShell(node + " --pipeline " + Quoted(dir / "b" / "pipeline.json") + in + " --output-dir " +
               Quoted(dir / "c"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* out : {"scores.npy", "boxes.npy"}) {
    runtime::Tensor a = runtime::ReadNpy(dir / "a" / out), b = runtime::ReadNpy(dir / "c" / out);
    ASSERT_EQ(a.shape(), b.shape()) << out;
    double worst = 0, range = 1;
    for (int64_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
      range = std::max(range, std::fabs(double(a.data<float>()[i])));
    }
    EXPECT_LE(worst, 1e-5 * range) << out;
  }
}

}  // namespace
}  // namespace porttool::cli_shapes_test
