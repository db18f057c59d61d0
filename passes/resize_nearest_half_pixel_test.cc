// resize-nearest-half-pixel: rewritten attributes, kept op sequence and graph names, outputs
// identical to the bit before/after through the executor (and equal to plain pixel repetition) on
// odd shapes and integer scales 1-4, the exact skip reason of every variant it must keep, and
// PP-OCRv4 det's six Resize nodes (skipped without ../shared/models).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "lib/runtime/session.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/strings.h"
#include "lib/util/testing.h"
#include "passes/pass_test_util.h"

namespace porttool::passes {
namespace {

using testing_util::CountOp;
using testing_util::MaxOutputDiff;
using testing_util::Notes;
using testing_util::RunOne;

constexpr char kPass[] = "resize-nearest-half-pixel";

std::optional<std::string> StringAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.s();
  }
  return std::nullopt;
}

bool HasAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

std::string Dims(const std::vector<int64_t>& d) {
  std::vector<std::string> s;
  for (int64_t v : d) s.push_back(std::to_string(v));
  return util::Join(s, ",");
}

std::string Floats(const std::vector<float>& v) {
  std::vector<std::string> s;
  for (float f : v) s.push_back(fmt::format("{:.1f}", f));
  return util::Join(s, ", ");
}

// One Resize of x (shape `in`) by constant `scales` (an initializer) with the given attributes
// ("" for an absent one).
io::Model OneResize(const std::vector<int64_t>& in, const std::vector<float>& scales,
                    const std::string& attrs, int opset = 11) {
  std::vector<int64_t> out;
  for (size_t a = 0; a < in.size(); ++a) out.push_back(static_cast<int64_t>(in[a] * scales[a]));
  return io::ParseText(fmt::format(
      R"(<ir_version: 8, opset_import: ["" : {}]>
    g (float[{}] x) => (float[{}] y) <float[{}] sc = {{{}}}, float[0] roi = {{}}> {{
      y = Resize<{}>(x, roi, sc) }})",
      opset, Dims(in), Dims(out), scales.size(), Floats(scales), attrs));
}

constexpr char kAsymmetricFloor[] =
    R"(mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor")";

// Runs the model on 0, 1, 2, ... and checks y equals x with every element repeated scales[a]
// times along each axis a (what nearest upsampling by an integer factor means), independently
// of the kernel's coordinate formulas.
void ExpectPixelRepetition(const io::Model& m, const std::vector<int64_t>& in,
                           const std::vector<int64_t>& scales) {
  runtime::Tensor x(onnx::TensorProto::FLOAT, in);
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = static_cast<float>(i);
  runtime::Session session(m);
  auto out = session.Run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  const runtime::Tensor& y = out[0].value;
  ASSERT_EQ(y.rank(), static_cast<int>(in.size()));
  std::vector<int64_t> idx(in.size(), 0);
  for (int64_t flat = 0; flat < y.size(); ++flat) {
    int64_t rest = flat, src = 0, stride = 1;
    for (int a = static_cast<int>(in.size()) - 1; a >= 0; --a) {
      idx[a] = rest % y.dim(a);
      rest /= y.dim(a);
      src += (idx[a] / scales[a]) * stride;
      stride *= in[a];
    }
    ASSERT_EQ(y.data<float>()[flat], static_cast<float>(src)) << "output element " << flat;
  }
}

struct Case {
  std::vector<int64_t> in;
  std::vector<float> scales;
};

