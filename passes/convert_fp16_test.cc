// convert-fp16: on hand-built models, exactly which tensors become float16, where the Casts go
// (ops ONNX Runtime's CPU provider has no float16 kernel for run in float32 between them), what
// keep= and io= change, and that the result passes the ONNX checker; on the shared PP-OCR det, cls
// and rec, that ONNX Runtime runs the converted model and agrees with the executor's float16 mode
// on the original float model within fp16 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "lib/analysis/check.h"
#include "lib/io/model.h"
#include "lib/ir/rewrite.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"
#include "passes/pass_test_util.h"

namespace porttool::passes {
namespace {

using TP = onnx::TensorProto;
using testing_util::Notes;
using testing_util::RunOne;
namespace fs = std::filesystem;

// "Cast>16", "Conv", ... one entry per node: the op, and for a Cast its target (16 or 32).
std::vector<std::string> Ops(const io::Model& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.proto.graph().node()) {
    std::string op = n.op_type();
    if (op == "Cast") op += n.attribute(0).i() == TP::FLOAT16 ? ">16" : ">32";
    ops.push_back(op);
  }
  return ops;
}

const onnx::NodeProto& Producer(const io::Model& m, const std::string& tensor) {
  for (const auto& n : m.proto.graph().node()) {
    for (const auto& o : n.output()) {
      if (o == tensor) return n;
    }
  }
  throw std::runtime_error("no producer of " + tensor);
}

const TP& Initializer(const io::Model& m, const std::string& name) {
  for (const auto& t : m.proto.graph().initializer()) {
    if (t.name() == name) return t;
  }
  throw std::runtime_error("no initializer " + name);
}

void ExpectCheckerClean(const io::Model& m) {
  analysis::CheckReport report;
  analysis::RunOnnxChecker(m, report);
  EXPECT_TRUE(report.findings.empty()) << report.findings.front().message;
}

// Conv (no float16 kernel on ORT's CPU) -> Reshape (has one) -> Sigmoid (has none).
const char* kSmall = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,4,4] x) => (float[1,32] y)
    <float[2,2,1,1] w = {0.5, 0.25, -1.0, 2.0}, int64[2] shape = {1, 32}> {
    c = Conv <kernel_shape = [1, 1]> (x, w)
    r = Reshape(c, shape)
    y = Sigmoid(r) })";

TEST(ConvertFp16, WeightsBecomeFloat16AndCastsWrapOpsWithoutAFloat16Kernel) {
  io::Model m = io::ParseText(kSmall);
  m.proto.mutable_graph()->mutable_node(0)->set_name("conv");
  auto result = RunOne(m, "convert-fp16");
  EXPECT_GT(result.changes, 0);
  const auto& g = m.proto.graph();
  EXPECT_EQ(Initializer(m, "w").data_type(), TP::FLOAT16);
  EXPECT_EQ(Initializer(m, "shape").data_type(), TP::INT64);          // shapes stay as they are
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), TP::FLOAT);  // io=fp32 by default
  EXPECT_EQ(g.output(0).type().tensor_type().elem_type(), TP::FLOAT);
  EXPECT_EQ(g.output(0).name(), "y");
  // x -> float16 at the edge; Conv and Sigmoid between Casts; Reshape in float16; y -> float32.
  EXPECT_EQ(Ops(m),
            (std::vector<std::string>{"Cast>16", "Cast>32", "Cast>32", "Conv", "Cast>16", "Reshape",
                                      "Cast>32", "Sigmoid", "Cast>16", "Cast>32"}));
  EXPECT_EQ(Producer(m, "c").op_type(), "Cast");  // the tensor names between nodes are kept
  EXPECT_EQ(Producer(m, "r").op_type(), "Reshape");
  EXPECT_EQ(Producer(m, "y").op_type(), "Cast");
  EXPECT_NE(Notes(result).find(
                "1 float32 constants now float16; 1 nodes run in float16, 2 in "
                "float32 between Casts (0 of them kept by keep=, 0 for an overflowing weight)"),
            std::string::npos)
      << Notes(result);
  ExpectCheckerClean(m);

  // The converted model in the executor (which computes float16 as float32) is the original
  // model in the executor's float16 mode: the same roundings at the same places.
  io::Model original = io::ParseText(kSmall);
  runtime::Session a(m);
  runtime::SessionOptions fp16;
  fp16.float16 = true;
  runtime::Session b(original, fp16);
  auto inputs = runtime::RandomInputs(a, 3);
  auto out_a = a.Run(inputs), out_b = b.Run(inputs);
  ASSERT_EQ(out_a[0].value.size(), out_b[0].value.size());
  for (int64_t i = 0; i < out_a[0].value.size(); ++i) {
    EXPECT_EQ(out_a[0].value.data<float>()[i], out_b[0].value.data<float>()[i]) << i;
  }
}

