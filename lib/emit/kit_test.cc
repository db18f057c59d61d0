// Test kits: one folder per distinct (op, attributes, shapes) in the ONNX backend layout; each
// kit model passes the ONNX checker (python onnx 1.12) and, run by ONNX Runtime (npm
// onnxruntime-node) on its input_i.pb, reproduces output_i.pb within the kit's tolerance; --data
// samples become test_data_set_N with the node's real inputs; kits are byte-identical across runs;
// CheckKits fails a wrong output and names its worst element; Conv/ConvTranspose/MatMul/Gemm kits
// carry an atol for float accumulation (2 sqrt(K) u max sum|terms|) that passes a correct result
// summed in another order, even at a near-cancelling element, and still fails a wrong kernel.
#include "lib/emit/kit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lib/runtime/tensor_io.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::TempDir;

std::vector<fs::path> KitDirs(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// A one-node model: `inputs` become float graph inputs, `constants` initializers.
io::Model OneNodeModel(const onnx::NodeProto& node, const std::vector<runtime::NamedTensor>& inputs,
                       const std::vector<runtime::NamedTensor>& constants) {
  io::Model m;
  m.proto.set_ir_version(8);
  m.proto.add_opset_import()->set_version(17);
  auto* g = m.proto.mutable_graph();
  g->set_name("one_node");
  *g->add_node() = node;
  for (const auto& in : inputs) {
    auto* vi = g->add_input();
    vi->set_name(in.name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : in.value.shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (const auto& c : constants) *g->add_initializer() = runtime::TensorToProto(c.value, c.name);
  for (const auto& out : node.output()) g->add_output()->set_name(out);
  return m;
}

runtime::Tensor Normal(std::vector<int64_t> shape, float sigma, std::mt19937& gen) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, std::move(shape));
  std::normal_distribution<float> dist(0.f, sigma);
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = dist(gen);
  return t;
}

// A 3x3, pad 1 Conv over 64 channels (K = 64 * 9 + 1 with the bias) whose output element 0 of
// channel 0 cancels: its bias is minus the exact sum of its ~2000-sized |terms|.
struct ConvCase {
  static constexpr int64_t kC = 64, kM = 2, kH = 6, kW = 6, kCancelling = 2 * kW + 2;
  runtime::Tensor x, w, b;
};

// Conv by a plain loop, taps in reverse order (another order than the executor's GEMM), bias
// last, accumulated in Acc. `absolute` sums |w x| + |b|; `channels` below kC leaves the last input
// channels out, as a kernel with a channel-count bug would.
template <typename Acc>
std::vector<Acc> LoopConv(const ConvCase& c, int64_t channels, bool absolute) {
  const float* x = c.x.data<float>();
  const float* w = c.w.data<float>();
  auto term = [&](float v) {
    return absolute ? static_cast<Acc>(std::fabs(v)) : static_cast<Acc>(v);
  };
  std::vector<Acc> y(ConvCase::kM * ConvCase::kH * ConvCase::kW);
  for (int64_t m = 0; m < ConvCase::kM; ++m) {
    for (int64_t oh = 0; oh < ConvCase::kH; ++oh) {
      for (int64_t ow = 0; ow < ConvCase::kW; ++ow) {
        Acc acc = 0;
        for (int64_t ci = channels - 1; ci >= 0; --ci) {
          for (int64_t t = 8; t >= 0; --t) {
            int64_t ih = oh + t / 3 - 1, iw = ow + t % 3 - 1;
            if (ih < 0 || iw < 0 || ih >= ConvCase::kH || iw >= ConvCase::kW) continue;
            acc += term(w[(m * ConvCase::kC + ci) * 9 + t]) *
                   term(x[(ci * ConvCase::kH + ih) * ConvCase::kW + iw]);
          }
        }
        y[(m * ConvCase::kH + oh) * ConvCase::kW + ow] = acc + term(c.b.data<float>()[m]);
      }
    }
  }
  return y;
}

ConvCase NearCancellingConv() {
  std::mt19937 gen(14);
  ConvCase c;
  c.x = Normal({1, ConvCase::kC, ConvCase::kH, ConvCase::kW}, 20.f, gen);
  c.w = Normal({ConvCase::kM, ConvCase::kC, 3, 3}, 0.3f, gen);
  c.b = runtime::Tensor(onnx::TensorProto::FLOAT, {ConvCase::kM});
  c.b.mutable_data<float>()[0] = 0.f;
  c.b.mutable_data<float>()[1] = 0.5f;
  double exact = LoopConv<double>(c, ConvCase::kC, false)[ConvCase::kCancelling];
  c.b.mutable_data<float>()[0] = static_cast<float>(-exact);
  return c;
}

runtime::Tensor ConvOutput(const std::vector<float>& values) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, {1, ConvCase::kM, ConvCase::kH, ConvCase::kW});
  std::copy(values.begin(), values.end(), t.mutable_data<float>());
  return t;
}