TEST(ResizeNearestHalfPixel, AsymmetricFloorBecomesHalfPixelWithIdenticalOutputs) {
  const std::vector<Case> cases = {{{1, 3, 5, 7}, {1, 1, 2, 2}},   // odd sizes, scale 2
                                   {{1, 2, 3, 5}, {1, 1, 3, 3}},   // scale 3
                                   {{2, 1, 7, 3}, {1, 1, 4, 4}},   // scale 4, batch 2
                                   {{1, 4, 5, 9}, {1, 1, 1, 2}},   // scale 1 on one axis
                                   {{1, 2, 9, 1}, {1, 1, 3, 4}},   // mixed scales, width 1
                                   {{1, 3, 11}, {1, 1, 3}},        // rank 3
                                   {{1, 1, 1, 1}, {1, 1, 4, 3}}};  // a single pixel
  for (const auto& c : cases) {
    SCOPED_TRACE(Dims(c.in) + " x " + Floats(c.scales));
    io::Model m = OneResize(c.in, c.scales, kAsymmetricFloor);
    io::Model original = m;
    auto result = RunOne(m, kPass);
    EXPECT_EQ(result.changes, 1) << Notes(result);
    ASSERT_EQ(m.proto.graph().node_size(), 1);
    const auto& node = m.proto.graph().node(0);
    EXPECT_EQ(node.op_type(), "Resize");
    EXPECT_EQ(StringAttr(node, "coordinate_transformation_mode"), "half_pixel");
    EXPECT_EQ(StringAttr(node, "mode"), "nearest");
    EXPECT_FALSE(HasAttr(node, "nearest_mode"));
    EXPECT_EQ(node.attribute_size(), 2);
    // Inputs (roi included) and graph names are kept.
    ASSERT_EQ(node.input_size(), 3);
    EXPECT_EQ(node.input(0), "x");
    EXPECT_EQ(node.input(1), "roi");
    EXPECT_EQ(node.input(2), "sc");
    EXPECT_EQ(node.output(0), "y");
    EXPECT_EQ(m.proto.graph().input(0).name(), "x");
    EXPECT_EQ(m.proto.graph().output(0).name(), "y");
    for (uint64_t seed : {1, 7, 42}) EXPECT_EQ(MaxOutputDiff(original, m, seed), 0.0);
    std::vector<int64_t> s(c.scales.begin(), c.scales.end());
    ExpectPixelRepetition(original, c.in, s);
    ExpectPixelRepetition(m, c.in, s);
  }
}

TEST(ResizeNearestHalfPixel, ConstantNodeScalesSizesAndSeveralNodesKeepOrderAndNames) {
  // scales from a Constant node, sizes that are multiples of a static input, and a chain; the
  // half_pixel node is already what the pass writes and gets no note.
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,5] x) => (float[1,2,9,10] y, float[1,2,18,20] z, float[1,2,6,10] h) <int64[4] sz = {1, 2, 9, 10}> {
      sc = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
      y = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(x, , , sz)
      z = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(y, , sc)
      h = Resize<mode = "nearest">(x, , sc) })");
  io::Model original = m;
  auto result = RunOne(m, "infer-shapes," + std::string(kPass));
  EXPECT_EQ(result.changes, 2) << Notes(result);
  EXPECT_EQ(Notes(result).find("kept"), std::string::npos) << Notes(result);
  std::vector<std::string> ops;
  for (const auto& n : m.proto.graph().node()) ops.push_back(n.op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Constant", "Resize", "Resize", "Resize"}));
  for (int i = 1; i <= 2; ++i) {
    const auto& node = m.proto.graph().node(i);
    EXPECT_EQ(StringAttr(node, "coordinate_transformation_mode"), "half_pixel");
    EXPECT_FALSE(HasAttr(node, "nearest_mode"));
  }
  EXPECT_EQ(m.proto.graph().node(1).input(3), "sz");
  EXPECT_EQ(m.proto.graph().node(3).attribute_size(), 1);  // untouched
  ASSERT_EQ(m.proto.graph().output_size(), 3);
  EXPECT_EQ(m.proto.graph().output(0).name(), "y");
  EXPECT_EQ(m.proto.graph().output(1).name(), "z");
  EXPECT_EQ(m.proto.graph().output(2).name(), "h");
  EXPECT_EQ(MaxOutputDiff(original, m), 0.0);
}

