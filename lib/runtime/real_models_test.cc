// The four real models in ../shared/models run through the executor and match ONNX Runtime
// (scripts/ort_run.js, npm onnxruntime-node): max abs error below 1e-4 of the output's range.
// Skips cleanly when the models, node, or onnxruntime-node are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

namespace fs = std::filesystem;

struct RealModel {
  const char* file;
  const char* input;
  std::vector<int64_t> shape;
  float lo, hi;  // input value range
};

class RealModels : public ::testing::TestWithParam<RealModel> {};

// The test's name suffix: the model file up to its first dot, other than [A-Za-z0-9] as '_'.
std::string ModelTestName(const ::testing::TestParamInfo<RealModel>& info) {
  std::string n = info.param.file;
  n = n.substr(0, n.find('.'));
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
  return n;
}

TEST_P(RealModels, MatchOnnxRuntime) {
  const RealModel& rm = GetParam();
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  if (auto why = testing::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);

  testing::TempDir dir;
  Tensor x(onnx::TensorProto::FLOAT, rm.shape);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(rm.lo, rm.hi);
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = dist(rng);
  WriteNpy(dir / "x.npy", x);

  auto ort = testing::RunShell(testing::OrtRunCommand() + " " + (models / rm.file).string() +
                               " --input '" + rm.input + "=" + (dir / "x.npy").string() +
                               "' --output-dir " + (dir / "ort").string());
  ASSERT_EQ(ort.exit_code, 0) << ort.err;

  io::Model model = io::Load(models / rm.file);
  Session session(model);
  auto outputs = session.Run({{rm.input, x}});
  auto files = TensorFileNames(session.output_names(), ".npy");
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor expected = ReadNpy(dir / "ort" / files[i]);
    const Tensor& got = outputs[i].value;
    ASSERT_EQ(got.shape(), expected.shape()) << outputs[i].name;
    ASSERT_EQ(got.dtype(), onnx::TensorProto::FLOAT);
    const float* e = expected.data<float>();
    const float* g = got.data<float>();
    auto [mn, mx] = std::minmax_element(e, e + expected.size());
    // A single-value output (hey_jarvis) has no range: its magnitude stands in.
    double range = std::max<double>({*mx - *mn, std::abs(*mx), std::abs(*mn), 1e-12});
    double max_err = 0;
    for (int64_t k = 0; k < expected.size(); ++k) {
      max_err = std::max<double>(max_err, std::abs(double(g[k]) - e[k]));
    }
    std::printf("%s output %s: max abs error %.3g, output range %.3g, ratio %.3g\n", rm.file,
                outputs[i].name.c_str(), max_err, range, max_err / range);
    EXPECT_LT(max_err / range, 1e-4) << rm.file << " output " << outputs[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, RealModels,
    ::testing::Values(RealModel{"ch_PP-OCRv4_det_infer.onnx", "x", {1, 3, 640, 640}, -2, 2},
                      RealModel{"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}, 0, 1},
                      RealModel{"hey_jarvis_v0.1.onnx", "x.1", {1, 16, 96}, -1, 1},
                      RealModel{"melspectrogram.onnx", "input", {1, 16000}, -0.5, 0.5}),
    ModelTestName);

// Outputs bitwise the same at 1 and 2 threads (calibration tables, folded constants and port
// bundles depend on it: every kernel splits by output tiles, never by the reduction), and the
// fused session within 1e-6 of the output range of the unfused one (fusion.h).
class RealModelsAcrossThreads : public ::testing::TestWithParam<RealModel> {};

std::vector<NamedTensor> RunWith(const io::Model& model, const Tensor& x, const char* input,
                                 SessionOptions options) {
  Session session(model, options);
  return session.Run({{input, x}});
}

TEST_P(RealModelsAcrossThreads, SameBitsAtOneAndTwoThreadsAndFusedMatchesUnfused) {
  const RealModel& rm = GetParam();
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  const io::Model model = io::Load(models / rm.file);
  Tensor x(onnx::TensorProto::FLOAT, rm.shape);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(rm.lo, rm.hi);
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = dist(rng);
  const auto one = RunWith(model, x, rm.input, {.threads = 1});
  const auto two = RunWith(model, x, rm.input, {.threads = 2});
  const auto unfused = RunWith(model, x, rm.input, {.threads = 2, .no_fusion = true});
  for (size_t i = 0; i < one.size(); ++i) {
    const Tensor& a = one[i].value;
    ASSERT_EQ(a.shape(), two[i].value.shape());
    EXPECT_EQ(std::memcmp(a.raw(), two[i].value.raw(), a.size() * sizeof(float)), 0)
        << rm.file << " output " << one[i].name << " differs between 1 and 2 threads";
    const float* f = a.data<float>();
    const float* u = unfused[i].value.data<float>();
    double range = 1e-12, worst = 0;
    for (int64_t k = 0; k < a.size(); ++k) {
      range = std::max<double>(range, std::abs(u[k]));
      worst = std::max<double>(worst, std::abs(double(f[k]) - u[k]));
    }
    std::printf("%s output %s: fused vs unfused max abs difference %.3g (range %.3g)\n", rm.file,
                one[i].name.c_str(), worst, range);
    EXPECT_LE(worst, 1e-6 * range) << rm.file << " output " << one[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, RealModelsAcrossThreads,
    ::testing::Values(RealModel{"ch_PP-OCRv4_det_infer.onnx", "x", {1, 3, 640, 640}, -2, 2},
                      RealModel{"ch_PP-OCRv4_rec_infer.onnx", "x", {1, 3, 48, 320}, -1, 1},
                      RealModel{"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}, 0, 1},
                      // Two LayerNormalizations written as nodes fuse into their ReduceMean.
                      RealModel{"hey_jarvis_v0.1.onnx", "x.1", {1, 16, 96}, -1, 1}),
    ModelTestName);

// The generated transformer block (scripts/gen_transformer_block.py: attention, LayerNorm, erf
// GELU MLP): its four linear layers take their bias, residual and GELU tails into the MatMul
// epilogue, and the fused outputs are the unfused ones bit for bit, at 1 and 2 threads.
TEST(TransformerBlock, FusedLinearTailsGiveTheUnfusedBitsAtAnyThreadCount) {
  testing::TempDir dir;
  const fs::path file = dir / "block.onnx";
  auto gen = testing::RunShell(
      "/usr/bin/python3 " + (testing::SourceDir() / "scripts/gen_transformer_block.py").string() +
      " " + file.string());
  if (gen.exit_code != 0) PORTTOOL_SKIP_MISSING("python3-onnx absent: " << gen.err);
  const io::Model model = io::Load(file);
  Tensor x(onnx::TensorProto::FLOAT, {1, 256, 384});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = dist(rng);
  Session fused(model, {.threads = 1});
  // qkv bias; out-projection bias + residual; MLP up bias + 5 GELU nodes; down bias + residual.
  EXPECT_EQ(fused.fused_nodes(), 11);
  const auto one = fused.Run({{"x", x}});
  const auto two = RunWith(model, x, "x", {.threads = 2});
  const auto plain = RunWith(model, x, "x", {.threads = 1, .no_fusion = true});
  ASSERT_EQ(one.size(), plain.size());
  for (size_t i = 0; i < one.size(); ++i) {
    const Tensor& a = one[i].value;
    ASSERT_EQ(a.shape(), plain[i].value.shape());
    EXPECT_EQ(std::memcmp(a.raw(), plain[i].value.raw(), a.size() * sizeof(float)), 0)
        << "fused and unfused differ: " << one[i].name;
    EXPECT_EQ(std::memcmp(a.raw(), two[i].value.raw(), a.size() * sizeof(float)), 0)
        << "1 and 2 threads differ: " << one[i].name;
  }
}

// M-LSD (tf2onnx) pads its three strided depthwise convs with Pads whose amounts are a Concat of
// a Split of an initializer: all three fold into their convs (pad_fusion.h), so a fused run runs
// no Pad, and with the conv tails kept apart (a registry whose Conv takes no epilogue) the folded
// run gives the unfused bits at 1 and 2 threads.
TEST(Mlsd, PadsFoldIntoTheirConvsBitForBit) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  const io::Model model = io::Load(models / "mlsd_320_large.onnx");
  const char* input = "input_image_with_alpha:0";
  Tensor x(onnx::TensorProto::FLOAT, {1, 320, 320, 4});
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(0, 255);
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = dist(rng);
  KernelRegistry folds_only = KernelRegistry::Default();
  folds_only.Register("", "Conv", 1, 17, *folds_only.Find("", "Conv", 11),
                      *folds_only.FindPrepare("", "Conv", 11));
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    Session folded(model, {.registry = &folds_only, .threads = threads});
    EXPECT_EQ(folded.fused_nodes(), 3);
    int pads_run = 0;
    const auto a = folded.RunTimed(
        {{input, x}}, [&pads_run](const onnx::NodeProto& n) { pads_run += n.op_type() == "Pad"; });
    EXPECT_EQ(pads_run, 0);
    const auto b = RunWith(model, x, input, {.threads = threads, .no_fusion = true});
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].value.shape(), b[i].value.shape());
      EXPECT_EQ(std::memcmp(a[i].value.raw(), b[i].value.raw(), a[i].value.bytes()), 0)
          << "folded and unfused differ: " << a[i].name;
    }
  }
}

}  // namespace
}  // namespace porttool::runtime
