// Tests of the rewrite passes: each proves equal outputs before/after through the executor on
// random inputs (tolerance per pass), a no-match case with its reason, kept graph names, and an
// older opset where the pass applies to one.
#include <gtest/gtest.h>

#include <random>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"
#include "passes/gelu_to_tanh.h"
#include "passes/pass_test_util.h"

namespace porttool::passes {
namespace {

using testing_util::CountOp;
using testing_util::MaxOutputDiff;
using testing_util::Notes;
using testing_util::RunOne;

// Adds a float initializer with uniform values in [lo, hi).
void AddWeight(io::Model& m, const std::string& name, std::vector<int64_t> dims, float lo = -1,
               float hi = 1, uint64_t seed = 3) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, dims);
  std::mt19937_64 rng(seed + name.size() * 31 + name[0]);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = dist(rng);
  *m.proto.mutable_graph()->add_initializer() = runtime::TensorToProto(t, name);
}

TEST(EliminateIdentity, SelfLoopAndCycleAreBadInputNotAHang) {
  io::Model self = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) { a = Identity(a)
      z = Add(x, a) })");
  try {
    RunOne(self, "eliminate-identity");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("same tensor 'a'"), std::string::npos) << e.what();
  }
  io::Model cycle = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) { a = Identity(b)
      b = Identity(a)
      z = Add(x, a) })");
  try {
    RunOne(cycle, "eliminate-identity");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(ConstantLookup, InitializersConstantNodesAndIdentityChainsButNotOverridableInputs) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, float[2] d) => (float[2] z) <float[2] w = {1.0, 2.0}, float[2] d = {0.0, 0.0}> {
      k = Constant<value_floats = [3.0, 4.0]>()
      i = Identity(k)
      j = Identity(i)
      z = Add(x, j) })");
  ir::GraphView view(m.proto.graph());
  ir::ConstantLookup constants(view);
  ASSERT_NE(constants.Find("w"), nullptr);
  const auto* j = constants.Find("j");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(*ir::ConstantAsDoubles(m, *j), (std::vector<double>{3, 4}));
  EXPECT_EQ(constants.Find("d"), nullptr) << "an initializer that is also an input is a default";
  EXPECT_EQ(constants.Find("x"), nullptr);
}

TEST(FoldConstants, FoldsShapeChainsAndConstantsKeepingNamesAndNumerics) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4,4] x) => (float[N,48] y) <float[1] a = {2.0}, float[1] b = {3.0}> {
      c = Add(a, b)
      s = Shape(x)
      i0 = Constant<value = int64[1] {0}>()
      n = Gather(s, i0)
      m1 = Constant<value = int64[1] {-1}>()
      shp = Concat<axis = 0>(n, m1)
      r = Reshape(x, shp)
      y = Mul(r, c) })");
  io::Model original = m;
  shape::ApplyInputShapes(original, {{"x", {2, 3, 4, 4}}});
  auto result = RunOne(m, "fold-constants{input-shape=x:2x3x4x4}");
  EXPECT_GT(result.changes, 0);
  EXPECT_EQ(m.proto.graph().node_size(), 2) << Notes(result);  // Reshape, Mul
  EXPECT_EQ(CountOp(m, "Constant"), 0);
  EXPECT_EQ(m.proto.graph().input(0).name(), "x");
  EXPECT_EQ(m.proto.graph().output(0).name(), "y");
  EXPECT_EQ(MaxOutputDiff(original, m), 0.0);
}

TEST(FoldConstants, NeverGrowsTheModelAndNamesEveryKeptNode) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13, "custom.x" : 1]>
    g (float[64,64] x) => (float[64,64] y, float[2] z, float[2] r) <int64[2] s = {64, 64}, float[2] k = {1.0, 2.0}> {
      big = ConstantOfShape<value = float[1] {1.0}>(s)
      y = Add(x, big)
      z = custom.x.Op(k)
      r = RandomNormalLike(k) })");
  auto result = RunOne(m, "fold-constants");
  std::string notes = Notes(result);
  EXPECT_EQ(CountOp(m, "ConstantOfShape"), 1) << notes;
  EXPECT_NE(notes.find("would grow the model"), std::string::npos) << notes;
  EXPECT_NE(notes.find("custom domain 'custom.x'"), std::string::npos) << notes;
  EXPECT_NE(notes.find("random op"), std::string::npos) << notes;
  io::Model small_cap = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) <float[2] k = {1.0, 2.0}, float[2] j = {3.0, 4.0}> {
      s = Add(k, j)
      y = Add(x, s) })");
  auto capped = RunOne(small_cap, "fold-constants{max-tensor-bytes=4}");
  EXPECT_NE(Notes(capped).find("exceeds max-tensor-bytes"), std::string::npos) << Notes(capped);
  EXPECT_EQ(CountOp(small_cap, "Add"), 2);
}

