// Resize under SessionOptions::ort_compatible_resize against ONNX Runtime itself (node,
// scripts/ort_run.js), bit for bit: one model holds a Resize per configuration (M-LSD's NHWC
// bilinear x2, non-integer scales 0.6 and 1.7 under every coordinate transformation, every
// nearest rounding rule, tf_crop_and_resize, trilinear, bicubic, 8-bit data), ONNX Runtime runs it
// once, and the executor runs it with its default formula and with ORT's. The test prints how many
// values each differs in; ORT's formula must differ in none, and the default must differ somewhere
// (else the option would be untested).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

struct ResizeCase {
  std::string name;
  std::vector<int64_t> shape;
  std::string mode, coord, nearest;  // nearest "" : the default
  std::vector<float> scales;         // or sizes
  std::vector<int64_t> sizes;
  std::vector<float> roi;  // tf_crop_and_resize
  int32_t dtype = onnx::TensorProto::FLOAT;
  bool exclude_outside = false;
  float cubic_a = -0.75f;
};

void AddStringAttribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

Tensor FloatVector(const std::vector<float>& v) {
  Tensor t(onnx::TensorProto::FLOAT, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

Tensor IntVector(const std::vector<int64_t>& v) {
  Tensor t(onnx::TensorProto::INT64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return t;
}

// Random data: floats in [-4, 4) (every exponent band a quantized activation sees), integers over
// the type's range.
Tensor RandomInput(const ResizeCase& c, uint32_t seed) {
  Tensor t(c.dtype, c.shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-4, 4);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (c.dtype == onnx::TensorProto::FLOAT) t.mutable_data<float>()[i] = real(rng);
    if (c.dtype == onnx::TensorProto::UINT8) t.mutable_data<uint8_t>()[i] = byte(rng);
    if (c.dtype == onnx::TensorProto::INT8) t.mutable_data<int8_t>()[i] = byte(rng) - 128;
  }
  return t;
}

// Resize node i of the model: input x<i>, constant roi/scales/sizes, output y<i>.
void AddCase(onnx::GraphProto& g, const ResizeCase& c, int i) {
  const std::string id = std::to_string(i);
  onnx::NodeProto& node = *g.add_node();
  node.set_op_type("Resize");
  node.set_name(c.name);
  node.add_input("x" + id);
  const bool crop = !c.roi.empty();
  node.add_input(crop ? "roi" + id : "");
  node.add_input(c.scales.empty() ? "" : "scales" + id);
  if (!c.sizes.empty()) node.add_input("sizes" + id);
  node.add_output("y" + id);
  AddStringAttribute(node, "mode", c.mode);
  AddStringAttribute(node, "coordinate_transformation_mode", c.coord);
  if (!c.nearest.empty()) AddStringAttribute(node, "nearest_mode", c.nearest);
  if (c.mode == "cubic") {
    auto* a = node.add_attribute();
    a->set_name("cubic_coeff_a");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(c.cubic_a);
    auto* e = node.add_attribute();
    e->set_name("exclude_outside");
    e->set_type(onnx::AttributeProto::INT);
    e->set_i(c.exclude_outside ? 1 : 0);
  }
  if (crop) *g.add_initializer() = TensorToProto(FloatVector(c.roi), "roi" + id);
  if (!c.scales.empty()) *g.add_initializer() = TensorToProto(FloatVector(c.scales), "scales" + id);
  if (!c.sizes.empty()) *g.add_initializer() = TensorToProto(IntVector(c.sizes), "sizes" + id);
  auto* in = g.add_input();
  in->set_name("x" + id);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(c.dtype);
  for (int64_t d : c.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto* out = g.add_output();
  out->set_name("y" + id);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(c.dtype);
}

ResizeCase ByScales(std::string name, std::vector<int64_t> shape, std::string mode,
                    std::string coord, std::vector<float> scales) {
  ResizeCase c;
  c.name = std::move(name), c.shape = std::move(shape), c.mode = std::move(mode);
  c.coord = std::move(coord), c.scales = std::move(scales);
  return c;
}

ResizeCase BySizes(std::string name, std::vector<int64_t> shape, std::string mode,
                   std::string coord, std::vector<int64_t> sizes) {
  ResizeCase c = ByScales(std::move(name), std::move(shape), std::move(mode), std::move(coord), {});
  c.sizes = std::move(sizes);
  return c;
}

ResizeCase WithType(ResizeCase c, int32_t dtype) {
  c.dtype = dtype;
  return c;
}

ResizeCase Cropped(ResizeCase c) {
  c.roi = {0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 1.1f};
  return c;
}

std::vector<ResizeCase> Cases() {
  using P = onnx::TensorProto;
  ResizeCase cubic_excluding = ByScales("cubic_0.6_exclude_outside", {1, 2, 20, 25}, "cubic",
                                        "half_pixel", {1, 1, 0.6f, 0.6f});
  cubic_excluding.exclude_outside = true, cubic_excluding.cubic_a = -0.5f;
  std::vector<ResizeCase> cases = {
      // M-LSD (tf2onnx, NHWC): bilinear half_pixel to sizes twice the input.
      BySizes("mlsd_nhwc_linear_x2_half_pixel", {1, 20, 20, 32}, "linear", "half_pixel",
              {1, 40, 40, 32}),
      BySizes("mlsd_nhwc_linear_x2_half_pixel_80", {1, 80, 80, 4}, "linear", "half_pixel",
              {1, 160, 160, 4}),
      ByScales("nchw_linear_x2_half_pixel", {1, 3, 9, 11}, "linear", "half_pixel", {1, 1, 2, 2}),
      ByScales("linear_2d", {9, 11}, "linear", "half_pixel", {1.7f, 0.6f}),
      ByScales("trilinear_5d", {1, 2, 4, 5, 6}, "linear", "half_pixel", {1, 1, 1.5f, 1.7f, 0.6f}),
      ByScales("trilinear_3d", {4, 5, 6}, "linear", "align_corners", {1.7f, 0.6f, 2}),
      Cropped(
          BySizes("linear_crop", {1, 2, 10, 12}, "linear", "tf_crop_and_resize", {1, 2, 7, 17})),
      Cropped(
          BySizes("nearest_crop", {1, 2, 10, 12}, "nearest", "tf_crop_and_resize", {1, 2, 7, 17})),
      WithType(ByScales("uint8_nhwc_linear_1.7", {1, 9, 10, 3}, "linear", "half_pixel",
                        {1, 1.7f, 1.7f, 1}),
               P::UINT8),
      WithType(ByScales("int8_nhwc_linear_x2", {1, 9, 10, 3}, "linear", "asymmetric", {1, 2, 2, 1}),
               P::INT8),
      WithType(ByScales("uint8_nchw_linear_0.6", {1, 3, 20, 25}, "linear", "pytorch_half_pixel",
                        {1, 1, 0.6f, 0.6f}),
               P::UINT8),
      ByScales("cubic_1.7", {1, 2, 9, 11}, "cubic", "half_pixel", {1, 1, 1.7f, 1.7f}),
      cubic_excluding,
      ByScales("cubic_align_corners", {1, 1, 9, 11}, "cubic", "align_corners", {1, 1, 1.7f, 0.6f}),
      ByScales("cubic_asymmetric", {7, 9}, "cubic", "asymmetric", {2, 1.7f}),
  };
  // Every coordinate transformation over a non-integer up- and downscale, for linear and for
  // every nearest rounding rule.
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_half_pixel_for_nn"}) {
    for (const float scale : {0.6f, 1.7f}) {
      const std::string tag = fmt::format("_{}_{}", coord, scale);
      if (std::string(coord) != "tf_half_pixel_for_nn") {
        cases.push_back(
            ByScales("linear" + tag, {1, 2, 20, 25}, "linear", coord, {1, 1, scale, scale}));
      }
      for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
        ResizeCase c = ByScales(fmt::format("nearest_{}{}", nearest, tag), {1, 1, 40, 45},
                                "nearest", coord, {1, 1, scale, scale});
        c.nearest = nearest;
        cases.push_back(c);
      }
    }
  }
  // Output 1 of an asymmetric x / scale lands a few float ulps (2^-22) either side of 2.5: ONNX
  // Runtime takes 4 ulps as halfway under both round_prefer rules, 5 not.
  for (const int ulps : {-5, -4, -1, 1, 4, 5}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil"}) {
      const float scale = static_cast<float>(1.0 / (2.5 + ulps * 0x1p-22));
      ResizeCase c = ByScales(fmt::format("nearest_{}_2.5{:+d}ulp", nearest, ulps), {1, 1, 1, 8},
                              "nearest", "asymmetric", {1, 1, 1, scale});
      c.nearest = nearest;
      cases.push_back(c);
    }
  }
  return cases;
}