double HeaderDefine(const std::string& header, const std::string& suffix) {
  size_t at = header.find(suffix + " ");
  EXPECT_NE(at, std::string::npos) << suffix;
  return at == std::string::npos ? -1 : std::stod(header.substr(at + suffix.size() + 1));
}

TEST(KitTest, AllKitsOfTheDemoModelPassInOnnxRuntimeAndTheChecker) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kAll;
  auto kits = MakeKits(testing::DemoModel(), options, dir / "kits");
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
  if (auto why = testing::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);
  for (const auto& kit : KitDirs(dir / "kits")) {
    std::string inputs;
    for (int i = 0; fs::exists(kit / fmt::format("test_data_set_0/input_{}.pb", i)); ++i) {
      std::string name;
      runtime::ReadPb(kit / fmt::format("test_data_set_0/input_{}.pb", i), &name);
      inputs += fmt::format(" --input '{}={}'", name,
                            (kit / fmt::format("test_data_set_0/input_{}.pb", i)).string());
    }
    auto ort = RunShell(fmt::format("{} {}{} --output-dir {}", testing::OrtRunCommand(),
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
  auto kits = MakeKits(testing::DemoModel(), options, dir / "kits");
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
  io::Model model = testing::DemoModel();
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
  EXPECT_EQ(info["tolerance"][0]["kind"], "float-reduction");
  EXPECT_EQ(info["attributes"]["strides"], (std::vector<int>{2, 2}));
}

TEST(KitTest, KitsAreByteIdenticalAcrossRuns) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kOp;
  options.name = "Relu";
  MakeKits(testing::DemoModel(), options, dir / "a");
  MakeKits(testing::DemoModel(), options, dir / "b");
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

TEST(KitTest, ReductionToleranceIsTheDocumentedBound) {
  nlohmann::json tol = ToleranceFor("Conv", onnx::TensorProto::FLOAT);
  EXPECT_EQ(tol["kind"], "float-reduction");
  EXPECT_EQ(tol["rtol"], 1e-3);
  EXPECT_EQ(tol["unit_roundoff"], std::ldexp(1.0, -24));
  for (const char* op : {"ConvTranspose", "MatMul", "Gemm"}) {
    EXPECT_EQ(ToleranceFor(op, onnx::TensorProto::FLOAT)["kind"], "float-reduction") << op;
  }
  EXPECT_EQ(ToleranceFor("MatMul", onnx::TensorProto::FLOAT16)["unit_roundoff"],
            std::ldexp(1.0, -11));
  EXPECT_EQ(ToleranceFor("MatMul", onnx::TensorProto::INT32)["kind"], "bitwise");
  // PP-OCRv4 det's Conv_p2o_Conv_55: K = 96 * 3 * 3 terms whose |terms| sum to at most 1544.
  nlohmann::json bound = WithReductionBound(tol, 864, 1544.0);
  EXPECT_EQ(bound["atol"].get<double>(),
            1e-5 + 2 * std::sqrt(864.0) * std::ldexp(1.0, -24) * 1544.0);
  EXPECT_NEAR(bound["atol"].get<double>(), 5.42e-3, 0.01e-3);
  EXPECT_EQ(bound["reduction_length"], 864);
  EXPECT_EQ(bound["rtol"], 1e-3);
}

TEST(KitTest, ConvKitPassesAnotherSummationOrderAtACancellingElementAndFailsAWrongKernel) {
  TempDir dir;
  ConvCase c = NearCancellingConv();
  onnx::NodeProto node;
  node.set_op_type("Conv");
  node.set_name("conv");
  for (const char* in : {"x", "w", "b"}) node.add_input(in);
  node.add_output("y");
  auto* pads = node.add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  KitOptions options;
  options.select = KitOptions::Select::kNode;
  options.name = "conv";
  options.samples = {{{"x", c.x}}};
  auto kits =
      MakeKits(OneNodeModel(node, {{"x", c.x}}, {{"w", c.w}, {"b", c.b}}), options, dir / "kits");
  ASSERT_EQ(kits.size(), 1u);
  fs::path kit = dir / "kits" / kits[0].dir;

  // kit.json records K, the largest sum of |terms| (checked against a double-precision loop) and
  // the atol they give; kit.h carries the same atol for the C test program.
  auto tol = nlohmann::json::parse(testing::ReadFile(kit / "kit.json"))["tolerance"][0];
  const int64_t k = ConvCase::kC * 9 + 1;
  EXPECT_EQ(tol["kind"], "float-reduction");
  EXPECT_EQ(tol["reduction_length"], k);
  auto sums = LoopConv<double>(c, ConvCase::kC, true);
  const double m = *std::max_element(sums.begin(), sums.end());
  EXPECT_NEAR(tol["max_abs_terms"].get<double>(), m, 1e-5 * m);
  const double atol = 1e-5 + 2 * std::sqrt(static_cast<double>(k)) * std::ldexp(1.0, -24) *
                                 tol["max_abs_terms"].get<double>();
  EXPECT_EQ(tol["atol"].get<double>(), atol);
  EXPECT_EQ(HeaderDefine(testing::ReadFile(kit / "kit.h"), "_ATOL"), atol);

  std::string name;
  runtime::Tensor want = runtime::ReadPb(kit / "test_data_set_0/output_0.pb", &name);
  fs::create_directories(dir / "board");
  auto judge = [&](const runtime::Tensor& got) {
    runtime::WritePb(dir / "board/output_0.pb", got, name);
    return CheckKits(kit, dir / "board");
  };
  // A correct float32 loop passes, though at the cancelling element it is further from the
  // executor than rtol 1e-3 / atol 1e-5 allow: both are a few u * sum|terms| from the exact value.
  runtime::Tensor board = ConvOutput(LoopConv<float>(c, ConvCase::kC, false));
  const double w0 = want.data<float>()[ConvCase::kCancelling];
  const double diff = std::fabs(board.data<float>()[ConvCase::kCancelling] - w0);
  EXPECT_GT(diff, 1e-5 + 1e-3 * std::fabs(w0));
  EXPECT_LT(diff, atol);
  KitCheckResult ok = judge(board);
  EXPECT_EQ(ok.passed, 1) << (ok.rows.empty() ? "" : ok.rows[0].detail);

  // Wrong outputs still fail: one element off by twice its bound, and a kernel that drops the
  // last input channel.
  runtime::Tensor bumped = want.Clone();
  bumped.mutable_data<float>()[17] += 2 * (atol + 1e-3 * std::fabs(want.data<float>()[17]));
  KitCheckResult r = judge(bumped);
  EXPECT_EQ(r.failed, 1);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NE(r.rows[0].detail.find("worst element 17"), std::string::npos) << r.rows[0].detail;
  EXPECT_EQ(judge(ConvOutput(LoopConv<float>(c, ConvCase::kC - 1, false))).failed, 1);
}

TEST(KitTest, GemmBoundCountsTheInnerDimensionAndTheAbsoluteAlpha) {
  TempDir dir;
  std::mt19937 gen(3);
  runtime::Tensor a = Normal({4, 3}, 1.f, gen), b = Normal({4, 5}, 1.f, gen),
                  bias = Normal({5}, 1.f, gen);
  onnx::NodeProto node;
  node.set_op_type("Gemm");
  node.set_name("gemm");
  for (const char* in : {"a", "b", "c"}) node.add_input(in);
  node.add_output("y");
  auto attr = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    auto* at = node.add_attribute();
    at->set_name(name);
    at->set_type(type);
    return at;
  };
  attr("transA", onnx::AttributeProto::INT)->set_i(1);
  attr("alpha", onnx::AttributeProto::FLOAT)->set_f(-2.f);
  attr("beta", onnx::AttributeProto::FLOAT)->set_f(0.5f);
  KitOptions options;
  options.select = KitOptions::Select::kNode;
  options.name = "gemm";
  options.samples = {{{"a", a}}};
  auto kits =
      MakeKits(OneNodeModel(node, {{"a", a}}, {{"b", b}, {"c", bias}}), options, dir / "kits");
  ASSERT_EQ(kits.size(), 1u);
  auto tol = nlohmann::json::parse(
      testing::ReadFile(dir / "kits" / kits[0].dir / "kit.json"))["tolerance"][0];
  EXPECT_EQ(tol["reduction_length"], 4 + 1);  // A is [K=4, 3] under transA, plus C
  double m = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      double s = 0.5 * std::fabs(bias.data<float>()[j]);
      for (int k = 0; k < 4; ++k) {
        s += 2.0 * std::fabs(a.data<float>()[k * 3 + i]) * std::fabs(b.data<float>()[k * 5 + j]);
      }
      m = std::max(m, s);
    }
  }
  EXPECT_NEAR(tol["max_abs_terms"].get<double>(), m, 1e-5 * m);
}

TEST(KitTest, UnknownNodeIsAUsageErrorWithASuggestion) {
  TempDir dir;
  KitOptions options;
  options.select = KitOptions::Select::kNode;
  options.name = "stem/conv";
  try {
    MakeKits(testing::DemoModel(), options, dir / "kits");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("stem/Conv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::emit