TEST(FoldConstants, ExternalWeightsStayReferenced) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      k = Constant<value_floats = [1.0, 2.0, 3.0, 4.0]>()
      y = Add(x, k) })");
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("ext");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  auto* node = m.proto.mutable_graph()->add_node();
  node->set_op_type("Mul");
  node->add_input("y");
  node->add_input("ext");
  node->add_output("y2");
  m.proto.mutable_graph()->mutable_output(0)->set_name("y2");
  RunOne(m, "fold-constants");
  const onnx::TensorProto* kept = nullptr;
  for (const auto& t : m.proto.graph().initializer()) {
    if (t.name() == "ext") kept = &t;
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_FALSE(kept->has_raw_data()) << "an untouched external weight must not be loaded";
}

TEST(FuseConvBn, GroupedConvAndConvTransposeMatchExecutor) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    io::Model m = io::ParseText(std::string(R"(<ir_version: 8, opset_import: ["" : 9]>
      g (float[1,4,6,6] x) => (float[1,4,M,M] y) {
        c = )") + op + R"(<group = 2, pads = [1, 1, 1, 1]>(x, w, b)
        y = BatchNormalization<epsilon = 0.001>(c, s, bb, mu, var) })");
    AddWeight(m, "w",
              {4, 2, 3, 3});  // Conv: [C_out, C_in/g, k, k]; ConvTranspose: [C_in, C_out/g, k, k]
    AddWeight(m, "b", {4});
    AddWeight(m, "s", {4}, 0.5, 2);
    AddWeight(m, "bb", {4});
    AddWeight(m, "mu", {4});
    AddWeight(m, "var", {4}, 0.1, 2);
    io::Model original = m;
    auto result = RunOne(m, "fuse-conv-bn");
    EXPECT_EQ(result.changes, 1) << op << Notes(result);
    EXPECT_EQ(CountOp(m, "BatchNormalization"), 0);
    EXPECT_EQ(m.proto.graph().node(0).output(0), "y") << "the graph output name is kept";
    EXPECT_LT(MaxOutputDiff(original, m), 1e-5) << op;
  }
}

TEST(FuseConvBn, KeepsBnWhenConvOutputHasAnotherConsumer) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,4,4] y, float[1,2,4,4] c) {
      c = Conv(x, w)
      y = BatchNormalization(c, s, bb, mu, var) })");
  AddWeight(m, "w", {2, 2, 1, 1});
  for (const char* p : {"s", "bb", "mu"}) AddWeight(m, p, {2});
  AddWeight(m, "var", {2}, 0.1, 1);
  auto result = RunOne(m, "fuse-conv-bn");
  EXPECT_EQ(result.changes, 0);
  EXPECT_NE(Notes(result).find("'c' is a graph output"), std::string::npos) << Notes(result);
}

TEST(FuseConvAdd, PerChannelBiasFoldsAndOtherShapesStay) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,3,5,5] x) => (float[1,4,10,10] y, float[1,4,5,5] z) {
      c = ConvTranspose<strides = [2, 2], kernel_shape = [2, 2]>(x, w)
      y = Add(k, c)
      d = Conv(x, w2)
      z = Add(d, full) })");
  AddWeight(m, "w", {3, 4, 2, 2});
  AddWeight(m, "k", {1, 4, 1, 1});
  AddWeight(m, "w2", {4, 3, 1, 1});
  AddWeight(m, "full", {1, 4, 5, 5});
  io::Model original = m;
  auto result = RunOne(m, "fuse-conv-add");
  EXPECT_EQ(result.changes, 1) << Notes(result);
  EXPECT_NE(Notes(result).find("not a per-channel bias"), std::string::npos) << Notes(result);
  EXPECT_LT(MaxOutputDiff(original, m), 1e-6);
}