TEST(ConvertFp16, IoFp16MakesGraphInputsAndOutputsFloat16WithoutEdgeCasts) {
  io::Model m = io::ParseText(kSmall);
  RunOne(m, "convert-fp16{io=fp16}");
  const auto& g = m.proto.graph();
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), TP::FLOAT16);
  EXPECT_EQ(g.output(0).type().tensor_type().elem_type(), TP::FLOAT16);
  EXPECT_EQ(Ops(m), (std::vector<std::string>{"Cast>32", "Cast>32", "Conv", "Cast>16", "Reshape",
                                              "Cast>32", "Sigmoid", "Cast>16"}));
  ExpectCheckerClean(m);
}

TEST(ConvertFp16, KeptNodesStayFloat32WithFloat32Weights) {
  // w is read by the kept conv only: it stays float32; u by the other only: float16; v by both:
  // float16, and the kept one gets a float32 copy.
  const io::Model fixed = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,4,4] y)
      <float[2,2,1,1] w = {0.5, 0.25, -1.0, 2.0}, float[2,2,1,1] u = {1.0, 0.5, 0.5, 1.0},
       float[2] v = {0.1, 0.2}> {
      a = Conv <kernel_shape = [1, 1]> (x, w, v)
      b = Conv <kernel_shape = [1, 1]> (a, u, v)
      y = Relu(b) })");
  io::Model m = fixed;
  m.proto.mutable_graph()->mutable_node(0)->set_name("first");
  m.proto.mutable_graph()->mutable_node(1)->set_name("second");
  auto result = RunOne(m, "convert-fp16{keep=first}");
  EXPECT_EQ(Initializer(m, "w").data_type(), TP::FLOAT);    // only `first` reads it
  EXPECT_EQ(Initializer(m, "u").data_type(), TP::FLOAT16);  // only `second`
  EXPECT_EQ(Initializer(m, "v").data_type(), TP::FLOAT16);  // both: `first` reads a copy
  EXPECT_EQ(Initializer(m, "v_fp32").data_type(), TP::FLOAT);
  const auto& first = Producer(m, "a_fp32");
  EXPECT_EQ(first.name(), "first");
  EXPECT_EQ(first.input(1), "w");
  EXPECT_EQ(first.input(2), "v_fp32");
  const auto& second = Producer(m, "b_fp32");
  EXPECT_EQ(second.input(1), "u_fp32");  // a Cast of the float16 weight
  EXPECT_EQ(Producer(m, "u_fp32").op_type(), "Cast");
  EXPECT_NE(Notes(result).find("(1 of them kept by keep=, 0 for an overflowing weight)"),
            std::string::npos)
      << Notes(result);
  ExpectCheckerClean(m);

  // keep= and ';' between options, as the issue spells it.
  io::Model both = fixed;
  both.proto.mutable_graph()->mutable_node(0)->set_name("first");
  both.proto.mutable_graph()->mutable_node(1)->set_name("second");
  RunOne(both, "convert-fp16{keep=first,second; io=fp16}");
  EXPECT_EQ(Initializer(both, "w").data_type(), TP::FLOAT);
  EXPECT_EQ(Initializer(both, "u").data_type(), TP::FLOAT);
  EXPECT_EQ(Initializer(both, "v").data_type(), TP::FLOAT);
  EXPECT_EQ(both.proto.graph().input(0).type().tensor_type().elem_type(), TP::FLOAT16);
  ExpectCheckerClean(both);
}

