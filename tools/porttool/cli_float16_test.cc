// `run` and `compare` with --precision fp16 (issue 50): the overflow warning naming the tensor and
// its node with max |x| against 65504, its exit status (0, 1 with --fail-on-overflow), the JSON
// list, fp32:NODES removing it, float64 kept, the usage errors of the shared --precision grammar,
// and the float16 error budget of the demo model.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using runtime::Tensor;
using testing::RunPorttool;
using testing::TempDir;

// y = x * 1000: an input of 100 makes 100000, past float16's 65504.
constexpr const char* kScaleModel = R"(
<ir_version: 8, opset_import: ["" : 13]>
scale (float[4] x) => (float[4] y) {
  k = Constant <value = float[1] {1000.0}> ()
  y = Mul(x, k)
})";

// The same product in float64, which no float16 device computes.
constexpr const char* kDoubleModel = R"(
<ir_version: 8, opset_import: ["" : 13]>
scale (double[2] x, float[2] f) => (double[2] y, float[2] g) {
  k = Constant <value = double[1] {1000.0}> ()
  y = Mul(x, k)
  g = Mul(f, f)
})";

// Nodes named <op>_0 (the 1.12 text parser has no node names); `weight` adds an initializer w =
// 100000 that the Add node 'Add_0' (y2 = x + w) reads: an overflow that belongs to a weight.
std::string WriteModel(const TempDir& dir, const std::string& name, const char* text,
                       bool weight = false) {
  io::Model m = io::ParseText(text);
  auto* g = m.proto.mutable_graph();
  for (auto& n : *g->mutable_node()) n.set_name(n.op_type() + "_0");
  if (weight) {
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(1);
    w->add_float_data(100000.0f);
    auto* add = g->add_node();
    add->set_op_type("Add");
    add->set_name("Add_0");
    add->add_input("x");
    add->add_input("w");
    add->add_output("y2");
    *g->add_output() = g->output(0);
    g->mutable_output(1)->set_name("y2");
  }
  testing::WriteFile(dir / name, m.proto.SerializeAsString());
  return (dir / name).string();
}