// PP-LCNetV3's affine block after a conv: a per-channel scale and a scalar shift. fuse-conv-mul
// scales the weights and bias (grouped ConvTranspose included); with fuse-conv-add after it the
// block is one conv. A full-size operand is not a per-channel scale and stays.
TEST(FuseConvMul, ScaleThenShiftBecomeOneConvAndOtherShapesStay) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,4,5,5] x) => (float[1,4,10,10] y, float[1,4,5,5] z, float[1,4,5,5] v) {
      c = ConvTranspose<strides = [2, 2], kernel_shape = [2, 2], group = 2>(x, w, b)
      s = Mul(k, c)
      y = Add(s, sh)
      d = Conv(x, w2)
      z = Mul(d, full)
      e = Conv(x, w2, b)
      v = Mul(e, k1)
    })");
  AddWeight(m, "w", {4, 2, 2, 2});
  AddWeight(m, "b", {4});
  AddWeight(m, "k", {1, 4, 1, 1});
  AddWeight(m, "sh", {1});
  AddWeight(m, "w2", {4, 4, 1, 1});
  AddWeight(m, "full", {1, 4, 5, 5});
  AddWeight(m, "k1", {});
  io::Model original = m;
  auto result = RunOne(m, "fuse-conv-mul");
  EXPECT_EQ(result.changes, 2) << Notes(result);
  EXPECT_EQ(CountOp(m, "Mul"), 1) << Notes(result);  // z = Mul(d, full)
  EXPECT_NE(Notes(result).find("not a per-channel scale"), std::string::npos) << Notes(result);
  RunOne(m, "fuse-conv-add");
  EXPECT_EQ(CountOp(m, "Add"), 0);
  EXPECT_LT(MaxOutputDiff(original, m), 1e-5);
}

TEST(ResizeToUpsample, NearestAsymmetricFloorBecomesUpsampleWithIdenticalOutputs) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,2,3,4] x) => (float[1,2,6,8] y, float[1,2,6,8] h, float[1,2,6,8] s) <float[4] sc = {1.0, 1.0, 2.0, 2.0}, int64[4] sz = {1, 2, 6, 8}, float[0] roi = {}> {
      y = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">(x, roi, sc)
      h = Resize<mode = "nearest", coordinate_transformation_mode = "half_pixel">(x, roi, sc)
      s = Resize<mode = "linear", coordinate_transformation_mode = "asymmetric">(x, roi, roi, sz) })");
  io::Model original = m;
  auto result = RunOne(m, "infer-shapes,resize-to-upsample");
  EXPECT_EQ(result.changes, 2) << Notes(result);
  EXPECT_EQ(CountOp(m, "Upsample"), 2);
  EXPECT_NE(Notes(result).find("half_pixel coordinates: Upsample cannot express them"),
            std::string::npos)
      << Notes(result);
  EXPECT_NE(Notes(result).find("vendor converters"), std::string::npos);
  EXPECT_EQ(MaxOutputDiff(original, m), 0.0);
}

TEST(DecomposeGelu, DemoModelLosesItsCustomDomainAndKeepsOutputs) {
  io::Model m = io::Load(porttool::testing::TestData("demo_detector.onnx"));
  shape::ApplyInputShapes(m, {{"images", {1, 3, 32, 32}}});
  io::Model original = m;
  auto result = RunOne(m, "decompose-gelu");
  EXPECT_EQ(result.changes, 1);
  for (const auto& node : m.proto.graph().node()) EXPECT_TRUE(node.domain().empty());
  for (const auto& op : m.proto.opset_import()) EXPECT_NE(op.domain(), "com.microsoft");
  EXPECT_EQ(CountOp(m, "Erf"), 1);
  EXPECT_LT(MaxOutputDiff(original, m), 1e-6);
}

TEST(DecomposeGelu, FastGeluWithBiasAndQuickGelu) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
    g (float[2,8] x) => (float[2,8] y, float[2,8] q) {
      y = com.microsoft.FastGelu(x, bias)
      q = com.microsoft.QuickGelu<alpha = 1.5>(x) })");
  AddWeight(m, "bias", {8});
  io::Model original = m;
  auto result = RunOne(m, "decompose-gelu");
  EXPECT_EQ(result.changes, 2);
  EXPECT_EQ(m.proto.opset_import_size(), 1);
  EXPECT_LT(MaxOutputDiff(original, m), 1e-6);
}