TEST(ConvertFp16, ANodeReadingAWeightPastTheFloat16RangeIsKeptInFloat32) {
  // PP-OCRv4 det's head: a BatchNormalization variance of 9.8e7 would be inf.
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,2] x) => (float[1,2,2,2] y)
      <float[2] s = {1.0, 1.0}, float[2] b = {0.0, 0.0}, float[2] mean = {0.0, 0.0},
       float[2] var = {1.0, 97903600.0}> {
      n = BatchNormalization(x, s, b, mean, var)
      y = Relu(n) })");
  m.proto.mutable_graph()->mutable_node(0)->set_name("bn");
  auto result = RunOne(m, "convert-fp16");
  EXPECT_EQ(Initializer(m, "var").data_type(), TP::FLOAT);
  EXPECT_EQ(Initializer(m, "s").data_type(), TP::FLOAT);  // read by the kept node only
  EXPECT_EQ(Producer(m, "n_fp32").input(4), "var");
  EXPECT_NE(Notes(result).find("kept BatchNormalization 'bn' in float32: it reads 'var' whose |x| "
                               "reaches 9.79036e+07, past float16's 65504"),
            std::string::npos)
      << Notes(result);
  EXPECT_NE(Notes(result).find("(0 of them kept by keep=, 1 for an overflowing weight)"),
            std::string::npos)
      << Notes(result);
  ExpectCheckerClean(m);
}

TEST(ConvertFp16, ConstantsCastsAndFloat16KernelsByOpset) {
  // A float Constant becomes float16; Cast(to=FLOAT) casts to FLOAT16; int64 arithmetic stays;
  // Clip has a float16 kernel from opset 13 (no Casts), not at opset 11 (Casts around it).
  const char* text = R"(<ir_version: 8, opset_import: ["" : OPSET]>
    g (float[1,4] x) => (float[1,4] y, int64[2] s) {
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value_float = 6.0> ()
      c = Clip(x, lo, hi)
      s = Shape(c)
      sf = Cast <to = 1> (s)
      y = Mul(c, sf) })";
  auto with_opset = [&](const std::string& opset) {
    std::string t = text;
    t.replace(t.find("OPSET"), 5, opset);
    return io::ParseText(t);
  };
  io::Model m13 = with_opset("13");
  RunOne(m13, "convert-fp16");
  EXPECT_EQ(Ops(m13),
            (std::vector<std::string>{"Cast>16", "Constant", "Constant", "Clip", "Shape", "Cast>16",
                                      "Cast>32", "Cast>32", "Mul", "Cast>16", "Cast>32"}));
  for (int i : {1, 2}) {
    const auto& value = m13.proto.graph().node(i).attribute(0);
    EXPECT_EQ(value.name(), "value");
    EXPECT_EQ(value.t().data_type(), TP::FLOAT16);
  }
  EXPECT_EQ(m13.proto.graph().output(1).type().tensor_type().elem_type(), TP::INT64);
  ExpectCheckerClean(m13);

  io::Model m11 = with_opset("11");
  RunOne(m11, "convert-fp16");
  EXPECT_EQ(Producer(m11, "c").op_type(), "Cast");  // Clip-11 runs in float32
  ExpectCheckerClean(m11);
}

TEST(ConvertFp16, AnIfRunsInFloat32AndItsBodiesReadFloat32Casts) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, bool c) => (float[2,3] y) {
      r = Relu(x)
      y = If (c) <
        then_branch = then_g () => (float[2,3] t) {
          three = Constant <value = float {3.0}> ()
          t = Add(r, three) },
        else_branch = else_g () => (float[2,3] e) { e = Sigmoid(r) } > })");
  io::Model m = model;
  RunOne(m, "convert-fp16");
  const auto& iff = Producer(m, "y_fp32");
  EXPECT_EQ(iff.op_type(), "If");
  // The bodies read the float32 Cast of r (float16; Relu's own float32 output is r_fp32, which
  // they must not read: that would skip the rounding), and keep their own float32 constant.
  EXPECT_EQ(iff.attribute(0).g().node(1).input(0), "r_fp32_1");
  EXPECT_EQ(Producer(m, "r_fp32_1").op_type(), "Cast");
  EXPECT_EQ(Producer(m, "r_fp32_1").input(0), "r");
  EXPECT_EQ(iff.attribute(0).g().node(0).attribute(0).t().data_type(), TP::FLOAT);
  ExpectCheckerClean(m);
  EXPECT_LE(testing_util::MaxOutputDiff(model, m), 1e-2);
}

TEST(ConvertFp16, Float64IsLeftAloneAndSaidSo) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (double[2] x, float[2] f) => (double[2] y, float[2] z) {
      y = Relu(x)
      z = Relu(f) })");
  auto result = RunOne(m, "convert-fp16");
  EXPECT_EQ(Producer(m, "y").op_type(), "Relu");
  EXPECT_EQ(m.proto.graph().input(0).type().tensor_type().elem_type(), TP::DOUBLE);
  EXPECT_NE(Notes(result).find("float64/bfloat16 tensors left as they are"), std::string::npos)
      << Notes(result);
  ExpectCheckerClean(m);
}