// Each variant the pass must keep, with the reason it gives; the node is left exactly as it was.
TEST(ResizeNearestHalfPixel, KeepsWhatIsNotIdenticalWithTheReason) {
  struct Kept {
    std::string what;
    io::Model model;
    std::string reason;
  };
  std::vector<Kept> kept;
  kept.push_back({"linear", OneResize({1, 1, 3, 3}, {1, 1, 2, 2}, R"(mode = "linear",
      coordinate_transformation_mode = "asymmetric")"),
                  "linear mode: only nearest is rewritten"});
  kept.push_back({"1.5", OneResize({1, 1, 4, 4}, {1, 1, 1.5, 1.5}, kAsymmetricFloor),
                  "scale 1.5 on axis 2 is not an integer"});
  kept.push_back({"0.5", OneResize({1, 1, 4, 4}, {1, 1, 1, 0.5}, kAsymmetricFloor),
                  "scale 0.5 on axis 3 is below 1 (downsampling)"});
  kept.push_back({"round_prefer_ceil", OneResize({1, 1, 3, 3}, {1, 1, 2, 2}, R"(mode = "nearest",
      coordinate_transformation_mode = "asymmetric", nearest_mode = "round_prefer_ceil")"),
                  "asymmetric + round_prefer_ceil picks round(x/s), not floor(x/s), for scales "
                  "above 1 (scale 2 on axis 2)"});
  kept.push_back({"round_prefer_floor x3",
                  OneResize({1, 1, 3, 3}, {1, 1, 3, 3}, R"(mode = "nearest",
      coordinate_transformation_mode = "asymmetric")"),
                  "asymmetric + round_prefer_floor picks round(x/s), not floor(x/s), for scales "
                  "above 2 (scale 3 on axis 2)"});
  kept.push_back({"half_pixel floor", OneResize({1, 1, 3, 3}, {1, 1, 2, 2}, R"(mode = "nearest",
      coordinate_transformation_mode = "half_pixel", nearest_mode = "floor")"),
                  "half_pixel + floor picks a different pixel than round_prefer_floor"});
  kept.push_back({"align_corners", OneResize({1, 1, 3, 3}, {1, 1, 2, 2}, R"(mode = "nearest",
      coordinate_transformation_mode = "align_corners", nearest_mode = "floor")"),
                  "align_corners coordinates: only asymmetric"});
  kept.push_back({"dynamic scales", io::ParseText(R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,1,3,3] x, float[4] sc) => (float[1,1,?,?] y) <float[0] roi = {}> {
      y = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(x, roi, sc) })"),
                  "scales 'sc' are not a constant"});
  kept.push_back({"sizes not a multiple", io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,3,4] x) => (float[1,1,6,10] y) <int64[4] sz = {1, 1, 6, 10}> {
      y = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(x, , , sz) })"),
                  "size 10 on axis 3 is not a multiple of the input dim 4"});
  kept.push_back({"sizes over a dynamic input",
                  io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,H,W] x) => (float[1,1,6,8] y) <int64[4] sz = {1, 1, 6, 8}> {
      y = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(x, , , sz) })"),
                  "sizes are given but the shape of input 'x' is not static"});
  kept.push_back({"opset 10", io::ParseText(R"(<ir_version: 8, opset_import: ["" : 10]>
    g (float[1,1,3,3] x) => (float[1,1,6,6] y) <float[4] sc = {1.0, 1.0, 2.0, 2.0}> {
      y = Resize<mode = "nearest">(x, sc) })"),
                  "opset-10 Resize has no coordinate_transformation_mode or nearest_mode"});
  for (auto& k : kept) {
    SCOPED_TRACE(k.what);
    io::Model before = k.model;
    auto result = RunOne(k.model, kPass);
    EXPECT_EQ(result.changes, 0);
    EXPECT_NE(Notes(result).find("kept Resize"), std::string::npos) << Notes(result);
    EXPECT_NE(Notes(result).find(k.reason), std::string::npos) << Notes(result);
    EXPECT_EQ(k.model.proto.SerializeAsString(), before.proto.SerializeAsString());
  }
}

