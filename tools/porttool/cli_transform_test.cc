// End-to-end tests of `porttool fold-constants`, `simplify`, `rewrite` and `chain --fixed-point`:
// exit codes, the op table and JSON, the demo model's "go through ONNX" remedy made real, and bad
// input writing nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;
using testing::TempDir;
using testing::TestData;

TEST(CliTransform, DecomposeGeluMakesTheDemoRk3588Clean) {
  TempDir dir;
  std::string model = TestData("demo_detector.onnx").string();
  std::string out = (dir / "demo.std.onnx").string();
  auto before =
      RunPorttool("check " + model + " --target rknn-rk3588 --input-shape images:1x3x64x64");
  EXPECT_NE(before.out.find("unsupported  Custom_GELU_0"), std::string::npos) << before.out;
  EXPECT_EQ(before.exit_code, 1);
  auto r = RunPorttool("rewrite " + model + " --rule decompose-gelu -o " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nodes_before"], 16);
  EXPECT_EQ(doc["nodes_after"], 20);
  auto after = RunPorttool("check " + out + " --target rknn-rk3588 --input-shape images:1x3x64x64");
  EXPECT_EQ(after.out.find("unsupported  Custom_GELU_0"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find(" 0 unsupported"), std::string::npos) << after.out;
  EXPECT_EQ(after.exit_code, 0) << after.out;
  io::Model m = io::Load(out);
  for (const auto& op : m.proto.opset_import()) EXPECT_NE(op.domain(), "com.microsoft");
  auto cmp = RunPorttool("compare " + model + " " + out +
                         " --input-shape images:1x3x64x64 --atol 1e-5 --rtol 0");
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
}

TEST(CliTransform, SimplifyPrintsTheOpTableAndFusesTheDemo) {
  TempDir dir;
  std::string out = (dir / "demo.sim.onnx").string();
  auto r = RunPorttool("simplify " + TestData("demo_detector.onnx").string() +
                       " --input-shape images:1x3x64x64 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("BatchNormalization"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total nodes"), std::string::npos) << r.out;
  io::Model m = io::Load(out);
  EXPECT_EQ(m.proto.graph().node_size(), 13);  // 3 BatchNormalization fused into their Conv
}

TEST(CliTransform, UnknownRuleIsUsageErrorWithClosestIdsAndWritesNothing) {
  TempDir dir;
  auto r = RunPorttool("rewrite " + TestData("demo_detector.onnx").string() +
                       " --rule decompose-gleu -o " + (dir / "o.onnx").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("decompose-gelu"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CliTransform, OutputEqualToInputIsRefusedWithoutInPlace) {
  TempDir dir;
  std::filesystem::copy_file(TestData("demo_detector.onnx"), dir / "m.onnx");
  std::string model = (dir / "m.onnx").string();
  std::string hash = util::Sha256File(model);
  auto r = RunPorttool("simplify " + model + " -o " + model);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // usage: would overwrite the input
  EXPECT_EQ(util::Sha256File(model), hash);
}

TEST(CliTransform, ChainFixedPointAndFoldConstantsJson) {
  TempDir dir;
  auto r = RunPorttool("chain " + TestData("demo_detector.onnx").string() +
                       " --fixed-point -p 'fuse-conv-bn,eliminate-dead-code' -o " +
                       (dir / "c.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = RunPorttool("fold-constants " + TestData("demo_detector.onnx").string() + " -o " +
                       (dir / "f.onnx").string() + " --json");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto doc = nlohmann::json::parse(f.out);
  EXPECT_TRUE(doc["ops"].is_array());
  EXPECT_EQ(doc["nodes_before"], 16);
}

// `rewrite --rule 'convert-fp16{...}'` and `chain -p`: the model ONNX Runtime runs (float32 edges
// by default, float16 edges with io=fp16), and a bad keep= is exit 2 with nothing written.
TEST(CliTransform, ConvertFp16WritesAModelOnnxRuntimeRuns) {
  std::filesystem::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  TempDir dir;
  std::string model = (models / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string();
  std::string out = (dir / "cls.fp16.onnx").string();
  auto r = RunPorttool("rewrite " + model + " --rule 'convert-fp16{io=fp32}' -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("float32 constants now float16"), std::string::npos) << r.out;
  auto check = RunPorttool("check " + out);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  io::Model m = io::Load(out);
  EXPECT_EQ(m.proto.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  int float16_weights = 0;
  for (const auto& n : m.proto.graph().node()) {
    if (n.op_type() == "Constant" && n.attribute(0).t().data_type() == onnx::TensorProto::FLOAT16) {
      ++float16_weights;
    }
  }
  EXPECT_GT(float16_weights, 100);

  std::string half = (dir / "cls.half.onnx").string();
  auto chain =
      RunPorttool("chain " + model + " -p 'convert-fp16{keep=p2o.Softmax.0; io=fp16}' -o " + half);
  ASSERT_EQ(chain.exit_code, 0) << chain.err;
  io::Model h = io::Load(half);
  EXPECT_EQ(h.proto.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  EXPECT_NE(chain.out.find("(1 of them kept by keep="), std::string::npos) << chain.out;

  if (auto why = testing::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);
  // x = 0.5 everywhere, as float32 ('<f4', 0x3f000000) and as float16 ('<f2', 0x3800).
  auto write_npy = [&](const std::string& path, const std::string& descr, const std::string& one) {
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1, 3, 48, 192), }";
    header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
    std::string body;
    for (int i = 0; i < 3 * 48 * 192; ++i) body += one;
    testing::WriteFile(path, std::string("\x93NUMPY\x01\x00", 8) +
                                 static_cast<char>(header.size() & 0xff) +
                                 static_cast<char>(header.size() >> 8) + header + body);
  };
  write_npy((dir / "x32.npy").string(), "<f4", std::string("\x00\x00\x00\x3f", 4));
  write_npy((dir / "x16.npy").string(), "<f2", std::string("\x00\x38", 2));
  auto ort32 = testing::RunShell(testing::OrtRunCommand() + " " + out +
                                 " --input x=" + (dir / "x32.npy").string());
  ASSERT_EQ(ort32.exit_code, 0) << ort32.err;
  EXPECT_NE(ort32.out.find("\"dtype\": \"float32\""), std::string::npos) << ort32.out;
  auto ort16 = testing::RunShell(testing::OrtRunCommand() + " " + half +
                                 " --input x=" + (dir / "x16.npy").string());
  ASSERT_EQ(ort16.exit_code, 0) << ort16.err;
  EXPECT_NE(ort16.out.find("\"dtype\": \"float16\""), std::string::npos) << ort16.out;
}

TEST(CliTransform, ConvertFp16KeepNamingNoNodeIsUsageErrorAndWritesNothing) {
  TempDir dir;
  auto r = RunPorttool("rewrite " + TestData("demo_detector.onnx").string() +
                       " --rule 'convert-fp16{keep=nosuch}' -o " + (dir / "o.onnx").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("keep= names no node of the main graph: nosuch"), std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace porttool