// The number of elements whose bytes differ.
int64_t DifferingValues(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return a.size();
  const size_t width = a.bytes() / std::max<int64_t>(a.size(), 1);
  const auto* pa = static_cast<const char*>(a.raw());
  const auto* pb = static_cast<const char*>(b.raw());
  int64_t n = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    n += std::memcmp(pa + i * width, pb + i * width, width) != 0;
  return n;
}

std::vector<NamedTensor> RunExecutor(const io::Model& model, const TensorMap& feeds, bool ort,
                                     int threads) {
  SessionOptions options;
  options.ort_compatible_resize = ort;
  options.threads = threads;
  Session session(model, options);
  return session.Run(feeds);
}

TEST(ResizeOrtFormula, BitwiseEqualToOnnxRuntimeWhereTheDefaultFormulaIsNot) {
  if (auto why = testing_util::OrtUnavailableReason(); !why.empty()) PORTTOOL_SKIP_MISSING(why);
  const std::vector<ResizeCase> cases = Cases();
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(13);
  proto.mutable_graph()->set_name("resize_cases");
  testing::TempDir dir;
  const auto model_path = dir / "resize_cases.onnx";
  std::string cmd = testing::OrtRunCommand() + " " + model_path.string() +
                    " --threads 1 --output-dir " + (dir / "ort").string();
  TensorMap feeds;
  for (size_t i = 0; i < cases.size(); ++i) {
    AddCase(*proto.mutable_graph(), cases[i], static_cast<int>(i));
    const std::string name = "x" + std::to_string(i);
    feeds[name] = RandomInput(cases[i], 1000 + static_cast<uint32_t>(i));
    WriteNpy(dir / (name + ".npy"), feeds[name]);
    cmd += " --input " + name + "=" + (dir / (name + ".npy")).string();
  }
  {
    std::ofstream out(model_path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }
  auto ort = testing::RunShell(cmd);
  ASSERT_EQ(ort.exit_code, 0) << ort.err;
  const io::Model model = io::Load(model_path);
  const auto by_default = RunExecutor(model, feeds, false, 0);
  const auto as_ort = RunExecutor(model, feeds, true, 1);
  const auto as_ort_2 = RunExecutor(model, feeds, true, 2);
  const auto files = TensorFileNames(
      [&] {
        std::vector<std::string> names;
        for (const auto& o : by_default) names.push_back(o.name);
        return names;
      }(),
      ".npy");
  int64_t total = 0, default_differs = 0, ort_differs = 0;
  fmt::print("{:<46} {:>8} {:>8} {:>8}\n", "case", "values", "default", "ort");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Tensor expected = ReadNpy(dir / "ort" / files[i]);
    const int64_t d = DifferingValues(by_default[i].value, expected);
    const int64_t o = DifferingValues(as_ort[i].value, expected);
    fmt::print("{:<46} {:>8} {:>8} {:>8}\n", cases[i].name, expected.size(), d, o);
    total += expected.size(), default_differs += d, ort_differs += o;
    EXPECT_EQ(o, 0) << cases[i].name << ": the ONNX Runtime formula differs from ONNX Runtime";
    EXPECT_EQ(DifferingValues(as_ort[i].value, as_ort_2[i].value), 0)
        << cases[i].name << ": 1 and 2 threads differ";
  }
  fmt::print("{} cases, {} values: {} differ from ONNX Runtime by default, {} with its formula\n",
             cases.size(), total, default_differs, ort_differs);
  EXPECT_GT(default_differs, 0) << "no case tells the two formulas apart";
  EXPECT_GT(DifferingValues(by_default[0].value, ReadNpy(dir / "ort" / files[0])), 0)
      << "M-LSD's bilinear x2 no longer differs by default: pick data that shows the option";
}

}  // namespace
}  // namespace porttool::runtime