TEST(GeluToTanh, ReportsTheDeviationAndStaysWithinIt) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
    g (float[4,64] x) => (float[4,64] y) { y = com.microsoft.Gelu(x) })");
  io::Model original = m;
  auto result = RunOne(m, "gelu-to-tanh");
  EXPECT_EQ(result.changes, 1);
  EXPECT_NE(Notes(result).find("max deviation"), std::string::npos);
  double bound = MaxTanhGeluDeviation(-8, 8, 1e-3);
  EXPECT_GT(bound, 1e-5);
  EXPECT_LT(bound, 1e-3);
  EXPECT_LE(MaxOutputDiff(original, m), bound + 1e-6);
  EXPECT_EQ(CountOp(m, "Tanh"), 1);
}

TEST(Cleanup, DeadCodeAndUnusedInitializersGoGraphNamesStay) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) <float[2] unused = {1.0, 2.0}, float[2] k = {1.0, 1.0}> {
      y = Add(x, k)
      dead = Neg(x)
      dead2 = Relu(dead) })");
  EXPECT_EQ(RunOne(m, "eliminate-dead-code").changes, 2);
  EXPECT_EQ(RunOne(m, "eliminate-unused-initializers").changes, 1);
  EXPECT_EQ(m.proto.graph().initializer_size(), 1);
  EXPECT_EQ(m.proto.graph().output(0).name(), "y");
}

}  // namespace
}  // namespace porttool::passes

namespace porttool::passes {
namespace {

TEST(HardSwish, DecomposeThenFuseRoundTripsWithSameOutputs) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
    g (float[2,16] x) => (float[2,16] y) { y = HardSwish(x) })");
  io::Model original = m;
  EXPECT_EQ(testing_util::RunOne(m, "decompose-hardswish").changes, 1);
  EXPECT_EQ(testing_util::CountOp(m, "HardSigmoid"), 1);
  EXPECT_LT(testing_util::MaxOutputDiff(original, m), 1e-6);
  EXPECT_EQ(testing_util::RunOne(m, "fuse-hardswish").changes, 1);
  ASSERT_EQ(m.proto.graph().node_size(), 1);
  EXPECT_EQ(m.proto.graph().node(0).op_type(), "HardSwish");
  EXPECT_EQ(m.proto.graph().node(0).output(0), "y");
  EXPECT_LT(testing_util::MaxOutputDiff(original, m), 1e-6);
}

// x * relu6(x + 3) / 6, as hand-written MobileNetV3 blocks export it. The input is scaled to
// [-5, 5) so both saturated ends of the Clip are exercised.
constexpr const char* kRelu6MulFirst = R"(<ir_version: 8, opset_import: ["" : OPSET]>
    g (float[2,16] in) => (float[2,16] y) {
      spread = Constant <value = float {2.5}> ()
      three = Constant <value = float {3.0}> ()
      zero = Constant <value = float {0.0}> ()
      six = Constant <value = float {6.0}> ()
      x = Mul(in, spread)
      a = Add(x, three)
      c = Clip(a, zero, six)
      t = Mul(x, c)
      y = Div(t, six) })";

io::Model Relu6Model(const std::string& text, int opset) {
  std::string t = text;
  t.replace(t.find("OPSET"), 5, std::to_string(opset));
  return io::ParseText(t);
}

TEST(HardSwish, FusesTheRelu6SpellingWithSameOutputs) {
  io::Model m = Relu6Model(kRelu6MulFirst, 14);
  io::Model original = m;
  auto result = testing_util::RunOne(m, "fuse-hardswish");
  EXPECT_EQ(result.changes, 1) << testing_util::Notes(result);
  EXPECT_EQ(testing_util::CountOp(m, "HardSwish"), 1);
  EXPECT_EQ(testing_util::CountOp(m, "Clip"), 0);
  EXPECT_EQ(testing_util::CountOp(m, "Div"), 0);
  EXPECT_EQ(testing_util::CountOp(m, "Add"), 0);
  EXPECT_EQ(m.proto.graph().node(m.proto.graph().node_size() - 1).output(0), "y");
  EXPECT_LT(testing_util::MaxOutputDiff(original, m), 1e-6);
}