TEST(ConvertFp16, BadOptionsAreUsageErrorsAndChangeNothing) {
  for (const std::string pipeline : {"convert-fp16{io=bf16}", "convert-fp16{keep=conv,nosuch}"}) {
    io::Model m = io::ParseText(kSmall);
    m.proto.mutable_graph()->mutable_node(0)->set_name("conv");
    const std::string before = m.proto.SerializeAsString();
    try {
      RunOne(m, pipeline);
      ADD_FAILURE() << "no error for " << pipeline;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(
          std::string(e.what()).find(pipeline.find("io") != std::string::npos ? "bf16" : "nosuch"),
          std::string::npos)
          << e.what();
    }
    EXPECT_EQ(m.proto.SerializeAsString(), before);
  }
}

// ---- The shared models: ONNX Runtime on the converted model against the executor's float16 mode
// on the original. ----

struct SharedModel {
  const char* file;
  std::vector<int64_t> shape;  // [1, 3, H, W]
  bool imagenet;               // normalised with ImageNet's mean/std (det), else (x - 0.5) / 0.5
  // Run before the comparison on both sides. det: its head's BatchNormalization has a variance of
  // 9.8e7, past float16's 65504: the executor's float16 mode makes it inf (a zero map), while the
  // pass keeps that node in float32; folded into the Conv first, as a deployment would, the two
  // compute the same thing.
  const char* prepare;
  // The executor running the converted model gives the float16 mode's (unfused) output bit for
  // bit: every rounding is where the float16 mode puts it. Not on det, where one Conv's weights
  // arrive through a Cast instead of as a constant, another kernel path sums in another order, and
  // 73 of its values round to the neighbouring float16 (40 of det's 409600 output values move).
  bool bitwise;
};

// A text-like image: dark strokes in rows on white, the kind of input PP-OCR's models are for (on
// random noise det's map is 0 everywhere and the comparison would say nothing).
runtime::Tensor TextLikeImage(const SharedModel& sm) {
  const int64_t h = sm.shape[2], w = sm.shape[3];
  std::vector<float> img(static_cast<size_t>(h * w), 1.0f);
  std::mt19937 rng(1);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto fill = [&](int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    for (int64_t y = std::max<int64_t>(y0, 0); y < std::min(y1, h); ++y) {
      for (int64_t x = std::max<int64_t>(x0, 0); x < std::min(x1, w); ++x) img[y * w + x] = 0;
    }
  };
  const int64_t line = std::min<int64_t>(28, h * 6 / 10), step = std::max<int64_t>(64, h);
  for (int64_t row = (h - line) / 2 % step; row + line <= h; row += step) {
    for (int64_t x = 20; x < w - 40;) {
      int stroke = uniform(2, 6), strokes = uniform(3, 6);
      for (int k = 0; k < strokes; ++k)
        fill(row, row + line, x + k * (stroke + 5), x + k * (stroke + 5) + stroke);
      int64_t end = x + strokes * (stroke + 5);
      int64_t bar = row + uniform(0, static_cast<int>(line) - 4);
      fill(bar, bar + 3, x, end);
      x = end + uniform(12, 30);
    }
  }
  runtime::Tensor t(TP::FLOAT, sm.shape);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  float* p = t.mutable_data<float>();
  for (int c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < h * w; ++i) {
      p[c * h * w + i] = sm.imagenet ? (img[i] - mean[c]) / std[c] : (img[i] - 0.5f) / 0.5f;
    }
  }
  return t;
}

class ConvertFp16Shared : public ::testing::TestWithParam<SharedModel> {};

std::string SharedName(const ::testing::TestParamInfo<SharedModel>& info) {
  std::string n = info.param.file;
  n = n.substr(0, n.find('.'));
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

// The spacing of float16 values at magnitude `v` (normal range): 2^(floor(log2 v) - 10).
double Fp16Ulp(double v) {
  if (v < 6.103515625e-05) return 5.960464477539063e-08;  // subnormal step 2^-24
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(v))) - 10);
}