// The other combinations the comment proves identical, and PyTorch's unread cubic_coeff_a.
TEST(ResizeNearestHalfPixel, OtherProvablyIdenticalRoundingsAndUnreadAttributes) {
  struct Converted {
    std::string what;
    std::vector<int64_t> in;
    std::vector<float> scales;
    std::string attrs;
  };
  const std::vector<Converted> cases = {
      {"asymmetric round_prefer_floor x2",
       {1, 2, 5, 3},
       {1, 1, 2, 2},
       R"(mode = "nearest", coordinate_transformation_mode = "asymmetric")"},
      {"asymmetric ceil x1",
       {1, 2, 5, 3},
       {1, 1, 1, 1},
       R"(mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "ceil")"},
      {"half_pixel round_prefer_ceil x3",
       {1, 2, 5, 3},
       {1, 1, 3, 3},
       R"(mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_ceil")"},
      {"half_pixel explicit default, x1.5",
       {1, 2, 4, 4},
       {1, 1, 1.5, 1.5},
       R"(mode = "nearest", nearest_mode = "round_prefer_floor")"},
      {"pytorch export",
       {1, 2, 5, 3},
       {1, 1, 2, 2},
       R"(coordinate_transformation_mode = "asymmetric", cubic_coeff_a = -0.75, mode = "nearest", nearest_mode = "floor")"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    io::Model m = OneResize(c.in, c.scales, c.attrs);
    io::Model original = m;
    auto result = RunOne(m, kPass);
    EXPECT_EQ(result.changes, 1) << Notes(result);
    const auto& node = m.proto.graph().node(0);
    EXPECT_EQ(StringAttr(node, "coordinate_transformation_mode").value_or("half_pixel"),
              "half_pixel");
    EXPECT_FALSE(HasAttr(node, "nearest_mode"));
    EXPECT_FALSE(HasAttr(node, "cubic_coeff_a"));
    EXPECT_EQ(MaxOutputDiff(original, m), 0.0);
  }
  // Already half_pixel with the default rounding: nothing to do, nothing to say.
  io::Model done = OneResize({1, 1, 3, 3}, {1, 1, 2, 2}, R"(mode = "nearest")");
  auto result = RunOne(done, kPass);
  EXPECT_EQ(result.changes, 0);
  EXPECT_TRUE(result.notes.empty()) << Notes(result);
}

// Opset-18 attributes (libonnx 1.12 has no schema for them and the executor refuses them, so only
// the attributes are checked); and an extent where float32 indexing stops being exact.
TEST(ResizeNearestHalfPixel, Opset18AttributesAndHugeExtents) {
  io::Model axes = OneResize({1, 1, 3, 3}, {1, 1, 2, 2},
                             std::string(kAsymmetricFloor) + R"(, axes = [2, 3])", 18);
  auto kept = RunOne(axes, kPass);
  EXPECT_EQ(kept.changes, 0);
  EXPECT_NE(Notes(kept).find("axes is set"), std::string::npos) << Notes(kept);

  io::Model aa = OneResize({1, 1, 3, 3}, {1, 1, 2, 2},
                           std::string(kAsymmetricFloor) + R"(, antialias = 1)", 18);
  kept = RunOne(aa, kPass);
  EXPECT_NE(Notes(kept).find("antialias is set"), std::string::npos) << Notes(kept);

  io::Model defaults =
      OneResize({1, 1, 3, 3}, {1, 1, 2, 2},
                std::string(kAsymmetricFloor) +
                    R"(, antialias = 0, exclude_outside = 0, keep_aspect_ratio_policy = "stretch")",
                18);
  auto changed = RunOne(defaults, kPass);
  EXPECT_EQ(changed.changes, 1) << Notes(changed);
  const auto& node = defaults.proto.graph().node(0);
  EXPECT_EQ(node.attribute_size(), 2);  // mode and coordinate_transformation_mode
  EXPECT_EQ(StringAttr(node, "coordinate_transformation_mode"), "half_pixel");

  io::Model huge = OneResize({1, 1, 1, int64_t{1} << 22}, {1, 1, 1, 2}, kAsymmetricFloor);
  kept = RunOne(huge, kPass);
  EXPECT_EQ(kept.changes, 0);
  EXPECT_NE(Notes(kept).find("output extent 8388608 on axis 3 is 2^23 or more"), std::string::npos)
      << Notes(kept);
}

// PP-OCRv4 det: six nearest Resize (asymmetric, floor, scales 2, 2, 2, 8, 4, 2 from Constant
// nodes) that RKNN otherwise runs on the CPU.
TEST(ResizeNearestHalfPixel, PpOcrV4DetAllSixResizeWithIdenticalOutputs) {
  auto models = porttool::testing::SharedModelsDir();
  auto path = models / "ch_PP-OCRv4_det_infer.onnx";
  if (models.empty() || !std::filesystem::exists(path)) {
    PORTTOOL_SKIP_MISSING(
        "ch_PP-OCRv4_det_infer.onnx absent ($PORTTOOL_SHARED/models or "
        "../shared/models)");
  }
  io::Model det = io::Load(path);
  shape::ApplyInputShapes(det, {{"x", {1, 3, 160, 160}}});
  io::Model original = det;
  auto result = RunOne(det, kPass);
  EXPECT_EQ(result.changes, 6) << Notes(result);
  EXPECT_EQ(Notes(result).find("kept"), std::string::npos) << Notes(result);
  EXPECT_EQ(CountOp(det, "Resize"), 6);
  EXPECT_EQ(det.proto.graph().node_size(), original.proto.graph().node_size());
  for (const auto& node : det.proto.graph().node()) {
    if (node.op_type() != "Resize") continue;
    EXPECT_EQ(StringAttr(node, "coordinate_transformation_mode"), "half_pixel") << node.name();
    EXPECT_FALSE(HasAttr(node, "nearest_mode")) << node.name();
  }
  EXPECT_EQ(det.proto.graph().output(0).name(), original.proto.graph().output(0).name());
  EXPECT_EQ(MaxOutputDiff(original, det), 0.0);
}

}  // namespace
}  // namespace porttool::passes