TEST(HardSwish, FusesTheDivideFirstSpellingWithAMulByOneSixth) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
    g (float[2,16] in, float[1] three, float[1] sixth) => (float[2,16] y) {
      spread = Constant <value = float {2.5}> ()
      zero = Constant <value = float {0.0}> ()
      six = Constant <value = float {6.0}> ()
      x = Mul(in, spread)
      a = Add(three, x)
      c = Clip(a, zero, six)
      t = Mul(sixth, c)
      y = Mul(t, x) })");
  // Graph inputs are not constants: make three and 1/6 initializers.
  auto* g = m.proto.mutable_graph();
  for (auto [name, value] : {std::pair{"three", 3.0f}, std::pair{"sixth", 1.0f / 6}}) {
    auto* init = g->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(1);
    init->add_float_data(value);
  }
  g->mutable_input()->DeleteSubrange(1, 2);
  io::Model original = m;
  EXPECT_EQ(testing_util::RunOne(m, "fuse-hardswish").changes, 1);
  EXPECT_EQ(testing_util::CountOp(m, "HardSwish"), 1);
  EXPECT_EQ(testing_util::CountOp(m, "Mul"), 1);  // the input scaling only
  EXPECT_LT(testing_util::MaxOutputDiff(original, m), 1e-6);
}

TEST(HardSwish, LeavesLookalikesAlone) {
  // Add 2 instead of 3: not hard-swish.
  std::string add_two = kRelu6MulFirst;
  add_two.replace(add_two.find("float {3.0}"), 11, "float {2.0}");
  io::Model m = Relu6Model(add_two, 14);
  EXPECT_EQ(testing_util::RunOne(m, "fuse-hardswish").changes, 0);
  // The Clip output also feeds a graph output: fusing would lose it.
  std::string shared = kRelu6MulFirst;
  shared.replace(shared.find("=> (float[2,16] y)"), 18, "=> (float[2,16] y, float[2,16] c)");
  m = Relu6Model(shared, 14);
  EXPECT_EQ(testing_util::RunOne(m, "fuse-hardswish").changes, 0);
  EXPECT_EQ(testing_util::CountOp(m, "Clip"), 1);
}

TEST(HardSwish, Relu6SpellingBelowOpset14IsReported) {
  io::Model m = Relu6Model(kRelu6MulFirst, 13);
  auto result = testing_util::RunOne(m, "fuse-hardswish");
  EXPECT_EQ(result.changes, 0);
  EXPECT_NE(testing_util::Notes(result).find("relu6"), std::string::npos)
      << testing_util::Notes(result);
}

TEST(HardSwish, FuseReportsOpsetBelow14) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[4] x) => (float[4] y) {
      h = HardSigmoid<alpha = 0.16666667, beta = 0.5>(x)
      y = Mul(x, h) })");
  auto result = testing_util::RunOne(m, "fuse-hardswish");
  EXPECT_EQ(result.changes, 0);
  EXPECT_NE(testing_util::Notes(result).find("needs opset 14"), std::string::npos)
      << testing_util::Notes(result);
}

}  // namespace
}  // namespace porttool::passes

namespace porttool::passes {
namespace {

// ONNX 1.12's text syntax cannot name nodes.
void NameNodes(io::Model& m, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    m.proto.mutable_graph()->mutable_node(i)->set_name(names[i]);
}

TEST(ReplaceWithCustomOp, SetBecomesOneNodeWithTheSameBoundary) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y, float[4] z) <float[1] c = {1.5}> {
      d = Div(x, c)
      e = Erf(d)
      y = Mul(e, x)
      z = Neg(y) })");
  NameNodes(m, {"d", "e", "m", "n"});
  auto result =
      testing_util::RunOne(m, "replace-with-custom-op{node='d, e,m' domain=com.example op=MyGelu}");
  EXPECT_EQ(result.changes, 3);
  ASSERT_EQ(m.proto.graph().node_size(), 2);
  const auto& custom = m.proto.graph().node(0);
  EXPECT_EQ(custom.op_type(), "MyGelu");
  EXPECT_EQ(custom.domain(), "com.example");
  EXPECT_EQ(std::vector<std::string>(custom.input().begin(), custom.input().end()),
            (std::vector<std::string>{"x", "c"}));
  ASSERT_EQ(custom.output_size(), 1);
  EXPECT_EQ(custom.output(0), "y");
  bool imported = false;
  for (const auto& op : m.proto.opset_import()) imported |= op.domain() == "com.example";
  EXPECT_TRUE(imported);
}