std::string WriteFloats(const TempDir& dir, const std::string& name, std::vector<float> v) {
  Tensor t(onnx::TensorProto::FLOAT, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  runtime::WriteNpy(dir / name, t);
  return (dir / name).string();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliFloat16, RunWarnsOfTheOverflowNamingTensorAndNode) {
  TempDir dir;
  const auto model = WriteModel(dir, "scale.onnx", kScaleModel);
  const auto x = WriteFloats(dir, "x.npy", {1, 2, 3, 100});
  const std::string args = "run " + model + " --input x=" + x;

  auto fp32 = RunPorttool(args);
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_EQ(fp32.err.find("overflow"), std::string::npos) << fp32.err;

  auto fp16 = RunPorttool(args + " --precision fp16");
  EXPECT_EQ(fp16.exit_code, 0) << "the exit status is unchanged by an overflow\n" << fp16.err;
  EXPECT_NE(fp16.err.find("overflow"), std::string::npos) << fp16.err;
  EXPECT_NE(fp16.err.find("tensor 'y'"), std::string::npos) << fp16.err;
  EXPECT_NE(fp16.err.find("node 'Mul_0'"), std::string::npos) << fp16.err;
  EXPECT_NE(fp16.err.find("100000 > 65504"), std::string::npos) << fp16.err;
  EXPECT_NE(fp16.out.find("inf 1"), std::string::npos) << "100000 became inf\n" << fp16.out;

  auto fail = RunPorttool(args + " --precision fp16 --fail-on-overflow");
  EXPECT_EQ(fail.exit_code, 1) << fail.err;
  EXPECT_NE(fail.err.find("tensor 'y'"), std::string::npos) << fail.err;

  auto json = RunPorttool(args + " --precision fp16 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["precision"], "fp16");
  ASSERT_EQ(doc["float16"]["overflows"].size(), 1u) << doc.dump();
  const auto& o = doc["float16"]["overflows"][0];
  EXPECT_EQ(o["tensor"], "y");
  EXPECT_EQ(o["node"], "Mul_0");
  EXPECT_FALSE(o["weight"].get<bool>());
  EXPECT_EQ(o["max_abs"].get<double>(), 100000.0);
  EXPECT_EQ(o["limit"].get<double>(), 65504.0);
  EXPECT_EQ(doc["outputs"][0]["inf_count"], 1);
}

// A weight past 65504 is named with the node that reads it.
TEST(CliFloat16, AnOverflowingWeightIsNamedWithItsReader) {
  TempDir dir;
  const auto model = WriteModel(dir, "weight.onnx", kScaleModel, /*weight=*/true);
  const auto x = WriteFloats(dir, "x.npy", {1, 2, 3, 4});
  auto r = RunPorttool("run " + model + " --input x=" + x + " --precision fp16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tensor 'w' (a weight read by node 'Add_0')"), std::string::npos) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["float16"]["overflows"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["float16"]["overflows"][0]["tensor"], "w");
  EXPECT_EQ(doc["float16"]["overflows"][0]["node"], "Add_0");
  EXPECT_TRUE(doc["float16"]["overflows"][0]["weight"].get<bool>());
  // Keeping the reader in float32 keeps its weight too: nothing overflows.
  auto kept = RunPorttool("run " + model + " --input x=" + x +
                          " --precision fp16 --precision fp32:Add_0 --fail-on-overflow --json");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  auto k = nlohmann::json::parse(kept.out);
  EXPECT_TRUE(k["float16"]["overflows"].empty()) << k.dump();
  EXPECT_EQ(k["outputs"][1]["max"].get<double>(), 100004.0);
}

TEST(CliFloat16, Fp32NodesRemoveTheOverflow) {
  TempDir dir;
  const auto model = WriteModel(dir, "scale.onnx", kScaleModel);
  const auto x = WriteFloats(dir, "x.npy", {1, 2, 3, 100});
  auto r = RunPorttool("run " + model + " --input x=" + x +
                       " --precision fp16 --precision fp32:Mul_0 --fail-on-overflow --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("overflow"), std::string::npos) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["float16"]["overflows"].empty()) << doc.dump();
  EXPECT_EQ(doc["outputs"][0]["max"].get<double>(), 100000.0);
  EXPECT_EQ(doc["outputs"][0]["inf_count"], 0);
}

TEST(CliFloat16, PrecisionUsageErrorsNameTheCulprit) {
  TempDir dir;
  const auto model = WriteModel(dir, "scale.onnx", kScaleModel);
  const std::string run = "run " + model + " --random-inputs ";
  struct Case {
    std::string args, says;
  };
  for (const Case& c :
       std::vector<Case>{{"--precision fp16 --precision fp32:Mul_0,nosuch", "'nosuch'"},
                         {"--precision fp16 --precision fp32:Mul_O", "close: 'Mul_0'"},
                         {"--precision int16:Mul_0", "quantize-calibrate"},
                         {"--precision int8:Mul_0", "quantize-calibrate"},
                         {"--precision float:Mul_0", "fp32:NODE"},
                         {"--precision fp32:Mul_0", "add --precision fp16"},
                         {"--precision bf16", "expected fp32 or fp16"},
                         {"--precision fp16 --precision fp32", "one float arithmetic"},
                         {"--precision fp16 --precision fp32:", "no node names"},
                         {"--fail-on-overflow", "--precision fp16"}}) {
    auto r = RunPorttool(run + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
  auto compare = RunPorttool("compare " + model + " --precision int16:Mul_0");
  EXPECT_EQ(compare.exit_code, 2) << compare.err;
  EXPECT_NE(compare.err.find("quantize-calibrate"), std::string::npos) << compare.err;
  // --isolate's cones compute in float32: the combination would be half float16.
  auto isolate = RunPorttool("compare " + model + " " + model + " --isolate --precision fp16");
  EXPECT_EQ(isolate.exit_code, 2) << isolate.err;
  EXPECT_NE(isolate.err.find("convert-fp16"), std::string::npos) << isolate.err;
  auto unknown = RunPorttool("compare " + model + " --precision fp16 --precision fp32:nosuch");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("'nosuch'"), std::string::npos) << unknown.err;
}

TEST(CliFloat16, Float64StaysFloat64AndIsSaidOnce) {
  TempDir dir;
  const auto model = WriteModel(dir, "double.onnx", kDoubleModel);
  Tensor x(onnx::TensorProto::DOUBLE, {2});
  x.mutable_data<double>()[0] = 1.0001;
  x.mutable_data<double>()[1] = 100.0;
  runtime::WriteNpy(dir / "x.npy", x);
  const auto f = WriteFloats(dir, "f.npy", {1.0f + 0x1p-12f, 2.0f});
  auto r = RunPorttool("run " + model + " --input x=" + (dir / "x.npy").string() +
                       " --input f=" + f + " --precision fp16 --fail-on-overflow --json");
  ASSERT_EQ(r.exit_code, 0) << "100000 in float64 is no float16 overflow\n" << r.err;
  EXPECT_EQ(Count(r.err, "float64"), 1u) << r.err;
  EXPECT_NE(r.err.find("kept in float64"), std::string::npos) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["float16"]["float64_kept"], (nlohmann::json{"k", "x", "y"})) << doc.dump();
  EXPECT_EQ(doc["outputs"][0]["dtype"], "float64");
  EXPECT_EQ(doc["outputs"][0]["max"].get<double>(), 100000.0);
  EXPECT_EQ(doc["outputs"][0]["min"].get<double>(), 1.0001 * 1000.0) << "not rounded";
  EXPECT_EQ(doc["outputs"][1]["min"].get<double>(), 1.0) << "float32 is still rounded";
}

// The demo model's float16 error budget: the model in fp16 against itself in fp32, not zero
// (float16 keeps 11 significant bits) but small.
TEST(CliFloat16, CompareGivesTheDemoModelsFloat16Error) {
  const std::string demo = testing::DemoModelPath().string();
  const std::string args = "compare " + demo + " --input-shape images:1x3x64x64 --json";
  auto r = RunPorttool(args + " --precision fp16 --atol 0.01 --rtol 0.01");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_FALSE(doc["outputs"].empty());
  for (const auto& out : doc["outputs"]) {
    EXPECT_GT(out["max_abs"].get<double>(), 0.0) << out.dump();
    EXPECT_LT(out["max_abs"].get<double>(), 0.01) << out.dump();
    EXPECT_GT(out["cosine"].get<double>(), 0.9999) << out.dump();
    EXPECT_GT(out["sqnr_db"].get<double>(), 40.0) << out.dump();
  }
  EXPECT_EQ(doc["float16"]["reference"], "fp32");
  EXPECT_EQ(doc["float16"]["candidate"], "fp16");
  EXPECT_TRUE(doc["float16"]["overflows"].empty());
  // Two models: MODEL_B in fp16 against MODEL_A in fp32, the same figures as the model alone.
  auto two = RunPorttool("compare " + demo + " " + demo +
                         " --input-shape images:1x3x64x64 --json --precision fp16 --atol 0.01 "
                         "--rtol 0.01");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["outputs"], doc["outputs"]);
  // Without --precision the model against itself is exact.
  auto same =
      RunPorttool("compare " + demo + " " + demo + " --input-shape images:1x3x64x64 --json");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(nlohmann::json::parse(same.out)["outputs"][0]["max_abs"].get<double>(), 0.0);
}

TEST(CliFloat16, CompareNamesTheCandidatesOverflow) {
  TempDir dir;
  const auto model = WriteModel(dir, "scale.onnx", kScaleModel);
  const auto x = WriteFloats(dir, "x.npy", {1, 2, 3, 100});
  auto r = RunPorttool("compare " + model + " --input x=" + x + " --precision fp16 --json");
  EXPECT_EQ(r.exit_code, 1) << "inf against 100000 is over any tolerance\n" << r.err;
  EXPECT_NE(r.err.find("overflow"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'Mul_0'"), std::string::npos) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["float16"]["overflows"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["float16"]["overflows"][0]["tensor"], "y");
  auto kept = RunPorttool("compare " + model + " --input x=" + x +
                          " --precision fp16 --precision fp32:Mul_0 --json");
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_TRUE(nlohmann::json::parse(kept.out)["float16"]["overflows"].empty()) << kept.out;
}

}  // namespace
}  // namespace porttool