TEST_P(ConvertFp16Shared, OnnxRuntimeOnTheConvertedModelAgreesWithTheFloat16Executor) {
  const SharedModel& sm = GetParam();
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent");
  if (auto why = testing::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);

  io::Model original = io::Load(models / sm.file);
  if (*sm.prepare) RunOne(original, sm.prepare);
  io::Model converted = original;
  RunOne(converted, "convert-fp16{io=fp32}");
  ExpectCheckerClean(converted);
  testing::TempDir dir;
  io::Save(converted, dir / "fp16.onnx");

  runtime::Tensor x = TextLikeImage(sm);
  runtime::WriteNpy(dir / "x.npy", x);
  auto ort = testing::RunShell(testing::OrtRunCommand() + " " + (dir / "fp16.onnx").string() +
                               " --input x=" + (dir / "x.npy").string() + " --output-dir " +
                               (dir / "ort").string());
  ASSERT_EQ(ort.exit_code, 0) << ort.err;

  // The executor in float16 mode, with its conv tails fused (as by default) and unfused: two
  // valid placements of the float16 roundings, whose spread says how far rounding alone moves
  // this model's output.
  runtime::SessionOptions fused_options, unfused_options;
  fused_options.float16 = unfused_options.float16 = true;
  unfused_options.no_fusion = true;
  runtime::Session fused(original, fused_options), unfused(original, unfused_options);
  runtime::Tensor got = fused.Run({{"x", x}})[0].value;
  runtime::Tensor spread_ref = unfused.Run({{"x", x}})[0].value;
  runtime::Tensor expected =
      runtime::ReadNpy(dir / "ort" / runtime::TensorFileNames(fused.output_names(), ".npy")[0]);
  ASSERT_EQ(got.shape(), expected.shape());
  const float* e = expected.data<float>();
  const float* g = got.data<float>();
  const float* u = spread_ref.data<float>();
  double scale = 0, max_diff = 0, spread = 0;
  int64_t differ = 0;
  for (int64_t i = 0; i < got.size(); ++i) scale = std::max<double>(scale, std::fabs(e[i]));
  for (int64_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(double(g[i]) - e[i]);
    differ += d > 0;
    max_diff = std::max(max_diff, d);
    spread = std::max(spread, std::fabs(double(g[i]) - u[i]));
  }
  // The converted model in the executor (float16 computed as float32, fusion off like above).
  runtime::SessionOptions plain_options;
  plain_options.no_fusion = true;
  runtime::Session plain(converted, plain_options);
  runtime::Tensor same = plain.Run({{"x", x}})[0].value;
  int64_t not_same = 0;
  for (int64_t i = 0; i < got.size(); ++i) not_same += same.data<float>()[i] != u[i];
  if (sm.bitwise) {
    EXPECT_EQ(not_same, 0) << sm.file;
  } else {
    EXPECT_LE(not_same * 100, got.size()) << sm.file;  // det: 40 of 409600
  }
  const double ulp = Fp16Ulp(scale);
  std::printf(
      "%s: ORT vs executor fp16: max |diff| %.3g = %.2f fp16 ulps at the output scale %.3g, %lld "
      "of %lld values differ; executor fused vs unfused: %.3g = %.2f ulps; executor on the "
      "converted model vs its float16 mode: %lld values differ\n",
      sm.file, max_diff, max_diff / ulp, scale, static_cast<long long>(differ),
      static_cast<long long>(got.size()), spread, spread / ulp, static_cast<long long>(not_same));
  // Within fp16 rounding: ORT's float32 kernels sum in another order than the executor's, so some
  // results land on the other side of a float16 rounding boundary, one ulp apart, and the
  // network carries that on as moving a rounding does. Two such sources (summation order, and
  // the executor's fused conv tails, which ORT between Casts cannot fuse), each about as large as
  // what moving the roundings does to the executor itself (fused vs unfused): the bound is 4 times
  // that spread, and at least 4 ulps at the output scale. Measured (ORT 1.31, x86-64): det 89 ulps
  // against a spread of 72, cls 1 against 2, rec 14.5 against 7. A wrong weight, a missing Cast or
  // a lost node is far outside it.
  EXPECT_LE(max_diff, 4 * std::max(spread, ulp)) << sm.file;
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, ConvertFp16Shared,
    ::testing::Values(
        SharedModel{"ch_PP-OCRv4_det_infer.onnx", {1, 3, 640, 640}, true, "fuse-conv-bn", false},
        SharedModel{"ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}, false, "", true},
        SharedModel{"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 320}, false, "", true}),
    SharedName);

}  // namespace
}  // namespace porttool::passes