TEST(ReplaceWithCustomOp, UnknownNodeAndNonConvexSetAreUsageErrors) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] z) {
      a = Neg(x)
      b = Relu(a)
      z = Add(a, b) })");
  NameNodes(m, {"a", "b", "c"});
  try {
    testing_util::RunOne(m, "replace-with-custom-op{node=bb domain=d.x op=T}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("closest: b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(testing_util::RunOne(m, "replace-with-custom-op{node='a,c' domain=d.x op=T}"),
               Error);
  EXPECT_EQ(m.proto.graph().node_size(), 3) << "a failed rewrite leaves the model as it was";
}

}  // namespace
}  // namespace porttool::passes

namespace porttool::passes {
namespace {

TEST(ConvertOpset, Relu13To11IsRelabelledNotAborted) {
  io::Model m = io::ParseText(R"(<ir_version: 7, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) { y = Relu(x) })");
  io::Model original = m;
  auto result = testing_util::RunOne(m, "convert-opset{to=11}");
  EXPECT_EQ(result.changes, 1) << testing_util::Notes(result);
  EXPECT_EQ(m.proto.opset_import(0).version(), 11);
  EXPECT_EQ(testing_util::MaxOutputDiff(original, m), 0.0);
}

// A target's supported range: below it the model is raised, inside it nothing changes, above it
// the model is lowered; to= and a range together are a usage error.
TEST(ConvertOpset, RangeMovesOnlyModelsOutsideIt) {
  const char* text = R"(<ir_version: 7, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) { y = Relu(x) })";
  struct Case {
    const char* pipeline;
    int opset;
    int changes;
  };
  for (const Case& c :
       {Case{"convert-opset{min=14 max=17}", 14, 1}, Case{"convert-opset{min=12 max=19}", 13, 0},
        Case{"convert-opset{max=11}", 11, 1}, Case{"convert-opset{min=13}", 13, 0}}) {
    SCOPED_TRACE(c.pipeline);
    io::Model m = io::ParseText(text);
    io::Model original = m;
    auto result = testing_util::RunOne(m, c.pipeline);
    EXPECT_EQ(result.changes, c.changes) << testing_util::Notes(result);
    EXPECT_EQ(m.proto.opset_import(0).version(), c.opset);
    EXPECT_EQ(testing_util::MaxOutputDiff(original, m), 0.0);
  }
  for (const char* bad :
       {"convert-opset{to=12 min=11}", "convert-opset{min=14 max=12}", "convert-opset"}) {
    io::Model m = io::ParseText(text);
    try {
      testing_util::RunOne(m, bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad << ": " << e.what();
    }
  }
}

TEST(ConvertOpset, ResizeBelowTenPointsToResizeToUpsample) {
  io::Model m = io::ParseText(R"(<ir_version: 7, opset_import: ["" : 11]>
    g (float[1,1,2,2] x, float[4] s) => (float[1,1,4,4] y) { y = Resize(x, s, s) })");
  try {
    testing_util::RunOne(m, "convert-opset{to=9}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resize-to-upsample"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::passes

namespace porttool::passes {
namespace {

TEST(FoldConstants, SubgraphBodiesAreSkippedWithANoteAndTheirConstantsBecomeInitializers) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c) => (float[2] w) {
      w = If(c) <then_branch = t () => (float[2] o) { k = Constant<value_floats = [1.0, 2.0]>()
                                                      o = Add(x, k) },
                 else_branch = e () => (float[2] o) { o = Neg(x) }> })");
  auto result = testing_util::RunOne(m, "fold-constants");
  EXPECT_NE(testing_util::Notes(result).find("subgraph bodies are not folded"), std::string::npos)
      << testing_util::Notes(result);
  const auto& then_branch = m.proto.graph().node(0).attribute(0).g();
  EXPECT_EQ(then_branch.node_size(), 1);
  EXPECT_EQ(then_branch.initializer_size(), 1);
}

}  // namespace
}  // namespace porttool::passes
